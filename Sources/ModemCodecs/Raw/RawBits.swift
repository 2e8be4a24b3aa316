/// Raw bits framing: bytes as 8 bits each, LSB first, no start/stop (for `--framing raw`).
///
/// ```swift
/// RawBits.bits(of: [0x01])  // [true, false, false, false, false, false, false, false]
/// RawBits.bytes(from: RawBits.bits(of: [0xA5, 0x3C]))  // [0xA5, 0x3C]
/// ```
public enum RawBits {
    /// The bits of `bytes`, 8 per byte, least significant bit first (`true` = 1, mark).
    public static func bits(of bytes: some Sequence<UInt8>) -> [Bool] {
        var bits: [Bool] = []
        bits.reserveCapacity(bytes.underestimatedCount * 8)
        for byte in bytes {
            for index in 0..<8 {
                bits.append(byte & (1 << index) != 0)
            }
        }
        return bits
    }

    /// Packs `bits` 8 at a time, the first bit as the least significant; drops an incomplete tail of fewer
    /// than 8 bits.
    public static func bytes(from bits: some Sequence<Bool>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(bits.underestimatedCount / 8)
        var current: UInt8 = 0
        var count = 0
        for bit in bits {
            if bit {
                current |= 1 << count
            }
            count += 1
            if count == 8 {
                bytes.append(current)
                current = 0
                count = 0
            }
        }
        return bytes
    }
}
