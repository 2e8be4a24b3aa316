import ModemRuntime
/// One RFCOMM frame (RFCOMM §5.1 on 07.10 §5.2, basic option, no flags or transparency):
/// `address, control, length (1 or 2 bytes), [credits], information, FCS`. One frame is one
/// L2CAP SDU.
public struct RFCOMMFrame: Sendable, Hashable {
    /// The frame type: the control byte without its P/F bit.
    public enum Kind: UInt8, Sendable, Hashable, CaseIterable {
        /// Set Asynchronous Balanced Mode: opens a DLC (a command).
        case sabm = 0x2F
        /// Unnumbered Acknowledgement: accepts SABM or DISC (a response).
        case ua = 0x63
        /// Disconnected Mode: refuses a SABM, or answers a frame on a closed DLC (a response).
        case dm = 0x0F
        /// Disconnect: closes a DLC (a command).
        case disc = 0x43
        /// Unnumbered Information with Header check: data and multiplexer messages.
        case uih = 0xEF
    }

    /// The P/F bit of the control byte.
    public static let pollFinalBit: UInt8 = 0x10
    /// The longest information field a 2-byte length can carry (15 bits).
    public static let maximumInformationLength = 32767

    /// The data link connection identifier, 0-63 (0 is the multiplexer control channel).
    public var dlci: UInt8
    /// The address byte's C/R bit (07.10 §5.2.1.2).
    public var commandResponse: Bool
    /// SABM, UA, DM, DISC or UIH.
    public var kind: Kind
    /// The P/F bit. On a UIH frame of a credit-based DLC it says a credit byte follows the length.
    public var pollFinal: Bool
    /// Credits granted to the receiver (UIH with P/F = 1 on DLCI ≠ 0 only, RFCOMM §6.5.2).
    public var credits: UInt8?
    /// The information field (data, or multiplexer messages on DLCI 0).
    public var information: [UInt8]

    /// Creates a frame. A UIH frame with `credits` is always sent with P/F = 1.
    /// - Precondition: `dlci < 64`, `information.count <= 32767`, credits only on UIH frames of DLCI ≠ 0.
    public init(kind: Kind, dlci: UInt8, commandResponse: Bool, pollFinal: Bool = false,
                credits: UInt8? = nil, information: [UInt8] = []) {
        precondition(dlci < 64, "an RFCOMM DLCI is 6 bits, got \(dlci)")
        precondition(information.count <= Self.maximumInformationLength, "RFCOMM information of \(information.count) bytes")
        precondition(credits == nil || (kind == .uih && dlci != 0), "credits ride on UIH frames of a DLC only")
        self.kind = kind
        self.dlci = dlci
        self.commandResponse = commandResponse
        self.pollFinal = pollFinal || credits != nil
        self.credits = credits
        self.information = information
    }

    /// The address byte: EA = 1, C/R, DLCI in bits 2-7.
    public var addressByte: UInt8 { dlci << 2 | (commandResponse ? 0x02 : 0) | 0x01 }
    /// The control byte: the kind with the P/F bit.
    public var controlByte: UInt8 { kind.rawValue | (pollFinal ? Self.pollFinalBit : 0) }

    /// The length field: one byte (EA = 1) up to 127, otherwise two (EA = 0, low 7 bits first).
    static func lengthField(_ length: Int) -> [UInt8] {
        length <= 127
            ? [UInt8(length) << 1 | 0x01]
            : [UInt8(truncatingIfNeeded: length << 1) & 0xFE, UInt8(truncatingIfNeeded: length >> 7)]
    }

    /// The frame's bytes, FCS included.
    public var encoded: [UInt8] {
        let length = Self.lengthField(information.count)
        var out: [UInt8] = [addressByte, controlByte]
        out.append(contentsOf: length)
        let fcs = kind == .uih ? RFCOMMFCS.compute(out[0..<2]) : RFCOMMFCS.compute(out)
        if let credits { out.append(credits) }
        out.append(contentsOf: information)
        out.append(fcs)
        return out
    }

    /// Parses one whole frame and says whether its FCS is right (a bad FCS is data, not an error:
    /// the caller counts and drops it). Throws when the bytes are not one frame: truncated, extra
    /// bytes, an extended address, an unknown control byte.
    public static func parse(_ bytes: [UInt8]) throws(MalformedPacket) -> (frame: RFCOMMFrame, fcsValid: Bool) {
        var reader = ByteReader(bytes, context: "RFCOMM frame")
        let address = try reader.u8("address")
        guard address & 0x01 == 1 else { throw MalformedPacket("RFCOMM frame: address 0x\(rfcommHex(address)) has EA = 0") }
        let control = try reader.u8("control")
        guard let kind = Kind(rawValue: control & ~pollFinalBit) else {
            throw MalformedPacket("RFCOMM frame: unknown control byte 0x\(rfcommHex(control))")
        }
        let first = try reader.u8("length")
        var length = Int(first >> 1)
        if first & 0x01 == 0 {
            length |= Int(try reader.u8("length (second byte)")) << 7
        }
        let headerEnd = reader.offset
        let dlci = address >> 2
        let pollFinal = control & pollFinalBit != 0
        var credits: UInt8?
        if kind == .uih, pollFinal, dlci != 0 {
            credits = try reader.u8("credits")
        }
        let information = try reader.bytes(length, "information")
        let fcs = try reader.u8("FCS")
        guard reader.isAtEnd else {
            throw MalformedPacket("RFCOMM frame: \(reader.remaining) bytes after the FCS")
        }
        let covered = kind == .uih ? bytes[0..<2] : bytes[0..<headerEnd]
        var frame = RFCOMMFrame(kind: kind, dlci: dlci, commandResponse: address & 0x02 != 0,
                                pollFinal: pollFinal, information: information)
        frame.credits = credits
        return (frame, RFCOMMFCS.isValid(covered, fcs: fcs))
    }

    /// Decodes one whole frame; a bad FCS throws too.
    public static func decode(_ bytes: [UInt8]) throws(MalformedPacket) -> RFCOMMFrame {
        let parsed = try parse(bytes)
        guard parsed.fcsValid else { throw MalformedPacket("RFCOMM frame: bad FCS") }
        return parsed.frame
    }
}

/// Two hex digits (upper case).
func rfcommHex(_ byte: UInt8) -> String { Hex.digits(byte) }
