// Everything the groups need at run time, built from the `--db` choice: the store, the local fan-out,
// the bus (in-process for SQLite, LISTEN/NOTIFY for PostgreSQL) and the node's heartbeat service.

import HubCore
import HubStore
import Logging
import PostgresNIO
import ServiceLifecycle

/// The groups of one node, ready to serve; run it as a service for the bus and the heartbeat.
public final class GroupRuntime: Service {
    public let hub: GroupHub
    let node: GroupNodeService
    let pgBus: PostgresGroupBus?
    let logger: Logger

    /// Builds the groups on an open, migrated database: PostgreSQL gets the LISTEN/NOTIFY bus, SQLite
    /// the in-process one. `run()` writes the first heartbeat and sweeps ghosts of earlier runs.
    public init(db: any SQLDatabase, nodeName: String, heartbeat: Duration, logger: Logger) {
        let fanout = GroupFanout()
        let instance = nodeName + "-" + String(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF, radix: 36)
        let store = SQLGroupStore(db: db)
        var bus: PostgresGroupBus?
        if let pg = db as? PostgresEngine {
            let c = pg.configuration
            let listen = PostgresConnection.Configuration(
                host: c.host ?? "127.0.0.1", port: c.port ?? 5432, username: c.username, password: c.password,
                database: c.database, tls: .disable)
            bus = PostgresGroupBus(fanout: fanout, client: pg.client, listenConfig: listen, origin: instance, logger: logger)
        }
        self.hub = GroupHub(store: store, fanout: fanout, bus: bus ?? LocalGroupBus(fanout: fanout) as any GroupBus,
                            instance: instance, nodeName: nodeName, logger: logger)
        self.node = GroupNodeService(hub: hub, heartbeat: heartbeat, logger: logger)
        self.pgBus = bus
        self.logger = logger
    }

    /// Writes the first heartbeat and sweeps ghosts of earlier runs (also done by `run()`).
    public func start() async throws {
        try await node.start()
    }

    /// Runs the bus and the heartbeat until graceful shutdown, then marks this node's users offline.
    public func run() async throws {
        do { try await node.start() } catch { logger.error("groups: first heartbeat failed: \(error)") }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                if let bus = self.pgBus { group.addTask { await bus.run() } }
                group.addTask { await self.node.run() }
                await group.waitForAll()
            }
        }
        // A clean stop in a task of its own (this one is cancelled): users offline, then one last NOTIFY.
        let node = self.node, bus = self.pgBus
        await Task {
            await node.stop()
            await bus?.flushNow()
        }.value
    }
}
