// /wormhole/v1: the magic-wormhole rendezvous (mailbox) protocol over WebSocket, one client
// connection's life: welcome, then bind, list, allocate, claim, release, open, add, close, ping, each
// acknowledged, and the protocol's `error` message (with the request as `orig`) for what is refused.

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// Runs one rendezvous client.
public struct WormholeSocket: Sendable {
    let rendezvous: WormholeRendezvous
    let persister: WormholePersister?
    let shared: WormholeShared?
    let limiter: WormholeAddressLimiter?
    let remoteIP: String
    /// Where the socket and the refusals by a bound are counted (nil: nowhere).
    let metrics: HubMetrics?
    /// The largest message a client may send, in bytes.
    public static let maximumMessageBytes = 64 * 1024

    /// A socket of `rendezvous`, whose changes `persister` (if any) writes before each answer; with
    /// `shared`, every request runs on the database several nodes share instead. `limiter` bounds
    /// what one address (`remoteIP`, the client's address, counted by ``ClientAddress/limitKey(_:)``: IPv6
    /// by its /64) may allocate and claim per window; the rendezvous bounds what it may hold (``WormholeLimits``).
    public init(rendezvous: WormholeRendezvous, persister: WormholePersister? = nil, shared: WormholeShared? = nil,
                limiter: WormholeAddressLimiter? = nil, remoteIP: String = "?", metrics: HubMetrics? = nil) {
        self.metrics = metrics
        self.rendezvous = rendezvous
        self.persister = persister
        self.shared = shared
        self.limiter = limiter
        self.remoteIP = ClientAddress.limitKey(remoteIP)
    }

    /// Runs one rule of the rendezvous: on the shared database when there is one, else in memory.
    private func run<T: Sendable>(_ app: String, _ scope: WormholeShared.Scope,
                                  _ op: @escaping @Sendable () throws(RendezvousRefusal) -> T) async throws(RendezvousRefusal) -> T {
        if let shared { return try await shared.perform(app: app, scope, op) }
        return try op()
    }

    /// What one connection did so far (the protocol allows each step once).
    private struct Connection {
        var app: String?
        var side: String?
        var allocated = false
        var claimed = false
        var released = false
        var nameplate: String?
        var mailbox: String?
        var listener: Int?
        var closed = false
    }

    /// Handles the socket until it closes.
    public func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        metrics?.rendezvousOpened()
        defer { metrics?.rendezvousClosed() }
        let outbox = GroupOutbox()
        var c = Connection()
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                for await frame in outbox.frames {
                    do { try await outbound.write(.text(frame)) } catch { break }
                }
                if outbox.didOverflow { try? await outbound.close(.policyViolation, reason: "too slow: outbound queue full") }
            }
            if let shared { await shared.ensureReady() } else { await persister?.ensureLoaded() }
            _ = outbox.send(Self.json(["type": "welcome", "welcome": [String: Any]()]))
            var closeCode: WebSocketErrorCode?
            do {
                for try await message in inbound.messages(maxSize: Self.maximumMessageBytes) {
                    guard case .text(let text) = message else {
                        closeCode = .unacceptableData
                        break
                    }
                    let replies = await handle(text, &c, outbox)
                    // Answered once the change is in the database (a restarted hub then still has it).
                    if shared == nil, let persister { await persister.flush(upTo: rendezvous.generation) }
                    for r in replies { _ = outbox.send(r) }
                }
            } catch {
                closeCode = .messageTooLarge
            }
            if let app = c.app, let mailbox = c.mailbox, let handle = c.listener {
                rendezvous.stopListening(app: app, mailbox: mailbox, handle: handle)
            }
            if c.allocated { limiter?.allocationEnded(from: remoteIP) }
            outbox.finish()
            await tasks.waitForAll()
            if let closeCode { try? await outbound.close(closeCode, reason: "") }
        }
    }

    /// Carries out one request; returns the answers to send (messages to listeners go out at once).
    private func handle(_ text: String, _ c: inout Connection, _ outbox: GroupOutbox) async -> [String] {
        let now = Date().timeIntervalSince1970
        var replies: [String] = []
        guard let msg = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            return [Self.json(["type": "error", "error": "messages are JSON objects", "orig": text])]
        }
        do throws(RendezvousRefusal) {
            guard let type = msg["type"] as? String else { throw RendezvousRefusal.badRequest("missing 'type'") }
            replies.append(Self.json(["type": "ack", "id": msg["id"] ?? NSNull()]))
            if type == "ping" {
                guard let ping = msg["ping"] else { throw RendezvousRefusal.badRequest("ping requires 'ping'") }
                replies.append(Self.json(["type": "pong", "pong": ping]))
                return replies
            }
            if type == "bind" {
                guard c.app == nil else { throw RendezvousRefusal.badRequest("already bound") }
                guard let app = msg["appid"] as? String, !app.isEmpty, app.utf8.count <= 256 else { throw RendezvousRefusal.badRequest("bind requires 'appid'") }
                guard let side = msg["side"] as? String, !side.isEmpty, side.utf8.count <= 64 else { throw RendezvousRefusal.badRequest("bind requires 'side'") }
                c.app = app
                c.side = side
                return replies
            }
            guard let app = c.app, let side = c.side else { throw RendezvousRefusal.badRequest("must bind first") }
            switch type {
            case "list":
                let r = rendezvous
                let names = try await run(app, .init(allNameplates: true)) { () throws(RendezvousRefusal) in r.nameplates(app: app) }
                replies.append(Self.json(["type": "nameplates", "nameplates": names.map { ["id": $0] }]))
            case "allocate":
                guard !c.allocated else { throw RendezvousRefusal.badRequest("you already allocated one, don't be greedy") }
                let r = rendezvous, address = remoteIP
                let allocate = { () async throws(RendezvousRefusal) -> String in
                    try await run(app, .init(allNameplates: true, countNameplates: true, address: address)) { () throws(RendezvousRefusal) in
                        try r.allocate(app: app, side: side, now: now, address: address)
                    }
                }
                // Counted as held only if it succeeds: a refusal gives the count back (allocating).
                let name: String
                if let limiter { name = try await limiter.allocating(from: address, now: now, allocate) } else { name = try await allocate() }
                c.allocated = true
                c.nameplate = name
                replies.append(Self.json(["type": "allocated", "nameplate": name]))
            case "claim":
                guard let name = msg["nameplate"] as? String else { throw RendezvousRefusal.badRequest("claim requires 'nameplate'") }
                guard !c.claimed else { throw RendezvousRefusal.badRequest("only one claim per connection") }
                try limiter?.allow(.claim, from: remoteIP, now: now)
                c.claimed = true
                c.nameplate = name
                let r = rendezvous
                let mailbox = try await run(app, .init(nameplates: [name], countNameplates: true, address: remoteIP)) { () throws(RendezvousRefusal) in
                    try r.claim(app: app, nameplate: name, side: side, now: now, address: remoteIP)
                }
                replies.append(Self.json(["type": "claimed", "mailbox": mailbox]))
            case "release":
                guard !c.released else { throw RendezvousRefusal.badRequest("only one release per connection") }
                let asked = msg["nameplate"] as? String
                if let asked, let mine = c.nameplate, asked != mine { throw RendezvousRefusal.badRequest("release and claim must use same nameplate") }
                guard let name = asked ?? c.nameplate else { throw RendezvousRefusal.badRequest("release without nameplate must follow claim") }
                c.released = true
                let r = rendezvous
                try await run(app, .init(nameplates: [name])) { () throws(RendezvousRefusal) in r.release(app: app, nameplate: name, side: side, now: now) }
                replies.append(Self.json(["type": "released"]))
            case "open":
                guard c.listener == nil else { throw RendezvousRefusal.badRequest("only one open per connection") }
                guard let mailbox = msg["mailbox"] as? String else { throw RendezvousRefusal.badRequest("open requires 'mailbox'") }
                try limiter?.allow(.claim, from: remoteIP, now: now)
                c.mailbox = mailbox
                let r = rendezvous
                c.listener = try await run(app, .init(mailboxes: [mailbox], address: remoteIP, addressNameplates: false)) { () throws(RendezvousRefusal) in
                    try r.open(app: app, mailbox: mailbox, side: side, now: now, address: remoteIP) { m in
                        var out: [String: Any] = ["type": "message", "side": m.side, "phase": m.phase, "body": m.body,
                                                  "server_rx": m.serverRx]
                        out["id"] = m.id ?? NSNull()
                        _ = outbox.send(Self.json(out))  // a listener: at once
                    }
                }
            case "add":
                guard let mailbox = c.mailbox, c.listener != nil else { throw RendezvousRefusal.badRequest("must open mailbox before adding") }
                guard let phase = msg["phase"] as? String else { throw RendezvousRefusal.badRequest("missing 'phase'") }
                guard let body = msg["body"] as? String else { throw RendezvousRefusal.badRequest("missing 'body'") }
                let message = WormholeMessage(side: side, phase: phase, body: body, serverRx: now, id: msg["id"] as? String)
                let r = rendezvous, address = remoteIP
                try await run(app, .init(mailboxes: [mailbox], address: address, addressNameplates: false)) { () throws(RendezvousRefusal) in
                    try r.add(app: app, mailbox: mailbox, message: message, address: address)
                }
            case "close":
                guard !c.closed else { throw RendezvousRefusal.badRequest("only one close per connection") }
                let asked = msg["mailbox"] as? String
                if let asked, let mine = c.mailbox, asked != mine { throw RendezvousRefusal.badRequest("open and close must use same mailbox") }
                guard let mailbox = asked ?? c.mailbox else { throw RendezvousRefusal.badRequest("close without mailbox must follow open") }
                if let handle = c.listener, let mine = c.mailbox {
                    rendezvous.stopListening(app: app, mailbox: mine, handle: handle)
                    c.listener = nil
                }
                c.closed = true
                let r = rendezvous
                try await run(app, .init(mailboxes: [mailbox])) { () throws(RendezvousRefusal) in try r.close(app: app, mailbox: mailbox, side: side, now: now) }
                replies.append(Self.json(["type": "closed"]))
            default:
                throw RendezvousRefusal.badRequest("unknown type")
            }
        } catch {
            switch error {
            case .addressLimit: metrics?.refused(limit: "wormhole-per-address")
            case .serverFull: metrics?.refused(limit: "wormhole-server")
            case .mailboxFull: metrics?.refused(limit: "wormhole-mailbox")
            default: break
            }
            replies.append(Self.json(["type": "error", "error": error.description, "orig": msg]))
        }
        return replies
    }

    /// A server message: its fields plus `server_tx`, as compact JSON.
    static func json(_ fields: [String: Any]) -> String {
        var f = fields
        f["server_tx"] = Date().timeIntervalSince1970
        guard let data = try? JSONSerialization.data(withJSONObject: f, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The rendezvous as a part of the hub: the WebSocket at ``path`` (no token: wormhole clients have
/// none; the code's PAKE is what protects them) and a sweeper of idle nameplates and mailboxes.
public final class WormholePlugin: HubPlugin, Sendable {
    /// The socket's path.
    public static let path = "/wormhole/v1"
    /// The shared state.
    public let rendezvous: WormholeRendezvous
    /// The limits per address.
    public let limiter: WormholeAddressLimiter
    private let persisterBox = Mutex<WormholePersister?>(nil)
    private let sharedBox = Mutex<WormholeShared??>(nil)
    private let groups: GroupsPlugin?

    /// Creates the plugin. With `groups` on PostgreSQL, the rendezvous is shared with the other nodes
    /// of the database through the groups' LISTEN/NOTIFY bus (``WormholeShared``).
    public init(rendezvous: WormholeRendezvous = WormholeRendezvous(), groups: GroupsPlugin? = nil,
                limiter: WormholeAddressLimiter = WormholeAddressLimiter()) {
        self.rendezvous = rendezvous
        self.groups = groups
        self.limiter = limiter
    }

    /// Creates the plugin with the bounds of `limits` (`HubServerSettings.wormhole`).
    public convenience init(groups: GroupsPlugin?, limits: WormholeLimits) {
        self.init(rendezvous: WormholeRendezvous(limits: limits), groups: groups, limiter: WormholeAddressLimiter(limits: limits))
    }

    /// The shared rendezvous when the hub runs on PostgreSQL with the groups' bus, else nil.
    func shared(_ context: HubPluginContext) -> WormholeShared? {
        sharedBox.withLock { box in
            if let made = box { return made }
            var made: WormholeShared?
            if let groups, let bus = groups.runtime(context).pgBus {
                made = WormholeShared(db: context.store.db, rendezvous: rendezvous, bus: bus, logger: context.logger)
            }
            box = .some(made)
            return made
        }
    }

    /// The writer of the rendezvous into the hub's database (made on first use).
    func persister(_ context: HubPluginContext) -> WormholePersister {
        persisterBox.withLock { p in
            if let p { return p }
            let made = WormholePersister(db: context.store.db, rendezvous: rendezvous)
            p = made
            return made
        }
    }

    /// Adds no route (the socket is an upgrade); counts this node's nameplates and mailboxes each time
    /// the metrics are rendered.
    public func register(on router: HubRouter, context: HubPluginContext) {
        let rendezvous = self.rendezvous
        context.metrics.addCollector { [weak metrics = context.metrics] in
            let n = rendezvous.counts
            metrics?.setRendezvous(nameplates: n.nameplates, mailboxes: n.mailboxes)
        }
    }

    public func services(context: HubPluginContext) -> [any Service] {
        [WormholeSweeper(rendezvous: rendezvous, persister: persister(context), shared: shared(context))]
    }

    public var webSocketConfiguration: WebSocketServerConfiguration? {
        WebSocketServerConfiguration(maxFrameSize: WormholeSocket.maximumMessageBytes, autoPing: .enabled(timePeriod: .seconds(30)),
                                     validateUTF8: true)
    }

    public func shouldUpgrade(_ request: HTTPRequest, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        await shouldUpgrade(request, remoteIP: "?", context: context)
    }

    public func shouldUpgrade(_ request: HTTPRequest, remoteIP: String, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let p = request.path ?? ""
        guard p == Self.path || p.hasPrefix(Self.path + "?") else { return .dontUpgrade }
        let rendezvous = self.rendezvous, persister = self.persister(context), shared = self.shared(context), limiter = self.limiter
        let metrics = context.metrics
        return .upgrade([:]) { inbound, outbound, _ in
            await WormholeSocket(rendezvous: rendezvous, persister: persister, shared: shared, limiter: limiter, remoteIP: remoteIP,
                                 metrics: metrics)
                .run(inbound: inbound, outbound: outbound)
        }
    }
}

/// Drops idle nameplates and mailboxes once a minute.
struct WormholeSweeper: Service {
    let rendezvous: WormholeRendezvous
    let persister: WormholePersister
    let shared: WormholeShared?

    func run() async throws {
        if let shared { await shared.ensureReady() } else { await persister.ensureLoaded() }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(60)) }
            if let shared {
                await shared.expire(now: Date().timeIntervalSince1970)
            } else {
                rendezvous.expire(now: Date().timeIntervalSince1970)
                await persister.flush(upTo: rendezvous.generation)
            }
        }
    }
}
