/// The 7 setting bytes of a Remote Port Negotiation (RPN) message after its DLCI byte
/// (07.10 §5.4.6.3.9, RFCOMM §5.5.1): an emulated serial port's settings. RFCOMM carries bytes
/// whatever they say; we answer queries with ``standard`` and echo settings.
public struct RFCOMMPortSettings: Sendable, Hashable {
    /// The baud rate code (0x03 = 9600).
    public var baudRate: UInt8
    /// Data bits (bits 0-1: 0x03 = 8), stop bits (bit 2), parity (bit 3), parity type (bits 4-5).
    public var dataFormat: UInt8
    /// Flow-control bits (XON/XOFF and RTR/RTC in and out; 0 = none).
    public var flowControl: UInt8
    /// The XON character.
    public var xon: UInt8
    /// The XOFF character.
    public var xoff: UInt8
    /// Which of the values are meant (one bit per parameter; 0x3FFF = all).
    public var parameterMask: UInt16

    /// Creates settings.
    public init(baudRate: UInt8, dataFormat: UInt8, flowControl: UInt8, xon: UInt8, xoff: UInt8, parameterMask: UInt16) {
        self.baudRate = baudRate
        self.dataFormat = dataFormat
        self.flowControl = flowControl
        self.xon = xon
        self.xoff = xoff
        self.parameterMask = parameterMask
    }

    /// 9600 baud, 8N1, no flow control, XON 0x11, XOFF 0x13, every parameter: the answer to a query.
    public static let standard = RFCOMMPortSettings(baudRate: 0x03, dataFormat: 0x03, flowControl: 0x00,
                                                    xon: 0x11, xoff: 0x13, parameterMask: 0x3FFF)

    /// The 7 bytes (mask little-endian).
    public var encoded: [UInt8] {
        var out: [UInt8] = [baudRate, dataFormat, flowControl, xon, xoff]
        out.appendLE(parameterMask)
        return out
    }

    /// Reads 7 bytes.
    public static func decode(_ reader: inout ByteReader) throws(MalformedPacket) -> RFCOMMPortSettings {
        RFCOMMPortSettings(baudRate: try reader.u8("baud rate"), dataFormat: try reader.u8("data format"),
                           flowControl: try reader.u8("flow control"), xon: try reader.u8("XON"),
                           xoff: try reader.u8("XOFF"), parameterMask: try reader.u16le("parameter mask"))
    }
}
