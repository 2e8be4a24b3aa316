// The groups engine of one node: store outcomes -> PresenceRules actions -> local fan-out and bus.

import HubCore
import HubStore
import Logging
import Synchronization

/// Who a socket or REST call acts for.
public struct GroupPrincipal: Sendable, Hashable {
    /// The account's user id for resource-owner tokens; nil for client tokens.
    public var account: String?
    /// The OAuth client the token was issued to.
    public var clientID: String

    public init(account: String?, clientID: String) {
        self.account = account
        self.clientID = clientID
    }

    /// The user REST calls act as: the account, or the client's own user `client:<id>`.
    public var restUser: String { account ?? "client:" + clientID }
}

/// Turns Bearer tokens into principals (supplied by the OAuth layer).
public typealias GroupAuthenticator = @Sendable (_ bearerToken: String) async -> GroupPrincipal?

/// One node's groups: the store, the local fan-out, the bus and this node's instance id.
public final class GroupHub: Sendable {
    public let store: any GroupStore
    public let fanout: GroupFanout
    public let bus: any GroupBus
    /// This process's instance id (unique per start; the node name plus a random suffix).
    public let instance: String
    /// The node's name (`--node`).
    public let nodeName: String
    /// What one socket may hold (`--max-socket-queue-bytes`).
    public let socketLimits: GroupSocketLimits
    /// Where this node takes its time: the wall-clock milliseconds of ``now`` and the timers of its
    /// heartbeat, sweep and twin check (``GroupNodeService``).
    public let clock: GroupClock
    /// Where posts, fan-out deliveries and refusals are counted (nil: nowhere).
    public let metrics: HubMetrics?
    let logger: Logger
    private let counter = Atomic<Int>(0)
    /// When this node last wrote its heartbeat (``now``'s milliseconds; `Int64.min`: never), for `/readyz`.
    private let lastHeartbeatMs = Atomic<Int64>(Int64.min)
    /// What each local socket has joined (to announce it again after this node was swept).
    private let joins = Mutex<[ConnectionID: (user: String, groups: Set<String>)]>([:])
    /// Whether the groups' tables are there (`GroupRuntime` prepares them as a service, which may
    /// still be at it when the first request comes), and who waits for it.
    private let readiness: Mutex<(ready: Bool, waiters: [CheckedContinuation<Void, Never>])>

    /// Tests only: runs in a join or listen right after the socket was subscribed to the group and
    /// before the store is read (the window in which a live post may arrive), to force that interleaving.
    let afterSubscribe: (@Sendable (ConnectionID, String) async -> Void)?

    /// - Parameters:
    ///   - clock: the node's time (default: the system's; a test passes one on a manual clock)
    ///   - metrics: where posts and refusals are counted (the fan-out counts its deliveries itself)
    public init(store: any GroupStore, fanout: GroupFanout, bus: any GroupBus, instance: String, nodeName: String, logger: Logger,
                socketLimits: GroupSocketLimits = GroupSocketLimits(), ready: Bool = true, clock: GroupClock = .system,
                metrics: HubMetrics? = nil, afterSubscribe: (@Sendable (ConnectionID, String) async -> Void)? = nil) {
        self.afterSubscribe = afterSubscribe
        self.metrics = metrics
        self.clock = clock
        self.socketLimits = socketLimits
        self.readiness = Mutex((ready, []))
        self.store = store
        self.fanout = fanout
        self.bus = bus
        self.instance = instance
        self.nodeName = nodeName
        self.logger = logger
    }

    /// Returns once the store is prepared (at once after ``markReady()``): REST calls and sockets wait
    /// here, so a request that arrives while a new database's tables are being made is not a 500.
    public func ready() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = readiness.withLock { r in
                if r.ready { return true }
                r.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    /// The store's preparation ended (done, or failed: then the store's own errors answer).
    public func markReady() {
        let waiters = readiness.withLock { r in
            r.ready = true
            defer { r.waiters = [] }
            return r.waiters
        }
        for w in waiters { w.resume() }
    }

    /// Whether the store is prepared (``markReady()`` was called).
    public var isReady: Bool { readiness.withLock { $0.ready } }

    /// This node wrote its heartbeat at `ms` (``now``'s milliseconds).
    func noteHeartbeat(atMs ms: Int64) { lastHeartbeatMs.store(ms, ordering: .relaxed) }

    /// When this node last wrote its heartbeat (``now``'s milliseconds), nil before the first.
    public var lastHeartbeat: Int64? {
        let ms = lastHeartbeatMs.load(ordering: .relaxed)
        return ms == Int64.min ? nil : ms
    }

    /// Counts what an op's outcome means for the metrics: a post stored (`via`: `socket` or `rest`), or
    /// a refusal by a bound (named as its option).
    public func count(_ outcome: PresenceOutcome, via: String) {
        guard let metrics else { return }
        switch outcome {
        case .posted: metrics.posted(via: via)
        case .refused(.tooManyPosts(_, let bound)): metrics.refused(limit: bound.name)
        case .refused(.tooManyGroups): metrics.refused(limit: "max-groups-per-user")
        default: break
        }
    }

    /// A new connection id, unique across nodes.
    public func newConnectionID() -> ConnectionID {
        instance + "/" + String(counter.add(1, ordering: .relaxed).newValue)
    }

    /// Current wall-clock time in Unix ms (``clock``'s).
    public var now: Int64 { clock.nowMs() }

    /// Performs one client op of `user` on `conn` and carries out the resulting actions.
    public func perform(_ op: ClientOp, conn: ConnectionID, user: String) async {
        let started = ContinuousClock.now
        do {
            let outcome: PresenceOutcome
            let now = self.now
            switch op {
            case .hello:
                fanout.send(conn, ClientOpError(op: "hello", message: "hello was already said", fatal: false).jsonText)
                return
            case .join(let g):
                // Subscribed and holding the group's live events before the store is read, so nothing
                // committed meanwhile is missed; the history follows as the socket drains.
                // Holding first, then subscribed: a live event can only reach the socket held, never
                // queued ahead of the history that also carries it.
                let box = fanout.outbox(conn)
                let wasSubscribed = fanout.isSubscribed(conn, to: g)
                box?.beginHistory(group: g, since: now)
                fanout.subscribe(conn, to: g)
                await afterSubscribe?(conn, g)
                do { outcome = try await store.join(conn: conn, instance: instance, group: g, user: user, now: now) } catch {
                    box?.abandonHistory(group: g)
                    throw error
                }
                if case .refused = outcome {
                    // Over max-groups-per-user: not a member, no history; an `error` event names the bound.
                    if !wasSubscribed { fanout.unsubscribe(conn, from: g) }
                    box?.abandonHistory(group: g)
                    count(outcome, via: "socket")
                    execute(PresenceRules.actions(for: outcome, by: conn, op: op.name))
                    return
                }
                _ = joins.withLock { $0[conn, default: (user, [])].groups.insert(g) }
                execute(Self.withoutSnapshot(PresenceRules.actions(for: outcome, by: conn, op: op.name)), causedAt: started)
                box?.requestHistory(group: g)
                return
            case .listen(let g):
                let box = fanout.outbox(conn)
                box?.beginHistory(group: g, since: now)
                fanout.subscribe(conn, to: g)
                await afterSubscribe?(conn, g)
                do { outcome = try await store.listen(group: g) } catch {
                    box?.abandonHistory(group: g)
                    throw error
                }
                execute(Self.withoutSnapshot(PresenceRules.actions(for: outcome, by: conn, op: op.name)), causedAt: started)
                box?.requestHistory(group: g)
                return
            case .leave(let g):
                outcome = try await store.leave(conn: conn, group: g, user: user, now: now)
                joins.withLock { _ = $0[conn]?.groups.remove(g) }
            case .post(let g, let pid, let load):
                outcome = try await store.post(GroupPost(group: g, pid: pid, user: user, pidload: load, timestamp: now))
            case .unpost(let g, let pid):
                outcome = try await store.unpost(group: g, pid: pid, user: user)
            case .update(let load):
                outcome = try await store.update(user: user, userload: load, now: now)
            }
            count(outcome, via: "socket")
            execute(PresenceRules.actions(for: outcome, by: conn, op: op.name), causedAt: started)
        } catch {
            logger.error("groups: \(op.name) failed: \(error)")
            fanout.send(conn, ClientOpError(op: op.name, message: "the hub could not do that now; try again", fatal: false).jsonText)
        }
    }

    /// The actions of a join or listen without the snapshot's sends: the socket's writer sends the
    /// group's history instead, a page at a time from the store (``writeHistory(of:isClosed:write:)``).
    static func withoutSnapshot(_ actions: [PresenceAction]) -> [PresenceAction] {
        actions.filter { if case .send = $0 { false } else { true } }
    }

    /// Writes a group's history to one socket: every member by user id, then every post by time and pid,
    /// read ``GroupSocketLimits/historyPageRows`` at a time, each frame written (`write` awaits the
    /// socket) before the next page is read, so a joiner gets every post the group keeps at the pace it
    /// reads, and the hub holds one page. Returns the hashes of the post frames written (for
    /// ``GroupSocketOutbox/release(group:sentPosts:)``), or nil when the socket went away (`write`
    /// returned false, or `isClosed`).
    /// - Throws: the store's error reading a page.
    public func writeHistory(of group: String, pageRows: Int = GroupSocketLimits.historyPageRows,
                             isClosed: () -> Bool, write: (String) async -> Bool) async throws -> Set<Int>? {
        var afterUser: String?
        while true {
            let page = try await store.members(group: group, after: afterUser, limit: pageRows)
            for m in page {
                if isClosed() { return nil }
                guard await write(GroupEvent.user(m).jsonText) else { return nil }
            }
            if page.count < pageRows { break }
            afterUser = page.last?.user
        }
        return try await writePosts(of: group, after: nil, skipping: [], pageRows: pageRows, isClosed: isClosed, write: write)
    }

    /// What a socket's writer does for a ``GroupSocketOutbox/Item/history(group:)``: the group's history
    /// (``writeHistory(of:pageRows:isClosed:write:)``), the posts since the join again while live posts
    /// were dropped meanwhile (``GroupSocketOutbox/Release/resync(since:)``, at most
    /// ``GroupSocketLimits/maxResyncs`` times, then the socket is closed as too slow), then the held
    /// frames. False when the socket went away or must close (``GroupSocketOutbox/closeReason``).
    public func writeJoin(of group: String, outbox: GroupSocketOutbox, write: (String) async -> Bool) async -> Bool {
        var sent = Set<Int>()
        var released = GroupSocketOutbox.Release.frames([])
        var resyncs = 0
        do {
            guard let s = try await writeHistory(of: group, isClosed: { outbox.isFinished }, write: write) else { return false }
            sent = s
            // Live posts dropped while it was written (held over the bound): the store has them.
            while true {
                released = outbox.release(group: group, sentPosts: sent)
                guard case .resync(let since) = released else { break }
                resyncs += 1
                if resyncs > GroupSocketLimits.maxResyncs {
                    outbox.close(reason: "too slow: live posts outpaced a join's history (max-socket-queue-bytes)")
                    return false
                }
                let from = PostCursor(timestamp: since - GroupSocketLimits.resyncMarginMs, pid: "")
                guard let s = try await writePosts(of: group, after: from, skipping: sent, isClosed: { outbox.isFinished }, write: write)
                else { return false }
                sent = s
            }
        } catch {
            logger.error("groups: reading the history of \(group) failed: \(error)")
            guard await write(ClientOpError(op: "join", message: "the hub could not read group \(group) now; join again", fatal: false).jsonText)
            else { return false }
            // A re-read still due is given up (the client was told to join again): release.
            released = outbox.release(group: group, sentPosts: sent)
            if case .resync = released { released = outbox.release(group: group, sentPosts: sent) }
        }
        if case .frames(let frames) = released {
            for text in frames {
                guard await write(text) else { return false }
            }
        }
        return true
    }

    /// Writes the group's posts after `after` (nil: all) a page at a time, leaving out those whose frames
    /// are in `skipping` (hashes of post frames sent already); returns `skipping` with the frames written
    /// added, or nil when the socket went away. After a join whose held live posts were dropped
    /// (``GroupSocketOutbox/Release/resync(since:)``) it writes the posts since the join that the history
    /// had not.
    public func writePosts(of group: String, after: PostCursor?, skipping: Set<Int>, pageRows: Int = GroupSocketLimits.historyPageRows,
                           isClosed: () -> Bool, write: (String) async -> Bool) async throws -> Set<Int>? {
        var sent = skipping
        var cursor = after
        while true {
            let page = try await store.posts(group: group, after: cursor, limit: pageRows)
            for p in page {
                if isClosed() { return nil }
                let text = GroupEvent.post(p).jsonText
                guard !sent.contains(text.hashValue) else { continue }
                guard await write(text) else { return nil }
                sent.insert(text.hashValue)
            }
            if page.count < pageRows { break }
            cursor = page.last.map(PostCursor.init(after:))
        }
        return sent
    }

    /// A socket ended: its user goes offline where it has no other connection.
    public func closed(_ conn: ConnectionID) async {
        fanout.remove(conn)
        joins.withLock { $0[conn] = nil }
        do {
            execute(PresenceRules.actions(for: try await store.close(conn: conn, now: now), by: nil, op: "close"))
        } catch is CancellationError {
            // A stop past --shutdown-timeout cancelled the socket: the node's clean stop marks its user offline.
            logger.debug("groups: a connection ended by a forced stop; the node's clean stop takes its user offline")
        } catch {
            logger.error("groups: closing a connection failed: \(error)")
        }
    }

    /// Joins every local socket's groups again (after another node swept this one): the store gets the
    /// presence rows back and the users come online again, once each, for the others.
    public func reannounce() async {
        let all = joins.withLock { $0 }
        for (conn, entry) in all {
            for group in entry.groups.sorted() {
                do {
                    let outcome = try await store.join(conn: conn, instance: instance, group: group, user: entry.user, now: now)
                    // Only the others hear of it: the socket itself knows it is there (no snapshot again).
                    execute(PresenceRules.actions(for: outcome, by: conn, op: "join").filter {
                        if case .publish = $0 { true } else { false }
                    })
                } catch {
                    logger.error("groups: announcing \(conn) in \(group) again failed: \(error)")
                }
            }
        }
    }

    /// Carries out actions: local subscriptions and sends, publishes through the bus. `causedAt`: when
    /// the op that led to them reached this node (the fan-out's latency is measured from there; nil: now).
    public func execute(_ actions: [PresenceAction], causedAt: ContinuousClock.Instant? = nil) {
        guard let causedAt else { return run(actions) }
        GroupFanout.$causedAt.withValue(causedAt) { run(actions) }
    }

    private func run(_ actions: [PresenceAction]) {
        for action in actions {
            switch action {
            case .subscribe(let c, let g): fanout.subscribe(c, to: g)
            case .unsubscribe(let c, let g): fanout.unsubscribe(c, from: g)
            case .send(let c, let e): fanout.send(c, e.jsonText)
            case .publish(let e, let excluding): bus.publish(e, excluding: excluding)
            case .error(let c, let e): fanout.send(c, e.jsonText)
            }
        }
    }
}
