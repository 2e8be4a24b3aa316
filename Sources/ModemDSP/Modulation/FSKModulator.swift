#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A phase-continuous binary FSK modulator.
///
/// Bit boundaries are kept exact on average for any ratio of sample rate to baud rate: the
/// modulator tracks fractional sample time, so a 44.1 kHz / 1200 baud stream does not drift.
/// The phase never jumps when the tone changes.
public struct FSKModulator: Sendable {
    /// The checked parameters.
    public let configuration: FSKConfiguration
    /// Peak amplitude of the output, 0...1 (full scale is 1).
    public let amplitude: Float

    private var sinPhase: Double = 0       // the carrier phase p as sin p, cos p
    private var cosPhase: Double = 1
    private var timeInSamples: Double = 0  // fractional time of the end of what was emitted
    private var emitted: Int = 0           // samples emitted so far
    private let markStep: Double
    private let spaceStep: Double
    // cos(step*k) and sin(step*k) for k in 0..<tableLength, per tone: a run of n samples starting at
    // phase p is amplitude * (sin p * cos(step*k) + cos p * sin(step*k)), a vectorisable loop.
    // Layout: mark cos, mark sin, space cos, space sin.
    private let tables: [Float]
    private let tableLength: Int
    // cos/sin(step*k) in double precision for k in 0...tableLength, same layout, to advance the phasor.
    private let rotations: [Double]

    /// Creates a modulator.
    /// - Parameters:
    ///   - configuration: sample rate, baud and tones.
    ///   - amplitude: peak level, 0 < amplitude <= 1 (default 0.7, about -3 dBFS).
    public init(configuration: FSKConfiguration, amplitude: Float = 0.7) {
        precondition(amplitude > 0 && amplitude <= 1, "amplitude must be in 0 < a <= 1")
        self.configuration = configuration
        self.amplitude = amplitude
        markStep = 2 * Double.pi * configuration.markFrequency / configuration.sampleRate
        spaceStep = 2 * Double.pi * configuration.spaceFrequency / configuration.sampleRate
        let len = max(64, min(4096, Int(configuration.samplesPerBit.rounded(.up)) + 1))
        tableLength = len
        var t: [Float] = []
        var r: [Double] = []
        for step in [markStep, spaceStep] {
            t += (0..<len).map { Float(cos(step * Double($0))) }
            t += (0..<len).map { Float(sin(step * Double($0))) }
            r += (0...len).map { cos(step * Double($0)) }
            r += (0...len).map { sin(step * Double($0)) }
        }
        tables = t
        rotations = r
    }

    /// Forgets all state (phase and time).
    public mutating func reset() {
        sinPhase = 0; cosPhase = 1; timeInSamples = 0; emitted = 0
    }

    /// Appends the tone for `level` (true = mark) lasting `bits` bit periods to `output`.
    /// - Parameter bits: duration in bit periods (> 0; fractions such as 1.5 stop bits are exact on average).
    public mutating func appendTone(mark level: Bool, bits: Double, to output: inout [Float]) {
        emit([ToneRun(mark: level, bits: bits)], to: &output)
    }

    /// Appends a sequence of bits, one bit period each.
    public mutating func appendBits(_ bits: some Sequence<Bool>, to output: inout [Float]) {
        emit(bits.map { ToneRun(mark: $0, bits: 1) }, to: &output)
    }

    /// Appends `count` bits taken from `word`, least significant bit first.
    public mutating func appendWord(_ word: UInt32, count: Int, to output: inout [Float]) {
        var runs: [ToneRun] = []
        Self.addRuns(of: word, count: count, to: &runs)
        emit(runs, to: &output)
    }

    /// Appends asynchronous characters: for each word, `bitsBeforeStop` bits (LSB first: the start
    /// bit, data and parity) followed by a mark stop element of `stopBits` bit periods.
    /// One call for many characters is much faster than a call per character.
    public mutating func appendCharacters(_ words: some Sequence<UInt32>, bitsBeforeStop: Int, stopBits: Double,
                                          to output: inout [Float]) {
        var runs: [ToneRun] = []
        runs.reserveCapacity(words.underestimatedCount * 6)
        for w in words {
            Self.addRuns(of: w, count: bitsBeforeStop, to: &runs)
            runs.append(ToneRun(mark: true, bits: stopBits))
        }
        emit(runs, to: &output)
    }

    /// A stretch of one tone.
    struct ToneRun {
        var mark: Bool
        var bits: Double
    }

    /// Splits `count` bits of `word` into runs of equal bits, merging with the previous run.
    static func addRuns(of word: UInt32, count: Int, to runs: inout [ToneRun]) {
        for i in 0..<count {
            let level = (word >> UInt32(i)) & 1 == 1
            if let last = runs.last, last.mark == level {
                runs[runs.count - 1].bits += 1
            } else {
                runs.append(ToneRun(mark: level, bits: 1))
            }
        }
    }

    /// Renders tone runs. The phase is carried as a unit phasor (sin p, cos p) and advanced by
    /// table rotations, so there is no trigonometric call and no allocation per run.
    private mutating func emit(_ runs: [ToneRun], to output: inout [Float]) {
        // Sample counts first (exact fractional timing), then one pass of rendering.
        var counts = [Int](repeating: 0, count: runs.count)
        var total = 0
        for (i, r) in runs.enumerated() {
            timeInSamples += r.bits * configuration.samplesPerBit
            let end = Int(timeInSamples.rounded())
            counts[i] = max(0, end - emitted)
            emitted = max(emitted, end)
            total += counts[i]
        }
        guard total > 0 else { return }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: total))
        var sp = sinPhase, cp = cosPhase
        let len = tableLength
        let amp = amplitude
        output.withUnsafeMutableBufferPointer { out in
            tables.withUnsafeBufferPointer { tab in
                rotations.withUnsafeBufferPointer { rot in
                    var o = out.baseAddress! + start
                    for (i, r) in runs.enumerated() {
                        let n = counts[i]
                        // Layout: mark cos, mark sin, space cos, space sin, each `len` long.
                        let ct = tab.baseAddress! + (r.mark ? 0 : 2 * len)
                        let st = ct + len
                        let rc = rot.baseAddress! + (r.mark ? 0 : 2 * (len + 1))
                        let rs = rc + (len + 1)
                        var done = 0
                        while done < n {
                            let chunk = min(len, n - done)
                            let a = Float(sp) * amp, b = Float(cp) * amp
                            for k in 0..<chunk { o[k] = a * ct[k] + b * st[k] }
                            let c = rc[chunk], s = rs[chunk]
                            (sp, cp) = (sp * c + cp * s, cp * c - sp * s)
                            o += chunk
                            done += chunk
                        }
                    }
                }
            }
        }
        // Keep the phasor on the unit circle.
        let norm = (sp * sp + cp * cp).squareRoot()
        sinPhase = sp / norm
        cosPhase = cp / norm
    }

    /// Appends silence lasting `seconds` (keeps bit timing consistent afterwards).
    public mutating func appendSilence(seconds: Double, to output: inout [Float]) {
        timeInSamples += seconds * configuration.sampleRate
        let end = Int(timeInSamples.rounded())
        let n = end - emitted
        if n > 0 { output.append(contentsOf: repeatElement(0, count: n)) }
        emitted = max(emitted, end)
    }
}
