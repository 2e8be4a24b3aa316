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
public struct BasebandBitDemodulator: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Double
    /// Bits per second.
    public let baudRate: Double
    /// Window length of each slicer, in bit periods (0.5...2).
    public let windowBits: [Double]

    /// Slicing threshold of each slicer, as a fraction of the integrated signal's RMS level.
    public let thresholds: [Double]
    private var level = 0.0
    private let bitLength: Double
    private var prefix: [Double] = [0]   // running sum of the DC-free signal, relative to `base`
    private var base = 0                  // absolute index of prefix[0]
    private var dc = 0.0
    private let dcAlpha: Double
    private var next: Int                 // next absolute sample index to evaluate
    private var phase: [Double]
    private var last: [Double]
    private var locked: [Bool]
    private var good: [Int]

    /// Creates a demodulator with one slicer per (window, threshold) pair.
    /// - Parameters:
    ///   - sampleRate: Hz (8000...192000).
    ///   - baudRate: bits per second, at most sampleRate/2.
    ///   - windowBits: window lengths, in bit periods (0.5...2).
    ///   - thresholds: slicing levels as fractions of the integrated signal's RMS (−1...1; 0 slices
    ///     at zero). Several levels help where the eye is not symmetric.
    public init(sampleRate: Double, baudRate: Double, windowBits: [Double] = [1], thresholds: [Double] = [0]) {
        precondition((8000...192_000).contains(sampleRate), "sampleRate must be 8000...192000 Hz")
        precondition(baudRate > 0 && baudRate <= sampleRate / 2, "baudRate must be 0 < baud <= sampleRate/2")
        precondition(!windowBits.isEmpty && windowBits.allSatisfy { (0.5...2).contains($0) }, "windows must be 0.5...2 bits")
        precondition(!thresholds.isEmpty && thresholds.allSatisfy { abs($0) <= 1 }, "thresholds must be -1...1")
        self.sampleRate = sampleRate
        self.baudRate = baudRate
        self.windowBits = windowBits.flatMap { w in thresholds.map { _ in w } }
        self.thresholds = windowBits.flatMap { _ in thresholds }
        bitLength = sampleRate / baudRate
        dcAlpha = 1 - exp(-2 * Double.pi * baudRate / 500 / sampleRate)
        next = Int((bitLength * 2).rounded(.up))
        let n = windowBits.count * thresholds.count
        phase = Array(repeating: 0, count: n)
        last = Array(repeating: 0, count: n)
        locked = Array(repeating: false, count: n)
        good = Array(repeating: 0, count: n)
    }

    private func sum(at position: Double) -> Double {
        let rel = max(0, min(position - Double(base), Double(prefix.count - 1)))
        let i = Int(rel)
        if i + 1 >= prefix.count { return prefix[i] }
        let f = rel - Double(i)
        return prefix[i] + (prefix[i + 1] - prefix[i]) * f
    }

    /// Feeds samples and appends the bits decided, in time order.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, into bits: inout [SlicedBit]) {
        var acc = prefix[prefix.count - 1]
        var d = dc
        for x in samples {
            let v = Double(x)
            d += dcAlpha * (v - d)
            acc += v - d
            prefix.append(acc)
        }
        dc = d
        let end = base + prefix.count - 1
        let L = bitLength
        let phaseStep = 1 / L
        while next <= end {
            let t = Double(next)
            let now = sum(at: t)
            let ref = now - sum(at: t - L)
            level += 0.001 * (ref * ref - level)
            let rms = level.squareRoot()
            for k in windowBits.indices {
                let v = now - sum(at: t - L * windowBits[k]) - thresholds[k] * rms * windowBits[k]
                if (v >= 0) != (last[k] >= 0) {
                    let frac = last[k] / (last[k] - v)
                    var err = 0.5 - (phase[k] + phaseStep * frac)
                    err -= err.rounded()
                    phase[k] += (locked[k] ? 0.1 : 0.3) * err
                    if abs(err) < 0.15 { good[k] = min(good[k] + 1, 64) } else { good[k] = max(good[k] - 2, 0) }
                    locked[k] = good[k] >= 8
                }
                phase[k] += phaseStep
                if phase[k] >= 1 {
                    phase[k] -= 1
                    // The wrap fell between the previous sample and this one: interpolate there.
                    let over = min(1, phase[k] / phaseStep)
                    let at = v - (v - last[k]) * over
                    bits.append(SlicedBit(slicer: k, mark: at >= 0, confidence: 1, sample: next))
                }
                last[k] = v
            }
            next += 1
        }
        // Keep a few bits of history.
        let keep = next - Int(3 * L) - 2
        if keep - base > 65536 {
            let drop = keep - base
            let z = prefix[drop]
            prefix.removeFirst(drop)
            for i in prefix.indices { prefix[i] -= z }
            base = keep
        }
    }

    /// Feeds samples from an array.
    public mutating func process(_ samples: [Float], into bits: inout [SlicedBit]) {
        samples.withUnsafeBufferPointer { process($0, into: &bits) }
    }
}
