import ModemMessaging
import ProcessTestSupport
import Synchronization
import Testing

/// What one side's event loop saw.
private struct Seen: Sendable {
    var connected: String?
    var chunks: [String] = []
    var successes: [UInt32] = []
    var contact: VCard?
    var end: MailboxEvent?
}

/// Reads every event of `mailbox` until it ends. `onChunk` runs after each chunk (to quit, for example).
private func collect(_ mailbox: Mailbox, onChunk: @escaping @Sendable (Int) async -> Void = { _ in }) -> Task<Seen, Never> {
    Task {
        var seen = Seen()
        for await event in mailbox.events {
            switch event {
            case .connected(let peer): seen.connected = peer.description
            case .dataReceived(let bytes):
                seen.chunks.append(String(decoding: bytes, as: UTF8.self))
                await onChunk(seen.chunks.count)
            case .sendSuccess(let seq): seen.successes.append(seq)
            case .contactReceived(let card): seen.contact = card
            case .disconnected, .connectFailed: seen.end = event
            }
        }
        return seen
    }
}

private func pairOfMailboxes(_ a: MailboxConfiguration = MailboxConfiguration(),
                             _ b: MailboxConfiguration = MailboxConfiguration(),
                             capacity: Int = 8) async -> (Mailbox, Mailbox, InMemorySession) {
    let (sa, sb) = InMemorySessionLine.pair(a: PeerIdentity(publicKey: [UInt8](repeating: 1, count: 32), trustedName: "alice", claimedName: "alice"),
                                            b: PeerIdentity(publicKey: [UInt8](repeating: 2, count: 32), trustedName: "bob", claimedName: "bob"),
                                            capacity: capacity)
    let alice = Mailbox(userName: "alice", configuration: a)
    let bob = Mailbox(userName: "bob", configuration: b)
    await alice.start(session: sa)
    await bob.start(session: sb)
    return (alice, bob, sa)
}

private func sendAll(_ mailbox: Mailbox, _ prefix: String, count: Int) -> Task<[UInt32], any Error> {
    Task {
        var seqs: [UInt32] = []
        for i in 1...count { seqs.append(try await mailbox.send(Array("\(prefix) \(i)".utf8))) }
        return seqs
    }
}

/// Holds records of one kind back until opened (to catch the mailbox with a record in the session).
private actor Gate {
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// How many passed or wait at the gate: each arrival wakes its waiters.
    nonisolated let arrivals = Observed(0)

    func pass() async {
        arrivals.add(1)
        if isOpen { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiting { waiter.resume() }
        waiting = []
    }
}

/// A session end whose `send` of `gatedKind` records waits at `gate` (as a slow transport would).
private struct GatedSession: RecordSession {
    let inner: InMemorySession
    let gate: Gate
    let gatedKind: UInt8
    var peer: PeerIdentity { inner.peer }
    var maximumRecordBody: Int { inner.maximumRecordBody }

    func send(kind: UInt8, body: [UInt8]) async throws(SessionSendError) {
        if kind == gatedKind { await gate.pass() }
        try await inner.send(kind: kind, body: body)
    }

    func receive() async -> SessionIncoming { await inner.receive() }
    func close() async { await inner.close() }
}

@Suite("Mailbox over an in-memory session")
struct MailboxTests {
    @Test("100 chunks each way arrive in order with a sendSuccess per chunk; the quitter reports END_USER_QUIT")
    func hundredEachWay() async throws {
        let (alice, bob, _) = await pairOfMailboxes()
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        let aliceSent = sendAll(alice, "from alice", count: 100)
        let bobSent = sendAll(bob, "from bob", count: 100)
        #expect(try await aliceSent.value == Array(1...100))
        #expect(try await bobSent.value == Array(1...100))
        await bob.disconnect()
        let a = await aliceSeen.value
        let b = await bobSeen.value
        #expect(a.connected == "bob")
        #expect(b.connected == "alice")
        #expect(await alice.peer?.trustedName == "bob")
        #expect(a.chunks == (1...100).map { "from bob \($0)" })
        #expect(b.chunks == (1...100).map { "from alice \($0)" })
        #expect(b.successes == Array(1...100))
        #expect(b.end == .disconnected(.userQuit(nil)))
        #expect(a.end == .disconnected(.otherUserQuit))
        // Sending after the end fails clearly.
        await #expect(throws: MailboxSendError.self) { try await alice.send([1]) }
    }

    @Test("either side quitting first", arguments: [0, 1])
    func quitOrders(first: Int) async throws {
        let (alice, bob, _) = await pairOfMailboxes()
        let seen = [collect(alice), collect(bob)]
        let boxes = [alice, bob]
        _ = try await boxes[first].send(Array("last words".utf8))
        await boxes[first].disconnect()
        let quitter = await seen[first].value
        let other = await seen[1 - first].value
        #expect(quitter.end == .disconnected(.userQuit(nil)))
        #expect(other.end == .disconnected(.otherUserQuit))
        #expect(other.chunks == ["last words"])
        #expect(quitter.successes == [1])
    }

    @Test("both quitting at once: both end with a quit reason and nothing is lost")
    func simultaneousQuit() async throws {
        let (alice, bob, _) = await pairOfMailboxes()
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        // Each queues one chunk and quits before a single event was read (the input ended first).
        async let s1 = alice.send(Array("hi".utf8))
        async let s2 = bob.send(Array("yo".utf8))
        _ = try await (s1, s2)
        async let q1: Void = alice.disconnect()
        async let q2: Void = bob.disconnect()
        _ = await (q1, q2)
        let a = await aliceSeen.value
        let b = await bobSeen.value
        #expect(a.chunks == ["yo"])
        #expect(b.chunks == ["hi"])
        let quits: [MailboxEvent] = [.disconnected(.userQuit(nil)), .disconnected(.otherUserQuit)]
        #expect(quits.contains(a.end ?? .sendSuccess(0)))
        #expect(quits.contains(b.end ?? .sendSuccess(0)))
    }

    @Test("a side that quits before the session opened still delivers its queued chunk")
    func queuedBeforeConnect() async throws {
        let (sa, sb) = InMemorySessionLine.pair()
        let alice = Mailbox(userName: "alice")
        let bob = Mailbox(userName: "bob")
        let queued = Task { try await alice.send(Array("hi".utf8)) }
        while await alice.unsentCount == 0 { await Task.yield() }
        // The input ended before the session opened: quit now, deliver later.
        await alice.disconnect()
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        await alice.start(session: sa)
        await bob.start(session: sb)
        #expect(try await queued.value == 1)
        let b = await bobSeen.value
        let a = await aliceSeen.value
        #expect(b.chunks == ["hi"])
        #expect(b.end == .disconnected(.otherUserQuit))
        #expect(a.end == .disconnected(.userQuit(nil)))
    }

    @Test("the peer's process vanishing is END_OTHER_USER_LOST; a cut line END_LOST_NET on both sides")
    func lostAndCut() async throws {
        do {
            let (alice, bob, line) = await pairOfMailboxes()
            let aliceSeen = collect(alice)
            _ = collect(bob)
            _ = try await alice.send([1])
            await line.line.vanish(side: 1)
            let a = await aliceSeen.value
            #expect(a.end == .disconnected(.otherUserLost("the peer vanished")))
        }
        do {
            let (alice, bob, line) = await pairOfMailboxes()
            let aliceSeen = collect(alice)
            let bobSeen = collect(bob)
            _ = try await alice.send([1])
            await line.line.cut()
            #expect(await aliceSeen.value.end == .disconnected(.lostNet("the line was cut")))
            #expect(await bobSeen.value.end == .disconnected(.lostNet("the line was cut")))
        }
    }

    @Test("the byte limit ends the session with END_USER_QUIT and its detail")
    func byteLimit() async throws {
        let limits = MailboxConfiguration(maximumBytes: 500)
        // Only alice has the limit: with it on both sides, bob (who counts the same bytes) may close first.
        let (alice, bob, _) = await pairOfMailboxes(limits, MailboxConfiguration())
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        var refused: MailboxSendError?
        for _ in 1...10 {
            do { _ = try await alice.send([UInt8](repeating: 65, count: 100)) } catch let error as MailboxSendError {
                refused = error
                break
            }
        }
        #expect(refused != nil)
        let a = await aliceSeen.value
        let b = await bobSeen.value
        #expect(b.chunks.count == 5)
        guard case .disconnected(.userQuit(let detail)) = a.end else {
            Issue.record("alice ended with \(String(describing: a.end))")
            return
        }
        #expect(detail?.contains("limit of 500 bytes") == true)
        #expect(b.end != nil)
    }

    @Test("the time limit ends the session with END_USER_QUIT and its detail")
    func timeLimit() async throws {
        let (alice, bob, _) = await pairOfMailboxes(MailboxConfiguration(maximumSeconds: 0.2))
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        let a = await aliceSeen.value
        #expect(a.end == .disconnected(.userQuit("the session limit of 0.2 s was reached")))
        #expect(await bobSeen.value.end == .disconnected(.otherUserQuit))
    }

    @Test("a reader that stops taking chunks stalls the sender at the window; memory stays bounded")
    func stalledReader() async throws {
        let (alice, bob, _) = await pairOfMailboxes(capacity: 4)
        let sentCount = Observed(0)
        let sender = Task {
            for i in 1...300 {
                _ = try await alice.send([UInt8](repeating: UInt8(i & 0xFF), count: 1000))
                sentCount.add(1)
            }
        }
        let aliceSeen = collect(alice)
        // Bob's application reads nothing: the sender fills the 64-chunk window (an event, however
        // slow the machine), then must go no further (checked after a short settle).
        try await sentCount.wait(for: "64 chunks sent (the window)") { $0 >= 64 }
        try await Task.sleep(for: .milliseconds(200))
        let stalledAt = sentCount.value
        #expect(stalledAt == 64)
        // Reading resumes: everything arrives.
        let bobSeen = collect(bob) { count in if count == 300 { await bob.disconnect() } }
        try await sender.value
        let b = await bobSeen.value
        #expect(b.chunks.count == 300)
        // Every chunk arrived above, and the receiver quit at once after taking the last: sendSuccess
        // for each of them, in order, none lost to the close.
        let successes = await aliceSeen.value.successes
        #expect(successes == Array(1...300), "\(successes.count) sendSuccess of 300, last \(successes.suffix(5))")
    }

    @Test("a HELD given while an earlier HELD is still in the session's send is not lost before the close")
    func heldBehindHeldInFlight() async throws {
        let (sa, sb) = InMemorySessionLine.pair()
        let gate = Gate()
        let alice = Mailbox(userName: "alice")
        let bob = Mailbox(userName: "bob")
        await alice.start(session: sa)
        await bob.start(session: GatedSession(inner: sb, gate: gate, gatedKind: MailboxRecordKind.held))
        let aliceSeen = collect(alice)
        #expect(try await alice.send(Array("one".utf8)) == 1)
        #expect(try await alice.send(Array("two".utf8)) == 2)
        var events = bob.events.makeAsyncIterator()
        var chunks: [String] = []
        while chunks.count < 2, let event = await events.next() {
            if case .dataReceived(let bytes) = event { chunks.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(chunks == ["one", "two"])
        // Asking for "two" acknowledged "one": that HELD is now stuck in the session's send.
        try await gate.arrivals.wait(for: "HELD 1 at the gate") { $0 >= 1 }
        #expect(gate.arrivals.value == 1)
        // Bob quits right after taking "two": HELD 2 must still go out before the close.
        await bob.disconnect()
        await gate.open()
        while await events.next() != nil {}
        let a = await aliceSeen.value
        #expect(a.successes == [1, 2])
        #expect(a.end == .disconnected(.otherUserQuit))
    }

    @Test("contact cards are exchanged; a peer's bad card fails with FAIL_BAD_CONTACT")
    func contacts() async throws {
        let card = try VCard(formattedName: "Alice Example", more: [VCard.Property(name: "EMAIL", value: "alice@example.org")])
        let (alice, bob, _) = await pairOfMailboxes(MailboxConfiguration(contact: card))
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        await alice.disconnect()
        #expect(await bobSeen.value.contact == card)
        #expect(await aliceSeen.value.contact == nil)

        // A raw peer that sends a vCard 3.0 as its contact.
        let (sa, sb) = InMemorySessionLine.pair()
        let victim = Mailbox(userName: "alice")
        await victim.start(session: sa)
        let seen = collect(victim)
        try await sb.send(kind: MailboxRecordKind.contact, body: Array("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:x\r\nEND:VCARD\r\n".utf8))
        let result = await seen.value
        guard case .connectFailed(let failure) = result.end else {
            Issue.record("expected connectFailed, got \(String(describing: result.end))")
            return
        }
        #expect(failure.seedName == "FAIL_BAD_CONTACT")
        #expect(result.connected == nil)
        // The victim sent nothing after its own contact and closed.
        #expect(await sb.receive() == .record(kind: MailboxRecordKind.contact, body: []))
        #expect(await sb.receive() == .peerClosing)
    }

    @Test("a failing connect reports connectFailed with the session's reason")
    func connectFailed() async {
        let mailbox = Mailbox(userName: "alice")
        let seen = collect(mailbox)
        let opened = await mailbox.connect { () async throws -> any RecordSession in
            throw SessionFailure.invalidAuthorization("bob's key is not trusted")
        }
        #expect(!opened)
        #expect(await seen.value.end == .connectFailed(.invalidAuthorization("bob's key is not trusted")))
    }

    @Test("when the peer quits first, chunks still queued by the application go out before our close")
    func pendingOnPeerQuit() async throws {
        let (sa, sb) = InMemorySessionLine.pair()
        let alice = Mailbox(userName: "alice")
        let bob = Mailbox(userName: "bob", pendingOnPeerQuit: { [Array("late 1".utf8), Array("late 2".utf8)] })
        await alice.start(session: sa)
        await bob.start(session: sb)
        let aliceSeen = collect(alice)
        let bobSeen = collect(bob)
        await alice.disconnect()
        #expect(await aliceSeen.value.chunks == ["late 1", "late 2"])
        #expect(await bobSeen.value.end == .disconnected(.otherUserQuit))
    }

    @Test("the delegate facade calls the seed's methods in order")
    func delegate() async throws {
        final class Recorder: MailboxDelegate {
            let calls = Mutex<[String]>([])
            func mailboxDidConnect(peer: PeerIdentity) { calls.withLock { $0.append("connect \(peer)") } }
            func mailboxDidDisconnect(reason: SessionEnd) { calls.withLock { $0.append("disconnect \(reason.seedName)") } }
            func mailboxConnectFailed(reason: SessionFailure) { calls.withLock { $0.append("failed \(reason.seedName)") } }
            func mailboxDataReceived(chunk: [UInt8]) { calls.withLock { $0.append("data \(String(decoding: chunk, as: UTF8.self))") } }
            func mailboxSendSuccess(seq: UInt32) { calls.withLock { $0.append("success \(seq)") } }
        }
        let (alice, bob, _) = await pairOfMailboxes()
        let aliceRecorder = Recorder()
        let bobRecorder = Recorder()
        let aliceFacade = MailboxDelegateAdapter(mailbox: alice, delegate: aliceRecorder)
        let bobFacade = MailboxDelegateAdapter(mailbox: bob, delegate: bobRecorder)
        #expect(try await aliceFacade.send(Array("ping".utf8)) == 1)
        await aliceFacade.disconnect()
        await aliceFacade.finished()
        await bobFacade.finished()
        #expect(aliceRecorder.calls.withLock { $0 } == ["connect bob", "success 1", "disconnect END_USER_QUIT"])
        #expect(bobRecorder.calls.withLock { $0 } == ["connect alice", "data ping", "disconnect END_OTHER_USER_QUIT"])
        #expect(aliceFacade.userName == "alice")
        #expect(await bobFacade.peer?.trustedName == "alice")
    }
}
