/// The protocol a TNC's TCP server speaks, which tells its clients apart in a log.
public enum TCPService: String, Sendable, Hashable {
    /// KISS over TCP (``KISSServer``, Dire Wolf's port 8001).
    case kiss
    /// The AGW packet-engine interface (``AGWServer``, Dire Wolf's port 8000).
    case agw
}

/// One connection of a ``KISSServer`` or an ``AGWServer``.
public struct TCPClientInfo: Sendable, Hashable, CustomStringConvertible {
    /// A number unique for the server's lifetime, from 1.
    public var id: Int
    /// The client's address and port, e.g. `127.0.0.1:50412` or `[::1]:50412`.
    public var peer: String
    /// Which server it is connected to (ids are counted per server).
    public var service: TCPService

    /// Creates the description of a connection.
    public init(id: Int, peer: String, service: TCPService = .kiss) {
        self.id = id
        self.peer = peer
        self.service = service
    }

    /// `client #3 (127.0.0.1:50412)` for KISS, `AGW client #3 (127.0.0.1:50412)` for AGW.
    public var description: String { "\(service == .agw ? "AGW " : "")client #\(id) (\(peer))" }
}

/// One connection of a ``KISSServer``.
public typealias KISSClientInfo = TCPClientInfo
