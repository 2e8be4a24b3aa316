import ModemCodecs

/// What happened during one ``KISSServer/poll(timeoutMilliseconds:)``, in order.
public enum KISSServerEvent: Sendable, Hashable {
    /// A client connected.
    case connected(KISSClientInfo)
    /// A connection was accepted and closed at once because ``KISSServer/maximumClients`` are connected.
    case refused(peer: String, connectedClients: Int)
    /// A client sent a valid KISS frame (any command).
    case frame(KISSFrame, from: KISSClientInfo)
    /// A client's bytes contained garbage or dropped frames for the first time (later garbage is only
    /// counted, in ``KISSServer/kissStatistics`` and in ``disconnected(_:reason:statistics:)``).
    case firstGarbage(KISSClientInfo, statistics: KISSDecoderStatistics)
    /// A connection ended; what its KISS decoder counted.
    case disconnected(KISSClientInfo, reason: KISSDisconnectReason, statistics: KISSDecoderStatistics)
}
