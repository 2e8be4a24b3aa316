/// Numbers of L2CAP on a BR/EDR link (Core Vol 3 Part A §2.1, §5.1; Assigned Numbers for PSMs).
public enum L2CAP {
    /// The BR/EDR signalling channel (C-frames).
    public static let signallingCID: UInt16 = 0x0001
    /// The connectionless channel (G-frames; not supported here, its frames are dropped and counted).
    public static let connectionlessCID: UInt16 = 0x0002
    /// The first dynamically allocated channel identifier.
    public static let firstDynamicCID: UInt16 = 0x0040
    /// The PSM of SDP.
    public static let psmSDP: UInt16 = 0x0001
    /// The PSM of RFCOMM.
    public static let psmRFCOMM: UInt16 = 0x0003
    /// The MTU a channel has when its configuration names none (§5.1).
    public static let defaultMTU: UInt16 = 672
    /// The smallest MTU a BR/EDR channel may have (§5.1).
    public static let minimumMTU: UInt16 = 48
    /// The signalling request timeout (RTX), seconds: a request without an answer after this fails.
    public static let rtx: Double = 10
    /// The extended timeout after a "pending" answer (ERTX), seconds.
    public static let ertx: Double = 60
}

/// A basic L2CAP frame (B-frame, Core Vol 3 Part A §3.1): `length u16 LE, channel ID u16 LE, payload`,
/// where `length` counts the payload only. One reassembled ACL PDU is one frame.
public struct L2CAPFrame: Sendable, Hashable {
    /// The destination channel identifier.
    public var channelID: UInt16
    /// The information payload.
    public var payload: [UInt8]

    /// A frame for `channelID` carrying `payload`.
    public init(channelID: UInt16, payload: [UInt8]) {
        self.channelID = channelID
        self.payload = payload
    }

    /// Decodes one whole frame; throws when the length field does not match the bytes (short or long).
    public init(decoding bytes: [UInt8]) throws(MalformedPacket) {
        var reader = ByteReader(bytes, context: "L2CAP frame")
        let length = Int(try reader.u16le("length"))
        channelID = try reader.u16le("channel ID")
        guard reader.remaining == length else {
            throw MalformedPacket("L2CAP frame: length field says \(length) bytes, \(reader.remaining) present")
        }
        payload = reader.rest()
    }

    /// The frame on the wire. Payloads longer than 65535 bytes cannot be framed: the caller keeps SDUs
    /// within the MTU (at most 65535), so this never happens on a checked path.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4 + payload.count)
        out.appendLE(UInt16(truncatingIfNeeded: payload.count))
        out.appendLE(channelID)
        out.append(contentsOf: payload)
        return out
    }
}
