#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A demodulator for Dire Wolf's differential PSK packet modes (``PSKMode``: 2400 bit/s QPSK with
/// either V.26 phasing, 4800 bit/s 8PSK): audio in, line bits out (the NRZI-coded HDLC levels the
/// transmitter took), from several slicers at once.
///
/// The front end mixes the audio down with an 1800 Hz local oscillator and filters it, on a grid of
/// about a tenth of a symbol. QPSK: a box of one symbol period, the filter matched to Dire Wolf's
/// rectangular symbols, whose output at the symbol instant holds none of the mixer's image at twice
/// the carrier (3 whole image cycles per symbol). 8PSK (2.25 image cycles per symbol): a box of one
/// symbol less half a carrier period convolved with a box of half a carrier period (1/3600 s), which
/// cancels the image and still spans one symbol, so there is no intersymbol interference at the right
/// instant. (A box of a symbol convolved with the half-period box, 1.44 symbols long, left clean 8PSK
/// with phase errors up to 20°, and 2.5-5 times the symbol errors under noise.) Each slicer then has its own symbol clock, a Gardner timing
/// loop (the filtered signal half-way between two symbols, against their difference) sampling
/// between grid points by linear interpolation, and one of two detectors:
/// - ``Slicer/Detection/differential``: the phase change between two successive symbol samples;
/// - ``Slicer/Detection/coherent``: each symbol against a carrier phase estimated from the symbols
///   themselves (raised to the M-th power to strip the data, averaged over about ten symbols), decided
///   to the nearest point of the constellation, then differentially decoded. Its decision uses the
///   noise of one symbol, not two, which is worth about 2 dB on QPSK.
///
/// Each bit carries a confidence (0...1): how far the phase lay from the nearest decision boundary
/// that would change that bit. Memory is bounded (the filter's length).
public struct PSKBitDemodulator: Sendable {
    /// One slicer: a detector and a symbol clock.
    public struct Slicer: Sendable, Hashable {
        /// How a slicer turns symbol samples into phase changes.
        public enum Detection: Sendable, Hashable {
            /// The phase between two successive symbol samples.
            case differential
            /// Each symbol against a carrier phase estimated from the recent symbols, then the
            /// difference of the decisions.
            case coherent
        }

        /// The detector.
        public var detection: Detection
        /// The timing loop's gain: the share of the measured timing error corrected at each symbol
        /// (0 < g <= 0.5; 0.02-0.15 are useful).
        public var clockGain: Double
        /// For coherent detection, the carrier estimate's memory in symbols (its averaging factor is
        /// 1 - 1/memory; 2...1000).
        public var carrierMemory: Double

        /// Creates a slicer.
        public init(detection: Detection, clockGain: Double = 0.06, carrierMemory: Double = 10) {
            self.detection = detection
            self.clockGain = clockGain
            self.carrierMemory = carrierMemory
        }
    }

    /// The mode demodulated.
    public let mode: PSKMode
    /// Samples per second, in Hz.
    public let sampleRate: Double
    /// The slicers.
    public let slicers: [Slicer]
    /// Input samples per grid point of the filtered signal.
    public let decimation: Int

    /// The slicers used by default: differential and coherent detection, each with a fast and a slow
    /// symbol clock.
    public static let defaultSlicers: [Slicer] = [
        Slicer(detection: .coherent, clockGain: 0.06),
        Slicer(detection: .differential, clockGain: 0.06),
        Slicer(detection: .coherent, clockGain: 0.15),
        Slicer(detection: .differential, clockGain: 0.15),
    ]

    private struct Complex: Sendable {
        var re: Double
        var im: Double
        static func + (a: Complex, b: Complex) -> Complex { Complex(re: a.re + b.re, im: a.im + b.im) }
        static func - (a: Complex, b: Complex) -> Complex { Complex(re: a.re - b.re, im: a.im - b.im) }
        static func * (a: Complex, s: Double) -> Complex { Complex(re: a.re * s, im: a.im * s) }
        /// a × conj(b).
        func timesConjugate(_ b: Complex) -> Complex { Complex(re: re * b.re + im * b.im, im: im * b.re - re * b.im) }
        func times(_ b: Complex) -> Complex { Complex(re: re * b.re - im * b.im, im: re * b.im + im * b.re) }
        var magnitudeSquared: Double { re * re + im * im }
        var angle: Double { re == 0 && im == 0 ? 0 : atan2(im, re) }
        static let zero = Complex(re: 0, im: 0)
    }

    private struct SlicerState: Sendable {
        /// The symbol clock, in symbols since the last symbol instant.
        var clock: Double = 0
        var middle = Complex.zero
        var lastSymbol = Complex.zero
        var power: Double = 1e-12
        /// Symbols sampled (for V.26 B's rotation).
        var symbols = 0
        /// Coherent detection: the averaged M-th power, the carrier phase estimate and the last decision.
        var average = Complex.zero
        var carrier: Double = 0
        var lastIndex = 0
        var lastMargin: Double = 0
    }

    private let taps: [Float]
    /// The mixed signal's recent samples, each kept twice (at i and i + taps.count) so the filter reads
    /// one contiguous run.
    private var ringI: [Float]
    private var ringQ: [Float]
    private var ringPosition = 0
    private var oscillator = Complex(re: 1, im: 0)
    private let oscillatorStep: Complex
    private var sampleIndex = 0
    private var phaseInGrid = 0
    private var lastFiltered = Complex.zero
    private var states: [SlicerState]
    /// Symbols per grid point.
    private let clockStep: Double
    /// Per bit (0 = last sent), the decision boundaries (in constellation steps, 0..<M) where it changes.
    private let boundaries: [[Double]]

    /// Creates a demodulator.
    /// - Parameters:
    ///   - mode: the PSK mode.
    ///   - sampleRate: Hz (8000...192000).
    ///   - slicers: at least one (default ``defaultSlicers``); gains and memories in their ranges.
    public init(mode: PSKMode, sampleRate: Double, slicers: [Slicer] = PSKBitDemodulator.defaultSlicers) {
        precondition((8000...192_000).contains(sampleRate), "PSKBitDemodulator sampleRate must be 8000...192000 Hz, got \(sampleRate)")
        precondition(!slicers.isEmpty, "PSKBitDemodulator needs at least one slicer")
        for s in slicers {
            precondition(s.clockGain > 0 && s.clockGain <= 0.5, "PSKBitDemodulator clockGain must be 0 < g <= 0.5, got \(s.clockGain)")
            precondition((2...1000).contains(s.carrierMemory), "PSKBitDemodulator carrierMemory must be 2...1000 symbols, got \(s.carrierMemory)")
        }
        self.mode = mode
        self.sampleRate = sampleRate
        self.slicers = slicers
        let samplesPerSymbol = sampleRate / mode.symbolRate
        decimation = max(1, Int(samplesPerSymbol / 10))
        clockStep = Double(decimation) / samplesPerSymbol
        // QPSK: a box of one symbol (each tap the share of its sample interval inside it). 8PSK: a box of
        // one symbol less half a carrier period convolved with a box of half a carrier period (sampled at
        // the sample centres), one symbol long in all.
        let symbol = samplesPerSymbol
        var t: [Float] = []
        if mode == .v27 {
            let half = sampleRate / (2 * mode.carrierFrequency), body = symbol - half
            for m in 0..<Int(symbol.rounded(.up)) {
                let x = Double(m) + 0.5
                t.append(Float(max(0, min(body, x) - max(0, x - half))))
            }
        } else {
            for m in 0..<Int(symbol.rounded(.up)) {
                t.append(Float(max(0, min(symbol, Double(m) + 1) - Double(m))))
            }
        }
        let sum = t.reduce(0, +)
        taps = t.reversed().map { $0 / sum }
        ringI = [Float](repeating: 0, count: 2 * taps.count)
        ringQ = ringI
        let w = 2 * Double.pi * mode.carrierFrequency / sampleRate
        oscillatorStep = Complex(re: cos(w), im: -sin(w))
        states = Array(repeating: SlicerState(), count: slicers.count)
        var b: [[Double]] = []
        let m = mode.phaseCount
        for bit in 0..<mode.bitsPerSymbol {
            var edges: [Double] = []
            for i in 0..<m where (mode.symbol(forPhaseSteps: i) ^ mode.symbol(forPhaseSteps: (i + 1) % m)) >> bit & 1 == 1 {
                edges.append(Double(i) + 0.5)
            }
            b.append(edges)
        }
        boundaries = b
    }

    /// Forgets the signal, the clocks and the carrier estimates, as at creation.
    public mutating func reset() {
        self = PSKBitDemodulator(mode: mode, sampleRate: sampleRate, slicers: slicers)
    }

    /// Demodulates `samples` and appends the line bits decided, in time order, to `bits`.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, into bits: inout [SlicedBit]) {
        let n = taps.count
        for x in samples {
            let v = Double(x)
            ringI[ringPosition] = Float(v * oscillator.re)
            ringQ[ringPosition] = Float(v * oscillator.im)
            ringI[ringPosition + n] = ringI[ringPosition]
            ringQ[ringPosition + n] = ringQ[ringPosition]
            ringPosition += 1
            if ringPosition == n { ringPosition = 0 }
            oscillator = oscillator.times(oscillatorStep)
            sampleIndex += 1
            if sampleIndex & 1023 == 0 {
                let g = 1 / oscillator.magnitudeSquared.squareRoot()
                oscillator = oscillator * g
            }
            phaseInGrid += 1
            guard phaseInGrid == decimation else { continue }
            phaseInGrid = 0
            // The oldest sample sits at ringPosition: taps are stored oldest first.
            var re: Float = 0, im: Float = 0
            ringI.withUnsafeBufferPointer { ri in
                ringQ.withUnsafeBufferPointer { rq in
                    taps.withUnsafeBufferPointer { h in
                        for k in 0..<n {
                            re += h[k] * ri[ringPosition + k]
                            im += h[k] * rq[ringPosition + k]
                        }
                    }
                }
            }
            let y = Complex(re: Double(re), im: Double(im))
            for s in states.indices { advance(slicer: s, to: y, bits: &bits) }
            lastFiltered = y
        }
    }

    /// Appends the line bits of `samples` to `bits` (an array convenience).
    public mutating func process(_ samples: [Float], into bits: inout [SlicedBit]) {
        samples.withUnsafeBufferPointer { process($0, into: &bits) }
    }

    private mutating func advance(slicer k: Int, to y: Complex, bits: inout [SlicedBit]) {
        var st = states[k]
        let before = st.clock, after = before + clockStep
        if before < 0.5 && after >= 0.5 {
            let f = (0.5 - before) / clockStep
            st.middle = lastFiltered + (y - lastFiltered) * f
        }
        if after >= 1 {
            let f = (1 - before) / clockStep
            let sym = lastFiltered + (y - lastFiltered) * f
            st.clock = after - 1
            // Gardner: late sampling leaves the middle sample past the transition, on the new symbol's side.
            st.power += 0.05 * (sym.magnitudeSquared - st.power)
            let e = (sym - st.lastSymbol).timesConjugate(st.middle).re / max(st.power, 1e-12)
            st.clock += slicers[k].clockGain * min(1, max(-1, e))
            decide(slicer: k, state: &st, symbol: sym, bits: &bits)
            st.lastSymbol = sym
        } else {
            st.clock = after
        }
        states[k] = st
    }

    private func decide(slicer k: Int, state st: inout SlicerState, symbol sym: Complex, bits: inout [SlicedBit]) {
        let m = mode.phaseCount, step = mode.phaseStep
        var steps: Int
        // Per bit: the coherent slicer's one confidence for the symbol, or (differential) the distance
        // of the phase position `position` from that bit's decision boundaries.
        var coherentConfidence: Double?
        var position = 0.0
        st.symbols &+= 1
        switch slicers[k].detection {
        case .differential:
            var x = (sym.timesConjugate(st.lastSymbol).angle - mode.extraShift) / step
            x = x.truncatingRemainder(dividingBy: Double(m))
            if x < 0 { x += Double(m) }
            steps = Int(x.rounded()) % m
            position = x
        case .coherent:
            // V.26 B turns the constellation by π/4 at every symbol: undo it.
            let turn = -Double(st.symbols % 8) * mode.extraShift
            let r = sym.times(Complex(re: cos(turn), im: sin(turn)))
            let magnitude = r.magnitudeSquared.squareRoot()
            if magnitude > 0 {
                let a = Double(m) * r.angle
                let memory = slicers[k].carrierMemory
                let forget = 1 - 1 / memory
                st.average = st.average * forget + Complex(re: cos(a), im: sin(a)) * (magnitude / memory)
                var estimate = st.average.angle / Double(m)
                // Unwrap to the representative nearest the previous estimate.
                let period = step
                estimate += ((st.carrier - estimate) / period).rounded() * period
                st.carrier = estimate
            }
            var x = (r.angle - st.carrier) / step
            x = x.truncatingRemainder(dividingBy: Double(m))
            if x < 0 { x += Double(m) }
            let index = Int(x.rounded()) % m
            let margin = min(1, max(0, 1 - 2 * abs(x - x.rounded())))
            steps = ((index - st.lastIndex) % m + m) % m
            coherentConfidence = min(margin, st.lastMargin)
            st.lastIndex = index
            st.lastMargin = margin
        }
        let symbol = mode.symbol(forPhaseSteps: steps)
        for b in stride(from: mode.bitsPerSymbol - 1, through: 0, by: -1) {
            let confidence = coherentConfidence ?? boundaryConfidence(position, bit: b)
            bits.append(SlicedBit(slicer: k, mark: symbol >> b & 1 == 1, confidence: Float(confidence), sample: sampleIndex))
        }
    }

    /// How far phase position `x` (in constellation steps, 0..<M) is from the boundaries where bit `b`
    /// changes, as a confidence in 0...1 (half a step or more: 1).
    private func boundaryConfidence(_ x: Double, bit b: Int) -> Double {
        let m = Double(mode.phaseCount)
        var d = 0.5
        for edge in boundaries[b] {
            let raw = abs(x - edge)
            d = min(d, min(raw, m - raw))
        }
        return min(1, d / 0.5)
    }
}
