import ArgumentParser
import HubServer

/// `modem-hub serve`'s client addresses (trusted proxies) and the bounds of the transit relay and the
/// rendezvous (issue 32; docs/hub.md). A connection over a transit cap is closed; a rendezvous request
/// over a bound is answered with the wormhole protocol's `error` message.
struct NetworkOptions: ParsableArguments {
    @Option(name: .customLong("trusted-proxy"),
            help: ArgumentHelp("A reverse proxy (IPv4 or IPv6 address or CIDR network; repeatable) whose X-Forwarded-For names the client: the right-most address in it that is not itself a trusted proxy is the client's for every limit per address. From anyone else the header is ignored. The proxy's own connections are not capped per address.", valueName: "CIDR"))
    var trustedProxy: [String] = []
    @Option(name: .customLong("transit-handshake-timeout"), parsing: .unconditional,
            help: "Seconds a transit connection has to send its handshake line (1 to 300).")
    var transitHandshakeTimeout = TransitRelaySettings().handshakeTimeout
    @Option(name: .customLong("transit-idle-timeout"), parsing: .unconditional,
            help: "Seconds a joined transit pair may stay silent both ways before both are closed (1 to 86400).")
    var transitIdleTimeout = TransitRelaySettings().pairIdleTimeout
    @Option(name: .customLong("transit-max-pairs-per-address"), parsing: .unconditional,
            help: "Transit pairs at once that one address (loopback included) takes part in; connections per address are capped by --max-connections-per-address (1 to 100000).")
    var transitMaxPairsPerAddress = TransitRelaySettings().maximumPairsPerAddress
    @Option(name: .customLong("transit-max-waiting-per-address"), parsing: .unconditional,
            help: "Transit connections from one address (loopback included) waiting for their peer at once (1 to 100000).")
    var transitMaxWaitingPerAddress = TransitRelaySettings().maximumPendingPerAddress
    @Option(name: .customLong("wormhole-max-nameplates-per-address"), parsing: .unconditional,
            help: "Rendezvous nameplates that one address created and that still exist (1 to 1000000).")
    var wormholeMaxNameplatesPerAddress = WormholeLimits().maximumNameplatesPerAddress
    @Option(name: .customLong("wormhole-max-mailboxes-per-address"), parsing: .unconditional,
            help: "Rendezvous mailboxes that one address created and that still exist (1 to 1000000).")
    var wormholeMaxMailboxesPerAddress = WormholeLimits().maximumMailboxesPerAddress
    @Option(name: .customLong("wormhole-max-bytes-per-address"), parsing: .unconditional,
            help: "Bytes of rendezvous messages that one address added and that are still kept, over all mailboxes (1024 to 1099511627776).")
    var wormholeMaxBytesPerAddress = WormholeLimits().maximumBytesPerAddress
    @Option(name: .customLong("wormhole-max-bytes"), parsing: .unconditional,
            help: "Bytes of rendezvous messages kept in all (1048576 to 1099511627776).")
    var wormholeMaxBytes = WormholeLimits().maximumTotalBytes
    @Option(name: .customLong("wormhole-max-tracked-addresses"), parsing: .unconditional,
            help: "Addresses the rendezvous's rate limiter remembers; one at its limit is never forgotten before the others (1000 to 10000000).")
    var wormholeMaxTrackedAddresses = WormholeLimits().maximumTrackedAddresses

    func validate() throws {
        for p in trustedProxy where IPNetwork(p) == nil {
            throw ValidationError("--trusted-proxy takes an IPv4 or IPv6 address or CIDR network, not '\(p)'")
        }
        guard transitHandshakeTimeout.isFinite, (1...300).contains(transitHandshakeTimeout) else {
            throw ValidationError("--transit-handshake-timeout must be 1 to 300 seconds")
        }
        guard transitIdleTimeout.isFinite, (1...86400).contains(transitIdleTimeout) else {
            throw ValidationError("--transit-idle-timeout must be 1 to 86400 seconds")
        }
        guard (1...100_000).contains(transitMaxPairsPerAddress) else { throw ValidationError("--transit-max-pairs-per-address must be 1 to 100000") }
        guard (1...100_000).contains(transitMaxWaitingPerAddress) else {
            throw ValidationError("--transit-max-waiting-per-address must be 1 to 100000")
        }
        guard (1...1_000_000).contains(wormholeMaxNameplatesPerAddress) else {
            throw ValidationError("--wormhole-max-nameplates-per-address must be 1 to 1000000")
        }
        guard (1...1_000_000).contains(wormholeMaxMailboxesPerAddress) else {
            throw ValidationError("--wormhole-max-mailboxes-per-address must be 1 to 1000000")
        }
        guard (1024...(1 << 40)).contains(wormholeMaxBytesPerAddress) else {
            throw ValidationError("--wormhole-max-bytes-per-address must be 1024 to 1099511627776")
        }
        guard ((1 << 20)...(1 << 40)).contains(wormholeMaxBytes) else { throw ValidationError("--wormhole-max-bytes must be 1048576 to 1099511627776") }
        guard (1000...10_000_000).contains(wormholeMaxTrackedAddresses) else {
            throw ValidationError("--wormhole-max-tracked-addresses must be 1000 to 10000000")
        }
    }

    /// The trusted proxies and the rendezvous's bounds into `settings`.
    func apply(to settings: inout HubServerSettings) {
        settings.trustedProxies = TrustedProxies(trustedProxy.compactMap(IPNetwork.init))
        settings.wormhole.maximumNameplatesPerAddress = wormholeMaxNameplatesPerAddress
        settings.wormhole.maximumMailboxesPerAddress = wormholeMaxMailboxesPerAddress
        settings.wormhole.maximumBytesPerAddress = wormholeMaxBytesPerAddress
        settings.wormhole.maximumTotalBytes = wormholeMaxBytes
        settings.wormhole.maximumTrackedAddresses = wormholeMaxTrackedAddresses
    }

    /// The transit relay's deadlines and caps into `transit`.
    func apply(to transit: inout TransitRelaySettings) {
        transit.handshakeTimeout = transitHandshakeTimeout
        transit.pairIdleTimeout = transitIdleTimeout
        transit.maximumPairsPerAddress = transitMaxPairsPerAddress
        transit.maximumPendingPerAddress = transitMaxWaitingPerAddress
    }
}
