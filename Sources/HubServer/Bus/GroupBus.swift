// Fan-out of group events: in-process for one node; across nodes through PostgreSQL NOTIFY, batched.
//
// The origin delivers to its own sockets at once and queues the event for the other nodes. Every
// 10 ms the queue is flushed as few NOTIFYs as fit (payload under 7,500 bytes; NOTIFY takes a
// database-wide lock at commit, so never one per delivery). An event too large for a payload is
// stored in `events` and its id is sent instead. Each node LISTENs on one dedicated connection
// (the pooled client cannot) and delivers what other nodes sent to its own subscribers.
//
// Presence events (type "user") do not take that path: they are notified inside the transaction that
// changed the presence (`notifyPresence`, the store's `PresenceNotifier`), so PostgreSQL delivers them
// at commit, in commit order, to every node, the origin included. Without that, a user's online event
// from node B (batched) could reach a watcher on node A after A's own later offline event, and the
// watcher kept the user online (seen for 1-3 of 100 users joining from two nodes at once).
//
// Payload: origin (0x1E record)*, record = excluding 0x1F group 0x1F event-text, or `@id` for a
// stored event; origin "!NAME" marks presence notified in a transaction (delivered on every node).
// 0x1E and 0x1F cannot appear raw in JSON text, nor in names.

import HubCore
import HubStore
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ModemRuntime

/// Carries events to every subscriber of their group on every node.
public protocol GroupBus: Sendable {
    /// Delivers locally now and to the other nodes soon.
    func publish(_ event: GroupEvent, excluding: ConnectionID?)
}

/// One node: the local fan-out is everything.
public struct LocalGroupBus: GroupBus {
    let fanout: GroupFanout

    public init(fanout: GroupFanout) { self.fanout = fanout }

    public func publish(_ event: GroupEvent, excluding: ConnectionID?) {
        fanout.deliver(event, excluding: excluding)
    }
}

/// Several nodes on PostgreSQL: LISTEN/NOTIFY on channel `hub_groups`.
public final class PostgresGroupBus: GroupBus {
    static let channel = "hub_groups"
    static let maxPayload = 7500
    static let maxInline = 6000

    let fanout: GroupFanout
    let notifications: PostgresNotifications
    let origin: String
    let logger: Logger
    let window: Duration
    /// What the flush window and the prune loop sleep on.
    let timers: TimerClock
    private let pending = Mutex<[String]>([])
    /// Whether the LISTEN connection is up: until it is (start-up, a reconnection), this node's own
    /// presence events are delivered here at once instead of coming back through LISTEN.
    private let listening = Atomic<Bool>(false)
    private let wake = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    /// Other users of the bus (the wormhole rendezvous), by tag: payloads `~TAG` 0x1E text.
    private let handlers = Mutex<[String: @Sendable (String) async -> Void]>([:])

    /// - Parameters:
    ///   - origin: this node's instance id (its own notifications are skipped)
    ///   - window: how long events are batched before a NOTIFY
    ///   - timers: the clock of the window and of the minutely prune (default: the system's monotonic clock)
    public init(fanout: GroupFanout, notifications: PostgresNotifications, origin: String,
                logger: Logger, window: Duration = .milliseconds(10), timers: TimerClock = .continuous) {
        self.fanout = fanout
        self.notifications = notifications
        self.origin = origin
        self.logger = logger
        self.window = window
        self.timers = timers
    }

    /// Posts: delivered here at once and batched to the other nodes. Presence events left inside their
    /// transaction (``notifyPresence(on:_:)``) and arrive here through LISTEN like everyone else's
    /// (delivered at once only while LISTEN is down).
    public func publish(_ event: GroupEvent, excluding: ConnectionID?) {
        if case .user = event {
            if !listening.load(ordering: .acquiring) { fanout.deliver(event, excluding: excluding) }
            return
        }
        let text = event.jsonText
        fanout.deliver(text: text, group: event.group, excluding: excluding)
        pending.withLock { $0.append((excluding ?? "") + "\u{1F}" + event.group + "\u{1F}" + text) }
        wake.continuation.yield()
    }

    /// Runs the flusher and the listener until cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.flushLoop() }
            group.addTask { await self.listenLoop() }
            group.addTask {
                while !Task.isCancelled {
                    try? await self.timers.sleep(60)
                    await self.prune()
                }
            }
            await group.waitForAll()
        }
    }

    private func flushLoop() async {
        for await _ in wake.stream {
            try? await timers.sleep(window.timerSeconds)
            let batch = pending.withLock { p in defer { p = [] }; return p }
            if batch.isEmpty { continue }
            do { try await send(batch) } catch {
                logger.error("group bus: NOTIFY failed: \(error)")
            }
            if Task.isCancelled { return }
        }
    }

    /// Sends whatever is queued now (used at a clean stop).
    public func flushNow() async {
        let batch = pending.withLock { p in defer { p = [] }; return p }
        if !batch.isEmpty { try? await send(batch) }
    }

    /// The store's ``HubStore/PresenceNotifier``: NOTIFYs the presence events inside the transaction
    /// that changed the presence (PostgreSQL delivers them at commit, in commit order).
    public func notifyPresence(on tx: any SQLExecutor, _ events: [(presence: MemberPresence, excluding: ConnectionID?)]) async throws {
        let marked = "!" + origin
        let records = events.map { ($0.excluding ?? "") + "\u{1F}" + $0.presence.group + "\u{1F}" + GroupEvent.user($0.presence).jsonText }
        let (packed, big) = Self.pack(records, origin: marked)
        try await notifications.send(packed, storing: big, origin: origin, on: tx) { marked + "\u{1E}@\($0)" }
    }

    /// Takes the payloads another part of the hub sends with ``notify(tag:payload:on:)`` (on every node,
    /// the sender's included).
    public func addHandler(tag: String, _ handler: @escaping @Sendable (String) async -> Void) {
        handlers.withLock { $0[tag] = handler }
    }

    /// Sends `payload` (under 7,000 bytes) to every node's handler of `tag`, inside the transaction
    /// `tx` (PostgreSQL delivers it at commit, in commit order), on the groups' channel.
    public func notify(tag: String, payload: String, on tx: any SQLExecutor) async throws {
        try await notifications.send(["~" + tag + "\u{1E}" + payload], storing: [], origin: origin, on: tx) { _ in "" }
    }

    /// Records packed into payloads under the size limit, and the records too large for any.
    static func pack(_ records: [String], origin: String) -> (payloads: [String], big: [String]) {
        var payloads: [String] = []
        var current = origin
        var big: [String] = []
        for record in records {
            if record.utf8.count > maxInline { big.append(record); continue }
            if current.utf8.count + 1 + record.utf8.count > maxPayload {
                payloads.append(current)
                current = origin
            }
            current += "\u{1E}" + record
        }
        if current != origin { payloads.append(current) }
        return (payloads, big)
    }

    private func send(_ batch: [String]) async throws {
        let (packed, big) = Self.pack(batch, origin: origin)
        let origin = self.origin
        try await notifications.send(packed, storing: big, origin: origin) { origin + "\u{1E}@\($0)" }
    }

    private func listenLoop() async {
        await notifications.listen(state: { [self] up in self.listening.store(up, ordering: .releasing) }) { payload in
            await self.receive(payload)
        }
    }

    func receive(_ payload: String) async {
        await GroupFanout.$causedAt.withValue(ContinuousClock.now) { await deliverAll(payload) }
    }

    /// Whether the LISTEN connection is up (for `/readyz`: without it this node misses the others' events).
    public var isListening: Bool { listening.load(ordering: .acquiring) }

    private func deliverAll(_ payload: String) async {
        if payload.hasPrefix("~"), let sep = payload.firstIndex(of: "\u{1E}") {
            let tag = String(payload[payload.index(after: payload.startIndex)..<sep])
            if let handler = handlers.withLock({ $0[tag] }) { await handler(String(payload[payload.index(after: sep)...])) }
            return
        }
        let parts = payload.split(separator: "\u{1E}", omittingEmptySubsequences: false)
        // Our own batched posts were delivered here already; presence ("!") is delivered on every node.
        guard let from = parts.first, from != origin[...] else { return }
        for record in parts.dropFirst() {
            if record.hasPrefix("@"), let id = Int64(record.dropFirst()) {
                guard let body = try? await notifications.fetch(id) else { continue }
                deliver(record: body[...])
            } else {
                deliver(record: record)
            }
        }
    }

    private func deliver(record: Substring) {
        let f = record.split(separator: "\u{1F}", maxSplits: 2, omittingEmptySubsequences: false)
        guard f.count == 3 else { return }
        fanout.deliver(text: String(f[2]), group: String(f[1]), excluding: f[0].isEmpty ? nil : String(f[0]))
    }

    /// Deletes stored large events older than a minute.
    public func prune() async {
        await notifications.prune(olderThan: 60)
    }
}
