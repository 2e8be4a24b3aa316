// Node liveness: each node writes its heartbeat every `heartbeat` and sweeps four times as often;
// an instance whose heartbeat is older than 1.5 heartbeats is dead and its users go offline with its
// last heartbeat as last seen: worst case 1.5 + 0.25 heartbeats after the death, plus the bus's
// 10 ms. At start a node sweeps every older instance of its own name at once (a restarted node
// cleans up after its killed self); on a single-node store (SQLite) every other instance is a ghost
// of an earlier run. A clean stop marks the node's own users offline.

import HubCore
import HubStore
import Logging

/// Heartbeat and dead-node sweep of one node.
public struct GroupNodeService: Sendable {
    let hub: GroupHub
    let heartbeat: Duration
    let logger: Logger

    public init(hub: GroupHub, heartbeat: Duration, logger: Logger) {
        self.hub = hub
        self.heartbeat = heartbeat
        self.logger = logger
    }

    var heartbeatMs: Int64 {
        let c = heartbeat.components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }

    /// First heartbeat and start-up sweep; call before accepting sockets.
    public func start() async throws {
        if let sql = hub.store as? SQLGroupStore { try await sql.prepare() }
        try await hub.store.heartbeat(instance: hub.instance, name: hub.nodeName, now: hub.now)
        try await sweep(startUp: true)
    }

    /// Heartbeats and sweeps until cancelled (the owner then calls `stop()`).
    public func run() async {
        let tick = heartbeat / 4
        var n = 0
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: tick)
            } catch { break }
            n += 1
            do {
                if n % 4 == 0 { try await hub.store.heartbeat(instance: hub.instance, name: hub.nodeName, now: hub.now) }
                try await sweep(startUp: false)
            } catch {
                logger.warning("groups: heartbeat or sweep failed: \(error)")
            }
        }
    }

    /// Marks this node's users offline and removes its row.
    public func stop() async {
        do {
            hub.execute(PresenceRules.actions(for: try await hub.store.removeNode(instance: hub.instance, now: hub.now), by: nil, op: "stop"))
        } catch {
            logger.warning("groups: clean stop failed: \(error)")
        }
    }

    func sweep(startUp: Bool) async throws {
        let now = hub.now
        let stale = hub.store.isShared ? now - heartbeatMs * 3 / 2 : Int64.max
        let outcome = try await hub.store.sweep(me: hub.instance, staleBefore: stale, sameName: startUp ? hub.nodeName : nil, now: now)
        if case .wentOffline(let gone) = outcome, !gone.isEmpty {
            logger.info("groups: \(gone.count) presences of dead nodes marked offline")
        }
        hub.execute(PresenceRules.actions(for: outcome, by: nil, op: "sweep"))
    }
}
