// A node's local fan-out: which of its sockets subscribe to which group, and each socket's bounded
// outbound queue. An event is serialised once and the same text goes to every subscriber; a socket
// whose live events outgrow its queue is closed (1008) so one slow client never grows the server's
// memory. A group's history (its members and every post it keeps) never passes through that queue:
// the socket's writer reads it from the store a page at a time and writes it as the socket drains,
// while the group's live events wait beside it (held) and follow it, duplicates left out.

import HubCore
import Synchronization

/// One socket's outbound queue of text frames (the wormhole rendezvous socket's; the groups socket
/// has ``GroupSocketOutbox``).
public final class GroupOutbox: Sendable {
    /// Frames queued before the socket counts as too slow.
    public static let capacity = 1024

    let continuation: AsyncStream<String>.Continuation
    /// The frames to write, in order.
    public let frames: AsyncStream<String>
    private let overflowed = Atomic<Bool>(false)

    public init() {
        (frames, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(Self.capacity))
    }

    /// Queues a frame; false (and the queue ends) when the socket is too slow.
    @discardableResult
    public func send(_ text: String) -> Bool {
        if case .dropped = continuation.yield(text) {
            overflowed.store(true, ordering: .relaxed)
            continuation.finish()
            return false
        }
        return true
    }

    /// Whether frames were dropped (the socket must close with 1008).
    public var didOverflow: Bool { overflowed.load(ordering: .relaxed) }

    /// Ends the queue.
    public func finish() { continuation.finish() }
}

/// What one groups socket may hold (`modem-hub serve --max-socket-queue-bytes`).
public struct GroupSocketLimits: Sendable, Hashable {
    /// Default of ``queueBytes``: 512 KiB.
    public static let defaultQueueBytes = 512 * 1024
    /// Rows read from the store per page of a join's history.
    public static let historyPageRows = 64
    /// When a join's held live posts outgrow the bound they are dropped (the store keeps them) and the
    /// posts since the join, less this margin (ms: a post's time is taken before its commit, and nodes'
    /// clocks differ a little), are read again after the history.
    public static let resyncMarginMs: Int64 = 60_000
    /// Re-reads one join may need before its socket counts as too slow for the group's live posts.
    public static let maxResyncs = 8

    /// Bytes of live events one socket may have waiting: queued to be written, or held while a group's
    /// history is written, together. Over it, the socket is closed with 1008 and a reason (a reader too
    /// slow for the live traffic); history itself is never counted: it is written as the socket drains.
    public var queueBytes: Int

    public init(queueBytes: Int = defaultQueueBytes) { self.queueBytes = queueBytes }
}

/// One groups socket's outbound queue: live frames (bounded in bytes), requests to write a group's
/// history, and the live frames of groups whose history is being written (held, bounded in bytes).
/// One writer task takes items with ``next()`` and writes them, awaiting each write.
public final class GroupSocketOutbox: Sendable {
    /// What the writer does next.
    public enum Item: Sendable, Hashable {
        /// Write this text frame.
        case frame(String)
        /// Write the group's history from the store, then ``release(group:sentPosts:)`` its held frames.
        case history(group: String)
    }

    /// What follows a group's history.
    public enum Release: Sendable, Hashable {
        /// Write these held frames, then go on with the queue.
        case frames([String])
        /// Live posts were dropped to stay in bounds: write the posts kept since this time (Unix ms,
        /// less ``GroupSocketLimits/resyncMarginMs``) that were not sent yet, then release again.
        case resync(since: Int64)
    }

    private struct Hold {
        var pending = 0
        var frames: [String] = []
        /// When the earliest pending join began (Unix ms).
        var since = Int64.max
        /// Post frames were dropped since the last release.
        var resync = false
    }

    private struct State {
        var queue: [Item] = []
        var head = 0
        var queuedBytes = 0
        var holds: [String: Hold] = [:]
        var heldBytes = 0
        var reader: CheckedContinuation<Item?, Never>?
        var finished = false
        var closeReason: String?
    }

    /// Bytes a history request counts for in the queue (so requests are bounded too).
    static let requestBytes = 64

    /// The bound of the bytes waiting, queued and held together (``GroupSocketLimits/queueBytes``).
    public let limit: Int
    private let state = Mutex(State())

    public init(limits: GroupSocketLimits = GroupSocketLimits()) { limit = limits.queueBytes }

    /// Queues a live frame not tied to a group's history (hello, errors); false when the socket was
    /// found too slow (the queue ends and ``closeReason`` says why).
    @discardableResult
    public func send(_ text: String) -> Bool {
        let r = state.withLock { s in enqueue(&s, .frame(text), bytes: text.utf8.count) }
        r.wake?.resume(returning: r.item)
        return r.ok
    }

    /// Queues a live event of `group`, or holds it while the group's history is being written.
    @discardableResult
    public func deliver(_ text: String, group: String) -> Bool {
        let r = state.withLock { s -> Enqueued in
            guard !s.finished else { return Enqueued(ok: false) }
            if s.holds[group] != nil {
                let n = text.utf8.count
                if s.queuedBytes + s.heldBytes + n > limit { dropHeldPosts(&s) }
                if s.queuedBytes + s.heldBytes + n > limit && Self.isPost(text) {
                    // The store has it: read again after the history instead of held here.
                    s.holds[group]?.resync = true
                    return Enqueued(ok: true)
                }
                guard s.queuedBytes + s.heldBytes + n <= limit else {
                    overflow(&s, "too slow: over \(limit) bytes of live events held during a join (max-socket-queue-bytes)")
                    return Enqueued(ok: false, wake: s.reader.take(), item: nil)
                }
                s.holds[group]?.frames.append(text)
                s.heldBytes += n
                return Enqueued(ok: true)
            }
            return enqueue(&s, .frame(text), bytes: text.utf8.count)
        }
        r.wake?.resume(returning: r.item)
        return r.ok
    }

    /// Starts holding `group`'s live events (call before the join reads the store, so no event
    /// committed after it is missed). Balance with ``requestHistory(group:)`` or ``abandonHistory(group:)``.
    /// - Parameter since: when the join began (Unix ms): a re-read after dropped live posts starts there.
    public func beginHistory(group: String, since: Int64 = 0) {
        state.withLock { s in
            guard !s.finished else { return }
            var hold = s.holds[group] ?? Hold()
            hold.pending += 1
            hold.since = min(hold.since, since)
            s.holds[group] = hold
        }
    }

    /// Asks the writer to write `group`'s history (after ``beginHistory(group:)``).
    public func requestHistory(group: String) {
        let r = state.withLock { s in enqueue(&s, .history(group: group), bytes: Self.requestBytes) }
        r.wake?.resume(returning: r.item)
    }

    /// No history after all (the join failed): the held frames go to the queue.
    public func abandonHistory(group: String) {
        let r = state.withLock { s -> Enqueued in
            var woken = Enqueued(ok: true)
            for f in takeHold(&s, group) {
                let e = enqueue(&s, .frame(f), bytes: f.utf8.count)
                if e.wake != nil { woken = e }   // the waiting writer takes the first one
                if !e.ok { break }
            }
            return woken
        }
        r.wake?.resume(returning: r.item)
    }

    /// The writer wrote `group`'s history: the frames held meanwhile, in order, to write next (before
    /// anything queued later), without the posts the history already carried. A post frame held is left
    /// out when the history sent it or a later version of the same pid (`sentPosts`: hashes of the post
    /// frames written); the group's later events go to the queue again once no other history of it is due.
    /// If live posts of the group were dropped meanwhile (held over the bound), `.resync` instead: the
    /// writer sends the posts kept since then that it has not sent, and releases again.
    public func release(group: String, sentPosts: Set<Int>) -> Release {
        let r = state.withLock { s -> Release in
            if let h = s.holds[group], h.resync {
                s.holds[group]?.resync = false
                return .resync(since: h.since)
            }
            return .frames(takeHold(&s, group))
        }
        guard case .frames(let held) = r else { return r }
        return .frames(Self.withoutDuplicates(held, sentPosts: sentPosts))
    }

    /// Ends the queue with a reason for the socket's close (1008).
    public func close(reason: String) {
        let reader = state.withLock { s -> CheckedContinuation<Item?, Never>? in
            overflow(&s, reason)
            return s.reader.take()
        }
        reader?.resume(returning: nil)
    }

    static func isPost(_ text: String) -> Bool { text.hasPrefix("{\"type\":\"post\"") }

    /// `held` without the post frames that a history which sent `sentPosts` already covers (the pure
    /// part of ``release(group:sentPosts:)``).
    public static func withoutDuplicates(_ held: [String], sentPosts: Set<Int>) -> [String] {
        guard !sentPosts.isEmpty else { return held }
        // For each pid, the last held frame the history also sent: it and that pid's earlier held
        // frames are covered (the history showed that version or a later one).
        var pids: [String?] = []
        var coveredUpTo: [String: Int] = [:]
        for (i, f) in held.enumerated() {
            let pid = postPid(f)
            pids.append(pid)
            if let pid, sentPosts.contains(f.hashValue) { coveredUpTo[pid] = i }
        }
        return held.enumerated().compactMap { i, f in
            if let pid = pids[i], let last = coveredUpTo[pid], i <= last { return nil }
            return f
        }
    }

    /// The pid of a post event's text, nil for any other event.
    static func postPid(_ text: String) -> String? {
        guard isPost(text),
              let m = try? JSONObjectMembers(parsing: text, maxBytes: text.utf8.count + 1) else { return nil }
        return m.string("pid")
    }

    /// The next item for the writer; nil once the queue ended (closed, or found too slow).
    public func next() async -> Item? {
        await withCheckedContinuation { (c: CheckedContinuation<Item?, Never>) in
            let ready: Item?? = state.withLock { s in
                if s.head < s.queue.count {
                    let item = s.queue[s.head]
                    s.queue[s.head] = .frame("")
                    s.head += 1
                    s.queuedBytes -= Self.cost(item)
                    if s.head == s.queue.count { s.queue.removeAll(keepingCapacity: s.queue.count <= 1024); s.head = 0 }
                    else if s.head >= 1024 && s.head * 2 >= s.queue.count { s.queue.removeFirst(s.head); s.head = 0 }
                    return .some(item)
                }
                if s.finished { return .some(nil) }
                s.reader = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }

    /// Whether the queue ended.
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Why the socket must close (1008), when it was found too slow.
    public var closeReason: String? { state.withLock { $0.closeReason } }

    /// Bytes now waiting: queued live frames and held ones.
    public var bytes: (queued: Int, held: Int) { state.withLock { ($0.queuedBytes, $0.heldBytes) } }

    /// Ends the queue (what is queued is dropped; the writer's ``next()`` returns nil).
    public func finish() {
        let reader = state.withLock { s -> CheckedContinuation<Item?, Never>? in
            s.finished = true
            s.queue = []; s.head = 0; s.queuedBytes = 0
            s.holds = [:]; s.heldBytes = 0
            return s.reader.take()
        }
        reader?.resume(returning: nil)
    }

    // MARK: - pieces (under the lock)

    private struct Enqueued {
        var ok: Bool
        var wake: CheckedContinuation<Item?, Never>?
        var item: Item?
    }

    private static func cost(_ item: Item) -> Int {
        switch item {
        case .frame(let f): f.utf8.count
        case .history: requestBytes
        }
    }

    private func enqueue(_ s: inout State, _ item: Item, bytes: Int) -> Enqueued {
        guard !s.finished else { return Enqueued(ok: false) }
        if let reader = s.reader.take() { return Enqueued(ok: true, wake: reader, item: item) }
        if s.queuedBytes + s.heldBytes + bytes > limit { dropHeldPosts(&s) }
        guard s.queuedBytes + s.heldBytes + bytes <= limit else {
            overflow(&s, "too slow: over \(limit) bytes of live events waiting (max-socket-queue-bytes)")
            return Enqueued(ok: false)
        }
        s.queue.append(item)
        s.queuedBytes += bytes
        return Enqueued(ok: true)
    }

    private func overflow(_ s: inout State, _ reason: String) {
        s.closeReason = reason
        s.finished = true
        s.queue = []; s.head = 0; s.queuedBytes = 0
        s.holds = [:]; s.heldBytes = 0
    }

    /// Drops the post frames held for every pending history (the store keeps them; each such history
    /// is marked to read them again).
    private func dropHeldPosts(_ s: inout State) {
        for (g, hold) in s.holds where hold.frames.contains(where: Self.isPost) {
            var kept: [String] = []
            for f in hold.frames {
                if Self.isPost(f) { s.heldBytes -= f.utf8.count } else { kept.append(f) }
            }
            s.holds[g]?.frames = kept
            s.holds[g]?.resync = true
        }
    }

    private func takeHold(_ s: inout State, _ group: String) -> [String] {
        guard var hold = s.holds[group] else { return [] }
        let frames = hold.frames
        s.heldBytes -= frames.reduce(0) { $0 + $1.utf8.count }
        hold.frames = []
        hold.pending -= 1
        s.holds[group] = hold.pending > 0 ? hold : nil
        return frames
    }
}

/// The node's subscribers and their outboxes.
public final class GroupFanout: Sendable {
    private struct State {
        var router = PresenceRouter()
        var outboxes: [ConnectionID: GroupSocketOutbox] = [:]
    }
    private let state = Mutex(State())
    /// Where deliveries and their latency are counted (nil: nowhere).
    let metrics: HubMetrics?

    /// When the cause of the events being delivered reached this node: a client's op (set by
    /// ``GroupHub/execute(_:causedAt:)``) or another node's notification (set by the PostgreSQL bus).
    /// The fan-out's latency is measured from there; unset, from the delivery itself.
    @TaskLocal public static var causedAt: ContinuousClock.Instant?

    /// - Parameter metrics: where each event's deliveries (one per local recipient) and its latency
    ///   (from ``causedAt`` until it is queued for every recipient) are counted
    public init(metrics: HubMetrics? = nil) { self.metrics = metrics }

    /// Registers a socket's outbox.
    public func add(_ conn: ConnectionID, outbox: GroupSocketOutbox) {
        state.withLock { $0.outboxes[conn] = outbox }
    }

    /// The outbox of a local socket.
    public func outbox(_ conn: ConnectionID) -> GroupSocketOutbox? {
        state.withLock { $0.outboxes[conn] }
    }

    /// Forgets a socket and its subscriptions.
    public func remove(_ conn: ConnectionID) {
        state.withLock {
            $0.router.remove(conn)
            $0.outboxes[conn] = nil
        }
    }

    public func subscribe(_ conn: ConnectionID, to group: String) {
        state.withLock { $0.router.subscribe(conn, to: group) }
    }

    public func unsubscribe(_ conn: ConnectionID, from group: String) {
        state.withLock { $0.router.unsubscribe(conn, from: group) }
    }

    /// Whether a local socket is subscribed to a group (listening or joined).
    public func isSubscribed(_ conn: ConnectionID, to group: String) -> Bool {
        state.withLock { $0.router.recipients(of: group).contains(conn) }
    }

    /// Sends one frame to one local socket.
    public func send(_ conn: ConnectionID, _ text: String) {
        let box = state.withLock { $0.outboxes[conn] }
        box?.send(text)
    }

    /// Delivers an event to the group's local subscribers (serialised once).
    public func deliver(_ event: GroupEvent, excluding: ConnectionID?) {
        deliver(text: event.jsonText, group: event.group, excluding: excluding)
    }

    /// Delivers an already serialised event.
    public func deliver(text: String, group: String, excluding: ConnectionID?) {
        let since = Self.causedAt ?? ContinuousClock.now
        let boxes = state.withLock { s in
            s.router.recipients(of: group, excluding: excluding).compactMap { s.outboxes[$0] }
        }
        for box in boxes { box.deliver(text, group: group) }
        metrics?.fannedOut(recipients: boxes.count, since: since)
    }

    /// Number of local sockets.
    public var count: Int { state.withLock { $0.outboxes.count } }
}
