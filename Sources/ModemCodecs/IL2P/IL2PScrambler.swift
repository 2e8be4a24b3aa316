/// IL2P's block scrambler: each header and each payload block is whitened on its own, before its
/// Reed-Solomon check bytes are computed (the check bytes themselves are not scrambled).
///
/// The receiving side is a self-synchronising descrambler over 1 + x⁴ + x⁹ started in a fixed state:
/// with `r` its 9-bit register, each received bit `s` (most significant bit of each byte first) gives
/// `s ⊕ r₀` and the register becomes `(r >> 1 | s << 8) ⊕ s << 3`; `r` starts at 0x1F0 for every
/// block. The sending side is its inverse: it sends `d ⊕ r₀` for each data bit `d` and steps the same
/// register with the bit it sent. (So a block scrambles to a block of the same length; the IL2P
/// specification and Dire Wolf describe the sender as a 5-bit-delayed LFSR, which sends the same bits.)
///
/// ```swift
/// let s = IL2PScrambler.scramble([0x63, 0xF1, 0x40])
/// IL2PScrambler.descramble(s) == [0x63, 0xF1, 0x40]   // true
/// ```
public enum IL2PScrambler {
    /// The descrambler's register at the start of every block.
    static let initialState: UInt32 = 0x1F0

    /// One step of the register with the bit on the line.
    @inline(__always)
    private static func step(_ state: inout UInt32, line bit: UInt32) {
        state = ((state >> 1) | (bit << 8)) ^ (bit << 3)
    }

    /// The bytes to send for `block`.
    public static func scramble(_ block: some Collection<UInt8>) -> [UInt8] {
        var state = initialState
        var out = [UInt8]()
        out.reserveCapacity(block.count)
        for byte in block {
            var o: UInt8 = 0
            for k in (0..<8).reversed() {
                let line = UInt32(byte >> UInt8(k) & 1) ^ (state & 1)
                step(&state, line: line)
                o |= UInt8(line) << UInt8(k)
            }
            out.append(o)
        }
        return out
    }

    /// The data a received (and corrected) `block` carries.
    public static func descramble(_ block: some Collection<UInt8>) -> [UInt8] {
        var state = initialState
        var out = [UInt8]()
        out.reserveCapacity(block.count)
        for byte in block {
            var o: UInt8 = 0
            for k in (0..<8).reversed() {
                let line = UInt32(byte >> UInt8(k) & 1)
                o |= UInt8(line ^ (state & 1)) << UInt8(k)
                step(&state, line: line)
            }
            out.append(o)
        }
        return out
    }
}
