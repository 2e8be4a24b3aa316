import Testing
import ModemTestSupport
@testable import ModemBluetooth

/// Two L2CAP links joined back to back: frames one side transmits are queued for the other.
private struct LinkPair {
    var a: L2CAPLink
    var b: L2CAPLink
    var toA: [[UInt8]] = []
    var toB: [[UInt8]] = []
    var eventsA: [L2CAPAction] = []
    var eventsB: [L2CAPAction] = []

    init(a: L2CAPLink = L2CAPLink(), b: L2CAPLink = L2CAPLink()) {
        self.a = a
        self.b = b
    }

    mutating func fromA(_ actions: [L2CAPAction]) {
        for action in actions {
            if case .transmit(let frame) = action { toB.append(frame) } else { eventsA.append(action) }
        }
    }

    mutating func fromB(_ actions: [L2CAPAction]) {
        for action in actions {
            if case .transmit(let frame) = action { toA.append(frame) } else { eventsB.append(action) }
        }
    }

    /// Delivers one frame each way in turn (so requests cross in flight) until both queues are empty.
    mutating func pump(now: Double = 0) {
        var rounds = 0
        while !(toA.isEmpty && toB.isEmpty) && rounds < 1000 {
            rounds += 1
            if !toB.isEmpty { let frame = toB.removeFirst(); fromB(b.received(frame, now: now)) }
            if !toA.isEmpty { let frame = toA.removeFirst(); fromA(a.received(frame, now: now)) }
        }
    }
}

/// A signalling C-frame carrying one command.
private func cframe(_ signal: L2CAPSignal, id: UInt8) -> [UInt8] {
    L2CAPFrame(channelID: 1, payload: L2CAPSignalCommand(signal, identifier: id).bytes).bytes
}

/// The signalling commands inside transmitted frames.
private func commands(_ actions: [L2CAPAction]) -> [(UInt8, L2CAPSignal)] {
    actions.flatMap { action -> [(UInt8, L2CAPSignal)] in
        guard case .transmit(let bytes) = action, let frame = try? L2CAPFrame(decoding: bytes), frame.channelID == 1 else { return [] }
        let split = L2CAPSignalCommand.split(frame.payload)
        return split.commands.compactMap { command in (try? command.decoded()).map { (command.identifier, $0) } }
    }
}

private func events(_ actions: [L2CAPAction]) -> [L2CAPAction] {
    actions.filter { if case .transmit = $0 { return false } else { return true } }
}

@Suite struct L2CAPTests {
    // MARK: codecs

    @Test func testFrameRoundTripAndLyingLengths() throws {
        let frame = L2CAPFrame(channelID: 0x0040, payload: [1, 2, 3])
        #expect(frame.bytes == [3, 0, 0x40, 0, 1, 2, 3])
        #expect(try L2CAPFrame(decoding: frame.bytes) == frame)
        #expect(throws: (any Error).self) { _ = try L2CAPFrame(decoding: [4, 0, 0x40, 0, 1, 2, 3]) }      // says 4, has 3
        #expect(throws: (any Error).self) { _ = try L2CAPFrame(decoding: [2, 0, 0x40, 0, 1, 2, 3]) }      // says 2, has 3
        for length in 0..<frame.bytes.count {
            #expect(throws: (any Error).self, "prefix \(length)") { _ = try L2CAPFrame(decoding: Array(frame.bytes.prefix(length))) }
        }
        #expect(try L2CAPFrame(decoding: [0, 0, 1, 0]).payload == [])
    }

    @Test func testSignalsRoundTripAndMatchTheSpecLayout() throws {
        let signals: [L2CAPSignal] = [
            .commandReject(reason: 2, data: [0x40, 0, 0x41, 0]),
            .connectionRequest(psm: 3, sourceCID: 0x0041),
            .connectionResponse(destinationCID: 0x0040, sourceCID: 0x0041, result: 0, status: 0),
            .configurationRequest(destinationCID: 0x0040, continuation: true, options: [.mtu(1691), L2CAPConfigurationOption(type: 0x82, value: [0xFF, 0xFF])]),
            .configurationResponse(sourceCID: 0x0041, continuation: false, result: 3, options: [L2CAPConfigurationOption(type: 0x10, value: [])]),
            .disconnectionRequest(destinationCID: 0x0040, sourceCID: 0x0041),
            .disconnectionResponse(destinationCID: 0x0040, sourceCID: 0x0041),
            .echoRequest([9, 8]), .echoResponse([]),
            .informationRequest(type: 2),
            .informationResponse(type: 2, result: 0, data: [0x80, 0, 0, 0]),
            .unknown(code: 0x20, data: [1]),
        ]
        for (index, signal) in signals.enumerated() {
            let command = L2CAPSignalCommand(signal, identifier: UInt8(index + 1))
            #expect(try command.decoded() == signal)
            #expect((Int(command.bytes[2]) | Int(command.bytes[3]) << 8) == (command.bytes.count - 4))
        }
        // Several commands in one frame.
        let joined = L2CAPSignalCommand.join(signals.enumerated().map { L2CAPSignalCommand($1, identifier: UInt8($0 + 1)) })
        let split = L2CAPSignalCommand.split(joined)
        #expect(split.damage == nil)
        #expect(try split.commands.map { try $0.decoded() } == signals)
        // Spec layout of a Configuration Request (Vol 3 Part A §4.4): code 04, id, length 8, DCID, flags, MTU option.
        #expect(L2CAPSignalCommand(.configurationRequest(destinationCID: 0x0040, continuation: false, options: [.mtu(672)]), identifier: 7).bytes == [0x04, 0x07, 0x08, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x02, 0xA0, 0x02])
        // Truncation at every length: never a crash; a cut inside a command is reported.
        for length in 0..<joined.count {
            let cut = L2CAPSignalCommand.split(Array(joined.prefix(length)))
            #expect(cut.commands.count <= signals.count)
            for command in cut.commands { _ = try? command.decoded() }
        }
        #expect(L2CAPSignalCommand.split([0x08, 0x01, 0x05, 0x00, 1, 2]).damage != nil)
        #expect(throws: (any Error).self) { _ = try L2CAPSignal(code: 0x02, data: [3, 0, 0x40]) }           // short Connection Request
        #expect(throws: (any Error).self) { _ = try L2CAPSignal(code: 0x04, data: [0x40, 0, 0, 0, 1, 2, 0]) } // option cut short
    }

    @Test func testRandomBytesNeverCrashTheLink() {
        var random = TestRandom(seed: 0x12CA)
        var link = L2CAPLink()
        link.listen(psm: 1)
        var now = 0.0
        for round in 0..<3000 {
            let length = Int.random(in: 0...40, using: &random)
            var bytes = random.bytes(length)
            if round % 2 == 0, bytes.count >= 4 {
                // A well-framed C-frame with random commands inside, to reach the handlers.
                bytes = L2CAPFrame(channelID: 1, payload: Array(bytes[4...])).bytes
                if bytes.count > 4 { bytes[4] = UInt8.random(in: 0...0x0C, using: &random) }
            }
            _ = link.received(bytes, now: now)
            now += 0.5
            _ = link.tick(now: now)
        }
        #expect((link.statistics.malformedFrames + link.statistics.malformedCommands + link.statistics.unknownCIDFrames) > 0)
    }

    // MARK: two links

    @Test func testConnectConfiguresAndOpensBothEndsAndCarriesData() throws {
        var pair = LinkPair(a: L2CAPLink(localMTU: 700), b: L2CAPLink())
        pair.b.listen(psm: 3)
        let (cid, actions) = pair.a.connect(psm: 3, now: 0)
        #expect(cid == 0x0040)
        pair.fromA(actions)
        pair.pump()
        #expect(pair.eventsA == [.opened(cid: 0x0040, psm: 3, peerMTU: 1691, incoming: false)])
        #expect(pair.eventsB == [.opened(cid: 0x0040, psm: 3, peerMTU: 700, incoming: true)])
        pair.eventsA = []; pair.eventsB = []
        pair.fromA(pair.a.send(cid: 0x0040, [1, 2, 3]))
        pair.fromB(pair.b.send(cid: 0x0040, Array(repeating: 7, count: 700)))
        pair.pump()
        #expect(pair.eventsB == [.received(cid: 0x0040, [1, 2, 3])])
        #expect(pair.eventsA == [.received(cid: 0x0040, Array(repeating: 7, count: 700))])
        // A second channel gets the next CID at both ends.
        let second = pair.a.connect(psm: 3, now: 1)
        #expect(second.cid == 0x0041)
        pair.fromA(second.actions)
        pair.pump()
        #expect(pair.a.isOpen(cid: 0x0041))
        #expect(pair.b.isOpen(cid: 0x0041))
    }

    @Test func testUnregisteredPSMIsRefusedWithResult2() {
        var a = L2CAPLink(), b = L2CAPLink()
        b.listen(psm: 1)
        let (cid, request) = a.connect(psm: 3, now: 0)
        guard case .transmit(let frame) = request[0] else { Issue.record(); return }
        let answer = b.received(frame, now: 0)
        #expect(commands(answer).map(\.1) == [.connectionResponse(destinationCID: 0, sourceCID: cid, result: 2, status: 0)])
        guard case .transmit(let response) = answer[0] else { Issue.record(); return }
        #expect(a.received(response, now: 0) == [.closed(cid: cid, reason: "L2CAP connection refused: PSM not supported")])
        #expect(a.channelIDs.isEmpty)
    }

    @Test func testCrossingConfigurationRequests() throws {
        var a = L2CAPLink(), b = L2CAPLink(localMTU: 1000)
        b.listen(psm: 3)
        let (cid, connect) = a.connect(psm: 3, now: 0)
        guard case .transmit(let request) = connect[0] else { Issue.record(); return }
        let bAnswer = b.received(request, now: 0)
        // B answers and sends its own Configuration Request at once.
        #expect(commands(bAnswer).count == 2)
        guard case .transmit(let connectionResponse) = bAnswer[0], case .transmit(let bConfig) = bAnswer[1] else { Issue.record(); return }
        let aConfigActions = a.received(connectionResponse, now: 0)
        guard case .transmit(let aConfig) = aConfigActions[0] else { Issue.record(); return }
        #expect(commands(aConfigActions).map(\.1) == [.configurationRequest(destinationCID: 0x0040, continuation: false, options: [.mtu(1691)])])
        // Both requests are in flight now; each side answers the other's before hearing its own answer.
        let aAnswer = a.received(bConfig, now: 0)
        let bAnswer2 = b.received(aConfig, now: 0)
        #expect(events(aAnswer) == [])
        #expect(events(bAnswer2) == [])
        guard case .transmit(let aResponse) = aAnswer[0], case .transmit(let bResponse) = bAnswer2[0] else { Issue.record(); return }
        #expect(a.received(bResponse, now: 0) == [.opened(cid: cid, psm: 3, peerMTU: 1000, incoming: false)])
        #expect(b.received(aResponse, now: 0) == [.opened(cid: 0x0040, psm: 3, peerMTU: 1691, incoming: true)])
    }

    /// Connects `link` (listening on PSM 3) from a hand-driven peer whose CID is 0x0070; returns B's CID
    /// and the identifier of B's configuration request.
    private func acceptFromHandPeer(_ link: inout L2CAPLink) throws -> (cid: UInt16, configID: UInt8) {
        link.listen(psm: 3)
        let answer = commands(link.received(cframe(.connectionRequest(psm: 3, sourceCID: 0x0070), id: 5), now: 0))
        guard answer.count == 2, case .connectionResponse(let cid, 0x0070, 0, 0) = answer[0].1,
              case .configurationRequest(0x0070, false, [.mtu(1691)]) = answer[1].1 else {
            Issue.record("unexpected answer \(answer)"); return (0, 0)
        }
        return (cid, answer[1].0)
    }

    @Test func testContinuationFlagInRequestsAndResponses() throws {
        var b = L2CAPLink()
        let (cid, configID) = try acceptFromHandPeer(&b)
        // The peer's request in two parts: the first is answered with C set and no options.
        let first = b.received(cframe(.configurationRequest(destinationCID: cid, continuation: true, options: [.mtu(100)]), id: 6), now: 0)
        #expect(commands(first).map(\.1) == [.configurationResponse(sourceCID: 0x0070, continuation: true, result: 0, options: [])])
        let hint = L2CAPConfigurationOption(type: 0x80 | 0x33, value: [1, 2])
        let second = b.received(cframe(.configurationRequest(destinationCID: cid, continuation: false, options: [hint]), id: 7), now: 0)
        #expect(commands(second).map(\.1) == [.configurationResponse(sourceCID: 0x0070, continuation: false, result: 0, options: [])])
        #expect(commands(second).map(\.0) == [7])
        // Our request answered in two parts: B asks for the rest with an empty request.
        let partial = b.received(cframe(.configurationResponse(sourceCID: cid, continuation: true, result: 0, options: []), id: configID), now: 0)
        let more = commands(partial)
        #expect(more.map(\.1) == [.configurationRequest(destinationCID: 0x0070, continuation: false, options: [])])
        #expect(!b.isOpen(cid: cid))
        let done = b.received(cframe(.configurationResponse(sourceCID: cid, continuation: false, result: 0, options: []), id: more[0].0), now: 0)
        #expect(done == [.opened(cid: cid, psm: 3, peerMTU: 100, incoming: true)])
    }

    @Test func testUnknownOptionsAndSmallMTUAreAnsweredNotAccepted() throws {
        var b = L2CAPLink()
        let (cid, configID) = try acceptFromHandPeer(&b)
        _ = b.received(cframe(.configurationResponse(sourceCID: cid, continuation: false, result: 0, options: []), id: configID), now: 0)
        let unknown = L2CAPConfigurationOption(type: 0x10, value: [0xAA])
        let answer = b.received(cframe(.configurationRequest(destinationCID: cid, continuation: false, options: [.mtu(600), unknown]), id: 9), now: 0)
        #expect(commands(answer).map(\.1) == [.configurationResponse(sourceCID: 0x0070, continuation: false, result: 3, options: [unknown])])
        #expect(!b.isOpen(cid: cid))
        let small = b.received(cframe(.configurationRequest(destinationCID: cid, continuation: false, options: [.mtu(30)]), id: 10), now: 0)
        #expect(commands(small).map(\.1) == [.configurationResponse(sourceCID: 0x0070, continuation: false, result: 1, options: [.mtu(48)])])
        let ertm = L2CAPConfigurationOption(type: 0x04, value: [3, 1, 0, 0, 0, 0, 0, 0, 0])
        let mode = b.received(cframe(.configurationRequest(destinationCID: cid, continuation: false, options: [ertm]), id: 11), now: 0)
        #expect(commands(mode).map { if case .configurationResponse(_, _, let result, _) = $0.1 { return result } else { return UInt16(99) } } == [UInt16(1)])
        // Known but irrelevant options (flush timeout) pass.
        let good = b.received(cframe(.configurationRequest(destinationCID: cid, continuation: false, options: [.mtu(600), L2CAPConfigurationOption(type: 2, value: [0xFF, 0xFF])]), id: 12), now: 0)
        #expect(events(good) == [.opened(cid: cid, psm: 3, peerMTU: 600, incoming: true)])
        // A counter-offer to our MTU is taken and asked again.
        var c = L2CAPLink()
        let (cid2, configID2) = try acceptFromHandPeer(&c)
        let retry = commands(c.received(cframe(.configurationResponse(sourceCID: cid2, continuation: false, result: 1, options: [.mtu(512)]), id: configID2), now: 0))
        #expect(retry.map(\.1) == [.configurationRequest(destinationCID: 0x0070, continuation: false, options: [.mtu(512)])])
        // "Unknown options" to our request ends the channel.
        let refused = c.received(cframe(.configurationResponse(sourceCID: cid2, continuation: false, result: 3, options: [.mtu(512)]), id: retry[0].0), now: 0)
        #expect(commands(refused).map(\.1) == [.disconnectionRequest(destinationCID: 0x0070, sourceCID: cid2)])
    }

    @Test func testEchoAndInformation() throws {
        var pair = LinkPair()
        pair.fromA(pair.a.echo([1, 2, 3], now: 0))
        pair.fromA(pair.a.requestInformation(type: 2, now: 0))
        pair.fromA(pair.a.requestInformation(type: 3, now: 0))
        pair.fromA(pair.a.requestInformation(type: 1, now: 0))
        pair.pump()
        #expect(pair.a.echoResponses == [[1, 2, 3]])
        #expect(pair.a.information[2] == L2CAPInformation(result: 0, data: [0x80, 0, 0, 0]))
        #expect(pair.a.information[3] == L2CAPInformation(result: 0, data: [0x02, 0, 0, 0, 0, 0, 0, 0]))
        #expect(pair.a.information[1] == L2CAPInformation(result: 1, data: []))
        #expect(pair.eventsA == [])
        #expect(pair.eventsB == [])
        // An echo response nobody asked for is ignored.
        _ = pair.a.received(cframe(.echoResponse([9]), id: 200), now: 0)
        #expect(pair.a.echoResponses == [[1, 2, 3]])
    }

    @Test func testCommandRejects() throws {
        var b = L2CAPLink()
        // Unknown request code: rejected "not understood" with the same identifier.
        let unknown = b.received(cframe(.unknown(code: 0x20, data: [1, 2]), id: 0x33), now: 0)
        #expect(commands(unknown).map(\.0) == [0x33])
        #expect(commands(unknown).map(\.1) == [.commandReject(reason: 0, data: [])])
        // An unknown response code, a Command Reject, identifier 0: never answered.
        #expect(commands(b.received(cframe(.unknown(code: 0x13, data: []), id: 4), now: 0)).count == 0)
        #expect(commands(b.received(cframe(.commandReject(reason: 0, data: []), id: 4), now: 0)).count == 0)
        #expect(commands(b.received(cframe(.echoRequest([]), id: 0), now: 0)).count == 0)
        // A malformed request: not understood.
        let short = L2CAPFrame(channelID: 1, payload: L2CAPSignalCommand(code: 0x02, identifier: 8, data: [1]).bytes).bytes
        #expect(commands(b.received(short, now: 0)).map(\.1) == [.commandReject(reason: 0, data: [])])
        // Configuration or disconnection of a CID we do not have: invalid CID.
        #expect(commands(b.received(cframe(.configurationRequest(destinationCID: 0x0099, continuation: false, options: []), id: 9), now: 0)).map(\.1) == [.commandReject(reason: 2, data: [0x99, 0, 0, 0])])
        #expect(commands(b.received(cframe(.disconnectionRequest(destinationCID: 0x0099, sourceCID: 0x0077), id: 10), now: 0)).map(\.1) == [.commandReject(reason: 2, data: [0x99, 0, 0x77, 0])])
        // A signalling frame above our MTUsig: reason 1 with the MTU, identifier of the first command.
        let big = L2CAPFrame(channelID: 1, payload: L2CAPSignalCommand(.echoRequest(Array(repeating: 0, count: 700)), identifier: 0x44).bytes).bytes
        let tooBig = b.received(big, now: 0)
        #expect(commands(tooBig).map(\.0) == [0x44])
        #expect(commands(tooBig).map(\.1) == [.commandReject(reason: 1, data: [0xA0, 0x02])])
        #expect(b.statistics.commandRejectsSent == 5)
        // Our own connect rejected by the peer: the attempt closes.
        var a = L2CAPLink()
        let (cid, request) = a.connect(psm: 3, now: 0)
        let id = commands(request)[0].0
        let closed = a.received(cframe(.commandReject(reason: 0, data: []), id: id), now: 0)
        #expect(closed == [.closed(cid: cid, reason: "L2CAP request rejected by the peer (reason 0x0000)")])
        #expect(a.statistics.commandRejectsReceived == 1)
    }

    private func openPair() -> LinkPair {
        var pair = LinkPair()
        pair.b.listen(psm: 3)
        pair.fromA(pair.a.connect(psm: 3, now: 0).actions)
        pair.pump()
        pair.eventsA = []; pair.eventsB = []
        return pair
    }

    @Test func testDisconnectEachWay() {
        var pair = openPair()
        pair.fromA(pair.a.disconnect(cid: 0x0040, now: 1))
        #expect(pair.eventsA == [])  // closed only once answered
        pair.pump()
        #expect(pair.eventsA == [.closed(cid: 0x0040, reason: "closed locally")])
        #expect(pair.eventsB == [.closed(cid: 0x0040, reason: "the peer closed the L2CAP channel")])
        // Data for the closed channel is dropped and counted.
        let late = pair.b.received(L2CAPFrame(channelID: 0x0040, payload: [1]).bytes, now: 2)
        #expect(late.count == 1)
        #expect(pair.b.statistics.unknownCIDFrames == 1)
        #expect(pair.b.send(cid: 0x0040, [1]).count == 1)
        #expect(pair.b.statistics.refusedSends == 1)

        var other = openPair()
        other.fromB(other.b.disconnect(cid: 0x0040, now: 1))
        other.pump()
        #expect(other.eventsB == [.closed(cid: 0x0040, reason: "closed locally")])
        #expect(other.eventsA == [.closed(cid: 0x0040, reason: "the peer closed the L2CAP channel")])
        #expect(other.a.channelIDs.isEmpty)
        #expect(other.b.channelIDs.isEmpty)
    }

    @Test func testRTXTimeouts() throws {
        // No answer to the Connection Request.
        var a = L2CAPLink()
        let (cid, _) = a.connect(psm: 3, now: 100)
        #expect(a.tick(now: 109.9) == [])
        #expect(a.tick(now: 110) == [.closed(cid: cid, reason: "no answer to the L2CAP connection request")])
        #expect(a.tick(now: 200) == [])
        #expect(a.statistics.timeouts == 1)
        // No answer to the Disconnection Request: closed after RTX anyway.
        var pair = openPair()
        _ = pair.a.disconnect(cid: 0x0040, now: 5)
        #expect(pair.a.tick(now: 14) == [])
        #expect(pair.a.tick(now: 15) == [.closed(cid: 0x0040, reason: "closed locally")])
        // No answer to our Configuration Request.
        var b = L2CAPLink()
        _ = try? acceptFromHandPeer(&b)
        let expired = b.tick(now: 10)
        #expect(events(expired) == [.closed(cid: 0x0040, reason: "no answer to the L2CAP configuration request")])
        #expect(commands(expired).map(\.1) == [.disconnectionRequest(destinationCID: 0x0070, sourceCID: 0x0040)])
        // An echo nobody answers is forgotten without closing anything.
        var c = L2CAPLink()
        _ = c.echo([1], now: 0)
        #expect(c.tick(now: 10) == [])
        #expect(c.statistics.timeouts == 1)
    }

    @Test func testLinkLostClosesEveryChannel() {
        var pair = openPair()
        pair.fromB(pair.b.connect(psm: 3, now: 0).actions)  // A does not listen: refused
        pair.pump()
        #expect(pair.eventsB == [.closed(cid: 0x0041, reason: "L2CAP connection refused: PSM not supported")])
        pair.a.listen(psm: 1)
        pair.fromB(pair.b.connect(psm: 1, now: 0).actions)
        pair.pump()
        let pending = pair.a.connect(psm: 3, now: 0)   // still waiting for its answer
        #expect(pair.a.linkLost() == [.closed(cid: 0x0040, reason: "the ACL link was lost"),
                                            .closed(cid: 0x0041, reason: "the ACL link was lost"),
                                            .closed(cid: pending.cid, reason: "the ACL link was lost")])
        #expect(pair.a.channelIDs.isEmpty)
        #expect(pair.a.tick(now: 100) == [])
    }

    @Test func testSendRefusesSDUsAboveThePeerMTU() {
        var pair = LinkPair(a: L2CAPLink(), b: L2CAPLink(localMTU: 48))
        pair.b.listen(psm: 3)
        pair.fromA(pair.a.connect(psm: 3, now: 0).actions)
        pair.pump()
        #expect(pair.a.peerMTU(cid: 0x0040) == 48)
        let fits = pair.a.send(cid: 0x0040, Array(repeating: 1, count: 48))
        #expect(fits == [.transmit(L2CAPFrame(channelID: 0x0040, payload: Array(repeating: 1, count: 48)).bytes)])
        let tooBig = pair.a.send(cid: 0x0040, Array(repeating: 1, count: 49))
        #expect(tooBig == [.damaged("L2CAP send on CID 0x0040 refused: 49 bytes exceed the peer's MTU 48")])
        #expect(pair.a.statistics.refusedSends == 1)
    }

    @Test func testLateSuccessForAnAbandonedConnectIsDisconnected() {
        var a = L2CAPLink(), b = L2CAPLink()
        b.listen(psm: 3)
        let (cid, request) = a.connect(psm: 3, now: 0)
        #expect(a.disconnect(cid: cid, now: 0) == [.closed(cid: cid, reason: "closed locally before the peer answered")])
        guard case .transmit(let frame) = request[0], case .transmit(let response) = b.received(frame, now: 0)[0] else { Issue.record(); return }
        #expect(commands(a.received(response, now: 0)).map(\.1) == [.disconnectionRequest(destinationCID: 0x0040, sourceCID: cid)])
    }
}
