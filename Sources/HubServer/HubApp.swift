import Foundation
import HTTPTypes
import HubCore
import HubStore
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// The server's settings, from `modem-hub serve`'s options.
public struct HubServerSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// `--issuer`; default `http(s)://HOST:PORT`.
    public var issuer: String?
    public var tlsCertPath: String?
    public var tlsKeyPath: String?
    /// `--log-codes`: confirmation codes go to the log (development).
    public var logCodes = false
    /// `--code-hook CMD`: codes are delivered by running CMD.
    public var codeHook: String?
    // Accounts (issue 32): code hooks running at once (`--code-hook-concurrency`); the account bounds
    // are in `authority.accounts`.
    public var codeHookConcurrency = 4
    /// Accounts (issue 32): how long one code hook may run before it is killed (`--code-hook-timeout`).
    public var codeHookTimeout: Duration = .seconds(30)
    public var authority = HubAuthority.Settings()
    /// Caps on connections and the deadlines for request heads and idle connections.
    public var connections = ConnectionLimits()
    // Hardening (issue 32), client addresses and the rendezvous's storage: see docs/hub.md.
    /// `--trusted-proxy CIDR`: reverse proxies whose `X-Forwarded-For` names the client (none by default).
    public var trustedProxies = TrustedProxies()
    /// Bounds on the rendezvous's storage, per mailbox, per address and in all (`--wormhole-*`).
    public var wormhole = WormholeLimits()
    // Post flood (issue 32): bounds on the posts kept and on what one groups socket holds (`--max-posts-*`,
    // `--max-socket-queue-bytes`; docs/hub.md).
    public var groups = GroupSettings()
    /// `--metrics` (on by default): whether `GET /metrics` is served.
    public var servesMetrics = true
    public init() {}

    /// The issuer URL (RFC 8414): `--issuer` or the scheme and listen address.
    public var issuerURL: String {
        if let i = issuer { return i.hasSuffix("/") ? String(i.dropLast()) : i }
        let scheme = tlsCertPath == nil ? "http" : "https"
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(h):\(port)"
    }
}

/// What a part of the hub adds to the server (the groups side: REST routes, the WebSocket, services).
public protocol HubPlugin: Sendable {
    /// Adds routes through `router.add` (so they enter the route table).
    func register(on router: HubRouter, context: HubPluginContext)
    /// Long-running services (bus, heartbeat) run beside the HTTP server and stopped with it.
    func services(context: HubPluginContext) -> [any Service]
    /// WebSocket settings when the plugin takes upgrades, else nil.
    var webSocketConfiguration: WebSocketServerConfiguration? { get }
    /// Decides a WebSocket upgrade (`.dontUpgrade` leaves the request to the router).
    func shouldUpgrade(_ request: HTTPRequest, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>
    /// Decides a WebSocket upgrade knowing the peer's IP address (for limits per address); by default
    /// ``shouldUpgrade(_:context:)``.
    func shouldUpgrade(_ request: HTTPRequest, remoteIP: String, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>
    /// Why this part cannot serve now (for `GET /readyz`: a short sentence), or nil when it can; by
    /// default nil.
    func readiness(context: HubPluginContext) async -> String?
}

extension HubPlugin {
    public func services(context: HubPluginContext) -> [any Service] { [] }
    public var webSocketConfiguration: WebSocketServerConfiguration? { nil }
    public func shouldUpgrade(_ request: HTTPRequest, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> { .dontUpgrade }
    public func shouldUpgrade(_ request: HTTPRequest, remoteIP: String, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        await shouldUpgrade(request, context: context)
    }
    public func readiness(context: HubPluginContext) async -> String? { nil }
}

/// What plugins get: the authority (to turn Bearer tokens into principals), the store, the logger, the
/// metrics.
public struct HubPluginContext: Sendable {
    public let authority: HubAuthority
    public let store: SQLHubStore
    public let settings: HubServerSettings
    public let logger: Logger
    /// The connections the server's guard let in and what it refused or closed (settings.connections).
    public let connectionCounts: ConnectionCounts
    /// What the hub counts (served at `GET /metrics`).
    public let metrics: HubMetrics

    /// - Parameter metrics: where the hub counts (default: metrics on a registry of their own); the
    ///   database's failures and the account limiters' refusals are counted there from now on.
    public init(authority: HubAuthority, store: SQLHubStore, settings: HubServerSettings, logger: Logger,
                metrics: HubMetrics = HubMetrics()) {
        self.authority = authority; self.store = store; self.settings = settings; self.logger = logger
        self.metrics = metrics
        let counts = ConnectionCounts(limits: settings.connections, trustedProxies: settings.trustedProxies, metrics: metrics)
        connectionCounts = counts
        metrics.addCollector { [weak metrics] in metrics?.setOpenConnections(counts.snapshot.open) }
        store.db.failures.onFailure { [weak metrics] in metrics?.databaseFailed() }
        authority.accountLimiter.onRefusal { [weak metrics] limit in metrics?.refused(limit: limit) }
    }

    /// The principal of a bare Bearer token (for the WebSocket upgrade), nil when refused.
    public func principal(bearer token: String) async -> HubPrincipal? {
        guard case .success(let p)? = try? await authority.principal(bearer: token) else { return nil }
        return p
    }
}

/// Builds the hub's router and application.
public enum HubApp {
    /// The router with every route and middleware, and its route table.
    public static func router(context: HubPluginContext, plugins: [any HubPlugin] = [],
                              sender: (any ConfirmationSender)? = nil) -> HubRouter {
        let r = HubRouter(router: Router(context: HubRequestContext.self), table: RouteTable())
        // Outermost: every request counted, timed and logged by route template and status.
        r.router.add(middleware: RequestObserverMiddleware(metrics: context.metrics, logger: context.logger))
        // Then the client's address (from a trusted proxy's X-Forwarded-For) for every limit after it.
        r.router.add(middleware: ClientAddressMiddleware(proxies: context.settings.trustedProxies))
        r.router.add(middleware: JSendErrorMiddleware(table: r.table, logger: context.logger))
        r.router.add(middleware: BearerMiddleware(authority: context.authority))
        let issuer = context.settings.issuerURL
        OAuthRoutes.register(on: r, authority: context.authority, issuer: { issuer })
        let codeSender: any ConfirmationSender = sender ?? {
            if let hook = context.settings.codeHook { return HookConfirmationSender(command: hook, logger: context.logger,
                                                                                       concurrency: context.settings.codeHookConcurrency,
                                                                                       timeout: context.settings.codeHookTimeout) }
            return LogConfirmationSender(logger: context.logger, enabled: context.settings.logCodes)
        }()
        AccountRoutes.register(on: r, authority: context.authority, store: context.store, sender: codeSender)
        r.add(.get, "/openapi.yaml") { _, _ in
            var h = HTTPFields()
            h[.contentType] = "application/yaml"
            return Response(status: .ok, headers: h, body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.bytes)))
        }
        OpsRoutes.register(on: r, context: context, plugins: plugins)
        for p in plugins { p.register(on: r, context: context) }
        return r
    }

    /// The application: HTTP/1.1 with WebSocket upgrades, TLS when a certificate is given.
    public static func application(context: HubPluginContext, plugins: [any HubPlugin] = [],
                                   sender: (any ConfirmationSender)? = nil,
                                   onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in })
        throws -> some ApplicationProtocol {
        let router = Self.router(context: context, plugins: plugins, sender: sender)
        let s = context.settings
        let wsConfig = plugins.lazy.compactMap(\.webSocketConfiguration).first ?? WebSocketServerConfiguration()
        // A declined upgrade under /v1 answers 401 (no or bad token) or 404, JSend (UpgradeRefusal).
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [UpgradeRefusalHandler()])
        let shouldUpgrade: @Sendable (HTTPRequest, any Channel, Logger) async throws
            -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> = { request, channel, _ in
            // The client's address, as for requests (a trusted proxy's X-Forwarded-For, else the peer's).
            let remoteIP = s.trustedProxies.clientAddress(channel: channel, headers: request.headerFields)
            for p in plugins {
                let answer = await p.shouldUpgrade(request, remoteIP: remoteIP, context: context)
                if case .upgrade = answer { return answer }
            }
            if let refusal = await UpgradeRefusal.answer(request, authority: context.authority) {
                UpgradeRefusal.record(channel, refusal)
            }
            return .dontUpgrade
        }
        var tls: TLSConfiguration?
        if let cert = s.tlsCertPath {
            guard let key = s.tlsKeyPath else { throw HubConfigError("--tls-cert needs --tls-key") }
            let chain = try NIOSSLCertificate.fromPEMFile(cert).map { NIOSSLCertificateSource.certificate($0) }
            let pkey = try NIOSSLPrivateKey(file: key, format: .pem)
            tls = HubTLS.serverConfiguration(certificateChain: chain, privateKey: pkey)
        } else if s.tlsKeyPath != nil {
            throw HubConfigError("--tls-key needs --tls-cert")
        }
        // Every connection passes the guard first (caps, head and idle deadlines, answers to bad heads).
        let counts = context.connectionCounts
        let tlsConfiguration = tls
        let base = HTTPServerBuilder { responder in
            let http = HTTP1WebSocketUpgradeChannel(responder: responder, configuration: .init(http1: http1, ws: wsConfig),
                                                    shouldUpgrade: shouldUpgrade)
            if let tlsConfiguration {
                return GuardedChildChannel(base: try TLSChannel(http, tlsConfiguration: tlsConfiguration), counts: counts, plaintext: false)
            }
            return GuardedChildChannel(base: http, counts: counts, plaintext: true)
        }
        var services: [any Service] = []
        for p in plugins { services += p.services(context: context) }
        return Application(
            router: router.router,
            server: base,
            configuration: .init(address: .hostname(s.host, port: s.port), serverName: "modem-hub"),
            services: services,
            onServerRunning: onServerRunning,
            logger: context.logger)
    }
}

/// A settings error found while building the server (exit 64 from the CLI).
public struct HubConfigError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

/// The hub's TLS: version 1.2 at least (1.0 and 1.1 are refused at the handshake) and, for TLS 1.2,
/// Mozilla's "intermediate" cipher suites (ECDHE with AES-GCM or ChaCha20-Poly1305, then DHE, which
/// BoringSSL lacks); TLS 1.3's suites are all modern and not configurable.
public enum HubTLS {
    /// The lowest protocol version accepted.
    public static let minimumVersion = TLSVersion.tlsv12
    /// Mozilla's "intermediate" TLS 1.2 suites (server side TLS guidelines, version 5.7), in order, in
    /// OpenSSL's names.
    public static let cipherSuites = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
                                      "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
                                      "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"].joined(separator: ":")

    /// A server configuration with ``minimumVersion`` and ``cipherSuites``.
    public static func serverConfiguration(certificateChain: [NIOSSLCertificateSource], privateKey: NIOSSLPrivateKey) -> TLSConfiguration {
        var c = TLSConfiguration.makeServerConfiguration(certificateChain: certificateChain, privateKey: .privateKey(privateKey))
        c.minimumTLSVersion = minimumVersion
        c.cipherSuites = cipherSuites
        return c
    }
}
