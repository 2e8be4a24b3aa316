#if canImport(Glibc)
import Glibc
#endif

/// The HF modem's rate changes and its mix to baseband: windowed-sinc low-pass filters (Blackman),
/// an integer-factor interpolator for sending at a sound card's rate, an integer-factor decimator
/// for receiving, and the complex baseband around ``HFGrid/centreHz``.
public enum HFFilters {
    /// A low-pass windowed-sinc filter: `taps` coefficients (odd), cut-off `cutoff` (a fraction of
    /// the sample rate, 0...0.5), unit gain at DC.
    static func lowPass(taps: Int, cutoff: Double) -> [Float] {
        let mid = Double(taps - 1) / 2
        var h = (0..<taps).map { i -> Double in
            let x = Double(i) - mid
            let sinc = x == 0 ? 2 * cutoff : sin(2 * Double.pi * cutoff * x) / (Double.pi * x)
            let w = 0.42 - 0.5 * cos(2 * Double.pi * Double(i) / Double(taps - 1)) + 0.08 * cos(4 * Double.pi * Double(i) / Double(taps - 1))
            return sinc * w
        }
        let sum = h.reduce(0, +)
        h = h.map { $0 / sum }
        return h.map { Float($0) }
    }

    /// `samples` at 8 kHz raised to `factor` × 8 kHz (an integer factor, 1 returns them as they are).
    public static func interpolate(_ samples: [Float], factor: Int) -> [Float] {
        precondition(factor >= 1)
        if factor == 1 { return samples }
        // Cut-off 3.4 kHz of the output rate; the filter's gain is restored by the factor.
        let taps = 24 * factor + 1
        let h = lowPass(taps: taps, cutoff: 3400 / (HFGrid.sampleRate * Double(factor))).map { $0 * Float(factor) }
        let delay = (taps - 1) / 2
        var out = [Float](repeating: 0, count: samples.count * factor)
        samples.withUnsafeBufferPointer { x in
            h.withUnsafeBufferPointer { h in
                out.withUnsafeMutableBufferPointer { y in
                    // y[n] = Σ_m h[m] · u[n + delay − m], where u is x with factor − 1 zeros after each sample.
                    for n in 0..<y.count {
                        var acc: Float = 0
                        let top = n + delay
                        // m ≡ top (mod factor) picks the non-zero u samples.
                        var m = top % factor
                        while m < taps {
                            let j = (top - m) / factor
                            if j < 0 { break }
                            if j < x.count { acc += h[m] * x[j] }
                            m += factor
                        }
                        y[n] = acc
                    }
                }
            }
        }
        return out
    }

    /// A streaming decimator by an integer factor down to 8 kHz: samples in at `factor` × 8 kHz,
    /// filtered below 3.4 kHz, every factor-th kept.
    public struct Decimator: Sendable {
        /// The input rate over 8 kHz.
        public let factor: Int
        private let h: [Float]
        private var history: [Float]
        private var phase = 0

        /// A decimator for input at `factor` × 8 kHz.
        public init(factor: Int) {
            precondition(factor >= 1)
            self.factor = factor
            let taps = factor == 1 ? 1 : 32 * factor + 1
            h = factor == 1 ? [1] : HFFilters.lowPass(taps: taps, cutoff: 3400 / (HFGrid.sampleRate * Double(factor)))
            history = [Float](repeating: 0, count: taps - 1)
        }

        /// The filter's delay in output (8 kHz) samples.
        public var delay: Int { (h.count - 1) / 2 / factor }

        /// Pushes input samples; appends the 8 kHz outputs to `out`.
        public mutating func push(_ input: UnsafeBufferPointer<Float>, into out: inout [Float]) {
            if factor == 1 {
                out.append(contentsOf: input)
                return
            }
            let taps = h.count
            var buffer = history
            buffer.append(contentsOf: input)
            // Output whenever the newest sample index (within buffer) hits the phase.
            var i = taps - 1 + phase
            buffer.withUnsafeBufferPointer { b in
                h.withUnsafeBufferPointer { h in
                    while i < b.count {
                        var acc: Float = 0
                        let base = i - (taps - 1)
                        for m in 0..<taps { acc += h[m] * b[base + m] }
                        out.append(acc)
                        i += factor
                    }
                }
            }
            phase = i - buffer.count
            history = Array(buffer.suffix(taps - 1))
        }
    }

    /// The complex baseband of `samples` (8 kHz real): mixed down by ``HFGrid/centreHz``, then
    /// low-pass filtered to ±1.3 kHz by a zero-delay (centred) filter. Returns the real and imaginary parts.
    public static func baseband(_ samples: [Float]) -> (re: [Float], im: [Float]) {
        let n = samples.count
        var mixedRe = [Float](repeating: 0, count: n), mixedIm = [Float](repeating: 0, count: n)
        // The mixer's phase advances 2π·1437.5/8000 = 2π·23/128 per sample: a period of 128 samples.
        let period = 128
        let w = 2 * Double.pi * HFGrid.centreHz / HFGrid.sampleRate
        let cosT = (0..<period).map { Float(cos(w * Double($0))) }, sinT = (0..<period).map { Float(-sin(w * Double($0))) }
        for i in 0..<n {
            mixedRe[i] = samples[i] * cosT[i % period] * 2
            mixedIm[i] = samples[i] * sinT[i % period] * 2
        }
        let h = lowPass(taps: 63, cutoff: 1300 / HFGrid.sampleRate)
        return (convolveCentred(mixedRe, h), convolveCentred(mixedIm, h))
    }

    static func convolveCentred(_ x: [Float], _ h: [Float]) -> [Float] {
        let n = x.count, taps = h.count, half = taps / 2
        var y = [Float](repeating: 0, count: n)
        x.withUnsafeBufferPointer { x in
            h.withUnsafeBufferPointer { h in
                y.withUnsafeMutableBufferPointer { y in
                    for i in 0..<n {
                        var acc: Float = 0
                        let lo = max(0, half - i), hi = min(taps, n - i + half)
                        var m = lo
                        while m < hi {
                            acc += h[m] * x[i + m - half]
                            m += 1
                        }
                        y[i] = acc
                    }
                }
            }
        }
        return y
    }
}
