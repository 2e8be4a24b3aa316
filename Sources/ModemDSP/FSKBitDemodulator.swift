#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One demodulated line bit from one slicer of a ``FSKBitDemodulator``.
public struct SlicedBit: Sendable, Hashable {
    /// The slicer that produced it (index into ``FSKBitDemodulator/slicerBalancesDB``).
    public var slicer: Int
    /// The line level: true for mark, false for space (before any NRZI decoding).
    public var mark: Bool
    /// How clearly the bit was one tone, 0...1.
    public var confidence: Float
    /// Absolute sample index of the end of the bit.
    public var sample: Int
}

/// A bit-synchronous FSK demodulator for synchronous framings (HDLC / AX.25): a continuous stream
/// of line bits with the bit clock recovered by a digital PLL, from several slicers at once.
///
/// Each bit is decided by comparing the energies of the mark and space correlations over one bit
/// (the same matched-filter front end as ``FSKDemodulator``). The slicers differ only in the weight
/// given to the space energy (`slicerBalancesDB`), which makes one of them right for audio whose
/// tones arrive at different levels (de-emphasis, a tilted radio audio path); each slicer has its
/// own PLL. Decisions are made on a grid of `decimation` samples (a tenth of a bit or finer), and the
/// PLL is nudged at every transition towards the interpolated zero crossing.
///
/// Memory is bounded: a few bits of history are kept.
public struct FSKBitDemodulator: Sendable {
    /// The checked modem parameters.
    public let configuration: FSKConfiguration
    /// Weight of the space energy for each slicer, in dB (0 = equal weight).
    public let slicerBalancesDB: [Double]
    /// Length of the correlation window in bit periods (1 is the matched filter).
    public let windowBits: Double

    private var corr: ToneCorrelator
    private let bitLength: Double
    private let step: Int               // grid step in samples
    private var nextGrid: Int           // absolute sample index of the next grid point
    private var slicers: [SlicerState]
    private let balances: [Float]
    private let softScale: Float
    private let lockedInertia: Double
    private let searchingInertia: Double

    private struct SlicerState: Sendable {
        var phase: Double = 0           // position in the bit, 0..<1; the bit is sampled at wrap
        var last: Float = 0             // previous soft value
        var run: Int = 0                // bits since the last transition
        var locked = false
        var goodTransitions = 0
    }

    /// Creates a demodulator.
    /// - Parameters:
    ///   - configuration: sample rate, baud and tones.
    ///   - slicerBalancesDB: one entry per slicer: the space weight in dB (−20...20). The default
    ///     single slicer weighs both tones equally.
    ///   - windowBits: correlation window length in bit periods, 0.5...2 (default 1, the matched
    ///     filter; slightly longer windows gain in white noise on continuous-phase signals).
    public init(configuration: FSKConfiguration, slicerBalancesDB: [Double] = [0], windowBits: Double = 1) {
        precondition((0.5...2).contains(windowBits), "windowBits must be 0.5...2")
        self.windowBits = windowBits
        precondition(!slicerBalancesDB.isEmpty && slicerBalancesDB.count <= 64, "1...64 slicers")
        precondition(slicerBalancesDB.allSatisfy { abs($0) <= 20 }, "slicer balances must be within ±20 dB")
        self.configuration = configuration
        self.slicerBalancesDB = slicerBalancesDB
        corr = ToneCorrelator(sampleRate: configuration.sampleRate, markFrequency: configuration.markFrequency,
                              spaceFrequency: configuration.spaceFrequency, samplesPerBit: configuration.samplesPerBit)
        bitLength = configuration.samplesPerBit
        step = corr.decimation
        nextGrid = Int(bitLength.rounded(.up))
        slicers = Array(repeating: SlicerState(), count: slicerBalancesDB.count)
        balances = slicerBalancesDB.map { Float(pow(10, $0 / 10)) }
        let dw = 2 * Double.pi * abs(configuration.markFrequency - configuration.spaceFrequency) / configuration.sampleRate
        let n = configuration.samplesPerBit
        let rho = abs(sin(n * dw / 2) / (n * sin(dw / 2)))
        softScale = Float(max(0.3, (1 - rho * rho) / (1 + rho * rho)))
        lockedInertia = 0.74
        searchingInertia = 0.5
    }

    /// Forgets everything, as if newly created.
    public mutating func reset() {
        corr.reset()
        nextGrid = Int(bitLength.rounded(.up))
        slicers = Array(repeating: SlicerState(), count: slicers.count)
    }

    /// Feeds samples and appends the bits decided so far, in time order per slicer.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, into bits: inout [SlicedBit]) {
        corr.append(samples)
        let end = corr.end
        let L = bitLength
        let phaseStep = Double(step) / L
        while nextGrid <= end {
            let t = nextGrid
            let w = corr.window(from: Double(t) - L * windowBits, to: Double(t))
            let m = w.mark, s = w.space
            for k in slicers.indices {
                let b = balances[k]
                let v = max(-1, min(1, (m - b * s) / (m + b * s + 1e-30) / softScale))
                var st = slicers[k]
                // A sign change means the one-bit window is centred on a bit boundary: the ideal
                // phase there is one half (the bit is sampled when the window covers it exactly).
                if (v >= 0) != (st.last >= 0) {
                    let frac = Double(st.last / (st.last - v))      // zero crossing within the step
                    let crossPhase = st.phase + phaseStep * frac
                    var err = 0.5 - crossPhase
                    err -= err.rounded()                             // wrap into -0.5...0.5
                    let inertia = st.locked ? lockedInertia : searchingInertia
                    st.phase += (1 - inertia) * err
                    if abs(err) < 0.15 { st.goodTransitions = min(st.goodTransitions + 1, 64) } else { st.goodTransitions = max(st.goodTransitions - 2, 0) }
                    st.locked = st.goodTransitions >= 8
                    st.run = 0
                }
                st.phase += phaseStep
                if st.phase >= 1 {
                    st.phase -= 1
                    // The window ending `phase` steps ago covered the bit; this grid point is close enough
                    // (within one step), and the decision is the sign of the soft value.
                    bits.append(SlicedBit(slicer: k, mark: v >= 0, confidence: abs(v), sample: t))
                    st.run += 1
                }
                st.last = v
                slicers[k] = st
            }
            nextGrid += step
        }
        let keep = nextGrid - Int(2 * L) - 2 * step
        if keep - corr.start > 65536 { corr.discard(before: keep) }
    }

    /// Feeds samples from an array.
    public mutating func process(_ samples: [Float], into bits: inout [SlicedBit]) {
        samples.withUnsafeBufferPointer { process($0, into: &bits) }
    }
}
