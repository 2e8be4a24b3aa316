// A node's local fan-out: which of its sockets subscribe to which group, and each socket's bounded
// outbound queue. An event is serialised once and the same text goes to every subscriber; a socket
// whose queue is full is closed (1008) so one slow client never grows the server's memory.

import HubCore
import Synchronization

/// One socket's outbound queue of text frames.
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

/// The node's subscribers and their outboxes.
public final class GroupFanout: Sendable {
    private struct State {
        var router = PresenceRouter()
        var outboxes: [ConnectionID: GroupOutbox] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    /// Registers a socket's outbox.
    public func add(_ conn: ConnectionID, outbox: GroupOutbox) {
        state.withLock { $0.outboxes[conn] = outbox }
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
        let boxes = state.withLock { s in
            s.router.recipients(of: group, excluding: excluding).compactMap { s.outboxes[$0] }
        }
        for box in boxes { box.send(text) }
    }

    /// Number of local sockets.
    public var count: Int { state.withLock { $0.outboxes.count } }
}
