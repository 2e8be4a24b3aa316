/// One connection of a ``KISSServer``.
public struct KISSClientInfo: Sendable, Hashable, CustomStringConvertible {
    /// A number unique for the server's lifetime, from 1.
    public var id: Int
    /// The client's address and port, e.g. `127.0.0.1:50412` or `[::1]:50412`.
    public var peer: String

    /// Creates the description of a connection.
    public init(id: Int, peer: String) {
        self.id = id
        self.peer = peer
    }

    /// `client #3 (127.0.0.1:50412)`.
    public var description: String { "client #\(id) (\(peer))" }
}
