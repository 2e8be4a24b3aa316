#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Differential PSK modulator for Dire Wolf's 2400 bit/s QPSK (V.26) and 4800 bit/s 8PSK (V.27)
/// packet modes (see ``PSKMode``): a continuous 1800 Hz carrier whose phase jumps at each symbol
/// boundary by the symbol's phase change, as Dire Wolf's `gen_tone.c` makes it (no pulse shaping: the
/// receivers' filters and the radio's audio path band-limit it).
///
/// Bits are taken ``PSKMode/bitsPerSymbol`` at a time; a bit left over at the end of a call waits for
/// the next call's bits, so calls may split a transmission anywhere. Symbol boundaries are exact on
/// average for any sample rate.
public struct PSKModulator: Sendable {
    /// The mode: QPSK with either V.26 phasing, or 8PSK.
    public let mode: PSKMode
    /// Samples per second, in Hz.
    public let sampleRate: Double
    /// Peak level, 0 < a <= 1.
    public let amplitude: Float

    /// The carrier's phase at the next sample, in cycles (0..<1), without the data's phase.
    private var carrierPhase: Double = 0
    /// The data's phase, in steps of π/4 (0..<8).
    private var dataPhase = 0
    /// Bits waiting to make a symbol, first bit most significant, and how many.
    private var pending = 0
    private var pendingCount = 0
    /// Symbol time elapsed, in samples, and samples written.
    private var timeInSamples: Double = 0
    private var emitted = 0

    /// Creates a modulator.
    /// - Parameters:
    ///   - mode: the PSK mode.
    ///   - sampleRate: Hz (8000...192000).
    ///   - amplitude: 0 < amplitude <= 1 (default 0.5).
    public init(mode: PSKMode, sampleRate: Double, amplitude: Float = 0.5) {
        precondition((8000...192_000).contains(sampleRate), "PSKModulator sampleRate must be 8000...192000 Hz, got \(sampleRate)")
        precondition(amplitude > 0 && amplitude <= 1, "PSKModulator amplitude must be 0 < a <= 1, got \(amplitude)")
        self.mode = mode
        self.sampleRate = sampleRate
        self.amplitude = amplitude
    }

    /// Samples per symbol (may be fractional).
    public var samplesPerSymbol: Double { sampleRate / mode.symbolRate }

    /// Appends the audio of `bits` (the line levels, e.g. NRZI-coded HDLC) to `output`: one symbol per
    /// ``PSKMode/bitsPerSymbol`` bits; the rest waits for the next call.
    public mutating func appendBits(_ bits: some Sequence<Bool>, to output: inout [Float]) {
        let perSymbol = mode.bitsPerSymbol
        // In steps of π/4: a QPSK step is two of them, V.26 B adds one.
        let unit = 8 / mode.phaseCount, extra = mode == .v26B ? 1 : 0
        for bit in bits {
            pending = pending << 1 | (bit ? 1 : 0)
            pendingCount += 1
            guard pendingCount == perSymbol else { continue }
            dataPhase = (dataPhase + mode.phaseSteps(forSymbol: pending) * unit + extra) & 7
            pending = 0
            pendingCount = 0
            appendCarrier(samples: nextSymbolSamples(), to: &output)
        }
    }

    /// Appends silence lasting `seconds` (0 or more). Bits waiting for a symbol keep waiting.
    public mutating func appendSilence(seconds: Double, to output: inout [Float]) {
        precondition(seconds >= 0 && seconds.isFinite, "PSKModulator silence must be 0 or more seconds, got \(seconds)")
        timeInSamples += seconds * sampleRate
        let end = Int(timeInSamples.rounded())
        let n = max(0, end - emitted)
        emitted = max(emitted, end)
        output.append(contentsOf: repeatElement(0, count: n))
    }

    /// Forgets waiting bits, the phase and the time, as at creation.
    public mutating func reset() {
        self = PSKModulator(mode: mode, sampleRate: sampleRate, amplitude: amplitude)
    }

    private mutating func nextSymbolSamples() -> Int {
        timeInSamples += samplesPerSymbol
        let end = Int(timeInSamples.rounded())
        let n = max(0, end - emitted)
        emitted = max(emitted, end)
        return n
    }

    private mutating func appendCarrier(samples n: Int, to output: inout [Float]) {
        let step = mode.carrierFrequency / sampleRate
        let offset = Double(dataPhase) / 8
        output.reserveCapacity(output.count + n)
        for _ in 0..<n {
            output.append(amplitude * Float(sin(2 * Double.pi * (carrierPhase + offset))))
            carrierPhase += step
            if carrierPhase >= 1 { carrierPhase -= 1 }
        }
    }
}
