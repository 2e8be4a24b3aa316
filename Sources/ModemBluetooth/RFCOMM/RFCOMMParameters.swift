/// The values of a Parameter Negotiation (PN) message (07.10 §5.4.6.3.1, RFCOMM §5.5.3): 8 bytes.
public struct RFCOMMParameters: Sendable, Hashable {
    /// Convergence layer 0xF in a request: "I do credit-based flow control" (RFCOMM §6.5.1).
    public static let creditBasedRequest: UInt8 = 0xF
    /// Convergence layer 0xE in a response: "credit-based flow control accepted".
    public static let creditBasedResponse: UInt8 = 0xE

    /// The DLC the parameters are for (6 bits).
    public var dlci: UInt8
    /// The frame type for information (4 bits; 0 = UIH, the only one RFCOMM uses).
    public var frameType: UInt8
    /// The convergence layer (4 bits): 0 = type 1, 0xF / 0xE = credit-based flow control.
    public var convergenceLayer: UInt8
    /// The DLC's priority, 0-63 (RFCOMM §5.6 suggests 7 for a serial port).
    public var priority: UInt8
    /// The acknowledgement timer T1 in hundredths of a second (RFCOMM sends 0).
    public var acknowledgementTimer: UInt8
    /// N1, the largest information field of a frame, in bytes.
    public var maximumFrameSize: UInt16
    /// NA, the number of retransmissions (RFCOMM sends 0).
    public var maximumRetransmissions: UInt8
    /// k (3 bits): the window size; with credit-based flow control, the initial credits.
    public var window: UInt8

    /// Creates PN values; each field is masked to its width on the wire.
    public init(dlci: UInt8, frameType: UInt8 = 0, convergenceLayer: UInt8, priority: UInt8 = 7,
                acknowledgementTimer: UInt8 = 0, maximumFrameSize: UInt16, maximumRetransmissions: UInt8 = 0,
                window: UInt8) {
        self.dlci = dlci & 0x3F
        self.frameType = frameType & 0x0F
        self.convergenceLayer = convergenceLayer & 0x0F
        self.priority = priority & 0x3F
        self.acknowledgementTimer = acknowledgementTimer
        self.maximumFrameSize = maximumFrameSize
        self.maximumRetransmissions = maximumRetransmissions
        self.window = window & 0x07
    }

    /// The 8 value bytes.
    public var encoded: [UInt8] {
        var out: [UInt8] = [dlci & 0x3F, frameType & 0x0F | (convergenceLayer & 0x0F) << 4, priority & 0x3F,
                            acknowledgementTimer]
        out.appendLE(maximumFrameSize)
        out.append(maximumRetransmissions)
        out.append(window & 0x07)
        return out
    }

    /// Reads the 8 value bytes (reserved bits ignored).
    public static func decode(_ bytes: [UInt8]) throws(MalformedPacket) -> RFCOMMParameters {
        guard bytes.count == 8 else { throw MalformedPacket("RFCOMM PN: \(bytes.count) value bytes, needs 8") }
        var reader = ByteReader(bytes, context: "RFCOMM PN")
        let dlci = try reader.u8("DLCI")
        let types = try reader.u8("frame type and convergence layer")
        let priority = try reader.u8("priority")
        let timer = try reader.u8("T1")
        let size = try reader.u16le("N1")
        let retransmissions = try reader.u8("NA")
        let window = try reader.u8("k")
        return RFCOMMParameters(dlci: dlci, frameType: types & 0x0F, convergenceLayer: types >> 4, priority: priority,
                                acknowledgementTimer: timer, maximumFrameSize: size,
                                maximumRetransmissions: retransmissions, window: window)
    }
}
