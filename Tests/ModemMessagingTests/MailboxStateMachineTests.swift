import ModemMessaging
import Testing

/// Two mailbox machines joined by a wire of records, with no I/O (house style).
private struct Pair {
    var a: MailboxStateMachine
    var b: MailboxStateMachine
    /// Records in flight toward each side (0 = a, 1 = b).
    var wire: [[(UInt8, [UInt8])]] = [[], []]
    var events: [[MailboxEvent]] = [[], []]
    var delivered: [[(UInt32, [UInt8])]] = [[], []]
    var transmitted: [[Int: UInt32]] = [[:], [:]]
    var refused: [[Int: MailboxSendError]] = [[:], [:]]
    var closed = [false, false]
    var aborted = [false, false]
    var chunkRecordsSent = [0, 0]
    static let alice = PeerIdentity(publicKey: [UInt8](repeating: 1, count: 32), trustedName: "alice", claimedName: "alice")
    static let bob = PeerIdentity(publicKey: [UInt8](repeating: 2, count: 32), trustedName: "bob", claimedName: "bob")

    init(a: MailboxConfiguration = MailboxConfiguration(), b: MailboxConfiguration = MailboxConfiguration()) {
        self.a = MailboxStateMachine(configuration: a, peer: Self.bob, maximumRecordBody: 65_519, now: 0)
        self.b = MailboxStateMachine(configuration: b, peer: Self.alice, maximumRecordBody: 65_519, now: 0)
    }

    mutating func apply(_ actions: [MailboxAction], side: Int) {
        for action in actions {
            switch action {
            case .sendRecord(let kind, let body):
                if kind == MailboxRecordKind.chunk { chunkRecordsSent[side] += 1 }
                wire[1 - side].append((kind, body))
            case .event(let event): events[side].append(event)
            case .deliver(let seq, let chunk): delivered[side].append((seq, chunk))
            case .transmitted(let ticket, let seq): transmitted[side][ticket] = seq
            case .refused(let ticket, let error): refused[side][ticket] = error
            case .closeSession: closed[side] = true
            case .abort: aborted[side] = true
            }
        }
    }

    mutating func machine(_ side: Int, _ body: (inout MailboxStateMachine) -> [MailboxAction]) {
        let actions = side == 0 ? body(&a) : body(&b)
        apply(actions, side: side)
    }

    mutating func start() {
        machine(0) { $0.start(now: 0) }
        machine(1) { $0.start(now: 0) }
    }

    /// Moves every record across; `consume[side]` says whether that side's application takes chunks.
    mutating func run(consume: [Bool] = [true, true], now: Double = 0) {
        var moved = true
        while moved {
            moved = false
            for side in 0..<2 where !wire[side].isEmpty {
                let records = wire[side]
                wire[side] = []
                moved = true
                for (kind, body) in records { machine(side) { $0.record(kind: kind, body: body, now: now) } }
            }
            for side in 0..<2 where consume[side] {
                let taken = delivered[side]
                for (seq, _) in taken where !heldTaken[side].contains(seq) {
                    heldTaken[side].insert(seq)
                    machine(side) { $0.delivered(seq: seq, now: now) }
                    moved = true
                }
            }
        }
    }

    var heldTaken: [Set<UInt32>] = [[], []]

    func sendSuccesses(_ side: Int) -> [UInt32] {
        events[side].compactMap { if case .sendSuccess(let seq) = $0 { seq } else { nil } }
    }
}

@Suite("Mailbox state machine")
struct MailboxStateMachineTests {
    @Test("contacts first, then 100 chunks each way in order, one sendSuccess per chunk after the peer took it")
    func orderAndSuccess() {
        var pair = Pair()
        pair.start()
        for i in 1...100 {
            pair.machine(0) { $0.submit(Array("from alice \(i)".utf8), ticket: i, now: 0) }
            pair.machine(1) { $0.submit(Array("from bob \(i)".utf8), ticket: i, now: 0) }
        }
        // Nothing moves before the contacts crossed.
        #expect(pair.chunkRecordsSent == [0, 0])
        pair.run()
        #expect(pair.events[0].first == .connected(Pair.bob))
        #expect(pair.events[1].first == .connected(Pair.alice))
        #expect(pair.delivered[1].map { String(decoding: $0.1, as: UTF8.self) } == (1...100).map { "from alice \($0)" })
        #expect(pair.delivered[0].map { String(decoding: $0.1, as: UTF8.self) } == (1...100).map { "from bob \($0)" })
        #expect(pair.delivered[1].map(\.0) == Array(1...100))
        #expect(pair.sendSuccesses(0) == Array(1...100))
        #expect(pair.sendSuccesses(1) == Array(1...100))
        #expect(pair.transmitted[0][37] == 37)
        #expect(pair.a.inFlightCount == 0)
    }

    @Test("no sendSuccess until the receiving application took the chunk")
    func successWaitsForConsumer() {
        var pair = Pair()
        pair.start()
        pair.machine(0) { $0.submit([1, 2, 3], ticket: 1, now: 0) }
        pair.run(consume: [true, false])
        #expect(pair.delivered[1].count == 1)
        #expect(pair.sendSuccesses(0).isEmpty)
        pair.machine(1) { $0.delivered(seq: 1, now: 0) }
        pair.run()
        #expect(pair.sendSuccesses(0) == [1])
    }

    @Test("a reader that stops taking chunks stalls the sender at 64 chunks in flight")
    func windowChunks() {
        var pair = Pair()
        pair.start()
        for i in 1...200 { pair.machine(0) { $0.submit([UInt8(i & 0xFF)], ticket: i, now: 0) } }
        pair.run(consume: [true, false])
        #expect(pair.chunkRecordsSent[0] == 64)
        #expect(pair.a.inFlightCount == 64)
        #expect(pair.a.pendingCount == 136)
        #expect(pair.transmitted[0].count == 64)
        // The reader takes one: one more goes out.
        pair.machine(1) { $0.delivered(seq: 1, now: 0) }
        pair.run(consume: [true, false])
        #expect(pair.chunkRecordsSent[0] == 65)
        pair.run()
        #expect(pair.chunkRecordsSent[0] == 200)
        #expect(pair.sendSuccesses(0) == Array(1...200))
    }

    @Test("the window is also bounded by 1 MiB of unacknowledged bytes")
    func windowBytes() {
        var pair = Pair()
        pair.start()
        pair.run()
        for i in 1...20 { pair.machine(0) { $0.submit([UInt8](repeating: 7, count: 60_000), ticket: i, now: 0) } }
        pair.run(consume: [true, false])
        #expect(pair.chunkRecordsSent[0] == 17)  // 17 x 60_000 <= 1 MiB < 18 x 60_000
        #expect(pair.a.inFlightByteCount == 1_020_000)
    }

    @Test("quit waits until every chunk is held, then closes; the session's end gives the reason")
    func quitAfterHeld() {
        var pair = Pair()
        pair.start()
        pair.run()
        for i in 1...3 { pair.machine(0) { $0.submit([UInt8(i)], ticket: i, now: 0) } }
        pair.machine(0) { $0.quit(now: 0) }
        #expect(!pair.closed[0])
        pair.machine(0) { $0.submit([9], ticket: 4, now: 0) }
        #expect(pair.refused[0][4] != nil)
        pair.run(consume: [true, false])
        #expect(!pair.closed[0])
        for seq: UInt32 in 1...3 { pair.machine(1) { $0.delivered(seq: seq, now: 0) } }
        pair.run()
        #expect(pair.closed[0])
        pair.machine(0) { $0.sessionEnded(.userQuit(nil), now: 1) }
        #expect(pair.events[0].last == .disconnected(.userQuit(nil)))
        #expect(pair.a.phase == .finished)
    }

    @Test("the peer's close: pending chunks go out past the window, then our close")
    func peerClosingDrains() {
        var pair = Pair()
        pair.start()
        for i in 1...100 { pair.machine(0) { $0.submit([UInt8(i)], ticket: i, now: 0) } }
        pair.run(consume: [true, false])
        #expect(pair.chunkRecordsSent[0] == 64)
        pair.machine(0) { $0.peerClosing(now: 0) }
        #expect(pair.chunkRecordsSent[0] == 100)
        #expect(pair.closed[0])
        #expect(pair.a.hasClosed)
        pair.machine(0) { $0.sessionEnded(.otherUserQuit, now: 0) }
        #expect(pair.events[0].last == .disconnected(.otherUserQuit))
    }

    @Test("the byte limit closes with END_USER_QUIT and a detail; a chunk past it is refused")
    func byteLimit() {
        var pair = Pair(a: MailboxConfiguration(maximumBytes: 1_000), b: MailboxConfiguration(maximumBytes: 1_000))
        pair.start()
        pair.run()
        for i in 1...4 { pair.machine(0) { $0.submit([UInt8](repeating: 1, count: 300), ticket: i, now: 0) } }
        #expect(pair.chunkRecordsSent[0] == 3)
        #expect(pair.refused[0][4] == .limitReached("the session limit of 1000 bytes was reached"))
        #expect(pair.closed[0])
        pair.machine(0) { $0.sessionEnded(.userQuit(nil), now: 0) }
        #expect(pair.events[0].last == .disconnected(.userQuit("the session limit of 1000 bytes was reached")))
        // The receiver counts the same bytes and closes when they reach the limit.
        pair.run()
        #expect(!pair.closed[1])
        pair.machine(1) { $0.submit([UInt8](repeating: 2, count: 100), ticket: 1, now: 0) }
        #expect(pair.closed[1])
        #expect(pair.b.bytesCounted == 1_000)
    }

    @Test("the time limit closes with END_USER_QUIT and a detail")
    func timeLimit() {
        var pair = Pair(a: MailboxConfiguration(maximumSeconds: 30))
        pair.start()
        pair.run()
        #expect(pair.a.nextDeadline == 30)
        pair.machine(0) { $0.tick(now: 29.9) }
        #expect(!pair.closed[0])
        pair.machine(0) { $0.tick(now: 30) }
        #expect(pair.closed[0])
        pair.machine(0) { $0.sessionEnded(.userQuit(nil), now: 30) }
        #expect(pair.events[0].last == .disconnected(.userQuit("the session limit of 30 s was reached")))
    }

    @Test("a contact card is delivered after connected; a bad one fails with FAIL_BAD_CONTACT")
    func contacts() throws {
        let card = try VCard(formattedName: "Alice Example")
        var pair = Pair(a: MailboxConfiguration(contact: card))
        pair.start()
        pair.run()
        #expect(pair.events[1] == [.connected(Pair.alice), .contactReceived(card)])
        #expect(pair.events[0] == [.connected(Pair.bob)])

        var machine = MailboxStateMachine(configuration: MailboxConfiguration(), peer: Pair.bob,
                                          maximumRecordBody: 65_519, now: 0)
        _ = machine.start(now: 0)
        let actions = machine.record(kind: MailboxRecordKind.contact,
                                     body: Array("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:x\r\nEND:VCARD\r\n".utf8), now: 0)
        guard case .event(.connectFailed(let failure)) = actions.first else {
            Issue.record("expected connectFailed, got \(actions)")
            return
        }
        #expect(failure.seedName == "FAIL_BAD_CONTACT")
        #expect(failure.description.contains("VERSION must be 4.0"))
        #expect(actions.last == .abort)
    }

    @Test("protocol errors from the peer end the mailbox with END_LOST_NET")
    func violations() {
        let cases: [[(UInt8, [UInt8])]] = [
            [(MailboxRecordKind.chunk, [0, 0, 0, 1, 65])],                                 // chunk before contact
            [(MailboxRecordKind.contact, []), (MailboxRecordKind.chunk, [0, 0, 0, 2, 65])],   // seq 2 first
            [(MailboxRecordKind.contact, []), (MailboxRecordKind.held, [0, 0, 0, 1])],        // HELD of nothing sent
            [(MailboxRecordKind.contact, []), (MailboxRecordKind.chunk, [0, 0])],             // short chunk
            [(MailboxRecordKind.contact, []), (MailboxRecordKind.contact, [])],               // second contact
            [(MailboxRecordKind.contact, []), (0x1F, [])],                                    // unknown kind
        ]
        for records in cases {
            var machine = MailboxStateMachine(configuration: MailboxConfiguration(), peer: Pair.bob,
                                              maximumRecordBody: 65_519, now: 0)
            _ = machine.start(now: 0)
            var last: [MailboxAction] = []
            for (kind, body) in records { last = machine.record(kind: kind, body: body, now: 0) }
            #expect(last.last == .abort, "\(records)")
            guard case .event(.disconnected(.lostNet(let text))) = last.first else {
                Issue.record("expected END_LOST_NET for \(records), got \(last)")
                continue
            }
            #expect(text.contains("protocol error"))
        }
    }

    @Test("a chunk larger than a record is refused; the session ending refuses pending chunks")
    func refusals() {
        var pair = Pair()
        pair.start()
        pair.machine(0) { $0.submit([UInt8](repeating: 0, count: 65_516), ticket: 1, now: 0) }
        #expect(pair.refused[0][1] == .tooLarge(65_516, limit: 65_515))
        pair.machine(0) { $0.submit([1], ticket: 2, now: 0) }  // pending: not connected yet
        pair.machine(0) { $0.sessionEnded(.lostNet("cut"), now: 0) }
        #expect(pair.refused[0][2] == .closed("END_LOST_NET"))
        guard case .connectFailed(let failure) = pair.events[0].last else {
            Issue.record("expected connectFailed, got \(pair.events[0])")
            return
        }
        #expect(failure.seedName == "FAIL_NETWORK_UNAVAILABLE")
    }
}
