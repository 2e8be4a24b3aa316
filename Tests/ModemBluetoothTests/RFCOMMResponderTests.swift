import Testing
@testable import ModemBluetooth

/// The responder's answers to multiplexer commands and to absurd parameter negotiations, driven by
/// a scripted initiator (Bumble never sends RPN, RLS, Test or unknown commands; real devices do).
@Suite struct RFCOMMResponderTests {
    private func ask(_ session: inout RFCOMMSession, _ message: RFCOMMMultiplexerMessage) -> [RFCOMMMultiplexerMessage] {
        RFCOMMScript.messages(session.received(RFCOMMScript.message(message, fromInitiator: true), now: 1))
    }

    @Test func testRPNQueryAndSettingRLSAndTestAreAnswered() {
        var session = RFCOMMScript.openResponder()
        #expect(ask(&session, .init(isCommand: true, content: .remotePortNegotiation(dlci: 2, settings: nil))) == [.init(isCommand: false, content: .remotePortNegotiation(dlci: 2, settings: .standard))])
        let settings = RFCOMMPortSettings(baudRate: 0x07, dataFormat: 0x0B, flowControl: 0x03, xon: 0x11, xoff: 0x13, parameterMask: 0x0001)
        #expect(ask(&session, .init(isCommand: true, content: .remotePortNegotiation(dlci: 2, settings: settings))) == [.init(isCommand: false, content: .remotePortNegotiation(dlci: 2, settings: settings))])
        #expect(ask(&session, .init(isCommand: true, content: .remoteLineStatus(dlci: 2, status: 0x05))) == [.init(isCommand: false, content: .remoteLineStatus(dlci: 2, status: 0x05))])
        let pattern = Array("The quick brown fox".utf8) + Array(repeating: 0xA5, count: 300)
        #expect(ask(&session, .init(isCommand: true, content: .test(pattern))) == [.init(isCommand: false, content: .test(pattern))])
        // The exact bytes of the RPN answer on the wire (responder: UIH on DLCI 0 with C/R 0).
        let wire = session.received(RFCOMMScript.message(.init(isCommand: true, content: .remotePortNegotiation(dlci: 2, settings: nil)), fromInitiator: true), now: 1)
        #expect(wire == [.transmit([0x01, 0xEF, 0x15, 0x91, 0x11, 0x0B, 0x03, 0x03, 0x00, 0x11, 0x13, 0xFF, 0x3F, 0xAA])])
        // Responses to commands we never sent are counted, not answered.
        #expect(ask(&session, .init(isCommand: false, content: .test([1]))) == [])
        #expect(ask(&session, .init(isCommand: false, content: .remoteLineStatus(dlci: 2, status: 0))) == [])
        #expect(session.statistics.unexpectedResponses == 2)
    }

    @Test func testUnknownCommandGetsNSCNamingItsType() {
        var session = RFCOMMScript.openResponder()
        #expect(ask(&session, .init(isCommand: true, content: .unknown(type: [0x47], value: [1, 2, 3]))) == [.init(isCommand: false, content: .notSupported(type: [0x47]))])
        #expect(ask(&session, .init(isCommand: true, content: .unknown(type: [0x42, 0x43], value: []))) == [.init(isCommand: false, content: .notSupported(type: [0x42, 0x43]))])
        #expect(session.statistics.nscSent == 2)
        // An unknown response is not answered; an NSC is counted.
        #expect(ask(&session, .init(isCommand: false, content: .unknown(type: [0x45], value: []))) == [])
        #expect(ask(&session, .init(isCommand: false, content: .notSupported(type: [0x93]))) == [])
        #expect(session.statistics.nscSent == 2)
        #expect(session.statistics.nscReceived == 1)
        // The NSC frame itself: 01 EF 05 11 03 47 AA.
        let wire = session.received(RFCOMMScript.message(.init(isCommand: true, content: .unknown(type: [0x47], value: [])), fromInitiator: true), now: 1)
        #expect(wire == [.transmit([0x01, 0xEF, 0x07, 0x11, 0x03, 0x47, 0xAA])])
    }

    /// A fast peer (Bumble does this) opens a DLC, writes and closes it before the MSC exchange has
    /// completed: the DLC was open (SABM, UA), so it is announced, its data delivered, then its close.
    /// Before, it closed unannounced and its data was dropped: `modem bt device` logged neither the
    /// connection nor the close while Bumble reported it had written and closed (about 1 run in 37).
    @Test func testADLCClosedBeforeMSCIsStillAnnouncedWithItsData() {
        var session = RFCOMMScript.openResponder()
        let opened = session.received(RFCOMMScript.frame(.sabm, dlci: 2, fromInitiator: true), now: 1)
        #expect(RFCOMMScript.frames(opened).map(\.kind).first == .ua)
        #expect(!opened.contains { if case .channelOpened = $0 { return true } else { return false } }, "not before MSC both ways")
        let data = session.received(RFCOMMScript.data(dlci: 2, Array("hello".utf8), fromInitiator: true), now: 1)
        #expect(!data.contains { if case .received = $0 { return true } else { return false } }, "held until the DLC is announced")
        let closed = session.received(RFCOMMScript.frame(.disc, dlci: 2, fromInitiator: true), now: 1)
        let events = closed.filter { if case .transmit = $0 { return false } else { return true } }
        #expect(events.count == 3 && events[1] == .received(dlci: 2, Array("hello".utf8))
                && events[2] == .channelClosed(dlci: 2, reason: "closed by the device"), "\(events)")
        if case .channelOpened(let dlci, _, let incoming) = events.first { #expect(dlci == 2 && incoming) } else { Issue.record("no channelOpened: \(events)") }
        #expect(RFCOMMScript.frames(closed).map(\.kind).contains(.ua), "the DISC is answered")
    }

    private func negotiate(_ session: inout RFCOMMSession, _ request: RFCOMMParameters) -> [RFCOMMAction] {
        session.received(RFCOMMScript.message(.init(isCommand: true, content: .parameterNegotiation(request)), fromInitiator: true), now: 1)
    }

    private func answer(_ actions: [RFCOMMAction]) -> RFCOMMParameters? {
        for message in RFCOMMScript.messages(actions) {
            if case .parameterNegotiation(let parameters) = message.content, !message.isCommand { return parameters }
        }
        return nil
    }

    @Test func testAbsurdParameterNegotiationsAreAnsweredSanely() {
        var session = RFCOMMScript.openResponder(peerMTU: 100, listen: [1, 2, 3, 4])
        #expect(session.frameLimit == 94)
        // N1 0: the 07.10 default 127, clamped to what fits the MTU (94).
        #expect(answer(negotiate(&session, RFCOMMParameters(dlci: 2, convergenceLayer: 0xF, maximumFrameSize: 0, window: 7))) == RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, priority: 7, maximumFrameSize: 94, window: 7))
        // N1 65535 (above 32767 and the MTU): 94.
        #expect(answer(negotiate(&session, RFCOMMParameters(dlci: 4, convergenceLayer: 0xF, priority: 63, maximumFrameSize: 65535, window: 3)))?.maximumFrameSize == 94)
        // A small N1 is taken as it is; an unknown convergence layer gets no credits.
        #expect(answer(negotiate(&session, RFCOMMParameters(dlci: 6, convergenceLayer: 0x3, maximumFrameSize: 20, window: 7))) == RFCOMMParameters(dlci: 6, convergenceLayer: 0, priority: 7, maximumFrameSize: 20, window: 0))
        #expect(session.statistics.clampedNegotiations == 3)
        // DLCI 0: ignored. An unlistened or wrong-direction DLCI: DM.
        #expect(negotiate(&session, RFCOMMParameters(dlci: 0, convergenceLayer: 0xF, maximumFrameSize: 100, window: 7)) == [])
        for dlci: UInt8 in [10, 3, 63] {
            let refused = RFCOMMScript.frames(negotiate(&session, RFCOMMParameters(dlci: dlci, convergenceLayer: 0xF, maximumFrameSize: 100, window: 7)))
            #expect(refused.map(\.kind) == [.dm], "DLCI \(dlci)")
            #expect(refused.first?.dlci == dlci)
        }
        // The negotiated values hold once the DLC opens: N1 20 and no credits on DLCI 6.
        _ = session.received(RFCOMMScript.frame(.sabm, dlci: 6, fromInitiator: true), now: 1)
        let sent = RFCOMMScript.frames(session.send(dlci: 6, Array(repeating: 0, count: 50)))
        #expect(sent.map(\.information.count) == [20, 20, 10])
        #expect(sent.allSatisfy { $0.credits == nil })
        // A PN on an open DLC is answered with what holds, changing nothing.
        #expect(answer(negotiate(&session, RFCOMMParameters(dlci: 6, convergenceLayer: 0xF, maximumFrameSize: 90, window: 7))) == RFCOMMParameters(dlci: 6, convergenceLayer: 0, priority: 7, maximumFrameSize: 20, window: 0))
        #expect(RFCOMMScript.frames(session.send(dlci: 6, Array(repeating: 0, count: 30))).map(\.information.count) == [20, 10])
    }

    @Test func testInitiatorClampsAbsurdAnswersAndIgnoresMismatchedOnes() {
        func opening() -> RFCOMMSession {
            var session = RFCOMMSession(initiator: true, peerMTU: 200, localMTU: 1691)
            _ = session.start(now: 0)
            _ = session.received(RFCOMMScript.frame(.ua, dlci: 0, fromInitiator: false), now: 0)
            _ = session.open(channel: 1, now: 0)
            return session
        }
        func respond(_ session: inout RFCOMMSession, _ parameters: RFCOMMParameters) -> [RFCOMMAction] {
            session.received(RFCOMMScript.message(.init(isCommand: false, content: .parameterNegotiation(parameters)), fromInitiator: false), now: 1)
        }
        func openUp(_ session: inout RFCOMMSession) -> [RFCOMMAction] {
            _ = session.received(RFCOMMScript.frame(.ua, dlci: 2, fromInitiator: false), now: 1)
            _ = session.received(RFCOMMScript.message(.init(isCommand: false, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: false), now: 1)
            return session.received(RFCOMMScript.message(.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: false), now: 1)
        }
        // An answer bigger than we offered (194): we keep 194.
        var session = opening()
        #expect(RFCOMMScript.frames(respond(&session, RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, maximumFrameSize: 30000, window: 7))).map(\.kind) == [.sabm])
        #expect(openUp(&session).last == .channelOpened(dlci: 2, frameSize: 194, incoming: false))
        // N1 0 in the answer: 127.
        session = opening()
        _ = respond(&session, RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, maximumFrameSize: 0, window: 7))
        #expect(openUp(&session).last == .channelOpened(dlci: 2, frameSize: 127, incoming: false))
        #expect(session.statistics.clampedNegotiations == 1)
        // CL 0 in the answer: no credits, the data flows freely.
        session = opening()
        _ = respond(&session, RFCOMMParameters(dlci: 2, convergenceLayer: 0, maximumFrameSize: 100, window: 7))
        _ = openUp(&session)
        #expect(RFCOMMScript.frames(session.send(dlci: 2, Array(repeating: 0, count: 1000))).count == 10)
        // An answer for another DLCI is ignored and counted; T2 then fails the session.
        session = opening()
        #expect(respond(&session, RFCOMMParameters(dlci: 4, convergenceLayer: 0xE, maximumFrameSize: 100, window: 7)) == [])
        #expect(session.statistics.unexpectedResponses == 1)
        #expect(session.tick(now: 20).last == .sessionClosed(reason: "the device did not answer PN within 20 s"))
    }
}
