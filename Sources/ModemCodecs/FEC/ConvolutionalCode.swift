/// The rate-1/2 convolutional code with constraint length 7 and generators 171 and 133 (octal), the
/// one deep-space links and 802.11 use, with a soft-decision Viterbi decoder.
///
/// The encoder starts in the zero state and is flushed back to it with six zero tail bits, so `n` data
/// bits become `2 · (n + 6)` code bits. The decoder takes one soft value per code bit: positive for a
/// likely 1, negative for a likely 0, its size the confidence (any scale; zero is an erasure).
public enum ConvolutionalCode {
    /// Constraint length: the encoder remembers six bits.
    public static let constraintLength = 7
    /// Tail bits that return the encoder to the zero state.
    public static let tailBits = 6
    static let generators: (UInt8, UInt8) = (0o171, 0o133)

    /// The two code bits for each 7-bit register value (the newest bit at bit 6), as a 2-bit number.
    static let outputs: [UInt8] = (0..<128).map { reg in
        let a = (UInt8(reg) & generators.0).nonzeroBitCount & 1
        let b = (UInt8(reg) & generators.1).nonzeroBitCount & 1
        return UInt8(a << 1 | b)
    }

    /// Code bits for `bits`, tail included: `2 · (bits.count + 6)` of them.
    public static func encode(_ bits: [Bool]) -> [Bool] {
        var out: [Bool] = []
        out.reserveCapacity(2 * (bits.count + tailBits))
        var state = 0
        for bit in bits + [Bool](repeating: false, count: tailBits) {
            let reg = (bit ? 64 : 0) | state
            let o = outputs[reg]
            out.append(o & 2 != 0)
            out.append(o & 1 != 0)
            state = reg >> 1
        }
        return out
    }

    /// The most likely data bits for soft code bits (`2 · (n + 6)` values for `n` data bits).
    /// - Parameter soft: per code bit, positive for 1, negative for 0, larger for surer.
    /// - Returns: the `n` data bits (the tail dropped), or nil when the count is not of that form.
    public static func decode(_ soft: [Float]) -> [Bool]? {
        guard soft.count % 2 == 0, soft.count / 2 >= tailBits else { return nil }
        let steps = soft.count / 2
        // Path metrics per state (the last six input bits, newest at bit 5); only state 0 at the start.
        var metric = [Float](repeating: -.infinity, count: 64)
        metric[0] = 0
        var next = [Float](repeating: 0, count: 64)
        var decisions = [UInt64](repeating: 0, count: steps)
        for t in 0..<steps {
            let s0 = soft[2 * t], s1 = soft[2 * t + 1]
            // The branch metric for each of the four output pairs.
            let bm: (Float, Float, Float, Float) = (-s0 - s1, -s0 + s1, s0 - s1, s0 + s1)
            var word: UInt64 = 0
            for s in 0..<64 {
                let bit = s >> 5
                let p0 = (s << 1) & 63, p1 = p0 | 1
                let o0 = outputs[bit << 6 | p0], o1 = outputs[bit << 6 | p1]
                let m0 = metric[p0] + Self.pick(bm, o0)
                let m1 = metric[p1] + Self.pick(bm, o1)
                if m1 > m0 {
                    next[s] = m1
                    word |= 1 << UInt64(s)
                } else {
                    next[s] = m0
                }
            }
            decisions[t] = word
            swap(&metric, &next)
        }
        // Trace back from the zero state the tail forced.
        var state = 0
        var bits = [Bool](repeating: false, count: steps)
        for t in stride(from: steps - 1, through: 0, by: -1) {
            bits[t] = state >> 5 != 0
            let x = Int(decisions[t] >> UInt64(state) & 1)
            state = ((state << 1) & 63) | x
        }
        return Array(bits[0..<(steps - tailBits)])
    }

    @inline(__always)
    private static func pick(_ bm: (Float, Float, Float, Float), _ o: UInt8) -> Float {
        switch o {
        case 0: return bm.0
        case 1: return bm.1
        case 2: return bm.2
        default: return bm.3
        }
    }
}
