// What the hub counts for its operator, in Prometheus' text format at `GET /metrics` (docs/hub.md
// "Operating the hub"). The metrics are swift-metrics' types made through swift-prometheus' factory on
// one registry per hub: `modem-hub serve` makes one registry, bootstraps the process's metrics system
// with it (so libraries that use swift-metrics report into the same page) and hands it to the server;
// tests make as many hubs, each with a registry of its own, as they like.
//
// Every label has a bounded set of values: HTTP routes are templates (`/v1/groups/{group}/posts`, or
// `NotFound`), never raw paths; limits are the names of `serve`'s options. No metric carries a user id,
// a group name, an address, a token or a secret.

import CoreMetrics
import Prometheus
import Synchronization

/// The hub's metrics on one Prometheus registry (rendered by ``render()`` at `GET /metrics`).
public final class HubMetrics: Sendable {
    /// The registry the metrics live in (and that ``render()`` writes out).
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry`` (histogram buckets per metric).
    public let factory: PrometheusMetricsFactory
    /// Readings taken when the page is rendered (gauges of state held elsewhere: nameplates, pairs).
    private let collectors = Mutex<[@Sendable () -> Void]>([])

    // Names, in Prometheus style (docs/hub.md lists them with their labels).
    static let httpRequests = "modemhub_http_requests_total"
    static let httpDuration = "modemhub_http_request_duration_seconds"
    static let connections = "modemhub_connections"
    static let connectionsAccepted = "modemhub_connections_accepted_total"
    static let webSockets = "modemhub_websocket_connections"
    static let webSocketsAccepted = "modemhub_websocket_connections_accepted_total"
    static let rendezvous = "modemhub_rendezvous_connections"
    static let rendezvousAccepted = "modemhub_rendezvous_connections_accepted_total"
    static let fanoutDeliveries = "modemhub_group_fanout_deliveries_total"
    static let fanoutSeconds = "modemhub_group_fanout_seconds"
    static let posts = "modemhub_group_posts_total"
    static let nameplates = "modemhub_wormhole_nameplates"
    static let mailboxes = "modemhub_wormhole_mailboxes"
    static let transitPairs = "modemhub_transit_pairs"
    static let transitPairsJoined = "modemhub_transit_pairs_joined_total"
    static let transitBytes = "modemhub_transit_relayed_bytes_total"
    static let databaseErrors = "modemhub_database_errors_total"
    static let refusals = "modemhub_limit_refusals_total"

    /// Buckets of the HTTP request latency: 1 ms to 10 s.
    public static let httpBuckets: [Duration] = [.milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
                                                 .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                                                 .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10)]
    /// Buckets of the group fan-out latency: 0.1 ms to 1 s.
    public static let fanoutBuckets: [Duration] = [.microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
                                                   .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                                                   .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                                                   .seconds(1)]

    let webSocketsOpen: Meter
    let rendezvousOpen: Meter
    let webSocketsAcceptedCount: CoreMetrics.Counter
    let rendezvousAcceptedCount: CoreMetrics.Counter
    let deliveries: CoreMetrics.Counter
    let fanoutLatency: CoreMetrics.Timer
    let nameplatesHeld: Meter
    let mailboxesHeld: Meter
    let pairsActive: Meter
    let connectionsOpen: Meter
    let pairsJoined: CoreMetrics.Counter
    let relayedBytes: CoreMetrics.Counter
    let databaseErrorCount: CoreMetrics.Counter

    /// Metrics on `registry` (by default a registry of its own).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var f = PrometheusMetricsFactory(registry: registry)
        f.durationHistogramBuckets = [Self.httpDuration: Self.httpBuckets, Self.fanoutSeconds: Self.fanoutBuckets]
        factory = f
        webSocketsOpen = Meter(label: Self.webSockets, factory: f)
        rendezvousOpen = Meter(label: Self.rendezvous, factory: f)
        webSocketsAcceptedCount = CoreMetrics.Counter(label: Self.webSocketsAccepted, factory: f)
        rendezvousAcceptedCount = CoreMetrics.Counter(label: Self.rendezvousAccepted, factory: f)
        deliveries = CoreMetrics.Counter(label: Self.fanoutDeliveries, factory: f)
        fanoutLatency = CoreMetrics.Timer(label: Self.fanoutSeconds, factory: f)
        nameplatesHeld = Meter(label: Self.nameplates, factory: f)
        mailboxesHeld = Meter(label: Self.mailboxes, factory: f)
        pairsActive = Meter(label: Self.transitPairs, factory: f)
        connectionsOpen = Meter(label: Self.connections, factory: f)
        pairsJoined = CoreMetrics.Counter(label: Self.transitPairsJoined, factory: f)
        relayedBytes = CoreMetrics.Counter(label: Self.transitBytes, factory: f)
        databaseErrorCount = CoreMetrics.Counter(label: Self.databaseErrors, factory: f)
        // Present from the start (at 0), so a dashboard sees the families before the first event.
        for listener in ["http", "transit"] { _ = CoreMetrics.Counter(label: Self.connectionsAccepted, dimensions: [("listener", listener)], factory: f) }
        for via in ["socket", "rest"] { _ = CoreMetrics.Counter(label: Self.posts, dimensions: [("via", via)], factory: f) }
    }

    /// The page of `GET /metrics`: every collector's reading taken, then the registry in Prometheus'
    /// text exposition format (version 0.0.4).
    public func render() -> [UInt8] {
        for collect in collectors.withLock({ $0 }) { collect() }
        return registry.emitToBuffer()
    }

    /// Adds a reading taken each time the page is rendered (for gauges of state that its owner keeps).
    public func addCollector(_ collect: @escaping @Sendable () -> Void) {
        collectors.withLock { $0.append(collect) }
    }

    // MARK: - HTTP

    /// One HTTP request answered: `route` is its template (never the raw path), `status` its code.
    public func request(method: String, route: String, status: Int, duration: Duration) {
        let m = Self.methodLabel(method)
        CoreMetrics.Counter(label: Self.httpRequests, dimensions: [("method", m), ("route", route), ("status", String(status))],
                            factory: factory).increment()
        CoreMetrics.Timer(label: Self.httpDuration, dimensions: [("method", m), ("route", route)], factory: factory)
            .record(elapsed: duration)
    }

    /// The methods kept as labels; any other is `OTHER` (bounded).
    static func methodLabel(_ method: String) -> String {
        ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"].contains(method) ? method : "OTHER"
    }

    // MARK: - connections

    /// A TCP connection admitted by the connection guard on `listener` (`http` or `transit`).
    public func connectionAccepted(listener: String) {
        CoreMetrics.Counter(label: Self.connectionsAccepted, dimensions: [("listener", listener)], factory: factory).increment()
    }

    /// A groups socket (`/v1/socket`) opened; balance with ``webSocketClosed()``.
    public func webSocketOpened() {
        webSocketsAcceptedCount.increment()
        webSocketsOpen.increment()
    }

    /// A groups socket ended.
    public func webSocketClosed() { webSocketsOpen.decrement() }

    /// A rendezvous socket (`/wormhole/v1`) opened; balance with ``rendezvousClosed()``.
    public func rendezvousOpened() {
        rendezvousAcceptedCount.increment()
        rendezvousOpen.increment()
    }

    /// A rendezvous socket ended.
    public func rendezvousClosed() { rendezvousOpen.decrement() }

    /// Open TCP connections over the HTTP listener and the transit relay (``ConnectionCounts``).
    func setOpenConnections(_ n: Int) { connectionsOpen.set(n) }

    // MARK: - groups

    /// One group event handed to `recipients` local sockets, `since` the op (or the bus's notification)
    /// that caused it reached this node.
    public func fannedOut(recipients: Int, since: ContinuousClock.Instant) {
        guard recipients > 0 else { return }
        deliveries.increment(by: recipients)
        fanoutLatency.record(elapsed: ContinuousClock.now - since)
    }

    /// A post stored (new or replaced) through the socket (`socket`) or REST (`rest`).
    public func posted(via: String) {
        CoreMetrics.Counter(label: Self.posts, dimensions: [("via", via)], factory: factory).increment()
    }

    // MARK: - wormhole and transit

    /// Nameplates and mailboxes held in this node's memory now.
    func setRendezvous(nameplates: Int, mailboxes: Int) {
        nameplatesHeld.set(nameplates)
        mailboxesHeld.set(mailboxes)
    }

    /// Transit pairs relaying now.
    func setTransitPairs(_ n: Int) { pairsActive.set(n) }

    /// Two transit connections joined into a pair.
    func transitPairJoined() { pairsJoined.increment() }

    /// Bytes the transit relay passed from one end of a pair to the other.
    func transitRelayed(bytes: Int) {
        if bytes > 0 { relayedBytes.increment(by: bytes) }
    }

    // MARK: - failures and refusals

    /// A statement or transaction that failed in the database engine (not a unique-key conflict).
    public func databaseFailed() { databaseErrorCount.increment() }

    /// Something refused by one of the hub's limits; `limit` names it as `serve`'s option does
    /// (`max-connections-per-address`, `max-posts-per-group`, ...; docs/hub.md lists every value).
    public func refused(limit: String) {
        CoreMetrics.Counter(label: Self.refusals, dimensions: [("limit", limit)], factory: factory).increment()
    }
}

extension CoreMetrics.Timer {
    /// Records a `Duration`.
    func record(elapsed d: Duration) {
        let c = d.components
        recordNanoseconds(c.seconds * 1_000_000_000 + c.attoseconds / 1_000_000_000)
    }
}
