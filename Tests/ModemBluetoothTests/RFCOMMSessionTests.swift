import Testing
import ModemTestSupport
@testable import ModemBluetooth

/// Two sessions joined back to back, as if over one L2CAP channel: A the initiator, B the responder.
/// Frames travel in FIFO order; the test decides when they are delivered.
final class RFCOMMPair {
    var a: RFCOMMSession
    var b: RFCOMMSession
    var now = 0.0
    var toA: [[UInt8]] = []
    var toB: [[UInt8]] = []
    /// Every frame each side sent, decoded.
    var framesFromA: [RFCOMMFrame] = []
    var framesFromB: [RFCOMMFrame] = []
    /// Actions other than transmit, received and sent.
    var eventsA: [RFCOMMAction] = []
    var eventsB: [RFCOMMAction] = []
    var dataA: [UInt8: [UInt8]] = [:]
    var dataB: [UInt8: [UInt8]] = [:]
    var sentA: [UInt8: Int] = [:]
    var sentB: [UInt8: Int] = [:]
    /// The most credits A held on each DLCI at any time.
    var mostCreditsA: [UInt8: Int] = [:]

    init(a: RFCOMMConfiguration = .init(), b: RFCOMMConfiguration = .init(), mtuA: Int = 1691, mtuB: Int = 1691) {
        self.a = RFCOMMSession(initiator: true, peerMTU: mtuB, localMTU: mtuA, configuration: a)
        self.b = RFCOMMSession(initiator: false, peerMTU: mtuA, localMTU: mtuB, configuration: b)
    }

    func absorb(_ actions: [RFCOMMAction], fromA: Bool) {
        for action in actions {
            switch action {
            case .transmit(let bytes):
                let frame = try! RFCOMMFrame.decode(bytes)   // our own frames always decode
                if fromA { toB.append(bytes); framesFromA.append(frame) } else { toA.append(bytes); framesFromB.append(frame) }
            case .received(let dlci, let bytes):
                if fromA { dataA[dlci, default: []] += bytes } else { dataB[dlci, default: []] += bytes }
            case .sent(let dlci, let count):
                if fromA { sentA[dlci, default: 0] += count } else { sentB[dlci, default: 0] += count }
            default:
                if fromA { eventsA.append(action) } else { eventsB.append(action) }
            }
        }
        for dlci in a.dlcis { mostCreditsA[dlci] = max(mostCreditsA[dlci] ?? 0, a.sendCredits(dlci: dlci) ?? 0) }
    }

    /// Delivers up to `count` frames waiting for B (or A); true when any was delivered.
    @discardableResult
    func deliver(toB: Bool, count: Int = 1) -> Bool {
        var delivered = false
        for _ in 0..<count {
            if toB {
                guard !self.toB.isEmpty else { break }
                absorb(b.received(self.toB.removeFirst(), now: now), fromA: false)
            } else {
                guard !toA.isEmpty else { break }
                absorb(a.received(toA.removeFirst(), now: now), fromA: true)
            }
            delivered = true
        }
        return delivered
    }

    /// Delivers everything, alternating, until both directions are quiet.
    func settle(limit: Int = 2_000_000) {
        var steps = 0
        while !toA.isEmpty || !toB.isEmpty {
            deliver(toB: true)
            deliver(toB: false)
            steps += 1
            precondition(steps < limit, "the sessions never went quiet")
        }
    }

    func tick(_ time: Double) {
        now = time
        absorb(a.tick(now: now), fromA: true)
        absorb(b.tick(now: now), fromA: false)
    }

    /// A opens B's channel, with B listening on `listen`; settles.
    func connect(channels: [UInt8], listen: [UInt8]? = nil) {
        for channel in listen ?? channels { b.listen(channel: channel) }
        absorb(a.start(now: now), fromA: true)
        for channel in channels { absorb(a.open(channel: channel, now: now), fromA: true) }
        settle()
    }
}

/// Frame helpers for scripted peers.
enum RFCOMMScript {
    static func frame(_ kind: RFCOMMFrame.Kind, dlci: UInt8, fromInitiator: Bool) -> [UInt8] {
        let isCommand = kind == .sabm || kind == .disc
        return RFCOMMFrame(kind: kind, dlci: dlci, commandResponse: isCommand == fromInitiator, pollFinal: kind != .uih).encoded
    }

    static func message(_ message: RFCOMMMultiplexerMessage, fromInitiator: Bool) -> [UInt8] {
        RFCOMMFrame(kind: .uih, dlci: 0, commandResponse: fromInitiator, information: message.encoded).encoded
    }

    static func data(dlci: UInt8, _ bytes: [UInt8], credits: UInt8? = nil, fromInitiator: Bool) -> [UInt8] {
        RFCOMMFrame(kind: .uih, dlci: dlci, commandResponse: fromInitiator, credits: credits, information: bytes).encoded
    }

    static func frames(_ actions: [RFCOMMAction]) -> [RFCOMMFrame] {
        actions.compactMap { if case .transmit(let bytes) = $0 { return try? RFCOMMFrame.decode(bytes) } else { return nil } }
    }

    static func messages(_ actions: [RFCOMMAction]) -> [RFCOMMMultiplexerMessage] {
        frames(actions).filter { $0.dlci == 0 && $0.kind == .uih }.flatMap { (try? RFCOMMMultiplexerMessage.decodeAll($0.information)) ?? [] }
    }

    /// A responder session with DLCI 0 up (a scripted initiator sent SABM).
    static func openResponder(_ configuration: RFCOMMConfiguration = .init(), peerMTU: Int = 1691, listen: [UInt8] = [1]) -> RFCOMMSession {
        var session = RFCOMMSession(initiator: false, peerMTU: peerMTU, localMTU: 1691, configuration: configuration)
        for channel in listen { session.listen(channel: channel) }
        _ = session.received(frame(.sabm, dlci: 0, fromInitiator: true), now: 0)
        precondition(session.isOpen)
        return session
    }
}

@Suite struct RFCOMMSessionTests {
    @Test func testOpenRunsPNSABMUAThenMSCBothWays() throws {
        let pair = RFCOMMPair()
        pair.connect(channels: [1])
        let fromA = pair.framesFromA
        #expect(fromA[0].encoded == [0x03, 0x3F, 0x01, 0x1C])   // SABM on DLCI 0
        let pn = try #require(RFCOMMMultiplexerMessage.decodeAll(fromA[1].information).first)
        #expect(pn == .init(isCommand: true, content: .parameterNegotiation(
            RFCOMMParameters(dlci: 2, convergenceLayer: 0xF, priority: 7, maximumFrameSize: 1000, window: 7))))
        #expect(fromA[2].encoded == [0x0B, 0x3F, 0x01, 0x59])   // SABM on DLCI 2 after the PN answer
        #expect(try RFCOMMMultiplexerMessage.decodeAll(fromA[3].information) == [.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil))])
        let fromB = pair.framesFromB
        #expect(fromB[0].encoded == [0x03, 0x73, 0x01, 0xD7])   // UA on DLCI 0 (C/R 1 from the responder)
        #expect(try RFCOMMMultiplexerMessage.decodeAll(fromB[1].information) == [.init(isCommand: false, content: .parameterNegotiation(
            RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, priority: 7, maximumFrameSize: 1000, window: 7)))])
        #expect(fromB[2].kind == .ua)
        #expect(fromB[2].dlci == 2)
        #expect(fromB[2].commandResponse)
        #expect(pair.eventsA == [.channelOpened(dlci: 2, frameSize: 1000, incoming: false)])
        #expect(pair.eventsB == [.channelOpened(dlci: 2, frameSize: 1000, incoming: true)])
        // Both sides topped the other up to the target of 32 right after UA.
        #expect(pair.a.sendCredits(dlci: 2) == 32)
        #expect(pair.b.sendCredits(dlci: 2) == 32)
        #expect(pair.a.peerCredits(dlci: 2) == 32)
        // Every UIH from A on DLCI 0 carried C/R 1 and from B C/R 0.
        #expect(pair.framesFromA.filter { $0.kind == .uih }.allSatisfy { $0.commandResponse })
        #expect(pair.framesFromB.filter { $0.kind == .uih }.allSatisfy { !$0.commandResponse })
    }

    @Test func testFrameSizeFitsTheSmallerMTU() {
        let pair = RFCOMMPair(mtuA: 1691, mtuB: 100)
        pair.connect(channels: [1])
        #expect(pair.eventsA == [.channelOpened(dlci: 2, frameSize: 94, incoming: false)])
        #expect(pair.eventsB == [.channelOpened(dlci: 2, frameSize: 94, incoming: true)])
        let data = Array(repeating: UInt8(0x5A), count: 1000)
        pair.absorb(pair.a.send(dlci: 2, data), fromA: true)
        pair.settle()
        #expect(pair.dataB[2] == data)
        #expect(pair.framesFromA.allSatisfy { $0.encoded.count <= 100 })
        #expect(pair.framesFromA.filter { $0.dlci == 2 && !$0.information.isEmpty }.map(\.information.count).max() == 94)
    }

    @Test func testOpenBeforeStartStartsAndOpensQueuedChannels() {
        let pair = RFCOMMPair()
        pair.b.listen(channel: 3)
        pair.absorb(pair.a.open(channel: 3, now: 0), fromA: true)
        #expect(pair.framesFromA.map(\.kind) == [.sabm])   // DLCI 0 first; PN waits for its UA
        pair.settle()
        #expect(pair.eventsA == [.channelOpened(dlci: 6, frameSize: 1000, incoming: false)])
    }

    @Test func testResponderOpensAChannelOnTheInitiatorWithTheDirectionBit() {
        let pair = RFCOMMPair()
        pair.a.listen(channel: 4)
        pair.connect(channels: [1])
        #expect(pair.b.dlci(forRemoteChannel: 4) == 9)
        pair.absorb(pair.b.open(channel: 4, now: 0), fromA: false)
        pair.settle()
        #expect(pair.eventsB.last == .channelOpened(dlci: 9, frameSize: 1000, incoming: false))
        #expect(pair.eventsA.last == .channelOpened(dlci: 9, frameSize: 1000, incoming: true))
        // B's SABM on DLCI 9 carries C/R 0 (a command from the responder).
        let sabm = pair.framesFromB.first { $0.kind == .sabm }
        #expect(sabm?.dlci == 9)
        #expect(sabm?.commandResponse == false)
        // The initiator refuses the responder's request for a channel it does not listen on.
        pair.absorb(pair.b.open(channel: 5, now: 0), fromA: false)
        pair.settle()
        #expect(pair.eventsB.last == .channelClosed(dlci: 11, reason: "refused"))
    }

    @Test func testRefusedChannelClosesAndTheInitiatorClosesTheIdleSession() {
        let pair = RFCOMMPair()
        pair.b.listen(channel: 1)
        pair.absorb(pair.a.open(channel: 2, now: 0), fromA: true)
        pair.settle()
        #expect(pair.eventsA == [.channelClosed(dlci: 4, reason: "refused"), .sessionClosed(reason: "closed")])
        #expect(pair.eventsB == [.sessionClosed(reason: "closed by the device")])
        #expect(pair.framesFromB.filter { $0.kind == .dm }.map(\.dlci) == [4])   // DM answers the PN
        #expect(pair.framesFromA.last?.encoded == [0x03, 0x53, 0x01, 0xFD])      // DISC on DLCI 0
    }

    @Test func testSABMWithoutPNIsAcceptedForAListenedChannelAndRefusedOtherwise() throws {
        var session = RFCOMMScript.openResponder(listen: [1])
        let accepted = session.received(RFCOMMScript.frame(.sabm, dlci: 2, fromInitiator: true), now: 1)
        let frames = RFCOMMScript.frames(accepted)
        #expect(frames.first?.kind == .ua)
        #expect(RFCOMMScript.messages(accepted) == [.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil))])
        for (dlci, why) in [(UInt8(4), "not listened"), (3, "wrong direction bit"), (62, "reserved DLCI")] {
            let refused = RFCOMMScript.frames(session.received(RFCOMMScript.frame(.sabm, dlci: dlci, fromInitiator: true), now: 1))
            #expect(refused.map(\.kind) == [.dm], "\(why)")
            #expect(refused.first?.dlci == dlci, "\(why)")
        }
        // Without PN: N1 127, no credits; opens after the MSC exchange.
        var out = session.received(RFCOMMScript.message(.init(isCommand: false, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: true), now: 1)
        #expect(out == [])
        out = session.received(RFCOMMScript.message(.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: true), now: 1)
        #expect(RFCOMMScript.messages(out) == [.init(isCommand: false, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil))])
        #expect(out.last == .channelOpened(dlci: 2, frameSize: 127, incoming: true))
        let sent = session.send(dlci: 2, Array(repeating: 1, count: 300))
        #expect(RFCOMMScript.frames(sent).map(\.information.count) == [127, 127, 46])
        #expect(RFCOMMScript.frames(sent).allSatisfy { $0.credits == nil && !$0.pollFinal })
    }

    @Test func testDMAnsweringOurSABMIsARefusal() {
        var session = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = session.start(now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 0, fromInitiator: false), now: 0)
        _ = session.open(channel: 1, now: 0)
        _ = session.open(channel: 2, now: 0)
        let pn = RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, maximumFrameSize: 500, window: 7)
        _ = session.received(RFCOMMScript.message(.init(isCommand: false, content: .parameterNegotiation(pn)), fromInitiator: false), now: 0)
        #expect(session.received(RFCOMMScript.frame(.dm, dlci: 2, fromInitiator: false), now: 1) == [.channelClosed(dlci: 2, reason: "refused")])
        #expect(session.dlcis == [4])   // the other open goes on; DLCI 0 stays up for it
        #expect(session.isOpen)
        // A DM for DLCI 0 while it is up is a stray: counted.
        #expect(session.received(RFCOMMScript.frame(.dm, dlci: 0, fromInitiator: false), now: 1) == [])
        #expect(session.statistics.unexpectedResponses == 1)
        // A DM for DLCI 0 in answer to our SABM refuses the session and every pending open.
        var refused = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = refused.open(channel: 1, now: 0)
        #expect(refused.received(RFCOMMScript.frame(.dm, dlci: 0, fromInitiator: false), now: 1) == [.channelClosed(dlci: 2, reason: "refused"), .sessionClosed(reason: "refused")])
    }

    @Test func testTestEchoIsCutToThePeersMTU() {
        var session = RFCOMMScript.openResponder(peerMTU: 60)
        let big = Array(repeating: UInt8(0x33), count: 500)
        let out = session.received(RFCOMMScript.message(.init(isCommand: true, content: .test(big)), fromInitiator: true), now: 1)
        #expect(RFCOMMScript.messages(out) == [.init(isCommand: false, content: .test(Array(big.prefix(50))))])
        #expect(RFCOMMScript.frames(out).allSatisfy { $0.encoded.count <= 60 })
    }

    @Test func testDataArrivingBeforeTheMSCExchangeIsHeldThenDelivered() {
        var session = RFCOMMScript.openResponder(RFCOMMConfiguration(creditBasedFlowControl: false), listen: [1])
        _ = session.received(RFCOMMScript.frame(.sabm, dlci: 2, fromInitiator: true), now: 0)
        #expect(session.received(RFCOMMScript.data(dlci: 2, [1, 2, 3], fromInitiator: true), now: 0) == [])
        _ = session.received(RFCOMMScript.message(.init(isCommand: false, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: true), now: 0)
        let out = session.received(RFCOMMScript.message(.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: true), now: 0)
        #expect(Array(out.suffix(2)) == [.channelOpened(dlci: 2, frameSize: 127, incoming: true), .received(dlci: 2, [1, 2, 3])])
    }

    @Test func testPeerDISCClosesTheChannelAndOurCloseWaitsForUA() {
        let pair = RFCOMMPair()
        pair.connect(channels: [1, 2])
        pair.eventsA = []; pair.eventsB = []
        // B closes DLCI 4: A answers UA and reports "closed by the device".
        pair.absorb(pair.b.close(dlci: 4, now: 1), fromA: false)
        #expect(pair.eventsB == [])   // not before UA
        pair.settle()
        #expect(pair.eventsA == [.channelClosed(dlci: 4, reason: "closed by the device")])
        #expect(pair.eventsB == [.channelClosed(dlci: 4, reason: "closed")])
        #expect(pair.a.isOpen)   // DLCI 2 is still there
        // A closes the last one: DISC, UA, then DISC on DLCI 0 and both sessions end.
        pair.absorb(pair.a.close(dlci: 2, now: 2), fromA: true)
        pair.settle()
        #expect(Array(pair.eventsA.suffix(2)) == [.channelClosed(dlci: 2, reason: "closed"), .sessionClosed(reason: "closed")])
        #expect(Array(pair.eventsB.suffix(2)) == [.channelClosed(dlci: 2, reason: "closed by the device"), .sessionClosed(reason: "closed by the device")])
        #expect(!pair.a.isOpen)
        #expect(!pair.b.isOpen)
        // A closed session answers nothing and opens nothing.
        #expect(pair.a.open(channel: 1, now: 3) == [.channelClosed(dlci: 2, reason: "the RFCOMM session is closed")])
        #expect(pair.b.received(RFCOMMScript.frame(.sabm, dlci: 2, fromInitiator: true), now: 3) == [])
    }

    @Test func testTimersT1AndT2() {
        // SABM on DLCI 0 never answered.
        var session = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = session.start(now: 0)
        _ = session.open(channel: 1, now: 0)
        #expect(session.tick(now: 19.9) == [])
        #expect(session.tick(now: 20) == [.channelClosed(dlci: 2, reason: "the device did not answer SABM within 20 s"),
                                               .sessionClosed(reason: "the device did not answer SABM within 20 s")])
        #expect(session.tick(now: 40) == [])
        // PN never answered: the session fails (T2).
        session = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = session.start(now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 0, fromInitiator: false), now: 1)
        _ = session.open(channel: 1, now: 1)
        #expect(session.tick(now: 20.9) == [])
        #expect(session.tick(now: 21).last == .sessionClosed(reason: "the device did not answer PN within 20 s"))
        // SABM on a DLC never answered: that DLC closes (T1), then the idle session.
        session = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = session.start(now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 0, fromInitiator: false), now: 0)
        _ = session.open(channel: 1, now: 0)
        let pn = RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, maximumFrameSize: 500, window: 7)
        let afterPN = session.received(RFCOMMScript.message(.init(isCommand: false, content: .parameterNegotiation(pn)), fromInitiator: false), now: 5)
        #expect(RFCOMMScript.frames(afterPN).map(\.kind) == [.sabm])
        #expect(session.tick(now: 24.9) == [])
        let expired = session.tick(now: 25)
        #expect(expired.first == .channelClosed(dlci: 2, reason: "the device did not answer SABM within 20 s"))
        #expect(RFCOMMScript.frames(expired).map(\.kind) == [.disc])   // DISC on DLCI 0
        #expect(session.tick(now: 45) == [.sessionClosed(reason: "closed")])   // its UA never came either
    }

    @Test func testMSCNeverAnsweredFailsTheSessionButAMissingPeerMSCOnlyDelaysTheOpen() {
        var session = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = session.start(now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 0, fromInitiator: false), now: 0)
        _ = session.open(channel: 1, now: 0)
        let pn = RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, maximumFrameSize: 500, window: 7)
        _ = session.received(RFCOMMScript.message(.init(isCommand: false, content: .parameterNegotiation(pn)), fromInitiator: false), now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 2, fromInitiator: false), now: 0)
        var other = session
        // Our MSC answered, theirs never sent: open at T2 anyway.
        _ = session.received(RFCOMMScript.message(.init(isCommand: false, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: false), now: 1)
        #expect(session.tick(now: 19) == [])
        #expect(session.tick(now: 20) == [.channelOpened(dlci: 2, frameSize: 500, incoming: false)])
        // Our MSC never answered: the session fails.
        #expect(other.tick(now: 20).last == .sessionClosed(reason: "the device did not answer MSC within 20 s"))
    }

    @Test func testLowerLayerClosedClosesEveryChannel() {
        let pair = RFCOMMPair()
        pair.connect(channels: [1, 2])
        let out = pair.a.lowerLayerClosed(reason: "the link was lost")
        #expect(out == [.channelClosed(dlci: 2, reason: "the link was lost"), .channelClosed(dlci: 4, reason: "the link was lost"),
                             .sessionClosed(reason: "the link was lost")])
        #expect(pair.a.lowerLayerClosed(reason: "again") == [])
        #expect(pair.a.dlcis == [])
    }

    @Test func testTwoInitiatorsAndStrayFramesAreRefusedOrCounted() {
        let pair = RFCOMMPair()
        pair.connect(channels: [1])
        // SABM on DLCI 0 to the initiator: DM.
        #expect(RFCOMMScript.frames(pair.a.received(RFCOMMScript.frame(.sabm, dlci: 0, fromInitiator: false), now: 1)).map(\.kind) == [.dm])
        // DISC for a DLC that does not exist: DM; UIH for one: dropped and counted; stray UA: counted.
        #expect(RFCOMMScript.frames(pair.a.received(RFCOMMScript.frame(.disc, dlci: 8, fromInitiator: false), now: 1)).map(\.kind) == [.dm])
        #expect(pair.a.received(RFCOMMScript.data(dlci: 8, [1, 2], fromInitiator: false), now: 1) == [])
        #expect(pair.a.statistics.droppedFrames == 1)
        #expect(pair.a.received(RFCOMMScript.frame(.ua, dlci: 8, fromInitiator: false), now: 1) == [])
        #expect(pair.a.statistics.unexpectedResponses == 1)
    }

    @Test func testBadFCSAndMalformedFramesAreCountedAndDropped() {
        let pair = RFCOMMPair()
        pair.connect(channels: [1])
        var frame = RFCOMMScript.data(dlci: 2, [1, 2, 3], fromInitiator: false)
        frame[frame.count - 1] ^= 0x01
        #expect(pair.a.received(frame, now: 1) == [])
        #expect(pair.a.statistics.badFCS == 1)
        #expect(pair.a.received([0x0B, 0xEF], now: 1) == [])
        #expect(pair.a.received([], now: 1) == [])
        #expect(pair.a.statistics.malformed == 2)
        // A good UIH on DLCI 0 whose message does not parse.
        #expect(pair.a.received(RFCOMMFrame(kind: .uih, dlci: 0, commandResponse: false, information: [0x83, 0x05, 1, 2]).encoded, now: 1) == [])
        #expect(pair.a.statistics.malformed == 3)
        #expect(pair.dataA[2] == nil)
        #expect(pair.a.isOpen)
    }

    @Test func testJunkAndFlippedBitsNeverCrashASession() {
        var random = TestRandom(seed: 11)
        for round in 0..<200 {
            let pair = RFCOMMPair()
            pair.connect(channels: [1])
            for _ in 0..<50 {
                var bytes: [UInt8]
                if random.next() % 2 == 0 {
                    bytes = random.bytes(Int(random.next() % 30))
                } else {
                    // A plausible frame with a valid FCS and random content.
                    let kinds = RFCOMMFrame.Kind.allCases
                    let kind = kinds[Int(random.next() % UInt64(kinds.count))]
                    let dlci = UInt8(random.next() % 8)
                    bytes = RFCOMMFrame(kind: kind, dlci: dlci, commandResponse: random.next() % 2 == 0,
                                        pollFinal: random.next() % 2 == 0, information: random.bytes(Int(random.next() % 12))).encoded
                }
                pair.absorb(pair.a.received(bytes, now: Double(round)), fromA: true)
                pair.absorb(pair.b.received(bytes, now: Double(round)), fromA: false)
                pair.settle()
            }
            pair.tick(Double(round) + 100)
            pair.settle()
        }
    }
}
