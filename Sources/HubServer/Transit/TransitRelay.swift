import CHubSplice
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Limits and timers of the transit relay.
public struct TransitRelaySettings: Sendable {
    /// Address to listen on.
    public var host = "127.0.0.1"
    /// Port (0: one the kernel picks).
    public var port = 4001
    /// Seconds a connection has to send its handshake line (`--transit-handshake-timeout`).
    public var handshakeTimeout: Double = 10
    /// Seconds a connection with a good handshake waits for its peer before it is closed.
    public var pairingTimeout: Double = 120
    /// Seconds a joined pair may stay silent both ways before both are closed (`--transit-idle-timeout`).
    public var pairIdleTimeout: Double = 300
    /// Connections waiting for their peer at once.
    public var maximumPending = 2048
    /// Connections waiting at once from one address, loopback included (`--transit-max-waiting-per-address`).
    public var maximumPendingPerAddress = 64
    /// Joined pairs at once.
    public var maximumPairs = 1024
    /// Joined pairs at once that one address takes part in, loopback included (`--transit-max-pairs-per-address`).
    /// Connections in all and per address are capped with the HTTP listener's (``ConnectionLimits``).
    public var maximumPairsPerAddress = 64
    /// Bytes a waiting connection may send before its peer comes (more closes it).
    public var maximumEarlyBytes = 65536
    /// Relays joined pairs with splice(2) inside the kernel (``TransitSplicer``; Linux); false, or where
    /// there is no splice, or when the descriptors for its pipes are not to be had: through SwiftNIO,
    /// every byte copied through the hub's memory (`--no-transit-splice`).
    public var splice = true

    /// The defaults.
    public init() {}
}

/// Counts of the relay's work since it started.
public struct TransitRelayCounts: Sendable, Hashable {
    /// Pairs joined.
    public var pairs = 0
    /// Pairs joined now.
    public var activePairs = 0
    /// Bytes copied between joined connections (both ways).
    public var bytes: Int64 = 0
    /// First lines that were not handshakes.
    public var badHandshakes = 0
    /// Connections closed because their peer did not come (or no handshake came) in time.
    public var timedOut = 0
    /// Connections refused by a limit.
    public var refused = 0
    /// Pairs closed because neither end sent anything for ``TransitRelaySettings/pairIdleTimeout``.
    public var idleClosed = 0
}

/// The magic-wormhole transit relay: TCP connections send `please relay TOKEN for side SIDE\n`
/// (``TransitHandshake``); two with the same token and different sides are joined, each is answered
/// `ok\n`, and from then on the bytes each sends go to the other, with backpressure (a peer that does not
/// read stops the sender's reads), until either closes. Bytes never cross between different tokens. A
/// bad first line is answered `bad handshake\n` and closed; a connection whose peer does not come in
/// ``TransitRelaySettings/pairingTimeout`` is closed; a joined pair silent both ways for
/// ``TransitRelaySettings/pairIdleTimeout`` is closed. The relay is under the hub's connection guard:
/// every connection counts in the caps of ``ConnectionCounts`` (in all and per address, shared with the
/// HTTP listener) from the moment it is accepted, and must send its handshake within
/// ``TransitRelaySettings/handshakeTimeout``; waiting connections and joined pairs are capped in all and
/// per address (every address counts, loopback included). A connection over a cap is closed (the
/// transit protocol has no refusal line; the reference relay closes too). Run as a `Service`
/// (`modem-hub serve --transit-listen HOST:PORT`). Raw TCP carries no forwarded-for header: behind a
/// TCP proxy the relay sees the proxy's address.
public final class TransitRelay: Service, Sendable {
    /// The settings.
    public let settings: TransitRelaySettings
    private let logger: Logger
    private let onListening: @Sendable (Int) -> Void
    /// The caps on connections, shared with the HTTP listener when the hub passes its own.
    let connectionCounts: ConnectionCounts
    /// Where pairs, relayed bytes and refusals are counted (nil: nowhere).
    let metrics: HubMetrics?
    let state: Mutex<(matcher: TransitMatcher<ObjectIdentifier>, channels: [ObjectIdentifier: any Channel], counts: TransitRelayCounts,
                      pairs: TransitPairCounts)>
    /// Where joined pairs are relayed while `run()` runs (nil: through SwiftNIO).
    let splicer = Mutex<TransitSplicer?>(nil)

    /// Creates a relay; `run()` listens.
    /// - Parameters:
    ///   - connectionCounts: the hub's connection caps (``HubPluginContext/connectionCounts``), so that one
    ///     count covers every listener; nil: caps of its own with ``ConnectionLimits``'s defaults.
    ///   - metrics: where pairs, relayed bytes and refusals are counted (``HubPluginContext/metrics``);
    ///     the pairs relaying now are read each time the metrics are rendered.
    ///   - onListening: called with the bound port once connections are accepted.
    public init(settings: TransitRelaySettings, logger: Logger, connectionCounts: ConnectionCounts? = nil, metrics: HubMetrics? = nil,
                onListening: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.metrics = metrics
        self.settings = settings
        self.logger = logger
        self.onListening = onListening
        self.connectionCounts = connectionCounts ?? ConnectionCounts(limits: ConnectionLimits())
        state = Mutex((TransitMatcher(maximumPending: settings.maximumPending, maximumPerAddress: settings.maximumPendingPerAddress),
                       [:], TransitRelayCounts(),
                       TransitPairCounts(maximumPairs: settings.maximumPairs, maximumPerAddress: settings.maximumPairsPerAddress)))
        metrics?.addCollector { [weak self, weak metrics] in metrics?.setTransitPairs(self?.counts.activePairs ?? 0) }
    }

    /// What the relay has done so far.
    public var counts: TransitRelayCounts { state.withLock { $0.counts } }

    /// Listens until a graceful shutdown, then closes the listener and every connection.
    public func run() async throws {
        if settings.splice {
            let s = TransitSplicer(logger: logger)
            if s == nil { logger.notice("transit relay: no splice(2) here; pairs are relayed through SwiftNIO") }
            splicer.withLock { $0 = s }
        }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // A client's FIN is passed on (after what it sent) instead of closing both at once.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            // Reads of up to 256 KiB: fewer, larger hops for bulk transfers (what is queued for a peer stays
            // within the default 64 KiB high-water mark before its sender pauses).
            .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 65536, maximum: 262_144))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    // First the guard's caps (in all and per address, shared with the HTTP listener).
                    try channel.pipeline.syncOperations.addHandler(ConnectionCapHandler(counts: connectionCounts) { [self] in
                        state.withLock { $0.counts.refused += 1 }
                    })
                    try channel.pipeline.syncOperations.addHandler(TransitHandshakeHandler(relay: self))
                }
            }
        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: settings.host, port: settings.port).get()
        } catch {
            if let s = splicer.withLock({ $0 }) { await s.stop() }
            throw error
        }
        onListening(listener.localAddress?.port ?? settings.port)
        logger.notice("transit relay listening on \(settings.host):\(listener.localAddress?.port ?? settings.port)")
        try? await gracefulShutdown()
        try? await listener.close()
        let open = state.withLock { Array($0.channels.values) }
        for c in open { c.close(promise: nil) }
        // The spliced pairs are closed too (and the threads end); a pair handed over after this is closed
        // as it arrives.
        if let s = splicer.withLock({ $0 }) { await s.stop() }
        let c = counts
        logger.notice("transit relay stopped: \(c.pairs) pairs, \(c.bytes) bytes relayed, \(c.badHandshakes) bad handshakes, \(c.timedOut) timed out, \(c.idleClosed) idle pairs closed, \(c.refused) refused")
    }

    // MARK: - used by the handlers (any event loop)

    /// A connection sent a good handshake: joins it with its waiting peer, or makes it wait.
    /// - Returns: false when it was refused (the caller closes it).
    func arrive(_ handshake: TransitHandshake, channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let ip = channel.remoteAddress?.ipAddress ?? "?"
        // A trusted proxy's connections are not capped per address: each is its own key to the matcher.
        let address = connectionCounts.perAddressKey(ip) ?? "trusted proxy \(id)"
        // The bound that refused, named as its option (for the metrics).
        var limit: String?
        let outcome = state.withLock { s -> (TransitMatcher<ObjectIdentifier>.Arrival, (any Channel)?) in
            if s.pairs.active >= settings.maximumPairs {
                s.counts.refused += 1
                limit = "transit-max-pairs"
                return (.refused("the relay carries \(settings.maximumPairs) pairs"), nil)
            }
            let a = s.matcher.arrive(handshake, connection: id, address: address)
            switch a {
            case .paired(let other):
                let partner = s.channels.removeValue(forKey: other)
                let partnerAddress = partner.flatMap { connectionCounts.perAddressKey($0.remoteAddress?.ipAddress ?? "?") }
                if let why = s.pairs.join(connectionCounts.perAddressKey(ip), partnerAddress) {
                    // Over a cap on pairs: neither end is relayed (the waiting one left the matcher).
                    s.counts.refused += 2
                    limit = s.pairs.active >= settings.maximumPairs ? "transit-max-pairs" : "transit-max-pairs-per-address"
                    partner?.close(promise: nil)
                    return (.refused(why), nil)
                }
                s.counts.pairs += 1
                s.counts.activePairs += 1
                return (a, partner)
            case .waiting:
                s.channels[id] = channel
            case .refused:
                s.counts.refused += 1
                limit = s.matcher.pendingCount >= settings.maximumPending ? "transit-max-waiting" : "transit-max-waiting-per-address"
            }
            return (a, nil)
        }
        if let limit { metrics?.refused(limit: limit) }
        if case (.paired, _?) = outcome { metrics?.transitPairJoined() }
        switch outcome {
        case (.paired, let other?):
            // Neither end is read again by SwiftNIO until its pipe is laid (`join` or `handOver`, queued
            // on its event loop after this): a client answered "ok" may send at once, and what it sent
            // before the pipe would be held as early bytes, over whose limit (64 KiB) the pair was
            // closed. "ok" goes to both ahead of anything the other relays.
            let end = PairEnd(addresses: (connectionCounts.perAddressKey(other.remoteAddress?.ipAddress ?? "?"),
                                          connectionCounts.perAddressKey(ip)))
            if let splicer = splicer.withLock({ $0 }), let first = SplicePipe.make() {
                guard let second = SplicePipe.make() else {
                    first.close()
                    return relayThroughNIO(other, channel, end, token: handshake.token)
                }
                // Both sockets leave SwiftNIO, each on its own event loop once its reads stopped (queued
                // in this order); the splicer writes the "ok"s.
                let assembly = SpliceAssembly(relay: self, splicer: splicer, pipes: (first, second), end: end)
                for (side, c) in [other, channel].enumerated() {
                    c.setOption(.autoRead, value: false).whenComplete { _ in }
                    handOver(c, side: side, to: assembly)
                }
                logger.debug("transit: paired on token \(handshake.token.prefix(8))…, spliced")
                return true
            }
            return relayThroughNIO(other, channel, end, token: handshake.token)
        case (.paired, nil):
            return false  // cannot happen: a waiting connection is always registered
        case (.waiting, _):
            return true
        case (.refused(let why), _):
            logger.warning("transit: refused a connection from \(ip): \(why)")
            return false
        }
    }

    /// Relays a new pair through SwiftNIO: a ``TransitPipeHandler`` on each end. Reads stop and "ok" is
    /// written on each end's own loop, in this order, before its pipe is laid.
    private func relayThroughNIO(_ other: any Channel, _ channel: any Channel, _ end: PairEnd, token: String) -> Bool {
        for c in [other, channel] {
            c.setOption(.autoRead, value: false).whenComplete { _ in }
            c.writeAndFlush(ByteBuffer(bytes: TransitHandshake.ok), promise: nil)
        }
        join(other, channel, end)
        join(channel, other, end)
        logger.debug("transit: paired on token \(token.prefix(8))…")
        return true
    }

    /// On `channel`'s own event loop (its reads stopped): takes its socket out of SwiftNIO (a duplicate
    /// of the descriptor; the channel is closed, its place in the connection counts kept) with what it
    /// sent early, for the splicer.
    private func handOver(_ channel: any Channel, side: Int, to assembly: SpliceAssembly) {
        channel.eventLoop.execute {
            let ops = channel.pipeline.syncOperations
            guard channel.isActive, let handshake = try? ops.handler(type: TransitHandshakeHandler.self),
                  let fd = (try? ops.withUnsafeTransportIfAvailable(of: NIOBSDSocket.Handle.self) { chub_dup($0) }) ?? nil, fd >= 0
            else {
                // Gone before its socket was taken (or no descriptor to spare): the pair ends here.
                assembly.deliver(side: side, nil)
                channel.close(promise: nil)
                return
            }
            var early = handshake.takeEarlyBytes() ?? ByteBuffer()
            let release = (try? ops.handler(type: ConnectionCapHandler.self))?.handOver()
            channel.close(promise: nil)
            assembly.deliver(side: side, SpliceAssembly.End(socket: fd, early: early.readBytes(length: early.readableBytes) ?? [],
                                                            release: release ?? {}))
        }
    }

    /// A waiting connection went away, or waited too long.
    func leave(_ channel: any Channel, token: String, timedOut: Bool) {
        state.withLock { s in
            if s.matcher.leave(ObjectIdentifier(channel), token: token) {
                s.channels.removeValue(forKey: ObjectIdentifier(channel))
                if timedOut { s.counts.timedOut += 1 }
            }
        }
    }

    func count(badHandshake: Bool = false, timedOut: Bool = false, bytes: Int = 0, idleClosed: Bool = false) {
        state.withLock { s in
            if badHandshake { s.counts.badHandshakes += 1 }
            if timedOut { s.counts.timedOut += 1 }
            if idleClosed { s.counts.idleClosed += 1 }
            s.counts.bytes += Int64(bytes)
        }
        metrics?.transitRelayed(bytes: bytes)
    }

    /// A joined pair ended (counted once, by whichever end goes first).
    func pairEnded(_ end: PairEnd) {
        guard end.flag.exchange(true, ordering: .relaxed) == false else { return }
        state.withLock { s in
            s.counts.activePairs -= 1
            s.pairs.end(end.addresses.0, end.addresses.1)
        }
    }


    /// On `channel`'s own event loop: the handshake handler gives way to a pipe to `partner`, what
    /// `channel` sent early goes to the partner, and `channel` is read again.
    private func join(_ channel: any Channel, _ partner: any Channel, _ end: PairEnd) {
        channel.eventLoop.execute { [self] in
            let ops = channel.pipeline.syncOperations
            guard channel.isActive, let handshake = try? ops.handler(type: TransitHandshakeHandler.self) else {
                // Gone before its pipe was laid: the pair ends here.
                pairEnded(end)
                partner.close(promise: nil)
                return
            }
            let early = handshake.takeEarlyBytes()
            ops.removeHandler(handshake, promise: nil)
            try? ops.addHandler(TransitPipeHandler(relay: self, partner: partner, end: end))
            if let early, early.readableBytes > 0 {
                count(bytes: early.readableBytes)
                partner.writeAndFlush(early, promise: nil)
            }
            // The pipe is laid: read again (arrive stopped it).
            channel.setOption(.autoRead, value: true).whenComplete { _ in }
        }
    }
}

/// A new pair on its way to the splicer: each end's socket is taken from SwiftNIO on its own event loop;
/// once both are in, the pair is relayed (each end greeted with `ok\n` and what the other sent early); when
/// either end was gone, the other is closed and the pair ends.
final class SpliceAssembly: Sendable {
    /// One end, out of SwiftNIO.
    struct End: Sendable {
        var socket: Int32
        /// What it sent after its handshake, before its peer came.
        var early: [UInt8]
        /// Gives its place in the connection counts back.
        var release: @Sendable () -> Void
    }

    private let relay: TransitRelay
    private let splicer: TransitSplicer
    private let pipes: (SplicePipe, SplicePipe)
    private let end: PairEnd
    private let ends = Mutex<(arrived: Int, ends: [End?])>((0, [nil, nil]))

    init(relay: TransitRelay, splicer: TransitSplicer, pipes: (SplicePipe, SplicePipe), end: PairEnd) {
        self.relay = relay
        self.splicer = splicer
        self.pipes = pipes
        self.end = end
    }

    /// End `side` (0 or 1) is out of SwiftNIO, or nil: it was gone.
    func deliver(side: Int, _ e: End?) {
        let both = ends.withLock { s -> [End?]? in
            s.ends[side] = e
            s.arrived += 1
            return s.arrived == 2 ? s.ends : nil
        }
        guard let both else { return }
        let relay = self.relay, end = self.end
        guard let a = both[0], let b = both[1] else {
            for e in both.compactMap({ $0 }) {
                closeDescriptor(e.socket)
                e.release()
            }
            pipes.0.close()
            pipes.1.close()
            relay.pairEnded(end)
            return
        }
        let early = a.early.count + b.early.count
        if early > 0 { relay.count(bytes: early) }
        splicer.add(SplicedPair(
            sockets: (a.socket, b.socket), pipes: pipes,
            greetings: (TransitHandshake.ok + b.early, TransitHandshake.ok + a.early),
            idleTimeout: UInt64(relay.settings.pairIdleTimeout * 1e9),
            relayed: { relay.count(bytes: $0) },
            idleClosed: { relay.count(idleClosed: true) },
            ended: {
                a.release()
                b.release()
                relay.pairEnded(end)
            }))
    }
}

/// Reads the first line, hands a good handshake to the relay, and holds what comes before the peer.
final class TransitHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let relay: TransitRelay
    private var buffer = ByteBuffer()
    private var handshake: TransitHandshake?
    private var timer: Scheduled<Void>?
    private var joined = false

    init(relay: TransitRelay) { self.relay = relay }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context, seconds: relay.settings.handshakeTimeout)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext, seconds: Double) {
        timer?.cancel()
        let channel = context.channel
        let relay = self.relay
        let token = handshake?.token
        timer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
            if let token { relay.leave(channel, token: token, timedOut: true) } else { relay.count(timedOut: true) }
            channel.close(promise: nil)
        }
    }

    /// What the connection sent after its handshake, before its peer came (once).
    func takeEarlyBytes() -> ByteBuffer? {
        joined = true
        defer { buffer = ByteBuffer() }
        return buffer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        buffer.writeBuffer(&bytes)
        if handshake != nil {
            // Waiting for the peer: hold what comes, within the limit.
            if buffer.readableBytes > relay.settings.maximumEarlyBytes { context.close(promise: nil) }
            return
        }
        let view = buffer.readableBytesView
        guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
            if view.count >= TransitHandshake.maximumLength { refuse(context) }
            return
        }
        let line = buffer.readBytes(length: newline - view.startIndex + 1) ?? []
        guard let h = TransitHandshake.parse(line) else { return refuse(context) }
        handshake = h
        if relay.arrive(h, channel: context.channel) {
            if !joined { arm(context, seconds: relay.settings.pairingTimeout) }
        } else {
            context.close(promise: nil)
        }
    }

    private func refuse(_ context: ChannelHandlerContext) {
        relay.count(badHandshake: true)
        let out = ByteBuffer(bytes: TransitHandshake.bad)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(out)).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        if let handshake, !joined { relay.leave(context.channel, token: handshake.token, timedOut: false) }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Gone before its peer came: nothing to pass on.
        if let e = event as? ChannelEvent, e == .inputClosed { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Copies what its channel reads to the partner; stops reading while the partner cannot take more, and
/// lets the partner read again once this channel can take more. Closing either closes both.
final class TransitPipeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let relay: TransitRelay
    private let partner: any Channel
    private let end: PairEnd
    /// The next look at the pair's idleness (cancelled when this end closes).
    private var idleCheck: Scheduled<Void>?

    init(relay: TransitRelay, partner: any Channel, end: PairEnd) {
        self.relay = relay
        self.partner = partner
        self.end = end
    }

    func handlerAdded(context: ChannelHandlerContext) {
        scheduleIdleCheck(context, in: Int64(relay.settings.pairIdleTimeout * 1e9))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
    }

    /// Closes this end (and so the pair) once neither end has sent anything for the idle timeout;
    /// looks again later when something was sent meanwhile.
    private func scheduleIdleCheck(_ context: ChannelHandlerContext, in nanoseconds: Int64) {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let channel = context.channel
        idleCheck = context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
            let handler = bound.value
            guard channel.isActive, let context = try? channel.pipeline.syncOperations.context(handler: handler) else { return }
            let limit = Int64(handler.relay.settings.pairIdleTimeout * 1e9)
            let quiet = Int64(NIODeadline.now().uptimeNanoseconds) - handler.end.lastActivity.load(ordering: .relaxed)
            if quiet >= limit {
                if handler.end.idleCounted.exchange(true, ordering: .relaxed) == false { handler.relay.count(idleClosed: true) }
                context.close(promise: nil)
            } else {
                handler.scheduleIdleCheck(context, in: limit - quiet)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        end.lastActivity.store(Int64(NIODeadline.now().uptimeNanoseconds), ordering: .relaxed)
        relay.count(bytes: bytes.readableBytes)
        partner.writeAndFlush(bytes, promise: nil)
        if !partner.isWritable {
            context.channel.setOption(.autoRead, value: false).whenComplete { _ in }
            // The partner may have drained meanwhile: read again if so.
            let channel = context.channel
            partner.eventLoop.execute { [partner] in
                if partner.isWritable { channel.setOption(.autoRead, value: true).whenComplete { _ in } }
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner.setOption(.autoRead, value: true).whenComplete { _ in } }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        relay.pairEnded(end)
        // What is still queued for the partner goes out first: writes complete in order.
        let partner = self.partner
        partner.writeAndFlush(ByteBuffer()).whenComplete { _ in partner.close(promise: nil) }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let e = event as? ChannelEvent, e == .inputClosed else { return context.fireUserInboundEventTriggered(event) }
        // This client sent its FIN: pass it on after its bytes; when both have, the pair is done.
        let partner = self.partner, channel = context.channel
        let bothDone = end.inputsClosed.add(1, ordering: .relaxed).newValue == 2
        partner.writeAndFlush(ByteBuffer()).whenComplete { _ in
            partner.close(mode: .output, promise: nil)
            if bothDone {
                partner.close(promise: nil)
                channel.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Shared by a pair's two pipes: the first to end counts the pair's end; both FINs end the pair; when
/// either end last sent something (for the idle timeout).
final class PairEnd: Sendable {
    let flag = Atomic<Bool>(false)
    let inputsClosed = Atomic<Int>(0)
    let idleCounted = Atomic<Bool>(false)
    /// `NIODeadline` uptime nanoseconds of the last bytes read from either end.
    let lastActivity = Atomic<Int64>(Int64(NIODeadline.now().uptimeNanoseconds))
    /// The two ends' per-address keys (nil: a trusted proxy), released when the pair ends.
    let addresses: (String?, String?)

    init(addresses: (String?, String?)) { self.addresses = addresses }
}
