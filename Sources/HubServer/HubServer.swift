import HubCore
import HubStore
import Hummingbird

/// HubServer: routes, OAuth endpoints, JSend middleware, WebSocket, bus and lifecycle.
public enum HubServerInfo {
    /// The server's name in logs and `Server` headers.
    public static let name = "modem-hub"
}
