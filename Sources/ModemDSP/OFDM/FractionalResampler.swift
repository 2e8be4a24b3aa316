#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A window of an input stream read at any fractional position: the samples kept from an absolute
/// index on, and a windowed-sinc interpolator (32 taps, 4096 fractional phases, Kaiser window) to
/// read between them, which the OFDM receiver uses to follow a sound card's clock drift and to read
/// a recording made at another sample rate.
///
/// Memory is bounded by the caller: ``discard(before:)`` drops what is no longer needed.
struct FractionalResampler {
    /// Taps of the interpolator (even).
    static let taps = 32
    /// Fractional phases of the interpolator's table.
    static let phases = 4096

    /// The interpolator's table: `phases + 1` rows of `taps` values (the last row is the first
    /// shifted by one sample, so phase rounding never steps outside it).
    private let table: [Float]
    /// Samples kept; `samples[i]` is input sample `base + i`. The stream is taken to be silent
    /// before its first sample (``lead`` zeros stand for that).
    private var samples = [Float](repeating: 0, count: FractionalResampler.lead)
    private var start = 0
    /// The absolute index of `samples[start]`.
    private(set) var base = -Int64(FractionalResampler.lead)
    /// Zeros before the first input sample, so reads near the start have their taps.
    static let lead = 64

    /// Creates an interpolator whose pass band reaches `cutoff` of the input's Nyquist frequency
    /// (0.5...1; lower it below 1/ratio when reading slower than the input, i.e. decimating).
    init(cutoff: Double = 0.92) {
        precondition(cutoff > 0.05 && cutoff <= 1, "FractionalResampler cutoff must be in (0.05, 1]")
        let beta = 8.6
        let half = Self.taps / 2
        var t = [Float](repeating: 0, count: (Self.phases + 1) * Self.taps)
        let i0b = Self.besselI0(beta)
        for p in 0...Self.phases {
            let frac = Double(p) / Double(Self.phases)
            var row = [Double](repeating: 0, count: Self.taps)
            var sum = 0.0
            for j in 0..<Self.taps {
                // Tap j weighs input sample (i0 − half + 1 + j) for a point at i0 + frac.
                let x = Double(j - half + 1) - frac
                let w = abs(x) >= Double(half) ? 0 : Self.besselI0(beta * (1 - (x / Double(half)) * (x / Double(half))).squareRoot()) / i0b
                let s = x == 0 ? 1 : sin(Double.pi * cutoff * x) / (Double.pi * cutoff * x)
                row[j] = w * s
                sum += row[j]
            }
            // Unit gain at DC for every phase.
            for j in 0..<Self.taps { t[p * Self.taps + j] = Float(row[j] / sum) }
        }
        table = t
    }

    private static func besselI0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        let q = x * x / 4
        for k in 1..<64 {
            term *= q / Double(k * k)
            sum += term
            if term < sum * 1e-16 { break }
        }
        return sum
    }

    /// The absolute index one past the last sample held.
    var end: Int64 { base + Int64(samples.count - start) }

    /// Appends input samples.
    mutating func append(_ more: UnsafeBufferPointer<Float>) {
        samples.append(contentsOf: more)
    }

    /// Drops the samples before absolute index `index` (keeps everything when it is before ``base``).
    mutating func discard(before index: Int64) {
        guard index > base else { return }
        let drop = Int(min(index - base, Int64(samples.count - start)))
        start += drop
        base += Int64(drop)
        // Compact once the dead prefix is large.
        if start > 1 << 16 && start > samples.count / 2 {
            samples.removeFirst(start)
            start = 0
        }
    }

    /// Whether a read of `count` points from `position`, `step` apart, has every sample it needs.
    func canRead(from position: Double, step: Double, count: Int) -> Bool {
        let first = Int64((position).rounded(.down)) - Int64(Self.taps / 2) + 1
        return first >= base && lastSample(from: position, step: step, count: count) + 1 < end
    }

    /// The absolute index of the last input sample a read of `count` points from `position`, `step`
    /// apart, weighs.
    func lastSample(from position: Double, step: Double, count: Int) -> Int64 {
        Int64((position + step * Double(count - 1)).rounded(.down)) + Int64(Self.taps / 2)
    }

    /// Reads `out.count` points at `position + n · step` (input-sample units, absolute).
    /// - Precondition: ``canRead(from:step:count:)``.
    func read(from position: Double, step: Double, into out: UnsafeMutableBufferPointer<Float>) {
        let half = Self.taps / 2
        let phases = Double(Self.phases)
        samples.withUnsafeBufferPointer { s in
            table.withUnsafeBufferPointer { tab in
                let sp = s.baseAddress! + start
                let tp = tab.baseAddress!
                let b = Double(base)
                for n in 0..<out.count {
                    let t = position + step * Double(n) - b
                    let i0 = t.rounded(.down)
                    let p = Int(((t - i0) * phases).rounded())
                    let first = Int(i0) - half + 1
                    let row = tp + p * Self.taps
                    let x = sp + first
                    var acc: Float = 0
                    for j in 0..<Self.taps { acc += x[j] * row[j] }
                    out[n] = acc
                }
            }
        }
    }

    /// The sample at absolute index `index` (no interpolation).
    /// - Precondition: `base <= index < end`.
    func sample(at index: Int64) -> Float { samples[start + Int(index - base)] }
}
