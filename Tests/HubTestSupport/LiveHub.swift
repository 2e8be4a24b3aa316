import Foundation
import HubCore
import HubServer
import HubStore
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A clock the tests move by hand (Unix milliseconds), for token lifetimes.
public final class ManualClock: Sendable {
    private let now: Mutex<Int64>
    public init(startMs: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) { now = Mutex(startMs) }
    public var ms: Int64 { now.withLock { $0 } }
    public func advance(seconds: Int64) { now.withLock { $0 += seconds * 1000 } }
}

/// Account codes "delivered out of band", kept for the test to read.
public final class CodeInbox: ConfirmationSender {
    private let codes = Mutex<[String: String]>([:])
    public init() {}
    public func send(code: String, purpose: String, user: String, contact: String?) async {
        codes.withLock { $0["\(purpose):\(user)"] = code }
    }
    /// The last code sent for `purpose` ("confirm" or "reset") to `user`.
    public func code(_ purpose: String, _ user: String) -> String? { codes.withLock { $0["\(purpose):\(user)"] } }
}

/// The whole hub (OAuth, `/v1`, groups REST and the `/v1/socket` WebSocket) running in this process on
/// a free port of 127.0.0.1, over a fresh SQLite file, with two OAuth clients (`plain`; `pw`, allowed the
/// password grant) and the account `alice`. Stop it with `stop()`.
public final class LiveHub: Sendable {
    public let store: SQLHubStore
    public let clock: ManualClock
    public let plain: (id: String, secret: String)
    public let pw: (id: String, secret: String)
    public let port: Int
    public let scheme: String
    public let directory: String
    public static let alicePassword = "correct horse battery"
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    /// The base URL, `http(s)://127.0.0.1:PORT`.
    public var base: String { "\(scheme)://127.0.0.1:\(port)" }

    /// Starts the hub and returns once it listens. `tls`: PEM certificate and key files; `connections`:
    /// the caps and deadlines of its connection guard.
    public static func start(tls: (cert: String, key: String)? = nil, connections: ConnectionLimits = ConnectionLimits()) async throws -> LiveHub {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hublive-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var logger = Logger(label: "hub-live")
        logger.logLevel = .warning
        let store = try await SQLHubStore.open(.sqlite(path: dir + "/hub.sqlite"), logger: logger, nowMs: 0)
        let clock = ManualClock()
        var a = HubAuthority.Settings()
        a.bcryptCost = 4  // fast in tests; the server uses 12
        let authority = HubAuthority(store: store, settings: a, logger: logger, clock: { clock.ms })
        var made: [(String, String)] = []
        for (name, grant) in [("plain", false), ("pw", true)] {
            let id = HubTokens.newID(prefix: "c_"), secret = HubTokens.newClientSecret()
            try await store.createClient(ClientRecord(id: id, name: name, secretSHA256: HubTokens.sha256(secret),
                                                      passwordGrant: grant, createdMs: 0))
            made.append((id, secret))
        }
        try await store.createUser(UserRecord(id: "u_alice", name: "alice", passwordBcrypt: try await authority.hashPassword(alicePassword),
                                              contact: nil, confirmed: true, createdMs: 0))
        var settings = HubServerSettings()
        settings.host = "127.0.0.1"
        settings.port = 0
        settings.tlsCertPath = tls?.cert
        settings.tlsKeyPath = tls?.key
        settings.connections = connections
        let context = HubPluginContext(authority: authority, store: store, settings: settings, logger: logger)
        let plugins: [any HubPlugin] = [GroupsPlugin(nodeName: "live-\(UUID().uuidString.prefix(8))", heartbeat: .seconds(5))]
        let inbox = CodeInbox()
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let app = try HubApp.application(context: context, plugins: plugins, sender: inbox, onServerRunning: { channel in
            portSink.yield(channel.localAddress?.port ?? 0)
            portSink.finish()
        })
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next(), port > 0 else {
            running.cancel()
            try? await store.close()
            throw LiveHubError("the hub did not start")
        }
        return LiveHub(store: store, clock: clock, inbox: inbox, plain: made[0], pw: made[1], port: port,
                       scheme: tls == nil ? "http" : "https", directory: dir, group: group, running: running,
                       connectionCounts: context.connectionCounts)
    }

    private init(store: SQLHubStore, clock: ManualClock, inbox: CodeInbox, plain: (String, String), pw: (String, String), port: Int,
                 scheme: String, directory: String, group: ServiceGroup, running: Task<Void, any Error>,
                 connectionCounts: ConnectionCounts) {
        self.connectionCounts = connectionCounts
        self.store = store
        self.clock = clock
        self.inboxStorage = inbox
        self.plain = plain
        self.pw = pw
        self.port = port
        self.scheme = scheme
        self.directory = directory
        self.group = group
        self.running = running
    }
    private let inboxStorage: CodeInbox
    /// What the connection guard let in, refused and closed.
    public let connectionCounts: ConnectionCounts

    /// The codes the hub "sent".
    public var codes: CodeInbox { inboxStorage }

    /// Graceful shutdown (open sockets are closed by the hub), then the store is closed.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        try? await store.close()
    }
}

public struct LiveHubError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}
