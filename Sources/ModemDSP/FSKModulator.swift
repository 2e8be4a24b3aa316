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

    private var phase: Double = 0          // radians, 0..<2pi
    private var timeInSamples: Double = 0  // fractional time of the end of what was emitted
    private var emitted: Int = 0           // samples emitted so far
    private let markStep: Double
    private let spaceStep: Double
    // cos(step*k) and sin(step*k) for k in 0..<tableLength, per tone: a run of n samples starting at
    // phase p is amplitude * (sin p * cos(step*k) + cos p * sin(step*k)), a vectorisable loop.
    private let markCos: [Float], markSin: [Float], spaceCos: [Float], spaceSin: [Float]
    private let tableLength: Int

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
        let ms = markStep, ss = spaceStep
        markCos = (0..<len).map { Float(cos(ms * Double($0))) }
        markSin = (0..<len).map { Float(sin(ms * Double($0))) }
        spaceCos = (0..<len).map { Float(cos(ss * Double($0))) }
        spaceSin = (0..<len).map { Float(sin(ss * Double($0))) }
    }

    /// Forgets all state (phase and time).
    public mutating func reset() {
        phase = 0; timeInSamples = 0; emitted = 0
    }

    /// Appends the tone for `level` (true = mark) lasting `bits` bit periods to `output`.
    /// - Parameter bits: duration in bit periods (> 0; fractions such as 1.5 stop bits are exact on average).
    public mutating func appendTone(mark level: Bool, bits: Double, to output: inout [Float]) {
        timeInSamples += bits * configuration.samplesPerBit
        let end = Int(timeInSamples.rounded())
        let n = end - emitted
        guard n > 0 else { return }
        let step = level ? markStep : spaceStep
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: n))
        var p = phase
        let cosT = level ? markCos : spaceCos
        let sinT = level ? markSin : spaceSin
        let len = tableLength
        output.withUnsafeMutableBufferPointer { out in
            cosT.withUnsafeBufferPointer { ct in
                sinT.withUnsafeBufferPointer { st in
                    var done = 0
                    while done < n {
                        let chunk = min(len, n - done)
                        let a = Float(sin(p)) * amplitude, b = Float(cos(p)) * amplitude
                        let o = out.baseAddress! + start + done
                        for k in 0..<chunk { o[k] = a * ct[k] + b * st[k] }
                        p = (p + step * Double(chunk)).truncatingRemainder(dividingBy: 2 * Double.pi)
                        done += chunk
                    }
                }
            }
        }
        phase = p
        emitted = end
    }

    /// Appends a sequence of bits, one bit period each.
    public mutating func appendBits(_ bits: some Sequence<Bool>, to output: inout [Float]) {
        for b in bits { appendTone(mark: b, bits: 1, to: &output) }
    }

    /// Appends `count` bits taken from `word`, least significant bit first.
    public mutating func appendWord(_ word: UInt32, count: Int, to output: inout [Float]) {
        // Merge runs of equal bits into one tone for speed.
        var i = 0
        while i < count {
            let level = (word >> UInt32(i)) & 1 == 1
            var j = i + 1
            while j < count, ((word >> UInt32(j)) & 1 == 1) == level { j += 1 }
            appendTone(mark: level, bits: Double(j - i), to: &output)
            i = j
        }
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
