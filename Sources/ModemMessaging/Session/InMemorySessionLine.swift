/// Two ``RecordSession`` ends joined in memory, in plaintext, with a bounded queue each way: for
/// tests of the modules above sessions and for harnesses. It keeps the session's rules (half close,
/// end reasons, back-pressure) but none of its cryptography.
public actor InMemorySessionLine {
    private struct Direction {
        var queue: [SessionIncoming] = []
        var head = 0
        var receiver: CheckedContinuation<SessionIncoming, Never>?
        var senders: [CheckedContinuation<Bool, Never>] = []
        var count: Int { queue.count - head }
    }

    /// Records each way that may wait unread before a sender suspends.
    public let capacity: Int
    private var toSide = [Direction(), Direction()]
    private var closed = [false, false]
    private var final: [SessionEnd?] = [nil, nil]
    private var endQueued = [false, false]
    private let peers: [PeerIdentity]

    /// A pair of connected ends. `a` is the first end (it sees `b` as its peer) and `b` the second.
    public static func pair(a: PeerIdentity = PeerIdentity(publicKey: Array(repeating: 0xA1, count: 32), trustedName: "a", claimedName: "a"),
                            b: PeerIdentity = PeerIdentity(publicKey: Array(repeating: 0xB2, count: 32), trustedName: "b", claimedName: "b"),
                            capacity: Int = 64, maximumRecordBody: Int = 65_519) -> (InMemorySession, InMemorySession) {
        let line = InMemorySessionLine(peers: [b, a], capacity: capacity)
        return (InMemorySession(line: line, side: 0, peer: b, maximumRecordBody: maximumRecordBody),
                InMemorySession(line: line, side: 1, peer: a, maximumRecordBody: maximumRecordBody))
    }

    private init(peers: [PeerIdentity], capacity: Int) {
        self.peers = peers
        self.capacity = max(1, capacity)
    }

    /// Cuts the line: both ends end with ``SessionEnd/lostNet(_:)``; records not yet received are lost.
    public func cut() {
        for side in 0..<2 where final[side] == nil && !endQueued[side] {
            toSide[side].queue.removeAll()
            toSide[side].head = 0
            push(.ended(.lostNet("the line was cut")), to: side)
            endQueued[side] = true
        }
        wakeSenders()
    }

    /// Ends one side as if its process died: the other end gets ``SessionEnd/otherUserLost(_:)``.
    public func vanish(side: Int) {
        guard final[side] == nil, !endQueued[side] else { return }
        toSide[side].queue.removeAll()
        toSide[side].head = 0
        push(.ended(.lostNet("this end went away")), to: side)
        endQueued[side] = true
        let other = 1 - side
        if final[other] == nil, !endQueued[other] {
            push(.ended(.otherUserLost("the peer vanished")), to: other)
            endQueued[other] = true
        }
        wakeSenders()
    }

    func send(from side: Int, _ item: SessionIncoming) async throws(SessionSendError) {
        let to = 1 - side
        while true {
            if let end = final[side] { throw .ended(end) }
            if endQueued[side] || endQueued[to] { throw .ended(.lostNet("the line has ended")) }
            if closed[side] { throw .closing }
            if toSide[to].count < capacity { break }
            let ok = await withCheckedContinuation { toSide[to].senders.append($0) }
            if !ok { continue }
        }
        push(item, to: to)
    }

    func receive(side: Int) async -> SessionIncoming {
        if let end = final[side] { return .ended(end) }
        if toSide[side].count > 0 {
            let item = pop(side)
            return item
        }
        return await withCheckedContinuation { continuation in
            toSide[side].receiver = continuation
        }
    }

    func close(side: Int) {
        guard !closed[side], final[side] == nil, !endQueued[side] else { return }
        closed[side] = true
        let other = 1 - side
        if closed[other] {
            // The peer closed first: this completes the close.
            push(.ended(.otherUserQuit), to: side)
            endQueued[side] = true
            if !endQueued[other] {
                push(.ended(.userQuit(nil)), to: other)
                endQueued[other] = true
            }
        } else {
            push(.peerClosing, to: other)
        }
        wakeSenders()
    }

    private func push(_ item: SessionIncoming, to side: Int) {
        if let receiver = toSide[side].receiver {
            toSide[side].receiver = nil
            note(item, side: side)
            receiver.resume(returning: item)
        } else {
            toSide[side].queue.append(item)
        }
    }

    private func pop(_ side: Int) -> SessionIncoming {
        let item = toSide[side].queue[toSide[side].head]
        toSide[side].head += 1
        if toSide[side].head > 256, toSide[side].head * 2 > toSide[side].queue.count {
            toSide[side].queue.removeFirst(toSide[side].head)
            toSide[side].head = 0
        }
        note(item, side: side)
        if !toSide[side].senders.isEmpty { toSide[side].senders.removeFirst().resume(returning: true) }
        return item
    }

    private func note(_ item: SessionIncoming, side: Int) {
        if case .ended(let end) = item { final[side] = end }
    }

    private func wakeSenders() {
        for side in 0..<2 {
            let waiting = toSide[side].senders
            toSide[side].senders.removeAll()
            for sender in waiting { sender.resume(returning: false) }
        }
    }
}

/// One end of an ``InMemorySessionLine``.
public struct InMemorySession: RecordSession {
    /// The line this end belongs to (to cut it or make an end vanish).
    public let line: InMemorySessionLine
    /// 0 for the first end of ``InMemorySessionLine/pair(a:b:capacity:maximumRecordBody:)``, 1 for the second.
    public let side: Int
    public let peer: PeerIdentity
    public let maximumRecordBody: Int

    public func send(kind: UInt8, body: [UInt8]) async throws(SessionSendError) {
        guard kind >= 0x10 else { throw .invalid("record kind 0x\(String(kind, radix: 16)) belongs to the session itself") }
        guard body.count <= maximumRecordBody else {
            throw .invalid("a record body of \(body.count) bytes is over the limit of \(maximumRecordBody)")
        }
        try await line.send(from: side, .record(kind: kind, body: body))
    }

    public func receive() async -> SessionIncoming { await line.receive(side: side) }

    public func close() async { await line.close(side: side) }
}
