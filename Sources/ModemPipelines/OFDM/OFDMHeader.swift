import ModemCodecs
import ModemDSP
import ModemRuntime

/// The header every OFDM transmission starts with, on the one BPSK symbol after the preamble: the
/// format's version, the configuration's id and the payload's length (or none, for a stream that
/// marks its last block instead), checked by a CRC-16 and protected by the rate-1/2 convolutional
/// code, sent about twice over the symbol's carriers and scrambled.
///
/// 64 bits: version (4), configuration id (8), payload length (32; all ones: not known), flags (4),
/// CRC-16/X.25 of the first 6 bytes (16).
public struct OFDMHeader: Sendable, Equatable {
    /// The format's version.
    public static let version = 1
    /// The length field's value for a stream whose length was not known when it started.
    static let unknownLength: UInt32 = 0xFFFF_FFFF

    /// The configuration's id (``OFDMProfile/id``).
    public var profileID: Int
    /// Payload bytes, or nil for a stream (its last block is marked).
    public var payloadLength: Int?

    /// Creates a header.
    public init(profileID: Int, payloadLength: Int?) {
        precondition((1...255).contains(profileID), "profile ids are 1...255")
        precondition(payloadLength.map { $0 >= 0 && $0 < Int(Self.unknownLength) } ?? true, "payload length must fit 32 bits")
        self.profileID = profileID
        self.payloadLength = payloadLength
    }

    /// The 64 header bits as bytes.
    var bytes: [UInt8] {
        let length = payloadLength.map { UInt32($0) } ?? Self.unknownLength
        var b: [UInt8] = [UInt8(Self.version << 4 | profileID >> 4), UInt8((profileID & 0xF) << 4) | UInt8(length >> 28),
                          UInt8(truncatingIfNeeded: length >> 20), UInt8(truncatingIfNeeded: length >> 12),
                          UInt8(truncatingIfNeeded: length >> 4), UInt8(truncatingIfNeeded: length << 4)]
        var crc = CRC16X25()
        crc.update(b)
        b.append(UInt8(crc.value & 0xFF))
        b.append(UInt8(crc.value >> 8))
        return b
    }

    /// The header symbol's bits (``OFDMModulator/headerBitCount`` of them).
    public var symbolBits: [UInt8] {
        var bits: [Bool] = []
        for byte in bytes { for j in 0..<8 { bits.append(byte >> UInt8(7 - j) & 1 == 1) } }
        let coded = ConvolutionalCode.encode(bits)
        let scramble = Self.scrambler
        return (0..<OFDMModulator.headerBitCount).map { i in (coded[i % coded.count] ? 1 : 0) ^ scramble[i] }
    }

    /// Coded bits of the header (two per data bit, the tail included).
    static let codedCount = 2 * (64 + ConvolutionalCode.tailBits)

    private static let scrambler: [UInt8] = {
        var s = SplitMix64(seed: 0x4EAD_E500_0000_0001)
        var out: [UInt8] = []
        var w: UInt64 = 0
        for i in 0..<OFDMModulator.headerBitCount {
            if i % 64 == 0 { w = s.next() }
            out.append(UInt8(w & 1))
            w >>= 1
        }
        return out
    }()

    /// Decodes the header symbol's soft bits (positive for a likely 1), or nil when the check fails,
    /// the version is another or the configuration is unknown.
    public init?(soft: [Float]) {
        guard soft.count == OFDMModulator.headerBitCount else { return nil }
        var combined = [Float](repeating: 0, count: Self.codedCount)
        let scramble = Self.scrambler
        for i in 0..<soft.count {
            let v = scramble[i] == 1 ? -soft[i] : soft[i]
            combined[i % Self.codedCount] += v.isFinite ? v : 0
        }
        guard let bits = ConvolutionalCode.decode(combined), bits.count == 64 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 8)
        for i in 0..<64 where bits[i] { bytes[i / 8] |= 1 << UInt8(7 - i % 8) }
        var crc = CRC16X25()
        crc.update(bytes[0..<6])
        guard crc.value == UInt16(bytes[6]) | UInt16(bytes[7]) << 8, Int(bytes[0] >> 4) == Self.version else { return nil }
        let id = Int(bytes[0] & 0xF) << 4 | Int(bytes[1] >> 4)
        let length = UInt32(bytes[1] & 0xF) << 28 | UInt32(bytes[2]) << 20 | UInt32(bytes[3]) << 12 | UInt32(bytes[4]) << 4 | UInt32(bytes[5] >> 4)
        guard (1...255).contains(id) else { return nil }
        profileID = id
        payloadLength = length == Self.unknownLength ? nil : Int(length)
    }
}
