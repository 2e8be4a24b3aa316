#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ModemRuntime

/// Impairments a channel simulator applies, in the order listed.
public struct ChannelImpairments: Sendable, Hashable {
    /// Sample-clock error of the receiving end in parts per million (-50000...50000; 0 = none): sound-card
    /// drift is within ±1000, ±30000 models a 3 % baud-rate error.
    /// Positive means the receiver's clock runs fast, so it sees the signal stretched.
    public var clockDriftPPM: Double = 0
    /// Band-pass edges in Hz (e.g. 300...3400 for a telephone line), or nil for none.
    public var bandPass: ClosedRange<Double>? = nil
    /// De-emphasis corner in Hz (a first-order low-pass, -6 dB/octave above it), or nil.
    public var deEmphasisCorner: Double? = nil
    /// Gain applied to the signal, in dB (-80...40).
    public var gainDB: Double = 0
    /// White Gaussian noise RMS level relative to full scale, as a linear amplitude (0 = none).
    public var noiseRMS: Double = 0
    /// Mains hum frequency in Hz (50 or 60 typically) and its peak amplitude (linear, full scale 1).
    public var hum: (frequency: Double, amplitude: Double)? = nil
    /// A constant offset added to every sample (linear, full scale 1).
    public var dcOffset: Double = 0
    /// A delayed copy added after the band limits: a room's reflection (delay in seconds, 0...1, and
    /// its gain, -1...1), or nil.
    public var echo: (delaySeconds: Double, gain: Double)? = nil
    /// Seed of the noise generator; the same seed gives the same noise.
    public var seed: UInt64 = 1

    /// No impairment.
    public init() {}

    /// The white-noise RMS (linear, full scale 1) that gives a full-band signal-to-noise ratio of
    /// `snrDB` (noise power over 0...fs/2) for a signal of mean power `signalPower` (mean square,
    /// full scale 1) after a gain of `gainDB`.
    public static func noiseRMS(snrDB: Double, signalPower: Double, gainDB: Double = 0) -> Double {
        (signalPower * pow(10, gainDB / 10) / pow(10, snrDB / 10)).squareRoot()
    }

    public static func == (a: ChannelImpairments, b: ChannelImpairments) -> Bool {
        a.clockDriftPPM == b.clockDriftPPM && a.bandPass == b.bandPass && a.deEmphasisCorner == b.deEmphasisCorner
            && a.gainDB == b.gainDB && a.noiseRMS == b.noiseRMS && a.hum?.frequency == b.hum?.frequency
            && a.hum?.amplitude == b.hum?.amplitude && a.dcOffset == b.dcOffset && a.seed == b.seed
            && a.echo?.delaySeconds == b.echo?.delaySeconds && a.echo?.gain == b.echo?.gain
    }

    public func hash(into h: inout Hasher) {
        h.combine(clockDriftPPM); h.combine(gainDB); h.combine(noiseRMS); h.combine(dcOffset); h.combine(seed)
    }
}

/// A streaming audio channel simulator for tests and benchmarks: clock drift, band limits,
/// de-emphasis, gain, white noise, hum and DC offset. Deterministic for a given seed.
public struct ChannelSimulator: Sendable {
    /// The impairments applied.
    public let impairments: ChannelImpairments
    /// Sample rate in Hz.
    public let sampleRate: Double

    private var rng: SplitMix64
    private var filters: [Biquad] = []
    private var deemph: (a: Float, state: Float)?
    private var humPhase: Double = 0
    // Resampler state: output time in input samples, and the input kept for the interpolator.
    private var readPosition: Double = 0
    private var resampler: FractionalResampler?
    private let step: Double
    // Echo: the last `delay` samples after the band limits.
    private var echoLine: [Float] = []
    private var echoAt = 0

    /// Creates a simulator.
    /// - Parameters:
    ///   - impairments: what to apply.
    ///   - sampleRate: samples per second, Hz (8000...192000).
    public init(impairments: ChannelImpairments, sampleRate: Double) {
        precondition(sampleRate >= 1000, "sampleRate must be at least 1000 Hz")
        precondition(abs(impairments.clockDriftPPM) <= 50000, "clockDriftPPM must be within ±50000 (5 %)")
        self.impairments = impairments
        self.sampleRate = sampleRate
        rng = SplitMix64(seed: impairments.seed)
        if let band = impairments.bandPass {
            // Fourth-order Butterworth-like edges: two second-order sections per edge.
            for _ in 0..<2 {
                filters.append(Biquad.highPass(cutoff: band.lowerBound, q: 0.7071, sampleRate: sampleRate))
                filters.append(Biquad.lowPass(cutoff: min(band.upperBound, sampleRate * 0.45), q: 0.7071, sampleRate: sampleRate))
            }
        }
        if let c = impairments.deEmphasisCorner {
            deemph = (Float(1 - exp(-2 * Double.pi * c / sampleRate)), 0)
        }
        // The receiver takes 1 + ppm·1e-6 of its samples per input sample.
        step = 1 / (1 + impairments.clockDriftPPM * 1e-6)
        if impairments.clockDriftPPM != 0 {
            // Windowed sinc: exact enough for the top of the band (a cubic is not, for high-order QAM).
            resampler = FractionalResampler(cutoff: min(0.92, 0.92 / step))
        }
        if let e = impairments.echo {
            precondition(e.delaySeconds >= 0 && e.delaySeconds <= 1 && abs(e.gain) <= 1, "echo delay must be 0...1 s and gain -1...1")
            echoLine = [Float](repeating: 0, count: max(1, Int((e.delaySeconds * sampleRate).rounded())))
        }
    }

    /// Gaussian noise samples with unit variance, for callers that add noise themselves.
    public mutating func gaussian() -> Float { Float(rng.gaussian()) }

    /// Passes `input` through the channel and returns the output (its length differs from the
    /// input's by the clock drift). With drift, the last points of the input so far are held back
    /// until the interpolator has the input after them: ``finish()`` gives them at the input's end.
    public mutating func process(_ input: [Float]) -> [Float] {
        var x = input
        if impairments.clockDriftPPM != 0 { x = resample(x) }
        shape(&x)
        return x
    }

    /// Says the input has ended and returns the rest of the output: with drift, the points still
    /// held back (about the input's last 18 samples' worth, read with silence after the end), so
    /// the output spans the whole input (`ceil(samples · (1 + ppm · 1e-6))` samples in all);
    /// nothing without drift. Input given after this is taken to follow that silence.
    public mutating func finish() -> [Float] {
        guard var r = resampler else { return [] }
        resampler = nil
        // Every point before the input's end: the taps past it read silence.
        let inputEnd = Double(r.end)
        let silence = [Float](repeating: 0, count: FractionalResampler.taps)
        silence.withUnsafeBufferPointer { r.append($0) }
        let count = readPosition < inputEnd ? Int(((inputEnd - readPosition) / step).rounded(.up)) : 0
        var x = [Float](repeating: 0, count: count)
        if count > 0 { x.withUnsafeMutableBufferPointer { r.read(from: readPosition, step: step, into: $0) } }
        readPosition += Double(count) * step
        r.discard(before: Int64(readPosition.rounded(.down)) - Int64(FractionalResampler.taps))
        resampler = r
        shape(&x)
        return x
    }

    /// Everything after the clock: band limits, echo, de-emphasis, gain, noise, hum, DC.
    private mutating func shape(_ x: inout [Float]) {
        for i in filters.indices { filters[i].process(&x) }
        if let e = impairments.echo {
            let g = Float(e.gain)
            for i in x.indices {
                let delayed = echoLine[echoAt]
                echoLine[echoAt] = x[i]
                echoAt = (echoAt + 1) % echoLine.count
                x[i] += g * delayed
            }
        }
        if var d = deemph {
            for i in x.indices { d.state += d.a * (x[i] - d.state); x[i] = d.state }
            deemph = d
        }
        let g = Float(pow(10, impairments.gainDB / 20))
        let n = Float(impairments.noiseRMS)
        let dc = Float(impairments.dcOffset)
        let humW = 2 * Double.pi * (impairments.hum?.frequency ?? 0) / sampleRate
        let humA = impairments.hum?.amplitude ?? 0
        for i in x.indices {
            var v = x[i] * g + dc
            if n > 0 { v += n * Float(rng.gaussian()) }
            if humA > 0 {
                v += Float(humA * sin(humPhase))
                humPhase += humW
                if humPhase > 2 * Double.pi { humPhase -= 2 * Double.pi }
            }
            x[i] = v
        }
    }

    private mutating func resample(_ input: [Float]) -> [Float] {
        guard var r = resampler else { return input }
        resampler = nil   // so the buffers are not copied on write
        input.withUnsafeBufferPointer { r.append($0) }
        // Points whose taps are all held: up to 18 samples before the end (``finish()`` gives the rest).
        let last = Double(r.end - Int64(FractionalResampler.taps / 2) - 2)
        let count = readPosition <= last ? Int(((last - readPosition) / step).rounded(.down)) + 1 : 0
        var out = [Float](repeating: 0, count: count)
        if count > 0 { out.withUnsafeMutableBufferPointer { r.read(from: readPosition, step: step, into: $0) } }
        readPosition += Double(count) * step
        r.discard(before: Int64(readPosition.rounded(.down)) - Int64(FractionalResampler.taps))
        resampler = r
        return out
    }
}

/// A second-order IIR section (RBJ cookbook coefficients), direct form I.
struct Biquad: Sendable {
    var b0: Float, b1: Float, b2: Float, a1: Float, a2: Float
    var x1: Float = 0, x2: Float = 0, y1: Float = 0, y2: Float = 0

    static func lowPass(cutoff: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * cutoff / sampleRate
        let alpha = sin(w) / (2 * q), c = cos(w), a0 = 1 + alpha
        return Biquad(b0: Float((1 - c) / 2 / a0), b1: Float((1 - c) / a0), b2: Float((1 - c) / 2 / a0),
                      a1: Float(-2 * c / a0), a2: Float((1 - alpha) / a0))
    }

    static func highPass(cutoff: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * cutoff / sampleRate
        let alpha = sin(w) / (2 * q), c = cos(w), a0 = 1 + alpha
        return Biquad(b0: Float((1 + c) / 2 / a0), b1: Float(-(1 + c) / a0), b2: Float((1 + c) / 2 / a0),
                      a1: Float(-2 * c / a0), a2: Float((1 - alpha) / a0))
    }

    mutating func process(_ x: inout [Float]) {
        for i in x.indices {
            let v = x[i]
            let y = b0 * v + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            x2 = x1; x1 = v; y2 = y1; y1 = y
            x[i] = y
        }
    }
}
