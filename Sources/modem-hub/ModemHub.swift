import ArgumentParser
import CoreMetrics
import Foundation
import HubCore
import HubServer
import HubStore
import Hummingbird
import Logging
import ModemRuntime
import Prometheus
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// `modem-hub`: the hub server (groups with presence behind OAuth2) and its administration.
@main
struct ModemHub: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modem-hub",
        abstract: "The hub: groups with presence behind an OAuth2 API (SQLite by default, PostgreSQL for several nodes).",
        version: SwiftModemVersion.string,
        subcommands: [Serve.self, ClientCommand.self, UserCommand.self, PrintOpenAPI.self] + clientSubcommands)

    /// The command line, with `serve --config FILE`'s settings placed before the user's options
    /// (``ServeConfigFile``), parsed and run.
    static func main() async {
        let arguments: [String]
        do { arguments = try ServeConfigFile.expand(Array(CommandLine.arguments.dropFirst())) } catch {
            FileHandle.standardError.write(Data("modem-hub: \(error.message)\n".utf8))
            Glibc.exit(error.status)
        }
        await main(arguments)
    }
}

/// Exit codes: 64 for usage errors (bad options), 1 for failures.
enum Exit {
    static let usage = ExitCode(64)
    static let failure = ExitCode(1)
}

func nowMillis() -> Int64 { HubAuthority.systemMillis() }

func fail(_ message: String, _ code: ExitCode) -> ExitCode {
    FileHandle.standardError.write(Data("modem-hub: \(message)\n".utf8))
    return code
}

/// The database of `--db TEXT`, else of `$MODEM_HUB_DB` (where a URL with a password may be kept out of
/// the command line and the settings file), else the default SQLite file.
func parseDB(_ text: String?) throws -> DatabaseLocation {
    let env = ProcessInfo.processInfo.environment["MODEM_HUB_DB"].flatMap { $0.isEmpty ? nil : $0 }
    guard let text = text ?? env else { return DatabaseLocation.defaultLocation }
    do { return try DatabaseLocation(parsing: text) } catch {
        throw fail("\(error)", Exit.usage)
    }
}

func openStore(_ location: DatabaseLocation, logger: Logger) async throws -> SQLHubStore {
    do { return try await SQLHubStore.open(location, logger: logger, nowMs: nowMillis()) } catch {
        throw fail("cannot open \(location.redacted): \(error)", Exit.failure)
    }
}

func makeLogger(_ label: String, level: Logger.Level) -> Logger {
    var l = Logger(label: label)
    l.logLevel = level
    return l
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the hub server.",
        discussion: """
            Every option may instead be set in a TOML file given with --config, under its long name \
            (listen = "127.0.0.1:8080", heartbeat = 5, log-codes = true, trusted-proxy = ["10.0.0.0/8"]); \
            an option on the command line wins over the file. The database URL may come from \
            $MODEM_HUB_DB (over the file, under --db). docs/hub-config.example.toml has every setting.
            """)

    @Option(help: ArgumentHelp("A TOML file of settings, each under its option's long name; options on the command line win over it.",
                               valueName: "file"))
    var config: String?
    @Option(help: "Address to listen on, HOST:PORT (port 0: one the kernel picks). Once listening, prints 'modem-hub: listening on HOST:PORT' on standard error.") var listen = "127.0.0.1:8080"
    @Option(help: "sqlite:PATH or postgres://USER@HOST:PORT/DB (default $MODEM_HUB_DB, else $XDG_DATA_HOME/swiftmodem/hub.sqlite).") var db: String?
    @Option(help: "This node's name (default: the host name).") var node: String?
    @Option(parsing: .unconditional, help: "Seconds between node heartbeats (0.1 to 3600).") var heartbeat: Double = 5
    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain: serve HTTPS.") var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: "PEM private key for --tls-cert.") var tlsKey: String?
    @Option(help: "Issuer URL in the metadata (default: scheme and listen address).") var issuer: String?
    @Option(name: .customLong("access-ttl"), help: "Access token lifetime in seconds.") var accessTTL = 600
    @Option(name: .customLong("head-timeout"), parsing: .unconditional,
            help: "Seconds a request head may take to arrive, however slowly its bytes come (1 to 300).") var headTimeout: Double = 10
    @Option(name: .customLong("idle-timeout"), parsing: .unconditional,
            help: "Seconds a connection may stay silent between requests or as a WebSocket (5 to 3600).") var idleTimeout: Double = 75
    @Option(name: .customLong("shutdown-timeout"), parsing: .unconditional,
            help: "Seconds a stop (SIGTERM, SIGINT) waits for connections to close by themselves (a WebSocket client answering the hub's close frame) before it closes the rest (1 to 3600).") var shutdownTimeout: Double = 10
    @Option(name: .customLong("max-connections-per-address"), parsing: .unconditional,
            help: "Connections at once from one remote address, loopback included, over the HTTP listener and the transit relay; a --trusted-proxy's are not counted per address (1 to 100000).") var maxConnectionsPerAddress = 256
    @Flag(name: .customLong("log-codes"), inversion: .prefixedNo,
          help: "Write confirmation and reset codes to the log (development only).") var logCodes = false
    @Flag(name: .customLong("metrics"), inversion: .prefixedNo,
          help: "Serve GET /metrics (Prometheus text: counts, no secrets, no user ids).") var metrics = true
    @Option(name: .customLong("code-hook"), help: "Shell command that delivers codes (HUB_CODE, HUB_USER, HUB_PURPOSE, HUB_CONTACT in its environment).") var codeHook: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error.") var logLevel = "info"
    // Accounts (issue 32): bounds on sign-ups, codes, guesses and logins (AccountOptions.swift).
    @OptionGroup(title: "Account bounds (per address, per account; over one: 429 with Retry-After)") var accounts: AccountOptions
    @Option(name: .customLong("transit-listen"),
            help: "Also run a magic-wormhole transit relay (TCP) on HOST:PORT (port 0: one the kernel picks). Once listening, prints 'modem-hub: transit relay listening on HOST:PORT' on standard error.")
    var transitListen: String?
    @Option(name: .customLong("transit-timeout"), parsing: .unconditional,
            help: "Seconds a transit connection waits for its peer before it is closed (1 to 86400).") var transitTimeout: Double = 120
    @Option(name: .customLong("transit-max-pairs"), parsing: .unconditional,
            help: "Transit pairs relayed at once (1 to 100000).") var transitMaxPairs = 1024
    @Flag(name: .customLong("transit-splice"), inversion: .prefixedNo,
          help: "Relay transit pairs inside the kernel with splice(2) (Linux); --no-transit-splice copies every byte through the hub's memory with SwiftNIO.") var transitSplice = true
    // Hardening (issue 32): trusted proxies, transit and rendezvous bounds (NetworkOptions.swift).
    @OptionGroup(title: "Client addresses, transit relay and rendezvous bounds") var network: NetworkOptions
    // Post flood (issue 32): bounds on group posts and on one groups socket (GroupOptions.swift).
    @OptionGroup(title: "Group bounds (a post over one: 409 or an error event; a slow socket: closed with 1008)") var groups: GroupOptions

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw fail("unknown --log-level '\(logLevel)'", Exit.usage) }
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
              (0...65535).contains(port), colon > listen.startIndex
        else { throw fail("--listen takes HOST:PORT, got '\(listen)'", Exit.usage) }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        // At least 0.1 s: each beat is a database write, and presence needs a few beats to settle.
        guard heartbeat.isFinite, (0.1...3600).contains(heartbeat) else {
            throw fail("--heartbeat must be 0.1 to 3600 seconds, not \(heartbeat)", Exit.usage)
        }
        guard (10...86400).contains(accessTTL) else { throw fail("--access-ttl must be 10 to 86400 seconds", Exit.usage) }
        guard headTimeout.isFinite, (1...300).contains(headTimeout) else {
            throw fail("--head-timeout must be 1 to 300 seconds, not \(headTimeout)", Exit.usage)
        }
        guard idleTimeout.isFinite, (5...3600).contains(idleTimeout) else {
            throw fail("--idle-timeout must be 5 to 3600 seconds, not \(idleTimeout)", Exit.usage)
        }
        guard shutdownTimeout.isFinite, (1...3600).contains(shutdownTimeout) else {
            throw fail("--shutdown-timeout must be 1 to 3600 seconds, not \(shutdownTimeout)", Exit.usage)
        }
        guard (1...100_000).contains(maxConnectionsPerAddress) else {
            throw fail("--max-connections-per-address must be 1 to 100000", Exit.usage)
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw fail("--tls-cert and --tls-key go together", Exit.usage) }
        // Accounts (issue 32): every bound in its range.
        let accountLimits: AccountLimits
        switch accounts.limits() {
        case .success(let l): accountLimits = l
        case .failure(let e): throw fail(e.message, Exit.usage)
        }
        for f in [tlsCert, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: f) {
            throw fail("cannot read \(f)", Exit.usage)
        }
        var transit: TransitRelaySettings?
        if let transitListen {
            guard let c = transitListen.lastIndex(of: ":"), let p = Int(transitListen[transitListen.index(after: c)...]),
                  (0...65535).contains(p), c > transitListen.startIndex
            else { throw fail("--transit-listen takes HOST:PORT, got '\(transitListen)'", Exit.usage) }
            guard transitTimeout.isFinite, (1...86400).contains(transitTimeout) else {
                throw fail("--transit-timeout must be 1 to 86400 seconds, not \(transitTimeout)", Exit.usage)
            }
            guard (1...100_000).contains(transitMaxPairs) else { throw fail("--transit-max-pairs must be 1 to 100000", Exit.usage) }
            var t = TransitRelaySettings()
            t.host = String(transitListen[..<c])
            if t.host.hasPrefix("[") && t.host.hasSuffix("]") { t.host = String(t.host.dropFirst().dropLast()) }
            t.port = p
            t.pairingTimeout = transitTimeout
            t.maximumPairs = transitMaxPairs
            t.splice = transitSplice
            network.apply(to: &t)  // hardening (issue 32)
            transit = t
        }
        let location = try parseDB(db)
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = makeLogger("modem-hub", level: level)
        raiseFileLimit(logger: logger)

        // Port 0: the kernel picks a free port, held from here on (see `PortReservation`), so that the
        // issuer URL in the metadata names the real port; the listening line below tells it.
        var reservation: PortReservation?
        if port == 0 {
            do { reservation = try PortReservation(host: host) } catch {
                throw fail("cannot listen on \(listen): \(error)", Exit.failure)
            }
        }
        defer { reservation?.release() }

        var settings = HubServerSettings()
        settings.host = host
        settings.port = reservation?.port ?? port
        settings.issuer = issuer
        settings.tlsCertPath = tlsCert
        settings.tlsKeyPath = tlsKey
        settings.logCodes = logCodes
        settings.servesMetrics = metrics
        settings.codeHook = codeHook
        settings.authority.accessTTL = accessTTL
        // Accounts (issue 32): the bounds of AccountOptions (checked above).
        settings.authority.accounts = accountLimits
        settings.authority.bcryptCost = UInt8(accounts.bcryptCost)
        settings.codeHookConcurrency = accounts.codeHookConcurrency
        settings.codeHookTimeout = .seconds(accounts.codeHookTimeout)
        settings.connections.headTimeout = headTimeout
        settings.connections.idleTimeout = idleTimeout
        settings.connections.maximumPerAddress = maxConnectionsPerAddress
        network.apply(to: &settings)  // hardening (issue 32): trusted proxies, rendezvous bounds
        groups.apply(to: &settings)  // post flood (issue 32): posts kept, one socket's queue

        // One server per SQLite database: a second one would share no bus with the first, and two of one
        // node name flapped presence every second. (Several nodes share PostgreSQL instead.)
        var serveLock: Int32 = -1
        if case .sqlite(let path) = location, path != ":memory:" {
            serveLock = try lockSQLiteDatabase(path)
        }
        defer { if serveLock >= 0 { close(serveLock) } }

        let store = try await openStore(location, logger: logger)
        let authority = HubAuthority(store: store, settings: settings.authority, logger: logger)
        // The process's one metrics system: the hub's metrics and anything else that uses swift-metrics
        // go to one registry, which GET /metrics renders.
        let hubMetrics = HubMetrics(registry: PrometheusCollectorRegistry())
        MetricsSystem.bootstrap(hubMetrics.factory)
        let context = HubPluginContext(authority: authority, store: store, settings: settings, logger: logger, metrics: hubMetrics)
        // The groups side (hub-groups) plugs in here: REST routes, the WebSocket, the bus and heartbeat.
        let plugins: [any HubPlugin] = hubPlugins(node: node ?? ProcessInfo.processInfo.hostName, heartbeat: heartbeat,
                                                  db: location, wormhole: settings.wormhole)
        let app: any Service
        let issuerURL = settings.issuerURL
        do {
            let shownHost = host.contains(":") ? "[\(host)]" : host, configuredPort = settings.port
            app = try HubApp.application(context: context, plugins: plugins, onServerRunning: { channel in
                logger.notice("modem-hub listening on \(issuerURL) (\(location.redacted))")
                // One plain line on standard error once connections are accepted, with the port bound
                // (the one the kernel chose for --listen HOST:0): tests and scripts wait for it.
                let bound = channel.localAddress?.port ?? configuredPort
                FileHandle.standardError.write(Data("modem-hub: listening on \(shownHost):\(bound)\n".utf8))
            })
        } catch {
            try? await store.close()
            throw fail("\(error)", Exit.usage)
        }
        let pruner = TokenPruner(store: store)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app), .init(service: pruner)]
        if let transit {
            let shown = transit.host.contains(":") ? "[\(transit.host)]" : transit.host
            // Under the same connection caps as the HTTP listener (one count per address over both).
            services.append(.init(service: TransitRelay(settings: transit, logger: logger, connectionCounts: context.connectionCounts,
                                                        metrics: hubMetrics, onListening: { port in
                FileHandle.standardError.write(Data("modem-hub: transit relay listening on \(shown):\(port)\n".utf8))
            })))
        }
        // A stop: first gracefully (listeners closed, WebSockets sent a close frame, the groups' clean stop);
        // what has not ended after --shutdown-timeout (a client that never answers the close frame) is
        // cancelled, and its connection closed.
        var groupConfiguration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .milliseconds(Int64(shutdownTimeout * 1000))
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch {
            logger.error("stopped: \(error)")
            try? await store.close()
            throw Exit.failure
        }
        try? await store.close()
    }
}

/// A port chosen by the kernel for `--listen HOST:0`, held by a bound socket that never listens.
/// Both it and the server's socket set SO_REUSEADDR, so the server may bind the same port and listen
/// there while this socket keeps anyone else from being given it (a bound port is never handed out by
/// another bind to port 0 or used as a connection's local port). Released when the server stops.
struct PortReservation {
    let port: Int
    private let fd: Int32

    init(host: String) throws {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, "0", &hints, &list)
        guard rc == 0, let first = list else { throw HubConfigError("cannot resolve \(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HubConfigError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0,
              bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0,
              withUnsafeMutablePointer(to: &storage, {
                  $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
              }) == 0
        else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw HubConfigError("bind to \(host) port 0: \(why)")
        }
        let port: UInt16 = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }   // sin_port and sin6_port sit at the same offset
        self.fd = fd
        self.port = Int(port)
    }

    func release() { close(fd) }
}

/// The plugins the server runs with (the groups side adds its own here).
func hubPlugins(node: String, heartbeat: Double, db: DatabaseLocation, wormhole: WormholeLimits = WormholeLimits()) -> [any HubPlugin] {
    // The groups side, and the magic-wormhole rendezvous at /wormhole/v1 (kept in the database; on
    // PostgreSQL shared with the other nodes through the groups' LISTEN/NOTIFY bus).
    let groups = GroupsPlugin(nodeName: node, heartbeat: .milliseconds(Int64(heartbeat * 1000)))
    return [groups, WormholePlugin(groups: groups, limits: wormhole)]
}

/// Deletes expired tokens and codes every minute until shutdown.
struct TokenPruner: Service {
    let store: SQLHubStore
    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await store.pruneExpired(nowMs: nowMillis())
            try? await gracefulShutdownAwareSleep(.seconds(60))
        }
    }
}

func gracefulShutdownAwareSleep(_ d: Duration) async throws {
    try await cancelWhenGracefulShutdown { try await Task.sleep(for: d) }
}

/// Raises the open-file limit to the hard limit (the load checks open thousands of sockets).
func raiseFileLimit(logger: Logger) {
    #if canImport(Glibc)
    var lim = rlimit()
    if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim) == 0 {
        lim.rlim_cur = lim.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim)
        logger.info("open files limit \(lim.rlim_cur)")
    }
    #endif
}

/// Takes the lock `PATH.serve.lock` beside a SQLite database for this process's life (its descriptor);
/// exit 1 naming the lock when another `serve` holds it. PATH is the database's resolved path
/// (symbolic links followed), so a second `serve` given another name of the same file (a link, a
/// relative path) takes the same lock.
/// `path` with symbolic links resolved: the file's when it exists, else its folder's plus its name.
func resolvedPath(_ path: String) -> String {
    func real(_ p: String) -> String? {
        guard let r = realpath(p, nil) else { return nil }
        defer { free(r) }
        return String(cString: r)
    }
    if let r = real(path) { return r }
    let dir = (path as NSString).deletingLastPathComponent
    guard let d = real(dir.isEmpty ? "." : dir) else { return path }
    return d + "/" + (path as NSString).lastPathComponent
}

func lockSQLiteDatabase(_ path: String) throws -> Int32 {
    let dir = (path as NSString).deletingLastPathComponent
    if !dir.isEmpty {
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    let lockPath = resolvedPath(path) + ".serve.lock"
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw fail("cannot open \(lockPath): \(String(cString: strerror(errno)))", Exit.failure) }
    guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
        close(fd)
        throw fail("another modem-hub serve uses \(path) (it holds \(lockPath)); one server per SQLite database (several nodes share PostgreSQL)",
                   Exit.failure)
    }
    return fd
}

struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "client", abstract: "Manage OAuth clients.",
                                                    subcommands: [Add.self])
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a client; prints client_id=... and client_secret=... (the secret is shown only now).")
        @Argument(help: "The client's name (unique).") var name: String
        @Flag(name: .customLong("password-grant"), help: "Allow the resource-owner password grant.") var passwordGrant = false
        @Option(help: "sqlite:PATH or postgres://...") var db: String?

        func run() async throws {
            guard Limits.isValidClientName(name) else {
                throw fail("a client name is 1 to 128 bytes of printable text (no control characters, no line breaks, no space at either end)", Exit.usage)
            }
            let location = try parseDB(db)
            let logger = makeLogger("modem-hub", level: .warning)
            let store = try await openStore(location, logger: logger)
            let id = HubTokens.newID(prefix: "c_")
            let secret = HubTokens.newClientSecret()
            do {
                try await store.createClient(ClientRecord(id: id, name: name, secretSHA256: HubTokens.sha256(secret),
                                                          passwordGrant: passwordGrant, createdMs: nowMillis()))
            } catch StoreError.conflict {
                try? await store.close()
                throw fail("a client named '\(name)' exists", Exit.failure)
            } catch {
                try? await store.close()
                throw fail("\(error)", Exit.failure)
            }
            try? await store.close()
            print("client_id=\(id)")
            print("client_secret=\(secret)")
        }
    }
}

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "user", abstract: "Manage accounts.", subcommands: [Add.self])
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a confirmed account.")
        @Argument(help: "The account's name.") var name: String
        @Option(name: .customLong("password-file"), help: "File whose first line is the password.") var passwordFile: String
        @Option(help: "sqlite:PATH or postgres://...") var db: String?
        @Option(name: .customLong("bcrypt-cost"), parsing: .unconditional,
                help: "bcrypt cost of the stored password (4 to 18): the server's --bcrypt-cost, or the server hashes it anew at its own at the first login.")
        var bcryptCost = Int(HubAuthority.defaultBcryptCost)

        func run() async throws {
            guard HubAuthority.Settings.bcryptCosts.contains(bcryptCost) else {
                let r = HubAuthority.Settings.bcryptCosts
                throw fail("--bcrypt-cost must be \(r.lowerBound) to \(r.upperBound), not \(bcryptCost)", Exit.usage)
            }
            guard Limits.isValidUsername(name) else { throw fail("user name must match \(Limits.usernamePattern)", Exit.usage) }
            guard let data = FileManager.default.contents(atPath: passwordFile) else {
                throw fail("cannot read \(passwordFile)", Exit.usage)
            }
            guard let text = String(data: data.prefix(4096), encoding: .utf8) else { throw fail("the password file is not UTF-8", Exit.usage) }
            var line = String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            if line.hasSuffix("\r") { line.removeLast() }
            guard Limits.isValidPassword(line) else {
                throw fail("the password must be \(Limits.passwordMinLength) to \(Limits.passwordMaxLength) characters", Exit.usage)
            }
            let location = try parseDB(db)
            let logger = makeLogger("modem-hub", level: .warning)
            let store = try await openStore(location, logger: logger)
            var settings = HubAuthority.Settings()
            settings.bcryptCost = UInt8(bcryptCost)
            let authority = HubAuthority(store: store, settings: settings, logger: logger)
            // Names that differ only in case are one name.
            if let existing = try? await store.user(name: name) {
                try? await store.close()
                throw fail("a user named '\(existing.name)' exists", Exit.failure)
            }
            do {
                let hash = try await authority.hashPassword(line)
                try await store.createUser(UserRecord(id: HubTokens.newID(prefix: "u_"), name: name, passwordBcrypt: hash,
                                                      contact: nil, confirmed: true, createdMs: nowMillis()))
            } catch StoreError.conflict {
                try? await store.close()
                throw fail("a user named '\(name)' exists", Exit.failure)
            } catch {
                try? await store.close()
                throw fail("\(error)", Exit.failure)
            }
            try? await store.close()
            print("user=\(name)")
        }
    }
}

struct PrintOpenAPI: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "openapi", abstract: "Print the OpenAPI document (docs/openapi.yaml).")
    func run() { print(OpenAPIDocument.yaml, terminator: OpenAPIDocument.yaml.hasSuffix("\n") ? "" : "\n") }
}
