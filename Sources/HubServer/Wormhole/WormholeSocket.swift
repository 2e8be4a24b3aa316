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
    /// The largest message a client may send, in bytes.
    public static let maximumMessageBytes = 64 * 1024

    /// A socket of `rendezvous`, whose changes `persister` (if any) writes before each answer.
    public init(rendezvous: WormholeRendezvous, persister: WormholePersister? = nil) {
        self.rendezvous = rendezvous
        self.persister = persister
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
        let outbox = GroupOutbox()
        var c = Connection()
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                for await frame in outbox.frames {
                    do { try await outbound.write(.text(frame)) } catch { break }
                }
                if outbox.didOverflow { try? await outbound.close(.policyViolation, reason: "too slow: outbound queue full") }
            }
            await persister?.ensureLoaded()
            _ = outbox.send(Self.json(["type": "welcome", "welcome": [String: Any]()]))
            var closeCode: WebSocketErrorCode?
            do {
                for try await message in inbound.messages(maxSize: Self.maximumMessageBytes) {
                    guard case .text(let text) = message else {
                        closeCode = .unacceptableData
                        break
                    }
                    let replies = handle(text, &c, outbox)
                    // Answered once the change is in the database (a restarted hub then still has it).
                    if let persister { await persister.flush(upTo: rendezvous.generation) }
                    for r in replies { _ = outbox.send(r) }
                }
            } catch {
                closeCode = .messageTooLarge
            }
            if let app = c.app, let mailbox = c.mailbox, let handle = c.listener {
                rendezvous.stopListening(app: app, mailbox: mailbox, handle: handle)
            }
            outbox.finish()
            await tasks.waitForAll()
            if let closeCode { try? await outbound.close(closeCode, reason: "") }
        }
    }

    /// Carries out one request; returns the answers to send (messages to listeners go out at once).
    private func handle(_ text: String, _ c: inout Connection, _ outbox: GroupOutbox) -> [String] {
        let now = Date().timeIntervalSince1970
        var replies: [String] = []
        guard let msg = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            return [Self.json(["type": "error", "error": "messages are JSON objects", "orig": text])]
        }
        do throws(WormholeError) {
            guard let type = msg["type"] as? String else { throw WormholeError("missing 'type'") }
            replies.append(Self.json(["type": "ack", "id": msg["id"] ?? NSNull()]))
            if type == "ping" {
                guard let ping = msg["ping"] else { throw WormholeError("ping requires 'ping'") }
                replies.append(Self.json(["type": "pong", "pong": ping]))
                return replies
            }
            if type == "bind" {
                guard c.app == nil else { throw WormholeError("already bound") }
                guard let app = msg["appid"] as? String, !app.isEmpty, app.utf8.count <= 256 else { throw WormholeError("bind requires 'appid'") }
                guard let side = msg["side"] as? String, !side.isEmpty, side.utf8.count <= 64 else { throw WormholeError("bind requires 'side'") }
                c.app = app
                c.side = side
                return replies
            }
            guard let app = c.app, let side = c.side else { throw WormholeError("must bind first") }
            switch type {
            case "list":
                replies.append(Self.json(["type": "nameplates", "nameplates": rendezvous.nameplates(app: app).map { ["id": $0] }]))
            case "allocate":
                guard !c.allocated else { throw WormholeError("you already allocated one, don't be greedy") }
                let name = try rendezvous.allocate(app: app, side: side, now: now)
                c.allocated = true
                replies.append(Self.json(["type": "allocated", "nameplate": name]))
            case "claim":
                guard let name = msg["nameplate"] as? String else { throw WormholeError("claim requires 'nameplate'") }
                guard !c.claimed else { throw WormholeError("only one claim per connection") }
                c.claimed = true
                c.nameplate = name
                let mailbox = try rendezvous.claim(app: app, nameplate: name, side: side, now: now)
                replies.append(Self.json(["type": "claimed", "mailbox": mailbox]))
            case "release":
                guard !c.released else { throw WormholeError("only one release per connection") }
                let asked = msg["nameplate"] as? String
                if let asked, let mine = c.nameplate, asked != mine { throw WormholeError("release and claim must use same nameplate") }
                guard let name = asked ?? c.nameplate else { throw WormholeError("release without nameplate must follow claim") }
                c.released = true
                rendezvous.release(app: app, nameplate: name, side: side, now: now)
                replies.append(Self.json(["type": "released"]))
            case "open":
                guard c.listener == nil else { throw WormholeError("only one open per connection") }
                guard let mailbox = msg["mailbox"] as? String else { throw WormholeError("open requires 'mailbox'") }
                c.mailbox = mailbox
                c.listener = try rendezvous.open(app: app, mailbox: mailbox, side: side, now: now) { m in
                    var out: [String: Any] = ["type": "message", "side": m.side, "phase": m.phase, "body": m.body,
                                              "server_rx": m.serverRx]
                    out["id"] = m.id ?? NSNull()
                    _ = outbox.send(Self.json(out))  // a listener: at once
                }
            case "add":
                guard let mailbox = c.mailbox, c.listener != nil else { throw WormholeError("must open mailbox before adding") }
                guard let phase = msg["phase"] as? String else { throw WormholeError("missing 'phase'") }
                guard let body = msg["body"] as? String else { throw WormholeError("missing 'body'") }
                try rendezvous.add(app: app, mailbox: mailbox,
                                   message: WormholeMessage(side: side, phase: phase, body: body, serverRx: now, id: msg["id"] as? String))
            case "close":
                guard !c.closed else { throw WormholeError("only one close per connection") }
                let asked = msg["mailbox"] as? String
                if let asked, let mine = c.mailbox, asked != mine { throw WormholeError("open and close must use same mailbox") }
                guard let mailbox = asked ?? c.mailbox else { throw WormholeError("close without mailbox must follow open") }
                if let handle = c.listener, let mine = c.mailbox {
                    rendezvous.stopListening(app: app, mailbox: mine, handle: handle)
                    c.listener = nil
                }
                c.closed = true
                try rendezvous.close(app: app, mailbox: mailbox, side: side, now: now)
                replies.append(Self.json(["type": "closed"]))
            default:
                throw WormholeError("unknown type")
            }
        } catch {
            replies.append(Self.json(["type": "error", "error": error.explanation, "orig": msg]))
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
    private let persisterBox = Mutex<WormholePersister?>(nil)

    /// Creates the plugin.
    public init(rendezvous: WormholeRendezvous = WormholeRendezvous()) { self.rendezvous = rendezvous }

    /// The writer of the rendezvous into the hub's database (made on first use).
    func persister(_ context: HubPluginContext) -> WormholePersister {
        persisterBox.withLock { p in
            if let p { return p }
            let made = WormholePersister(db: context.store.db, rendezvous: rendezvous)
            p = made
            return made
        }
    }

    public func register(on router: HubRouter, context: HubPluginContext) {}

    public func services(context: HubPluginContext) -> [any Service] {
        [WormholeSweeper(rendezvous: rendezvous, persister: persister(context))]
    }

    public var webSocketConfiguration: WebSocketServerConfiguration? {
        WebSocketServerConfiguration(maxFrameSize: WormholeSocket.maximumMessageBytes, autoPing: .enabled(timePeriod: .seconds(30)),
                                     validateUTF8: true)
    }

    public func shouldUpgrade(_ request: HTTPRequest, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let p = request.path ?? ""
        guard p == Self.path || p.hasPrefix(Self.path + "?") else { return .dontUpgrade }
        let rendezvous = self.rendezvous, persister = self.persister(context)
        return .upgrade([:]) { inbound, outbound, _ in
            await WormholeSocket(rendezvous: rendezvous, persister: persister).run(inbound: inbound, outbound: outbound)
        }
    }
}

/// Drops idle nameplates and mailboxes once a minute.
struct WormholeSweeper: Service {
    let rendezvous: WormholeRendezvous
    let persister: WormholePersister

    func run() async throws {
        await persister.ensureLoaded()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(60)) }
            rendezvous.expire(now: Date().timeIntervalSince1970)
            await persister.flush(upTo: rendezvous.generation)
        }
    }
}
