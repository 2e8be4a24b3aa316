#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small, fast, seedable random number generator (SplitMix64), with Gaussian samples.
///
/// The same seed gives the same sequence on every platform, which is what tests, benchmarks, the
/// channel simulator, the link's back-off and every seeded run need: the one seeded generator of the
/// code base (for random bytes that must not be guessed, use `SystemRandomNumberGenerator`). Not for
/// cryptography.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    private var spare: Double?

    /// Creates a generator; equal seeds give equal sequences.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes: each 64-bit draw gives eight, lowest byte first (the link tests' payloads).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, count))
        var i = 0
        while i < out.count {
            var v = next()
            for _ in 0..<8 where i < out.count {
                out[i] = UInt8(v & 0xFF)
                v >>= 8
                i += 1
            }
        }
        return out
    }

    /// A uniform value in [0, 1).
    public mutating func uniform() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A standard normal value (mean 0, variance 1), by the Box-Muller transform.
    public mutating func gaussian() -> Double {
        if let s = spare { spare = nil; return s }
        let u1 = max(uniform(), 1e-300), u2 = uniform()
        let r = (-2 * log(u1)).squareRoot()
        spare = r * sin(2 * Double.pi * u2)
        return r * cos(2 * Double.pi * u2)
    }
}
