#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One demodulated line bit from one slicer of a ``FSKBitDemodulator``.
public struct SlicedBit: Sendable, Hashable {
    /// The slicer that produced it (index into ``FSKBitDemodulator/slicers``).
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
/// Each bit is decided by comparing the energies of the mark and space correlations over a window
/// of about a bit (the same front end as ``FSKDemodulator``). Slicers differ in the weight given to
/// the space energy, which makes one of them right for audio whose tones arrive at different levels
/// (de-emphasis, a tilted radio audio path), and in the window length; each slicer has its own PLL. Decisions are made on a grid of `decimation` samples (a tenth of a bit or finer), and the
/// PLL is nudged at every transition towards the interpolated zero crossing.
///
/// Memory is bounded: a few bits of history are kept.
public struct FSKBitDemodulator: Sendable {
    /// The checked modem parameters.
    public let configuration: FSKConfiguration
    /// The slicers: each a space weight and a window length.
    public let slicers: [Slicer]

    /// One way of deciding bits: a weight for the space energy and a correlation window length.
    public struct Slicer: Sendable, Hashable {
        /// Weight of the space energy in dB (−20...20; 0 = equal weight; positive favours space,
        /// for audio whose space tone arrives weaker, e.g. de-emphasised).
        public var balanceDB: Double
        /// Correlation window length in bit periods (0.5...2; 1 is the matched filter, slightly
        /// longer windows gain in white noise on continuous-phase signals).
        public var windowBits: Double
        /// Whether the space weight follows the tone levels measured on the slicer's own decisions
        /// (then `balanceDB` is added to the measured weight). The weight is the ratio of the mean
        /// window energy (mark + space) over bits decided mark to that over bits decided space,
        /// (A² + 2N) / (B² + 2N) for tone energies A², B² and noise N per tone: the weight that puts the
        /// decision half way between the two tones' mean outputs. It equalises the tones at high SNR
        /// and moves towards 0 dB as the noise grows, where the best fixed weight lies too. It follows
        /// the levels over about 20 bits (a frame's preamble), within ±12 dB.
        public var adaptive: Bool
        /// A steady bit clock: the share of its phase the clock keeps at every transition (0.5...0.999),
        /// with no searching mode; nil (the default) for the usual clock, which keeps 0.9 while locked
        /// and 0.7 while searching. The usual clock acquires fast, but in deep noise (full-band SNR
        /// about -5 dB at 1200 baud) too many transitions look wrong, it falls back to searching and
        /// slips bits, so long frames fail whatever code protects them; a steady clock of 0.95 holds
        /// the bits (at -6 dB: 2 % of levels wrong instead of 42 %) and still locks within a preamble
        /// of 12 flags.
        public var clockInertia: Double?
        /// Creates a slicer.
        public init(balanceDB: Double = 0, windowBits: Double = 1, adaptive: Bool = false, clockInertia: Double? = nil) {
            self.balanceDB = balanceDB
            self.windowBits = windowBits
            self.adaptive = adaptive
            self.clockInertia = clockInertia
        }
    }

    private var corr: ToneCorrelator
    private let bitLength: Double
    private let step: Int               // grid step in samples
    private var nextGrid: Int           // absolute sample index of the next grid point
    private var states: [SlicerState]
    private let balances: [Float]
    private let adaptive: [Bool]
    private let levelAlpha: Float       // per decided bit, for the adaptive slicers' level means
    private let windowIndex: [Int]      // per slicer, index into `windows`
    private let windows: [Double]       // distinct window lengths in bit periods
    private let softScale: Float
    private let steadyInertia: [Double?]
    private let lockedInertia: Double
    private let searchingInertia: Double

    private struct SlicerState: Sendable {
        var phase: Double = 0           // position in the bit, 0..<1; the bit is sampled at wrap
        var last: Float = 0             // previous soft value
        var locked = false
        var goodTransitions = 0
        var markLevel: Float = 0        // running mean window energy over bits decided mark
        var spaceLevel: Float = 0       // likewise space
    }

    /// Creates a demodulator.
    /// - Parameters:
    ///   - configuration: sample rate, baud and tones.
    ///   - slicers: 1...64 slicers, each with its own PLL; the default is one matched-filter slicer.
    public init(configuration: FSKConfiguration, slicers: [Slicer] = [Slicer()]) {
        precondition(!slicers.isEmpty && slicers.count <= 64, "1...64 slicers")
        precondition(slicers.allSatisfy { abs($0.balanceDB) <= 20 }, "slicer balances must be within ±20 dB")
        precondition(slicers.allSatisfy { (0.5...2).contains($0.windowBits) }, "slicer windows must be 0.5...2 bits")
        precondition(slicers.allSatisfy { (0.5...0.999).contains($0.clockInertia ?? 0.9) }, "slicer clock inertia must be 0.5...0.999")
        self.configuration = configuration
        self.slicers = slicers
        corr = ToneCorrelator(sampleRate: configuration.sampleRate, markFrequency: configuration.markFrequency,
                              spaceFrequency: configuration.spaceFrequency, samplesPerBit: configuration.samplesPerBit)
        bitLength = configuration.samplesPerBit
        step = corr.decimation
        nextGrid = Int((bitLength * 2).rounded(.up))
        states = Array(repeating: SlicerState(), count: slicers.count)
        balances = slicers.map { Float(pow(10, $0.balanceDB / 10)) }
        adaptive = slicers.map { $0.adaptive }
        levelAlpha = 0.05
        var distinct: [Double] = []
        for s in slicers where !distinct.contains(s.windowBits) { distinct.append(s.windowBits) }
        windows = distinct
        windowIndex = slicers.map { s in distinct.firstIndex(of: s.windowBits)! }
        let dw = 2 * Double.pi * abs(configuration.markFrequency - configuration.spaceFrequency) / configuration.sampleRate
        let n = configuration.samplesPerBit
        let rho = abs(sin(n * dw / 2) / (n * sin(dw / 2)))
        softScale = Float(max(0.3, (1 - rho * rho) / (1 + rho * rho)))
        steadyInertia = slicers.map(\.clockInertia)
        lockedInertia = 0.9
        searchingInertia = 0.7
    }

    /// Forgets everything, as if newly created.
    public mutating func reset() {
        corr.reset()
        nextGrid = Int((bitLength * 2).rounded(.up))
        states = Array(repeating: SlicerState(), count: states.count)
    }

    /// Feeds samples and appends the bits decided so far, in time order per slicer.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, into bits: inout [SlicedBit]) {
        corr.append(samples)
        let end = corr.end
        let L = bitLength
        let phaseStep = Double(step) / L
        var ms = [(Float, Float)](repeating: (0, 0), count: windows.count)
        while nextGrid <= end {
            let t = nextGrid
            for (j, wb) in windows.enumerated() {
                let w = corr.window(from: Double(t) - L * wb, to: Double(t))
                ms[j] = (w.mark, w.space)
            }
            for k in states.indices {
                let (m, s) = ms[windowIndex[k]]
                var st = states[k]
                var b = balances[k]
                if adaptive[k] && st.markLevel > 0 && st.spaceLevel > 0 {
                    b *= max(1.0 / 16, min(16, st.markLevel / st.spaceLevel))
                }
                let v = max(-1, min(1, (m - b * s) / (m + b * s + 1e-30) / softScale))
                // A sign change means the window is centred on a bit boundary: the ideal phase
                // there is one half (the bit is sampled half a bit later, when the window covers it).
                if (v >= 0) != (st.last >= 0) {
                    let frac = Double(st.last / (st.last - v))      // zero crossing within the step
                    let crossPhase = st.phase + phaseStep * frac
                    var err = 0.5 - crossPhase
                    err -= err.rounded()                             // wrap into -0.5...0.5
                    let inertia = steadyInertia[k] ?? (st.locked ? lockedInertia : searchingInertia)
                    st.phase += (1 - inertia) * err
                    if abs(err) < 0.15 { st.goodTransitions = min(st.goodTransitions + 1, 64) } else { st.goodTransitions = max(st.goodTransitions - 2, 0) }
                    st.locked = st.goodTransitions >= 8
                }
                st.phase += phaseStep
                if st.phase >= 1 {
                    st.phase -= 1
                    // The wrap fell between the previous grid point and this one: interpolate there.
                    let over = Float(min(1, st.phase / phaseStep))
                    let at = v - (v - st.last) * over
                    bits.append(SlicedBit(slicer: k, mark: at >= 0, confidence: abs(at), sample: t))
                    if adaptive[k] {
                        let e = m + s + 1e-30           // never zero: silence leaves the ratio at 1
                        if at >= 0 {
                            st.markLevel = st.markLevel == 0 ? e : st.markLevel + levelAlpha * (e - st.markLevel)
                        } else {
                            st.spaceLevel = st.spaceLevel == 0 ? e : st.spaceLevel + levelAlpha * (e - st.spaceLevel)
                        }
                    }
                }
                st.last = v
                states[k] = st
            }
            nextGrid += step
        }
        let keep = nextGrid - Int(2.5 * L) - 2 * step
        if keep - corr.start > 65536 { corr.discard(before: keep) }
    }

    /// Feeds samples from an array.
    public mutating func process(_ samples: [Float], into bits: inout [SlicedBit]) {
        samples.withUnsafeBufferPointer { process($0, into: &bits) }
    }
}
