// The upgrade of GET /v1/socket: Bearer token checked before the switch to WebSocket (RFC 6750:
// header only). A request that cannot upgrade falls through to the HTTP router, which answers it
// (401 with WWW-Authenticate without a valid token, 426 otherwise).

import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore

/// Decides whether an HTTP request becomes a groups socket.
public enum GroupSocketUpgrade {
    /// The socket's path.
    public static let path = "/v1/socket"

    /// The WebSocket settings: 64 KiB frames, pings to find dead peers.
    public static var configuration: WebSocketServerConfiguration {
        WebSocketServerConfiguration(maxFrameSize: 64 * 1024, autoPing: .enabled(timePeriod: .seconds(30)), validateUTF8: true)
    }

    /// The bearer token of an `Authorization` header value, if it is one.
    public static func bearerToken(_ header: String?) -> String? {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        let token = header.dropFirst(7).trimmingPrefix(" ")
        return token.isEmpty ? nil : String(token)
    }

    /// `shouldUpgrade` for `HTTPServerBuilder.http1WebSocketUpgrade`.
    /// - Parameter remoteIP: the client's address the upgrade was decided with (new device ids are
    ///   bounded per address).
    public static func shouldUpgrade(
        _ request: HTTPRequest, hub: GroupHub, remoteIP: String = "?", authenticate: GroupAuthenticator
    ) async -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let p = request.path ?? ""
        guard p == path || p.hasPrefix(path + "?") else { return .dontUpgrade }
        guard let token = bearerToken(request.headerFields[.authorization]), let principal = await authenticate(token) else {
            return .dontUpgrade
        }
        return .upgrade([:]) { inbound, outbound, _ in
            await GroupSocket(hub: hub, principal: principal, remoteIP: remoteIP).run(inbound: inbound, outbound: outbound)
        }
    }
}

extension GroupSocketUpgrade {
    /// The server builder: HTTP/1.1 with the /v1/socket upgrade (for `Application(server:)`).
    public static func serverBuilder(hub: GroupHub, authenticate: @escaping GroupAuthenticator) -> HTTPServerBuilder {
        .http1WebSocketUpgrade(configuration: .init(ws: configuration)) { request, _, _ in
            await shouldUpgrade(request, hub: hub, authenticate: authenticate)
        }
    }
}
