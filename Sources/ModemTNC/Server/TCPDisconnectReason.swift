/// Why a ``KISSServer`` or ``AGWServer`` connection ended.
public enum TCPDisconnectReason: Sendable, Hashable, CustomStringConvertible {
    /// The client closed the connection.
    case closedByClient
    /// Reading or writing failed, e.g. `ECONNRESET`; the `errno`.
    case connectionError(code: Int32)
    /// The client read too slowly: its output buffer would have passed the limit (bytes queued).
    case outputOverflow(queuedBytes: Int, limit: Int)
    /// The server was closed.
    case serverClosed
    /// Nothing was read from or written to the client for this many seconds (past the server's
    /// idle timeout, or while the server was full and a new connection needed its place).
    case idle(seconds: Double)
    /// The client broke the protocol in a way the stream cannot recover from (an AGW header whose
    /// data length is out of range: what follows cannot be found), as Dire Wolf drops it.
    case protocolError(String)

    public var description: String {
        switch self {
        case .closedByClient: return "closed by the client"
        case .connectionError(let code): return "connection error (errno \(code))"
        case .outputOverflow(let queued, let limit):
            return "dropped: it reads too slowly (\(queued) bytes waiting, limit \(limit))"
        case .serverClosed: return "server closed"
        case .idle(let seconds): return "dropped: idle for \(Int(seconds)) s"
        case .protocolError(let what): return "dropped: \(what)"
        }
    }
}

/// Why a ``KISSServer`` connection ended.
public typealias KISSDisconnectReason = TCPDisconnectReason
