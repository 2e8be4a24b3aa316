import ModemCodecs
import ModemDSP
import ModemRuntime

/// The header of every HF transmission, on the symbols after the preamble: the format's version, the
/// configuration's id and the payload's length, checked by a CRC-16, protected by the rate-1/2
/// convolutional code, repeated over all the header symbols' carriers (about 7 times) and scrambled.
///
/// 56 bits: version (4), configuration id (8), payload length (28), CRC-16/X.25 of the first 5 bytes (16).
public struct HFHeader: Sendable, Equatable {
    /// The format's version.
    public static let version = 1
    /// The largest payload a header can announce.
    public static let maximumPayload = (1 << 28) - 1

    /// The configuration's id (``HFProfile/id``).
    public var profileID: Int
    /// Payload bytes.
    public var payloadLength: Int

    /// Creates a header.
    public init(profileID: Int, payloadLength: Int) {
        precondition((1...255).contains(profileID), "profile ids are 1...255")
        precondition((0...Self.maximumPayload).contains(payloadLength), "payload length must fit 28 bits")
        self.profileID = profileID
        self.payloadLength = payloadLength
    }

    var bytes: [UInt8] {
        let n = UInt32(payloadLength)
        var b: [UInt8] = [UInt8(Self.version << 4 | profileID >> 4), UInt8((profileID & 0xF) << 4) | UInt8(n >> 24),
                          UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
        var crc = CRC16X25()
        crc.update(b)
        b.append(UInt8(crc.value & 0xFF))
        b.append(UInt8(crc.value >> 8))
        return b
    }

    static let codedCount = 2 * (56 + ConvolutionalCode.tailBits)

    private static let scrambler: [UInt8] = {
        var s = SplitMix64(seed: 0x4EAD_E500_0000_00F1)
        var out: [UInt8] = []
        var w: UInt64 = 0
        for i in 0..<HFModulator.headerBitCount {
            if i % 64 == 0 { w = s.next() }
            out.append(UInt8(w & 1))
            w >>= 1
        }
        return out
    }()

    /// The header symbols' bits (``HFModulator/headerBitCount`` of them).
    public var symbolBits: [UInt8] {
        var bits: [Bool] = []
        for byte in bytes { for j in 0..<8 { bits.append(byte >> UInt8(7 - j) & 1 == 1) } }
        let coded = ConvolutionalCode.encode(bits)
        let scramble = Self.scrambler
        return (0..<HFModulator.headerBitCount).map { i in (coded[i % coded.count] ? 1 : 0) ^ scramble[i] }
    }

    /// Decodes the header symbols' soft bits (positive for a likely 1), or nil when the check fails or
    /// the version is another.
    public init?(soft: [Float]) {
        guard soft.count == HFModulator.headerBitCount else { return nil }
        var combined = [Float](repeating: 0, count: Self.codedCount)
        let scramble = Self.scrambler
        for i in 0..<soft.count {
            let v = scramble[i] == 1 ? -soft[i] : soft[i]
            combined[i % Self.codedCount] += v.isFinite ? v : 0
        }
        guard let bits = ConvolutionalCode.decode(combined), bits.count == 56 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 7)
        for i in 0..<56 where bits[i] { bytes[i / 8] |= 1 << UInt8(7 - i % 8) }
        var crc = CRC16X25()
        crc.update(bytes[0..<5])
        guard crc.value == UInt16(bytes[5]) | UInt16(bytes[6]) << 8, Int(bytes[0] >> 4) == Self.version else { return nil }
        let id = Int(bytes[0] & 0xF) << 4 | Int(bytes[1] >> 4)
        guard (1...255).contains(id) else { return nil }
        profileID = id
        payloadLength = Int(bytes[1] & 0xF) << 24 | Int(bytes[2]) << 16 | Int(bytes[3]) << 8 | Int(bytes[4])
    }
}
