// Connection exhaustion without logging in: idle sockets, slowloris heads (a byte a second), bad request
// lines, oversized headers and garbage used to hold a descriptor each for ever, and enough of them made
// the hub stop answering. Every connection now passes a guard at the front of its pipeline:
//
// - caps: connections in all (below the process's descriptor limit, so the hub always has some left to
//   answer with) and per remote address (every address counts, loopback too: 127.0.0.2 is another client
//   than 127.0.0.1; only a trusted proxy's connections, `--trusted-proxy`, are not capped per address,
//   since they carry many clients); a connection over a cap is closed at once. The transit relay's
//   connections pass the same caps (one count for every listener of the hub: TransitRelay);
// - a deadline for each request head (from the connection, or from the first byte of the next request
//   on a kept-alive one): a head that has not fully arrived by then closes the connection, however
//   slowly its bytes come; an idle deadline between requests and on upgraded WebSockets (whose pings,
//   every 30 s, keep a live one busy);
// - an answer for a head the HTTP decoder refuses (a bad request line, HTTP/0.9, garbage: 400; headers
//   over the decoder's limits: 431), then a close. (hummingbird-websocket's upgrade pipeline turns off
//   NIO's own error answers and leaves such connections open.)

import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// Limits on the hub's connections (`HubServerSettings.connections`).
public struct ConnectionLimits: Sendable {
    /// Seconds a request head may take to arrive, from the connection or the next request's first byte.
    public var headTimeout: Double = 10
    /// Seconds a connection may stay silent both ways between requests, or as a WebSocket.
    public var idleTimeout: Double = 75
    /// Connections at once in all; nil: the descriptor limit less ``reservedDescriptors``.
    public var maximumConnections: Int?
    /// Connections at once from one remote address, loopback included (a trusted proxy's are not counted
    /// per address); over every listener of the hub (HTTP and the transit relay).
    public var maximumPerAddress = 256
    /// Descriptors kept free for the database, files and the answers.
    public static let reservedDescriptors = 64

    public init() {}

    /// ``maximumConnections``, or the soft descriptor limit less ``reservedDescriptors`` (at least 16).
    public var effectiveMaximumConnections: Int {
        if let maximumConnections { return maximumConnections }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 65_536 }
        return max(16, Int(min(limit.rlim_cur, 1 << 20)) - Self.reservedDescriptors)
    }
}

/// The connections the guard let in, in all and per address, and what it refused or closed.
public final class ConnectionCounts: Sendable {
    private struct State {
        var total = 0
        var perAddress: [String: Int] = [:]
        var refused = 0
        var headTimeouts = 0
        var idleTimeouts = 0
        var badHeads = 0
    }
    private let state = Mutex(State())
    let limits: ConnectionLimits
    let maximumConnections: Int
    /// Addresses not capped per address (reverse proxies carrying many clients).
    let trustedProxies: TrustedProxies
    /// Where admissions and refusals are counted.
    let metrics: HubMetrics?

    init(limits: ConnectionLimits, trustedProxies: TrustedProxies = TrustedProxies(), metrics: HubMetrics? = nil) {
        self.limits = limits
        self.trustedProxies = trustedProxies
        self.metrics = metrics
        maximumConnections = limits.effectiveMaximumConnections
    }

    /// The key a connection from `ip` is counted under per address: its limit key
    /// (``ClientAddress/limitKey(_:)``: IPv6 by its /64), or nil (counted in all only) for a trusted
    /// proxy. Every other address counts, loopback included.
    func perAddressKey(_ ip: String?) -> String? {
        guard let ip else { return nil }
        let address = TrustedProxies.normalized(ip)
        return trustedProxies.contains(address) ? nil : ClientAddress.limitKey(address)
    }

    /// Counts a new connection from `address` on `listener` (`http` or `transit`) in, or says no (over a cap).
    func admit(_ address: String?, listener: String = "http") -> Bool {
        let refusal = state.withLock { s -> String? in
            guard s.total < maximumConnections else { s.refused += 1; return "max-connections" }
            if let address {
                guard s.perAddress[address, default: 0] < limits.maximumPerAddress else { s.refused += 1; return "max-connections-per-address" }
                s.perAddress[address, default: 0] += 1
            }
            s.total += 1
            return nil
        }
        if let refusal { metrics?.refused(limit: refusal) } else { metrics?.connectionAccepted(listener: listener) }
        return refusal == nil
    }

    func release(_ address: String?) {
        state.withLock { s in
            s.total -= 1
            if let address {
                let n = s.perAddress[address, default: 1] - 1
                s.perAddress[address] = n > 0 ? n : nil
            }
        }
    }

    fileprivate func countHeadTimeout() { state.withLock { $0.headTimeouts += 1 } }
    fileprivate func countIdleTimeout() { state.withLock { $0.idleTimeouts += 1 } }
    fileprivate func countBadHead() { state.withLock { $0.badHeads += 1 } }

    /// Connections open now, refused at a cap, closed for a late head or idleness, answered 400/431.
    public var snapshot: (open: Int, refused: Int, headTimeouts: Int, idleTimeouts: Int, badHeads: Int) {
        state.withLock { ($0.total, $0.refused, $0.headTimeouts, $0.idleTimeouts, $0.badHeads) }
    }
}

/// Wraps a server child channel so that every connection passes the guard first.
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let counts: ConnectionCounts
    /// TLS: the guard cannot write a plain answer under it, so a refused head is just closed.
    let plaintext: Bool

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let guardHandler = ConnectionGuardHandler(counts: counts, plaintext: plaintext)
        do {
            try channel.pipeline.syncOperations.addHandler(guardHandler, position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let bound = NIOLoopBound(guardHandler, eventLoop: channel.eventLoop)
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Right after the HTTP decoder: its errors and the request heads it produces.
            let pipeline = channel.pipeline.syncOperations
            if let decoder = try? pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self) {
                try pipeline.addHandler(RequestHeadWatcher(guardHandler: bound.value), position: .after(decoder))
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// The front of every connection's pipeline: the caps and the deadlines (see the file comment).
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private enum Phase {
        /// Waiting for a request head to be complete (since the connection or the request's first byte).
        case awaitingHead
        /// A head arrived; its body and the answer are under way.
        case inRequest
        /// Between requests on a kept-alive connection.
        case idle
        /// A WebSocket (or an upgrade under way): only the idle deadline.
        case upgraded
        /// Closing: nothing more to do.
        case closing
    }

    private let counts: ConnectionCounts
    private let plaintext: Bool
    private var phase = Phase.awaitingHead
    private var admitted = false
    private var address: String?
    private var context: ChannelHandlerContext?
    private var headDeadline: Scheduled<Void>?
    /// The idle deadline's check; it is not moved on every read and write (cancelling and scheduling a
    /// task per frame cost a search of the event loop's timer heap, which holds one entry per connection:
    /// at 10,000 sockets a fifth of the hub's CPU). Each read and write notes `lastActivity`; when the
    /// check comes due it closes the connection, or waits again for what is left of the deadline.
    private var idleDeadline: Scheduled<Void>?
    private var lastActivity = NIODeadline.now()

    init(counts: ConnectionCounts, plaintext: Bool) {
        self.counts = counts
        self.plaintext = plaintext
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !admitted, phase != .closing else { return }
        address = counts.perAddressKey(context.channel.remoteAddress?.ipAddress)
        guard counts.admit(address, listener: "http") else {
            phase = .closing
            context.close(promise: nil)
            return
        }
        admitted = true
        armHead(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closing
        leave()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        leave()
        self.context = nil
    }

    /// The connection no longer counts: timers off, its place given back (once).
    private func leave() {
        cancelTimers()
        if admitted {
            admitted = false
            counts.release(address)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .idle:
            // The first byte of the next request: its head has `headTimeout` from now.
            phase = .awaitingHead
            armHead(context)
        case .inRequest, .upgraded:
            armIdle(context)
        case .awaitingHead, .closing:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if phase == .inRequest || phase == .idle || phase == .upgraded { armIdle(context) }
        context.write(data, promise: promise)
    }

    // MARK: told by the RequestHeadWatcher

    /// A whole request head arrived.
    func headArrived(upgrade: Bool) {
        guard let context, phase != .closing else { return }
        headDeadline?.cancel()
        headDeadline = nil
        phase = upgrade ? .upgraded : .inRequest  // after an upgrade request no more heads are watched
        armIdle(context)
    }

    /// The request (head and body) is in; the next bytes are the next request's.
    func requestEnded() {
        guard let context, phase == .inRequest else { return }
        phase = .idle
        armIdle(context)
    }

    /// The decoder refused the head: answer (plain HTTP) and close.
    func refuseHead(status: HTTPResponseStatus) {
        guard let context, phase != .closing else { return }
        phase = .closing
        cancelTimers()
        counts.countBadHead()
        guard plaintext else {
            context.close(promise: nil)
            return
        }
        let body = #"{"status":"error","message":"\#(status.reasonPhrase)"}"#
        let text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer(string: text))).whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: deadlines

    private func armHead(_ context: ChannelHandlerContext) {
        headDeadline?.cancel()
        headDeadline = closing(context, after: counts.limits.headTimeout) { $0.countHeadTimeout() }
        idleDeadline?.cancel()
        idleDeadline = nil
    }

    private func armIdle(_ context: ChannelHandlerContext) {
        lastActivity = .now()
        if idleDeadline == nil { checkIdle(context, in: counts.limits.idleTimeout) }
    }

    private var idleTimeout: TimeAmount { .nanoseconds(Int64(counts.limits.idleTimeout * 1e9)) }

    /// Checks for idleness `seconds` from now: closes the connection (counted) when nothing was read or
    /// written for `idleTimeout`, else checks again when that would be the case.
    private func checkIdle(_ context: ChannelHandlerContext, in seconds: Double) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleDeadline = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            handler.value.idleCheckDue()
        }
    }

    private func idleCheckDue() {
        idleDeadline = nil
        guard let context, phase == .inRequest || phase == .idle || phase == .upgraded else { return }
        let due = lastActivity + idleTimeout, now = NIODeadline.now()
        if due > now {
            checkIdle(context, in: Double((due - now).nanoseconds) / 1e9)
        } else {
            counts.countIdleTimeout()
            context.channel.close(promise: nil)
        }
    }

    /// Closes the connection `seconds` from now (counted by `count`) unless cancelled first.
    private func closing(_ context: ChannelHandlerContext, after seconds: Double,
                         count: @escaping @Sendable (ConnectionCounts) -> Void) -> Scheduled<Void> {
        let channel = context.channel, counts = self.counts
        return context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            count(counts)
            channel.close(promise: nil)
        }
    }

    private func cancelTimers() {
        headDeadline?.cancel()
        idleDeadline?.cancel()
        headDeadline = nil
        idleDeadline = nil
    }
}

/// Right after the HTTP decoder: tells the guard when a head is whole and a request ends, and turns
/// the decoder's refusals into answers. Leaves the pipeline when a WebSocket upgrade is asked for
/// (after it, what passes is no longer HTTP).
final class RequestHeadWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let guardHandler: ConnectionGuardHandler

    init(guardHandler: ConnectionGuardHandler) { self.guardHandler = guardHandler }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let upgrade = head.headers.contains(name: "upgrade")
            guardHandler.headArrived(upgrade: upgrade)
            context.fireChannelRead(data)
            if upgrade { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
        case .body:
            context.fireChannelRead(data)
        case .end:
            guardHandler.requestEnded()
            context.fireChannelRead(data)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parser = error as? HTTPParserError {
            switch parser {
            case .headerOverflow:
                guardHandler.refuseHead(status: .requestHeaderFieldsTooLarge)
            default:
                guardHandler.refuseHead(status: .badRequest)
            }
            return
        }
        context.fireErrorCaught(error)
    }
}

/// The caps of ``ConnectionCounts`` (in all and per address) alone, for a listener that is not HTTP
/// (the transit relay): first in the pipeline, it counts the connection in when it becomes active (or
/// closes it at once over a cap) and out when it goes.
final class ConnectionCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let counts: ConnectionCounts
    private var admitted = false
    private var refused = false
    private var address: String?
    /// Called (on the event loop) when a connection is refused at a cap.
    private let onRefused: @Sendable () -> Void

    init(counts: ConnectionCounts, onRefused: @escaping @Sendable () -> Void = {}) {
        self.counts = counts
        self.onRefused = onRefused
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        if admitted { context.fireChannelActive() }
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !admitted, !refused else { return }
        address = counts.perAddressKey(context.channel.remoteAddress?.ipAddress)
        if counts.admit(address, listener: "transit") {
            admitted = true
        } else {
            refused = true
            onRefused()
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }  // a refused connection's bytes go nowhere
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        leave()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { leave() }

    /// The connection's socket leaves SwiftNIO but stays open (the transit relay's splicer takes it): it
    /// keeps its place in the counts when its channel closes, until the returned call (made once, when
    /// the socket is closed). Nil when it was never counted in.
    func handOver() -> (@Sendable () -> Void)? {
        guard admitted else { return nil }
        admitted = false
        let counts = self.counts, address = self.address
        return { counts.release(address) }
    }

    private func leave() {
        if admitted {
            admitted = false
            counts.release(address)
        }
    }
}
