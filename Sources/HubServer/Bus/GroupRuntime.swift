// Everything the groups need at run time, built from the `--db` choice: the store, the local fan-out,
// the bus (in-process for SQLite, LISTEN/NOTIFY for PostgreSQL) and the node's heartbeat service.

import HubCore
import HubStore
import Logging
import ServiceLifecycle

/// The bounds of the groups side (`modem-hub serve` options; docs/hub.md "Bounds"), carried in
/// `HubServerSettings.groups`.
public struct GroupSettings: Sendable, Hashable {
    /// `--max-posts-per-user-per-group` and `--max-posts-per-group`: new posts over them are refused.
    public var posts = PostBounds()
    /// `--max-socket-queue-bytes`: what one socket may hold of live events.
    public var socket = GroupSocketLimits()
    /// `--devices-per-address-per-hour` and `--max-devices-per-client`: new device ids over them are refused.
    public var devices = DeviceBounds()

    public init() {}
}

/// The groups of one node, ready to serve; run it as a service for the bus and the heartbeat.
public final class GroupRuntime: Service {
    public let hub: GroupHub
    let node: GroupNodeService
    let pgBus: PostgresGroupBus?
    /// PostgreSQL: the small pool of the heartbeat and the sweep (never queued behind client work).
    let livenessDB: PostgresEngine?
    /// PostgreSQL: the pool of the groups' own statements (asynchronous commit).
    let groupsDB: PostgresEngine?
    let logger: Logger

    /// Builds the groups on an open, migrated database: PostgreSQL gets the LISTEN/NOTIFY bus, SQLite
    /// the in-process one. `run()` writes the first heartbeat and sweeps ghosts of earlier runs.
    /// - Parameters:
    ///   - clock: the node's time, for its timers and stored times (default: the system's)
    ///   - metrics: where sockets, posts, deliveries and refusals are counted (nil: nowhere)
    public init(db: any SQLDatabase, nodeName: String, heartbeat: Duration, logger: Logger, settings: GroupSettings = GroupSettings(),
                clock: GroupClock = .system, metrics: HubMetrics? = nil) {
        let fanout = GroupFanout(metrics: metrics)
        let instance = nodeName + "-" + String(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF, radix: 36)
        // Joins read no group into memory: each socket's writer pages its history from the store.
        var store = SQLGroupStore(db: db, postBounds: settings.posts, snapshotOnJoin: false, deviceBounds: settings.devices)
        var bus: PostgresGroupBus?
        var liveness: PostgresEngine?
        var groupsDB: PostgresEngine?
        var notifier: PresenceNotifier?
        if let pg = db as? PostgresEngine {
            // The groups' own pool commits without waiting for the WAL flush (synchronous_commit=off):
            // a post or presence change is delivered after its commit, and with the flush a commit took
            // 40-230 ms on this machine under load. A PostgreSQL crash may lose the last few hundred ms
            // of group writes (never half of one); accounts and tokens keep the server's setting.
            let groups = pg.derived(asynchronousCommit: true, logger: logger)
            groupsDB = groups
            liveness = pg.derived(asynchronousCommit: true, minimumConnections: 1, maximumConnections: 2, logger: logger)
            let pgBus = PostgresGroupBus(fanout: fanout, notifications: PostgresNotifications(channel: PostgresGroupBus.channel, engine: groups, logger: logger),
                                         origin: instance, logger: logger, timers: clock.timers)
            bus = pgBus
            notifier = { tx, events in try await pgBus.notifyPresence(on: tx, events) }
            store = SQLGroupStore(db: groups, notifier: notifier, postBounds: settings.posts, snapshotOnJoin: false,
                                  deviceBounds: settings.devices)
        }
        self.hub = GroupHub(store: store, fanout: fanout, bus: bus ?? LocalGroupBus(fanout: fanout) as any GroupBus,
                            instance: instance, nodeName: nodeName, logger: logger, socketLimits: settings.socket, ready: false,
                            clock: clock, metrics: metrics)
        self.node = GroupNodeService(hub: hub, liveness: liveness.map { SQLGroupStore(db: $0, notifier: notifier) }, heartbeat: heartbeat, logger: logger)
        self.pgBus = bus
        self.livenessDB = liveness
        self.groupsDB = groupsDB
        self.logger = logger
    }

    /// Writes the first heartbeat and sweeps ghosts of earlier runs (also done by `run()`).
    public func start() async throws {
        defer { hub.markReady() }
        try await node.start()
    }

    /// Why this node's groups cannot serve now (for `/readyz`), or nil: the tables not prepared yet, no
    /// heartbeat written yet or none for longer than the other nodes allow before they take it for dead
    /// (1.25 heartbeats), or, on PostgreSQL, the bus's LISTEN connection down (it would miss the other
    /// nodes' events).
    public func readiness() -> String? {
        guard hub.isReady else { return "groups: the tables are not prepared yet" }
        guard let beat = hub.lastHeartbeat else { return "groups: no heartbeat written yet" }
        let age = hub.now - beat, limit = node.heartbeatMs * 5 / 4
        if age > limit { return "groups: this node's last heartbeat was \(age) ms ago (a node is taken for dead after \(limit) ms)" }
        if let pgBus, !pgBus.isListening { return "group bus: the LISTEN connection is down" }
        return nil
    }

    /// Runs the bus and the heartbeat until graceful shutdown, then marks this node's users offline.
    public func run() async throws {
        do { try await node.start() } catch let twin as NodeNameInUse { throw twin } catch {
            logger.error("groups: first heartbeat failed: \(error)")
        }
        hub.markReady()
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                if let bus = self.pgBus { group.addTask { await bus.run() } }
                group.addTask { await self.node.run() }
                await group.waitForAll()
            }
        }
        // A clean stop in a task of its own (this one is cancelled): users offline, then one last NOTIFY.
        let node = self.node, bus = self.pgBus, liveness = self.livenessDB, groups = self.groupsDB
        await Task {
            await node.stop()
            await bus?.flushNow()
            try? await liveness?.close()
            try? await groups?.close()
        }.value
    }
}
