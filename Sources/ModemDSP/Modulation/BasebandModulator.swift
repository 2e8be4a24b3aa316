#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Baseband NRZ modulator for G3RUH-style 9600 baud packet radio: each line bit becomes a level of
/// ±amplitude held for one bit period, then low-passed (a Hann-windowed sinc, cut off at 0.6 × the
/// baud rate) so the signal fits an FM radio's audio path.
///
/// Bit boundaries are exact on average for any ratio of sample rate to baud rate.
public struct BasebandModulator: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Double
    /// Bits per second.
    public let baudRate: Double
    /// Peak level before filtering, 0...1.
    public let amplitude: Float

    private let taps: [Float]
    private var history: [Float]       // the last taps.count - 1 unfiltered samples
    private var timeInSamples: Double = 0
    private var emitted = 0

    /// Creates a modulator.
    /// - Parameters:
    ///   - sampleRate: Hz (8000...192000).
    ///   - baudRate: bits per second, at most sampleRate/4.
    ///   - amplitude: 0 < amplitude <= 1 (default 0.5).
    public init(sampleRate: Double, baudRate: Double, amplitude: Float = 0.5) {
        precondition((8000...192_000).contains(sampleRate), "sampleRate must be 8000...192000 Hz")
        precondition(baudRate > 0 && baudRate <= sampleRate / 4, "baudRate must be 0 < baud <= sampleRate/4")
        precondition(amplitude > 0 && amplitude <= 1, "amplitude must be 0 < a <= 1")
        self.sampleRate = sampleRate
        self.baudRate = baudRate
        self.amplitude = amplitude
        let cutoff = 0.6 * baudRate / sampleRate          // cycles per sample
        let half = Int((2 * sampleRate / baudRate).rounded(.up))   // two bits each side
        var t: [Float] = []
        for n in -half...half {
            let x = Double(n)
            let sinc = n == 0 ? 2 * cutoff : sin(2 * Double.pi * cutoff * x) / (Double.pi * x)
            let window = 0.5 + 0.5 * cos(Double.pi * x / Double(half + 1))
            t.append(Float(sinc * window))
        }
        let sum = t.reduce(0, +)
        taps = t.map { $0 / sum }
        history = [Float](repeating: 0, count: taps.count - 1)
    }

    /// Appends the filtered samples of `levels` (true = positive) to `output`. The filter's delay
    /// (two bit periods) is flushed by ``appendSilence(seconds:to:)`` or later bits.
    public mutating func appendBits(_ levels: some Sequence<Bool>, to output: inout [Float]) {
        var raw: [Float] = []
        for level in levels {
            timeInSamples += sampleRate / baudRate
            let end = Int(timeInSamples.rounded())
            let n = end - emitted
            if n > 0 { raw.append(contentsOf: repeatElement(level ? amplitude : -amplitude, count: n)) }
            emitted = max(emitted, end)
        }
        filter(raw, to: &output)
    }

    /// Appends silence lasting `seconds` (it also flushes the filter).
    public mutating func appendSilence(seconds: Double, to output: inout [Float]) {
        timeInSamples += seconds * sampleRate
        let end = Int(timeInSamples.rounded())
        let n = max(0, end - emitted)
        emitted = max(emitted, end)
        filter([Float](repeating: 0, count: n), to: &output)
    }

    private mutating func filter(_ raw: [Float], to output: inout [Float]) {
        guard !raw.isEmpty else { return }
        let x = history + raw
        let m = taps.count
        output.reserveCapacity(output.count + raw.count)
        for i in 0..<raw.count {
            var acc: Float = 0
            for k in 0..<m { acc += taps[k] * x[i + k] }
            output.append(acc)
        }
        history = Array(x.suffix(m - 1))
    }
}
