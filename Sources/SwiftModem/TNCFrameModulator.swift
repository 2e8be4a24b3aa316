import ModemCodecs
import ModemDSP

/// Turns the AX.25 frames a KISS client sends into audio: a preamble of flags (TXDELAY), the frame
/// with its FCS, bit-stuffed and NRZI-coded, flags (TXTAIL), then silence.
///
/// The bytes are sent as the client gave them (a KISS data frame is an AX.25 frame without FCS);
/// the FCS is computed here.
public struct TNCFrameModulator: Sendable {
    /// Sample rate, baud and tones.
    public let configuration: FSKConfiguration
    private var modulator: FSKModulator
    private var nrzi = NRZIEncoder()

    /// Creates a modulator.
    /// - Parameters:
    ///   - configuration: sample rate, baud and tones.
    ///   - amplitude: peak level, 0 < a <= 1.
    public init(configuration: FSKConfiguration, amplitude: Float = 0.7) {
        precondition(amplitude > 0 && amplitude <= 1, "TNCFrameModulator amplitude must be in 0 < a <= 1, got \(amplitude)")
        self.configuration = configuration
        modulator = FSKModulator(configuration: configuration, amplitude: amplitude)
    }

    /// The flags that fill `milliseconds` at the line's baud rate (8 bits each), at least `minimum`.
    public func flags(milliseconds: Double, minimum: Int) -> Int {
        max(minimum, Int((milliseconds / 1000 * configuration.baudRate / 8).rounded()))
    }

    /// The audio of one transmission holding `frame`.
    /// - Parameters:
    ///   - frame: an AX.25 frame without FCS.
    ///   - txDelayMilliseconds: flags before the frame, as time (at least 1 flag).
    ///   - txTailMilliseconds: flags after it, as time (at least 3 flags).
    ///   - gapSeconds: silence after the transmission, seconds (0 or more).
    public mutating func transmission(of frame: [UInt8], txDelayMilliseconds: Double, txTailMilliseconds: Double,
                                      gapSeconds: Double) -> [Float] {
        let encoder = HDLCEncoder(leadingFlags: flags(milliseconds: txDelayMilliseconds, minimum: 1),
                                  trailingFlags: flags(milliseconds: txTailMilliseconds, minimum: 3))
        let levels = nrzi.encode(encoder.encode(frame))
        var samples: [Float] = []
        samples.reserveCapacity(Int(Double(levels.count) * configuration.samplesPerBit + gapSeconds * configuration.sampleRate) + 16)
        modulator.appendBits(levels, to: &samples)
        if gapSeconds > 0 { modulator.appendSilence(seconds: gapSeconds, to: &samples) }
        return samples
    }

    /// Forgets the phase and line level, as at creation.
    public mutating func reset() {
        modulator.reset()
        nrzi.reset()
    }
}
