/// What happened during one ``AGWServer/poll(timeoutMilliseconds:)``, in order.
public enum AGWServerEvent: Sendable, Hashable {
    /// A client connected.
    case connected(TCPClientInfo)
    /// A connection was accepted and closed at once because ``AGWServer/maximumClients`` are connected.
    case refused(peer: String, connectedClients: Int)
    /// A client asked something the server answered itself (`R`, `G`, `g`, `X`, `x`, `k`, `m`, `P`,
    /// `H`): for a log.
    case answered(AGWCommand, from: TCPClientInfo)
    /// A client asked something only the TNC can do: send a frame (`M`, `V`, `K`), count its queue
    /// (`y`), the connected-mode kinds (`C`, `v`, `c`, `D`, `d`, `Y`), or a message that is malformed or
    /// of an unknown kind. The TNC acts on it (and answers through ``AGWServer/send(_:to:)``) in the
    /// `handlingRequests` closure of ``AGWServer/poll(timeoutMilliseconds:handlingRequests:)``, in order.
    case request(AGWCommand, from: TCPClientInfo)
    /// A connection ended; what its AGW decoder counted.
    case disconnected(TCPClientInfo, reason: TCPDisconnectReason, statistics: AGWDecoderStatistics)
}
