/// What an ``RFCOMMSession`` asks its driver to do or tells it.
public enum RFCOMMAction: Sendable, Hashable {
    /// Send this frame as one L2CAP SDU.
    case transmit([UInt8])
    /// A DLC is open (UA and the MSC exchange done): data may flow; `frameSize` is the negotiated N1.
    case channelOpened(dlci: UInt8, frameSize: Int, incoming: Bool)
    /// Data arrived on a DLC.
    case received(dlci: UInt8, [UInt8])
    /// Bytes that left the DLC's queue in frames (the queue shrank by this many).
    case sent(dlci: UInt8, bytes: Int)
    /// A DLC closed; also a refused or timed-out open.
    case channelClosed(dlci: UInt8, reason: String)
    /// The session is over: close the L2CAP channel.
    case sessionClosed(reason: String)
}
