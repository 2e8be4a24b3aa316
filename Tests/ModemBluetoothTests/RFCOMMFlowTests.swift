import Testing
import ModemTestSupport
@testable import ModemBluetooth

/// Data over RFCOMM: credits, flow control, several DLCs, the credit timeout.
@Suite struct RFCOMMFlowTests {
    /// Sends `payloads` (per side, per DLCI) in random chunks, delivering frames in random batches
    /// and ticking the clock now and then, until everything arrived.
    private func exchange(_ pair: RFCOMMPair, a payloadsA: [UInt8: [UInt8]], b payloadsB: [UInt8: [UInt8]], seed: UInt64,
                          file: StaticString = #filePath, line: UInt = #line) {
        var random = TestRandom(seed: seed)
        var offsetA = payloadsA.mapValues { _ in 0 }
        var offsetB = payloadsB.mapValues { _ in 0 }
        var steps = 0
        func done() -> Bool {
            offsetA.allSatisfy { $0.value == payloadsA[$0.key]!.count } && offsetB.allSatisfy { $0.value == payloadsB[$0.key]!.count }
        }
        while !done() || !pair.toA.isEmpty || !pair.toB.isEmpty {
            steps += 1
            guard steps < 200_000 else { Issue.record("no progress (deadlock?)"); return }
            switch random.next() % 5 {
            case 0:
                for (dlci, payload) in payloadsA.sorted(by: { $0.key < $1.key }) where offsetA[dlci]! < payload.count {
                    let n = min(payload.count - offsetA[dlci]!, 1 + Int(random.next() % 3000))
                    pair.absorb(pair.a.send(dlci: dlci, Array(payload[offsetA[dlci]!..<offsetA[dlci]! + n])), fromA: true)
                    offsetA[dlci]! += n
                }
            case 1:
                for (dlci, payload) in payloadsB.sorted(by: { $0.key < $1.key }) where offsetB[dlci]! < payload.count {
                    let n = min(payload.count - offsetB[dlci]!, 1 + Int(random.next() % 3000))
                    pair.absorb(pair.b.send(dlci: dlci, Array(payload[offsetB[dlci]!..<offsetB[dlci]! + n])), fromA: false)
                    offsetB[dlci]! += n
                }
            case 2:
                pair.deliver(toB: true, count: 1 + Int(random.next() % 8))
            case 3:
                pair.deliver(toB: false, count: 1 + Int(random.next() % 8))
            default:
                pair.tick(pair.now + 0.01)
            }
        }
    }

    @Test func testHundredKilobytesBothWaysWithRandomChunking() {
        var random = TestRandom(seed: 1)
        let up = random.bytes(100_000)
        let down = random.bytes(100_000)
        for (mtu, seed) in [(1691, UInt64(5)), (100, 6), (48, 7)] {
            let pair = RFCOMMPair(mtuA: mtu, mtuB: mtu)
            pair.connect(channels: [1])
            exchange(pair, a: [2: up], b: [2: down], seed: seed)
            #expect(pair.dataB[2] == up, "MTU \(mtu)")
            #expect(pair.dataA[2] == down, "MTU \(mtu)")
            #expect(pair.sentA[2] == up.count)
            #expect(pair.sentB[2] == down.count)
            #expect(pair.a.queuedBytes(dlci: 2) == 0)
            #expect(pair.a.statistics.creditViolations == 0)
            #expect(pair.b.statistics.creditViolations == 0)
            #expect(pair.a.statistics.bytesSent == up.count)
            #expect(pair.b.statistics.bytesReceived == up.count)
            #expect((pair.mostCreditsA[2] ?? 0) <= 32, "A never held more than the target")
            let frameSize = min(1000, mtu - 6)
            #expect(pair.framesFromA.allSatisfy { $0.information.count <= frameSize && $0.encoded.count <= mtu })
        }
    }

    @Test func testResponderGrantingOneCreditAtATimeDoesNotDeadlock() {
        var random = TestRandom(seed: 2)
        let up = random.bytes(100_000)
        let down = random.bytes(100_000)
        let pair = RFCOMMPair(b: RFCOMMConfiguration(initialCredits: 1, creditTarget: 1))
        pair.connect(channels: [1])
        #expect(pair.a.sendCredits(dlci: 2) == 1)
        exchange(pair, a: [2: up], b: [2: down], seed: 9)
        #expect(pair.dataB[2] == up)
        #expect(pair.dataA[2] == down)
        #expect(pair.mostCreditsA[2] == 1, "A never held more than one credit")
        let grants = pair.framesFromB.filter { $0.dlci == 2 }.compactMap(\.credits)
        #expect(!grants.isEmpty)
        #expect(grants.allSatisfy { $0 == 1 })
        #expect(pair.b.statistics.creditViolations == 0)
        #expect(pair.a.statistics.creditViolations == 0)
        // One data frame per credit: at least 100 frames of at most 1000 bytes each.
        #expect(pair.framesFromA.filter { $0.dlci == 2 && !$0.information.isEmpty }.count >= 100)
    }

    @Test func testTwoChannelsKeepTheirOwnCreditsAndOneClosesWhileTheOtherRuns() {
        var random = TestRandom(seed: 3)
        let pair = RFCOMMPair(b: RFCOMMConfiguration(initialCredits: 2, creditTarget: 4))
        pair.connect(channels: [1, 2])
        #expect(pair.eventsA == [.channelOpened(dlci: 2, frameSize: 1000, incoming: false),
                                      .channelOpened(dlci: 4, frameSize: 1000, incoming: false)])
        #expect(pair.a.sendCredits(dlci: 2) == 4)
        #expect(pair.a.sendCredits(dlci: 4) == 4)
        // Three frames on DLCI 2 only (not delivered yet): its credits go, DLCI 4's stay.
        pair.absorb(pair.a.send(dlci: 2, random.bytes(2500)), fromA: true)
        #expect(pair.a.sendCredits(dlci: 2) == 1)
        #expect(pair.a.sendCredits(dlci: 4) == 4)
        #expect(pair.b.peerCredits(dlci: 2) == 4)
        pair.settle()
        // B saw A's credits fall to 2 (half of 4) after the second frame and granted 2; the third used one.
        #expect(pair.a.sendCredits(dlci: 2) == 3)
        #expect(pair.b.peerCredits(dlci: 2) == 3)
        #expect(pair.framesFromB.filter { $0.dlci == 2 }.compactMap(\.credits).last == 2)
        #expect(pair.a.sendCredits(dlci: 4) == 4)

        // Both run; DLCI 2 is closed by A half way, DLCI 4 carries on to the end.
        let long = random.bytes(60_000)
        let short = random.bytes(60_000)
        var offset = 0
        var closed = false
        while offset < long.count || !pair.toA.isEmpty || !pair.toB.isEmpty {
            if offset < long.count {
                let n = min(long.count - offset, 1 + Int(random.next() % 2000))
                pair.absorb(pair.a.send(dlci: 4, Array(long[offset..<offset + n])), fromA: true)
                if !closed { pair.absorb(pair.a.send(dlci: 2, Array(short[offset..<offset + n])), fromA: true) }
                offset += n
            }
            if !closed, offset > 30_000 {
                pair.absorb(pair.a.close(dlci: 2, now: pair.now), fromA: true)
                #expect(pair.a.queuedBytes(dlci: 2) == 0, "closing drops what was queued")
                closed = true
            }
            pair.deliver(toB: true, count: 1 + Int(random.next() % 4))
            pair.deliver(toB: false, count: 1 + Int(random.next() % 4))
        }
        #expect(pair.dataB[4] == long)
        #expect(pair.eventsA.suffix(1) == [.channelClosed(dlci: 2, reason: "closed")])
        #expect(pair.eventsB.suffix(1) == [.channelClosed(dlci: 2, reason: "closed by the device")])
        #expect(pair.b.dlcis == [4])
        // What B got on DLCI 2 is a prefix of what A queued (nothing after the DISC).
        let got = pair.dataB[2] ?? []
        #expect(got.count > 2500 && got.count < 2500 + 32_000)
        #expect(Array(got.suffix(got.count - 2500)) == Array(short.prefix(got.count - 2500)))
        #expect(pair.a.isOpen)
        #expect((pair.a.statistics.creditViolations + pair.b.statistics.creditViolations) == 0)
    }

    @Test func testPeerThatNeverGrantsCreditsIsClosedAfterTheCreditTimeout() {
        let pair = RFCOMMPair(b: RFCOMMConfiguration(initialCredits: 0, creditTarget: 0))
        pair.connect(channels: [1])
        #expect(pair.a.sendCredits(dlci: 2) == 0)
        pair.tick(1)
        pair.absorb(pair.a.send(dlci: 2, Array(repeating: 7, count: 5000)), fromA: true)
        #expect(pair.toB == [], "no credit, no data")
        #expect(pair.a.queuedBytes(dlci: 2) == 5000)
        pair.tick(10.9)
        pair.settle()
        #expect(pair.eventsA == [.channelOpened(dlci: 2, frameSize: 1000, incoming: false)])
        pair.tick(11)
        pair.settle()
        #expect(pair.eventsA.dropFirst() == [.channelClosed(dlci: 2, reason: "the device granted no credits for 10 s"),
                                                  .sessionClosed(reason: "closed")])
        #expect(pair.eventsB.dropFirst() == [.channelClosed(dlci: 2, reason: "closed by the device"),
                                                  .sessionClosed(reason: "closed by the device")])
        #expect(pair.dataB[2] == nil)
    }

    @Test func testCreditsArrivingInTimeKeepTheChannel() {
        var session = RFCOMMSession(initiator: true, peerMTU: 1691, localMTU: 1691)
        _ = session.start(now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 0, fromInitiator: false), now: 0)
        _ = session.open(channel: 1, now: 0)
        let pn = RFCOMMParameters(dlci: 2, convergenceLayer: 0xE, maximumFrameSize: 100, window: 0)
        _ = session.received(RFCOMMScript.message(.init(isCommand: false, content: .parameterNegotiation(pn)), fromInitiator: false), now: 0)
        _ = session.received(RFCOMMScript.frame(.ua, dlci: 2, fromInitiator: false), now: 0)
        #expect(RFCOMMScript.frames(session.send(dlci: 2, Array(repeating: 1, count: 250))) == [])
        #expect(session.tick(now: 9) == [])
        // One credit at 9 s: one frame leaves, the clock restarts.
        let one = session.received(RFCOMMScript.data(dlci: 2, [], credits: 1, fromInitiator: false), now: 9)
        #expect(RFCOMMScript.frames(one).map(\.information.count) == [100])
        #expect(one.last == .sent(dlci: 2, bytes: 100))
        _ = session.tick(now: 9.5)
        #expect(RFCOMMScript.frames(session.tick(now: 18)) == [])
        #expect(RFCOMMScript.frames(session.tick(now: 19.5)).map(\.kind) == [.disc])
    }

    @Test func testWithoutCreditsMSCFlowControlAndFCoffStopTheSender() throws {
        let pair = RFCOMMPair(b: RFCOMMConfiguration(creditBasedFlowControl: false))
        pair.connect(channels: [1])
        let pnAnswer = pair.framesFromB.compactMap { try? RFCOMMMultiplexerMessage.decodeAll($0.information) }.joined()
            .first { if case .parameterNegotiation = $0.content { return true } else { return false } }
        guard case .parameterNegotiation(let answer)? = pnAnswer?.content else { Issue.record("no PN answer"); return }
        #expect(answer.convergenceLayer == 0, "B declines credit-based flow control")
        #expect(answer.window == 0)
        #expect(pair.eventsA == [.channelOpened(dlci: 2, frameSize: 1000, incoming: false)])
        // Without credits everything leaves at once, in frames of N1.
        pair.absorb(pair.a.send(dlci: 2, Array(repeating: 3, count: 2500)), fromA: true)
        #expect(pair.toB.count == 3)
        #expect(pair.framesFromA.suffix(3).allSatisfy { $0.credits == nil && !$0.pollFinal })
        pair.settle()
        // MSC with FC = 1 from B: A stops; FC = 0: it resumes.
        let fcOn = pair.a.received(RFCOMMScript.message(.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8F, breakSignal: nil)), fromInitiator: false), now: 1)
        #expect(RFCOMMScript.messages(fcOn) == [.init(isCommand: false, content: .modemStatus(dlci: 2, signals: 0x8F, breakSignal: nil))])
        #expect(pair.a.send(dlci: 2, [1, 2, 3]) == [])
        let resumed = pair.a.received(RFCOMMScript.message(.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)), fromInitiator: false), now: 1)
        #expect(RFCOMMScript.frames(resumed).filter { $0.dlci == 2 }.map(\.information) == [[1, 2, 3]])
        // FCoff stops every DLC; FCon resumes.
        let off = pair.a.received(RFCOMMScript.message(.init(isCommand: true, content: .flowControlOff), fromInitiator: false), now: 1)
        #expect(RFCOMMScript.messages(off) == [.init(isCommand: false, content: .flowControlOff)])
        #expect(pair.a.send(dlci: 2, [4, 5]) == [])
        #expect(pair.a.queuedBytes(dlci: 2) == 2)
        let on = pair.a.received(RFCOMMScript.message(.init(isCommand: true, content: .flowControlOn), fromInitiator: false), now: 1)
        #expect(RFCOMMScript.messages(on) == [.init(isCommand: false, content: .flowControlOn)])
        #expect(RFCOMMScript.frames(on).filter { $0.dlci == 2 }.map(\.information) == [[4, 5]])
        #expect(on.last == .sent(dlci: 2, bytes: 2))
    }

    @Test func testMSCFlowControlBitIsIgnoredOnACreditBasedChannel() {
        let pair = RFCOMMPair()
        pair.connect(channels: [1])
        _ = pair.a.received(RFCOMMScript.message(.init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8F, breakSignal: nil)), fromInitiator: false), now: 1)
        #expect(RFCOMMScript.frames(pair.a.send(dlci: 2, [9])).map(\.information) == [[9]])
    }
}
