#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bit-synchronous demodulator for baseband NRZ signals (G3RUH 9600 baud packet radio): the
/// signal's sign, integrated over a window of about one bit, sampled by a digital PLL.
///
/// A slow high-pass removes DC; each slicer integrates over its own window length, compares with its
/// own level and has its own PLL, nudged at every crossing of that level. Output bits are line levels
/// (`mark` = positive), to be descrambled and NRZI-decoded by the caller.
///
/// Slicers with the same window share its running sum: each window is evaluated once per sample
/// (linear interpolation at a fixed fractional offset), then compared with each slicer's level.
///
/// ## Confidence
///
/// Each bit's ``SlicedBit/confidence`` is the distance of the slicer's decision statistic from its
/// slicing level at the sampling instant, relative to the level a clean full bit would reach:
/// `min(1, |sum - threshold * rms * w| / (rms * w))`, where `sum` is the window's integral of the
/// DC-free signal, `w` the window length in bits and `rms` the running RMS of one-bit integrals (so
/// `rms * w` is about what a window wholly inside one bit of a clean signal integrates to). A bit sampled
/// in the middle of a clean, open eye scores near 1; a bit whose statistic lies near the slicing level
/// (noise, a closed eye, a sampling instant on a transition) scores near 0, and is the likeliest to be
/// wrong. Silence (zero RMS) scores 0.
public struct BasebandBitDemodulator: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Double
    /// Bits per second.
    public let baudRate: Double
    /// Window length of each slicer, in bit periods (0.5...2).
    public let windowBits: [Double]

    /// Slicing threshold of each slicer, as a fraction of the integrated signal's RMS level.
    public let thresholds: [Double]
    /// Slicer number of this demodulator's first slicer in the ``SlicedBit``s it emits.
    public let firstSlicer: Int

    /// A window shared by slicers: integer offset back from the current sample and interpolation
    /// fraction, `sum(t - c) = p[t - a] + (p[t - a + 1] - p[t - a]) * f` with `a = ceil(c)`, `f = a - c`.
    private struct Window: Sendable {
        var a: Int
        var f: Double
    }

    /// One slicer's PLL state.
    private struct Slicer: Sendable {
        var window: Int      // index into `windows`
        var threshold: Double
        var bits: Double     // window length in bits
        var phase = 0.0
        var last = 0.0
        var good = 0
        var locked = false
    }

    private var level = 0.0
    private let bitLength: Double
    private var prefix: [Double] = [0]   // running sum of the DC-free signal, relative to `base`
    private var base = 0                  // absolute index of prefix[0]
    private var dc = 0.0
    private let dcAlpha: Double
    private var next: Int                 // next absolute sample index to evaluate
    private let reference: Window         // the one-bit window of the level estimate
    private let windows: [Window]
    private var slicers: [Slicer]
    private var scratch: [Double] = []    // per block: the RMS level, then each window's sum

    /// Creates a demodulator with one slicer per (window, threshold) pair.
    /// - Parameters:
    ///   - sampleRate: Hz (8000...192000).
    ///   - baudRate: bits per second, at most sampleRate/2.
    ///   - windowBits: window lengths, in bit periods (0.5...2).
    ///   - thresholds: slicing levels as fractions of the integrated signal's RMS (−1...1; 0 slices
    ///     at zero). Several levels help where the eye is not symmetric.
    public init(sampleRate: Double, baudRate: Double, windowBits: [Double] = [1], thresholds: [Double] = [0]) {
        self.init(sampleRate: sampleRate, baudRate: baudRate,
                  slicers: windowBits.flatMap { w in thresholds.map { (w, $0) } })
    }

    /// Creates a demodulator with the given slicers, (window in bits, threshold) each, numbered from
    /// `firstSlicer` in its output (so that several demodulators can share out one set of slicers).
    public init(sampleRate: Double, baudRate: Double, slicers: [(windowBits: Double, threshold: Double)], firstSlicer: Int = 0) {
        precondition((8000...192_000).contains(sampleRate), "sampleRate must be 8000...192000 Hz")
        precondition(baudRate > 0 && baudRate <= sampleRate / 2, "baudRate must be 0 < baud <= sampleRate/2")
        precondition(!slicers.isEmpty && slicers.allSatisfy { (0.5...2).contains($0.windowBits) }, "windows must be 0.5...2 bits")
        precondition(slicers.allSatisfy { abs($0.threshold) <= 1 }, "thresholds must be -1...1")
        self.sampleRate = sampleRate
        self.baudRate = baudRate
        self.firstSlicer = firstSlicer
        windowBits = slicers.map(\.windowBits)
        thresholds = slicers.map(\.threshold)
        let L = sampleRate / baudRate
        bitLength = L
        dcAlpha = 1 - exp(-2 * Double.pi * baudRate / 500 / sampleRate)
        next = Int((L * 2).rounded(.up))
        func window(_ c: Double) -> Window {
            let a = c.rounded(.up)
            return Window(a: Int(a), f: a - c)
        }
        reference = window(L)
        var lengths: [Double] = []
        var states: [Slicer] = []
        for s in slicers {
            if !lengths.contains(s.windowBits) { lengths.append(s.windowBits) }
            states.append(Slicer(window: lengths.firstIndex(of: s.windowBits)!, threshold: s.threshold, bits: s.windowBits))
        }
        windows = lengths.map { window(L * $0) }
        self.slicers = states
    }

    /// Feeds samples and appends the bits decided, in time order (by sample, then slicer).
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, into bits: inout [SlicedBit]) {
        var perSlicer = Array(repeating: [SlicedBit](), count: slicers.count)
        process(samples, perSlicer: &perSlicer)
        let start = bits.count
        for list in perSlicer { bits.append(contentsOf: list) }
        bits[start...].sort { ($0.sample, $0.slicer) < ($1.sample, $1.slicer) }
    }

    /// Feeds samples and appends each slicer's bits, in time order, to `perSlicer[k]` (k counted
    /// from 0 for this demodulator's first slicer; `perSlicer` must hold one array per slicer).
    ///
    /// The window sums and the level are computed for the whole block first; then each slicer's PLL
    /// runs over the block with its state in registers.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, perSlicer: inout [[SlicedBit]]) {
        precondition(perSlicer.count == slicers.count, "one bit list per slicer")
        var acc = prefix[prefix.count - 1]
        var d = dc
        // (No reserveCapacity: asking for the exact size would reallocate and copy every block.)
        for x in samples {
            let v = Double(x)
            d += dcAlpha * (v - d)
            acc += v - d
            prefix.append(acc)
        }
        dc = d
        let end = base + prefix.count - 1
        let first = next
        let count = max(0, end - first + 1)
        guard count > 0 else { return }
        let nw = windows.count
        if scratch.count < count * (nw + 1) { scratch = [Double](repeating: 0, count: count * (nw + 1)) }
        var level = self.level
        let ra = reference.a, rf = reference.f
        let base = self.base
        // Rows: the RMS level, then each window's sum, per sample of the block.
        windows.withUnsafeBufferPointer { windows in
        scratch.withUnsafeMutableBufferPointer { rows in
        prefix.withUnsafeBufferPointer { p in
            for n in 0..<count {
                let i = first + n - base
                let now = p[i]
                let r0 = p[i - ra]
                let ref = now - (r0 + (p[i - ra + 1] - r0) * rf)
                level += 0.001 * (ref * ref - level)
                rows[n] = level.squareRoot()
            }
            for j in 0..<nw {
                let a = windows[j].a, f = windows[j].f
                let row = count * (j + 1)
                for n in 0..<count {
                    let i = first + n - base
                    let s0 = p[i - a]
                    rows[row + n] = p[i] - (s0 + (p[i - a + 1] - s0) * f)
                }
            }
        }
        }
        }
        self.level = level
        next = end + 1
        let phaseStep = 1 / bitLength
        let firstSlicer = self.firstSlicer
        scratch.withUnsafeBufferPointer { rows in
            for k in slicers.indices {
                var s = slicers[k]
                let row = count * (s.window + 1)
                let threshold = s.threshold, bits = s.bits
                var phase = s.phase, last = s.last, good = s.good, locked = s.locked
                perSlicer[k].reserveCapacity(perSlicer[k].count + Int(Double(count) * phaseStep) + 2)
                for n in 0..<count {
                    let v = rows[row + n] - threshold * rows[n] * bits
                    if (v >= 0) != (last >= 0) {
                        let frac = last / (last - v)
                        var err = 0.5 - (phase + phaseStep * frac)
                        // err -= err.rounded(), for |err| < 1.5 (phase stays near 0...1) without libm.
                        if err >= 0.5 { err -= 1 } else if err <= -0.5 { err += 1 }
                        phase += (locked ? 0.1 : 0.3) * err
                        if abs(err) < 0.15 { good = min(good + 1, 64) } else { good = max(good - 2, 0) }
                        locked = good >= 8
                    }
                    phase += phaseStep
                    if phase >= 1 {
                        phase -= 1
                        // The wrap fell between the previous sample and this one: interpolate there.
                        let over = min(1, phase / phaseStep)
                        let at = v - (v - last) * over
                        // Distance from the slicing level, relative to a clean bit's integral.
                        let scale = rows[n] * bits
                        let confidence = scale > 0 ? Float(min(1, abs(at) / scale)) : 0
                        perSlicer[k].append(SlicedBit(slicer: firstSlicer + k, mark: at >= 0, confidence: confidence,
                                                      sample: first + n))
                    }
                    last = v
                }
                s.phase = phase; s.last = last; s.good = good; s.locked = locked
                slicers[k] = s
            }
        }
        // Keep a few bits of history.
        let keep = next - Int(3 * bitLength) - 2
        if keep - self.base > 65536 {
            let drop = keep - self.base
            let z = prefix[drop]
            prefix.removeFirst(drop)
            for i in prefix.indices { prefix[i] -= z }
            self.base = keep
        }
    }

    /// Feeds samples from an array.
    public mutating func process(_ samples: [Float], into bits: inout [SlicedBit]) {
        samples.withUnsafeBufferPointer { process($0, into: &bits) }
    }
}
