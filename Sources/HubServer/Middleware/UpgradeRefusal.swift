// A refused WebSocket upgrade answers as RFC 6750 says (401 with a Bearer challenge, JSend body) rather
// than hummingbird-websocket's bare 400.
//
// hummingbird-websocket 2.8 answers every upgrade request that `shouldUpgrade` declines with an empty
// 400 and `Connection: close`, written by itself: the request never reaches the router (so the Bearer
// middleware cannot answer it). The hub decides the answer when it declines (`UpgradeRefusal.record`,
// keyed by the connection) and this handler, which sits after the HTTP/1 codec of every connection that
// was not upgraded, writes that answer in place of the 400.

import HTTPTypes
import HubCore
import HummingbirdCore
import NIOCore
import Synchronization

/// The answers owed to connections whose upgrade the hub declined.
enum UpgradeRefusal {
    private static let pending = Mutex<[ObjectIdentifier: HubAPIError]>([:])
    /// Entries whose 400 was never written (the peer left first) are dropped past this many.
    static let maxPending = 4096

    /// Records the answer for `channel`'s declined upgrade.
    static func record(_ channel: any Channel, _ answer: HubAPIError) {
        pending.withLock {
            if $0.count >= maxPending { $0.removeAll() }
            $0[ObjectIdentifier(channel)] = answer
        }
    }

    /// Takes the answer recorded for `channel`, if any.
    static func take(_ channel: any Channel) -> HubAPIError? {
        pending.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The answer for a declined upgrade request to `/v1/...`: 401 for a missing or bad token (the same
    /// refusal the Bearer middleware gives), else 404 (a good token, but no socket at that path).
    static func answer(_ request: HTTPRequest, authority: HubAuthority) async -> HubAPIError? {
        let path = request.path.map { String($0.prefix { $0 != "?" }) } ?? ""
        guard path == "/v1" || path.hasPrefix("/v1/") else { return nil }
        switch try? await authority.principal(authorization: request.headerFields[.authorization]) {
        case .failure(.missing)?: return .unauthorized(nil)
        case .failure(.invalid(let why))?: return .unauthorized(why)
        case .success?: return .notFound("no WebSocket at \(path.prefix(200))")
        case nil: return .internalError("internal error")
        }
    }
}

/// Replaces the empty 400 of a declined upgrade with the recorded answer.
final class UpgradeRefusalHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPConnectionStateHandler.OutboundIn
    typealias OutboundOut = HTTPConnectionStateHandler.OutboundIn

    init() {}

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let head) = unwrapOutboundIn(data), head.status == .badRequest, let answer = UpgradeRefusal.take(context.channel) {
            let body = ByteBuffer(string: answer.body)
            var fields = answer.headers
            fields[.contentType] = "application/json"
            fields[.cacheControl] = "no-store"
            fields[.connection] = "close"
            fields[.contentLength] = String(body.readableBytes)
            context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: fields))), promise: promise)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            return
        }
        context.write(data, promise: promise)
    }
}
