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
    let pgClientTask: Task<Void, Never>?
    let logger: Logger

    /// Opens the store (creating tables), writes the first heartbeat and sweeps ghosts of earlier runs.
    public static func open(database: GroupDatabase, nodeName: String, heartbeat: Duration, logger: Logger) async throws -> GroupRuntime {
        let fanout = GroupFanout()
        let instance = nodeName + "-" + String(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF, radix: 36)
        switch database {
        case .sqlite(let path):
            let store = try await SQLGroupStore.sqlite(path: path)
            let hub = GroupHub(store: store, fanout: fanout, bus: LocalGroupBus(fanout: fanout), instance: instance, nodeName: nodeName, logger: logger)
            return try await GroupRuntime(hub: hub, heartbeat: heartbeat, pgBus: nil, task: nil, logger: logger)
        case .postgres(let host, let port, let user, let password, let db):
            var config = PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: db, tls: .disable)
            config.options.maximumConnections = 16
            let client = PostgresClient(configuration: config, backgroundLogger: logger)
            let task = Task { await client.run() }
            do {
                let store = try await SQLGroupStore(engine: GroupPostgresEngine(client: client, logger: logger))
                let listen = PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: db, tls: .disable)
                let bus = PostgresGroupBus(fanout: fanout, client: client, listenConfig: listen, origin: instance, logger: logger)
                try await bus.prepare()
                let hub = GroupHub(store: store, fanout: fanout, bus: bus, instance: instance, nodeName: nodeName, logger: logger)
                return try await GroupRuntime(hub: hub, heartbeat: heartbeat, pgBus: bus, task: task, logger: logger)
            } catch {
                task.cancel()
                throw error
            }
        }
    }

    private init(hub: GroupHub, heartbeat: Duration, pgBus: PostgresGroupBus?, task: Task<Void, Never>?, logger: Logger) async throws {
        self.hub = hub
        self.node = GroupNodeService(hub: hub, heartbeat: heartbeat, logger: logger)
        self.pgBus = pgBus
        self.pgClientTask = task
        self.logger = logger
        try await node.start()
    }

    /// Runs the bus and the heartbeat until graceful shutdown, then marks this node's users offline.
    public func run() async throws {
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
        pgClientTask?.cancel()
    }
}
