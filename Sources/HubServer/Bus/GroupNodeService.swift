// Node liveness: each node writes its heartbeat four times per `heartbeat` and sweeps as often, in two
// independent loops; an instance whose heartbeat is older than 1.25 heartbeats is dead and its users go
// offline with its last heartbeat as last seen: worst case 1.25 + 0.25 heartbeats after the death, plus
// the sweep and the bus's 10 ms. At start a node sweeps every older instance of its own name at once (a
// restarted node cleans up after its killed self); on a single-node store (SQLite) every other instance
// is a ghost of an earlier run. A clean stop marks the node's own users offline.
//
// Every time here is the hub's `GroupClock`: the loops and the twin check sleep on its timers, and the
// heartbeats and staleness compare its wall-clock milliseconds (`hub.now`).
//
// Why four beats per heartbeat, on a pool of their own (`liveness`): a live node must never look dead.
// With one beat per heartbeat, written after the sweep in the same loop through the main pool, a
// 1,000-socket join storm queued the beat behind hundreds of joins for over 1.5 heartbeats, and the
// other node marked all of this node's users offline (seen in the two-node load run, both ways). Now a
// beat may be a whole heartbeat late before the node counts as dead.
import HubCore
import HubStore
import Logging
import ModemRuntime

/// Heartbeat and dead-node sweep of one node, on the hub's clock (``GroupHub/clock``).
public struct GroupNodeService: Sendable {
    let hub: GroupHub
    /// Where heartbeats and sweeps go: a small pool of their own on PostgreSQL, else the hub's store.
    let liveness: any GroupStore
    let heartbeat: Duration
    let logger: Logger
    /// What the loops and the twin check sleep on: the hub's timers.
    var timers: TimerClock { hub.clock.timers }

    /// - Parameter liveness: the store for heartbeats and sweeps (default: the hub's own)
    public init(hub: GroupHub, liveness: (any GroupStore)? = nil, heartbeat: Duration, logger: Logger) {
        self.hub = hub
        self.liveness = liveness ?? hub.store
        self.heartbeat = heartbeat
        self.logger = logger
    }

    var heartbeatMs: Int64 {
        let c = heartbeat.components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }

    /// First heartbeat and start-up sweep; call before accepting sockets.
    /// - Throws: ``NodeNameInUse`` when another process runs a node of this name on the same database.
    public func start() async throws {
        if let sql = hub.store as? SQLGroupStore { try await sql.prepare() }
        try await refuseLiveTwin()
        let now = hub.now
        try await liveness.heartbeat(instance: hub.instance, name: hub.nodeName, now: now)
        hub.noteHeartbeat(atMs: now)
        try await sweep(startUp: true)
    }

    /// Heartbeats and sweeps, each in a loop of its own, until cancelled (the owner then calls `stop()`).
    public func run() async {
        let tick = heartbeat / 4
        await withTaskGroup(of: Void.self) { loops in
            loops.addTask {
                await every(tick, "heartbeat") {
                    // The row gone: another node took this one for dead (a stall longer than 1.25
                    // heartbeats) and dropped its presence; its sockets are still here, so join again.
                    let now = hub.now
                    let kept = try await liveness.heartbeat(instance: hub.instance, name: hub.nodeName, now: now)
                    hub.noteHeartbeat(atMs: now)
                    if !kept {
                        logger.warning("groups: this node was taken for dead by another; announcing its connections again")
                        await hub.reannounce()
                    }
                }
            }
            loops.addTask {
                await every(tick, "sweep") { try await sweep(startUp: false) }
            }
            await loops.waitForAll()
        }
    }

    private func every(_ tick: Duration, _ what: String, _ body: () async throws -> Void) async {
        while !Task.isCancelled {
            do { try await timers.sleep(tick.timerSeconds) } catch { return }
            do { try await body() } catch {
                if Task.isCancelled { return }
                logger.warning("groups: \(what) failed: \(error)")
            }
        }
    }

    /// Marks this node's users offline and removes its row.
    public func stop() async {
        do {
            hub.execute(PresenceRules.actions(for: try await liveness.removeNode(instance: hub.instance, now: hub.now), by: nil, op: "stop"))
        } catch {
            logger.warning("groups: clean stop failed: \(error)")
        }
    }

    /// Another instance of this node's name with a recent heartbeat is either this node's predecessor,
    /// killed a moment ago (its beats have stopped), or another process given the same `--node` (its
    /// beats go on; the start-up sweep would take its users offline and the two would flap). Watch it
    /// until it beats again (refuse) or goes stale (1.25 heartbeats after its last beat: carry on).
    /// A clean stop removes the node's row, so a clean restart never waits. (SQLite: one `serve` per
    /// database file, by a lock.)
    func refuseLiveTwin() async throws {
        guard liveness.isShared else { return }
        let limit = heartbeatMs * 5 / 4
        var watched = try await liveness.nodeBeats(name: hub.nodeName, except: hub.instance).filter { hub.now - $0.heartbeatMs <= limit }
        if !watched.isEmpty {
            logger.notice("groups: node '\(hub.nodeName)' has another instance that beat \(hub.now - watched[0].heartbeatMs) ms ago; waiting to see whether it is alive")
        }
        while !watched.isEmpty {
            try await timers.sleep((heartbeat / 8).timerSeconds)
            let now = hub.now
            let beats = Dictionary(try await liveness.nodeBeats(name: hub.nodeName, except: hub.instance).map { ($0.instance, $0.heartbeatMs) },
                                   uniquingKeysWith: { max($0, $1) })
            if let live = watched.first(where: { (beats[$0.instance] ?? Int64.min) > $0.heartbeatMs }) {
                throw NodeNameInUse(name: hub.nodeName, instance: live.instance)
            }
            watched = watched.filter { w in beats[w.instance].map { now - $0 <= limit } ?? false }
        }
    }

    func sweep(startUp: Bool) async throws {
        let now = hub.now
        let stale = liveness.isShared ? now - heartbeatMs * 5 / 4 : Int64.max
        let outcome = try await liveness.sweep(me: hub.instance, staleBefore: stale, sameName: startUp ? hub.nodeName : nil, now: now)
        if case .wentOffline(let gone) = outcome, !gone.isEmpty {
            logger.info("groups: \(gone.count) presences of dead nodes marked offline")
        }
        hub.execute(PresenceRules.actions(for: outcome, by: nil, op: "sweep"))
    }
}

/// Another process runs a node of the same name on the same database (its heartbeats go on).
public struct NodeNameInUse: Error, Sendable, CustomStringConvertible {
    /// The node name (`--node`).
    public let name: String
    /// The other process's instance id.
    public let instance: String
    public var description: String {
        "another modem-hub node named '\(name)' is running on this database (instance \(instance), its heartbeats go on): "
            + "give this one another --node name"
    }
}
