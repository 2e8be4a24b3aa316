#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime

/// What an ``HFChannelSimulator`` does to the audio between two SSB radios.
public struct HFChannelImpairments: Sendable, Hashable {
    /// The SNR in a 3 kHz band (SNR3k, dB), as HF channel simulators state it: white noise over the
    /// receiver's audio band, its power in 3 kHz this far below the signal's. Nil: no noise.
    public var snr3kDB: Double?
    /// The receiver's mistuning: the received audio is this many Hz above the sent (±200).
    public var frequencyOffset: Double
    /// A second path (a two-path Watterson-like channel): its delay in seconds (0...0.01) and the
    /// Doppler spread of both paths in Hz (each path's gain wanders as a sum of eight seeded
    /// sinusoids within ±spread, the average power kept). Nil: one steady path.
    public var fading: (delaySeconds: Double, dopplerHz: Double)?
    /// Seed of the noise and the fading.
    public var seed: UInt64

    /// Creates impairments (default: a clean, steady, tuned line).
    public init(snr3kDB: Double? = nil, frequencyOffset: Double = 0, fading: (delaySeconds: Double, dopplerHz: Double)? = nil, seed: UInt64 = 1) {
        precondition(abs(frequencyOffset) <= 200, "frequencyOffset must be within ±200 Hz")
        precondition(fading.map { (0...0.01).contains($0.delaySeconds) && (0...10).contains($0.dopplerHz) } ?? true,
                     "fading: delay 0...10 ms, Doppler spread 0...10 Hz")
        self.snr3kDB = snr3kDB
        self.frequencyOffset = frequencyOffset
        self.fading = fading
        self.seed = seed
    }

    public static func == (a: HFChannelImpairments, b: HFChannelImpairments) -> Bool {
        a.snr3kDB == b.snr3kDB && a.frequencyOffset == b.frequencyOffset && a.fading?.delaySeconds == b.fading?.delaySeconds
            && a.fading?.dopplerHz == b.fading?.dopplerHz && a.seed == b.seed
    }

    public func hash(into h: inout Hasher) {
        h.combine(snr3kDB)
        h.combine(frequencyOffset)
        h.combine(fading?.delaySeconds)
        h.combine(fading?.dopplerHz)
        h.combine(seed)
    }
}

/// A streaming simulator of the audio path between two SSB radios, for tests and the link's
/// simulated HF line: the input (at 8 kHz or a whole multiple) is filtered to the radio's band and
/// brought to 8 kHz, mixed to complex baseband around ``HFGrid/centreHz``, passed through one steady
/// path or two fading ones, shifted by the mistuning, brought back to audio, given the noise of a
/// receiver's audio band, and raised to the input's rate again. Output has exactly as many samples as
/// input (after a fixed delay of a few milliseconds). Deterministic for a given seed.
public struct HFChannelSimulator: Sendable {
    /// What it does.
    public let impairments: HFChannelImpairments
    /// The input's and output's rate over 8 kHz.
    public let factor: Int
    private var decimator: HFFilters.Decimator
    private var interpolator: HFFilters.Interpolator
    private let lowPass: [Float]
    private var historyRe: [Float]
    private var historyIm: [Float]
    private var delayLine: [(Float, Float)]
    private let delaySamples: Int
    private var n = 0
    private var paths: [[(f: Double, phase: Double)]] = []
    private var noise: SplitMix64
    private let noiseSigma: Float
    private var spare: Float?

    /// Creates a simulator for audio at `sampleRate` (a whole multiple of 8 kHz) carrying a signal of
    /// mean power `signalPower` (mean square, full scale 1), which the SNR is counted against.
    public init(impairments: HFChannelImpairments, sampleRate: Int, signalPower: Double) {
        precondition(sampleRate > 0 && sampleRate % Int(HFGrid.sampleRate) == 0, "the HF channel runs at a whole multiple of 8000 Hz")
        self.impairments = impairments
        factor = sampleRate / Int(HFGrid.sampleRate)
        decimator = HFFilters.Decimator(factor: factor)
        interpolator = HFFilters.Interpolator(factor: factor)
        // ±1.45 kHz around the centre, flat to about ±1.25 kHz: the radio's 190-2690 Hz, wider than
        // the modem's carriers (312-2594 Hz) even mistuned by 100 Hz, so the band's edges cost no SNR.
        lowPass = HFFilters.lowPass(taps: 127, cutoff: 1450 / HFGrid.sampleRate)
        historyRe = [Float](repeating: 0, count: 126)
        historyIm = historyRe
        delaySamples = impairments.fading.map { Int(($0.delaySeconds * HFGrid.sampleRate).rounded()) } ?? 0
        delayLine = [(Float, Float)](repeating: (0, 0), count: delaySamples + 1)
        var rng = SplitMix64(seed: impairments.seed ^ 0xFAD1_0000)
        if let f = impairments.fading {
            for _ in 0..<2 {
                paths.append((0..<8).map { _ in (f: (rng.uniform() * 2 - 1) * f.dopplerHz, phase: rng.uniform() * 2 * .pi) })
            }
        }
        noise = SplitMix64(seed: impairments.seed ^ 0x0015_E000)
        // White noise over 0-4 kHz whose power in 3 kHz is the signal's over the SNR.
        noiseSigma = impairments.snr3kDB.map { Float((signalPower / pow(10, $0 / 10) * 4000 / 3000).squareRoot()) } ?? 0
    }

    /// A path's complex gain at time `t` (s): eight sinusoids, mean power 1/2 per path (1 for both).
    private func gain(_ path: [(f: Double, phase: Double)], _ t: Double) -> (Float, Float) {
        var r = 0.0, i = 0.0
        for c in path {
            let p = 2 * .pi * c.f * t + c.phase
            r += cos(p)
            i += sin(p)
        }
        // Eight unit phasors: mean power 8; scaled to 1/2.
        let scale = (1.0 / 16).squareRoot()
        return (Float(r * scale), Float(i * scale))
    }

    private mutating func gaussian() -> Float {
        if let s = spare { spare = nil; return s }
        var u = 0.0
        repeat { u = noise.uniform() } while u <= 1e-300
        let v = noise.uniform()
        let m = (-2 * log(u)).squareRoot()
        spare = Float(m * sin(2 * .pi * v))
        return Float(m * cos(2 * .pi * v))
    }

    /// Passes a block through the channel; returns as many samples.
    public mutating func process(_ input: [Float]) -> [Float] {
        var low: [Float] = []
        input.withUnsafeBufferPointer { decimator.push($0, into: &low) }
        var out8 = [Float](repeating: 0, count: low.count)
        let wc = 2 * Double.pi * HFGrid.centreHz / HFGrid.sampleRate
        let wo = 2 * Double.pi * impairments.frequencyOffset / HFGrid.sampleRate
        let taps = lowPass.count
        for (k, x) in low.enumerated() {
            let t = Double(n)
            // Mixed down and low-passed (a causal filter: the whole line is delayed alike).
            let mr = x * Float(cos(wc * t)) * 2, mi = -x * Float(sin(wc * t)) * 2
            historyRe.append(mr)
            historyIm.append(mi)
            var zr: Float = 0, zi: Float = 0
            let base = historyRe.count - taps
            for m in 0..<taps {
                zr += lowPass[m] * historyRe[base + m]
                zi += lowPass[m] * historyIm[base + m]
            }
            if historyRe.count > 4096 {
                historyRe.removeFirst(historyRe.count - (taps - 1))
                historyIm.removeFirst(historyIm.count - (taps - 1))
            }
            var yr = zr, yi = zi
            if !paths.isEmpty {
                delayLine.removeFirst()
                delayLine.append((zr, zi))
                let seconds = t / HFGrid.sampleRate
                let g1 = gain(paths[0], seconds), g2 = gain(paths[1], seconds)
                let (dr, di) = delayLine[0]
                yr = zr * g1.0 - zi * g1.1 + dr * g2.0 - di * g2.1
                yi = zr * g1.1 + zi * g1.0 + dr * g2.1 + di * g2.0
            }
            // Back to audio, shifted by the mistuning.
            let p = (wc + wo) * t
            var y = yr * Float(cos(p)) - yi * Float(sin(p))
            if noiseSigma > 0 { y += noiseSigma * gaussian() }
            out8[k] = y
            n += 1
        }
        var out: [Float] = []
        out8.withUnsafeBufferPointer { interpolator.push($0, into: &out) }
        // Exactly as many as went in: the decimator's phase can leave the first blocks a few short.
        if out.count < input.count { out = [Float](repeating: 0, count: input.count - out.count) + out }
        return out
    }
}

extension HFFilters {
    /// A streaming interpolator by an integer factor from 8 kHz: each input sample becomes `factor`
    /// outputs, filtered below 3.4 kHz (as ``interpolate(_:factor:)``, delayed by the filter).
    public struct Interpolator: Sendable {
        /// The output rate over 8 kHz.
        public let factor: Int
        private let h: [Float]
        private var history: [Float]

        /// An interpolator to `factor` × 8 kHz.
        public init(factor: Int) {
            precondition(factor >= 1)
            self.factor = factor
            let taps = 24 * factor + 1
            h = factor == 1 ? [1] : HFFilters.lowPass(taps: taps, cutoff: 3400 / (HFGrid.sampleRate * Double(factor))).map { $0 * Float(factor) }
            history = [Float](repeating: 0, count: factor == 1 ? 0 : 25)
        }

        /// Pushes 8 kHz samples; appends `factor` outputs per sample to `out`.
        public mutating func push(_ input: UnsafeBufferPointer<Float>, into out: inout [Float]) {
            if factor == 1 {
                out.append(contentsOf: input)
                return
            }
            let taps = h.count
            // Output sample j·factor + r of the newest input x[j]: Σ_m h[m] u[j·factor + r − m], u the
            // zero-stuffed input; the inputs that count are x[j − q] with m = q·factor + r.
            for x in input {
                history.append(x)
                let last = history.count - 1
                for r in 0..<factor {
                    var acc: Float = 0
                    var m = r
                    var q = 0
                    while m < taps {
                        acc += h[m] * history[last - q]
                        m += factor
                        q += 1
                    }
                    out.append(acc)
                }
                if history.count > 4096 { history.removeFirst(history.count - 25) }
            }
        }
    }
}
