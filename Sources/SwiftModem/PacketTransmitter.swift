import ModemAudio
import ModemCodecs
import ModemDSP

/// Sends AX.25 frames as HDLC (NRZI, bit stuffing, FCS) over AFSK, or over G3RUH scrambled baseband
/// for the `g3ruh` profile, each as its own transmission:
/// a preamble of flags (TXDELAY), the frame, closing flags, then a short silence.
public final class PacketTransmitter {
    /// Where the audio goes.
    public let sink: any AudioSink
    /// Flags sent before each frame so receivers can lock (the TXDELAY).
    public let preambleFlags: Int
    /// Silence after each transmission, in seconds.
    public let gapSeconds: Double
    /// Frames sent so far.
    public private(set) var framesSent = 0

    private var modulator: FSKModulator?
    private var baseband: BasebandModulator?
    private var scrambler = G3RUHScrambler()
    private var nrzi = NRZIEncoder()
    private let encoder: HDLCEncoder
    private var finished = false

    /// Creates a transmitter.
    /// - Parameters:
    ///   - settings: tones and baud.
    ///   - sink: the destination; its sample rate is used.
    ///   - amplitude: peak level, 0 < a <= 1.
    ///   - preambleMilliseconds: flags before each frame, in ms (default 300, as Dire Wolf's TXDELAY 30).
    ///   - gapSeconds: silence after each frame (default 0.5 s).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sink's sample rate.
    public init(settings: ModemSettings, sink: any AudioSink, amplitude: Float = 0.7,
                preambleMilliseconds: Double = 300, gapSeconds: Double = 0.5) throws {
        guard amplitude > 0, amplitude <= 1 else { throw ModemSettingsError("amplitude must be in 0 < a <= 1, got \(amplitude)") }
        if settings.isBaseband {
            guard (8000...192_000).contains(sink.sampleRate), settings.baudRate * 4 <= Double(sink.sampleRate) else {
                throw ModemSettingsError("\(settings.baudRate) baud baseband needs a sample rate of at least \(Int(settings.baudRate * 4)) Hz (8000...192000)")
            }
            baseband = BasebandModulator(sampleRate: Double(sink.sampleRate), baudRate: settings.baudRate, amplitude: amplitude)
        } else {
            modulator = FSKModulator(configuration: try settings.configuration(sampleRate: sink.sampleRate), amplitude: amplitude)
        }
        self.sink = sink
        preambleFlags = max(1, Int((preambleMilliseconds / 1000 * settings.baudRate / 8).rounded()))
        self.gapSeconds = max(0, gapSeconds)
        encoder = HDLCEncoder(leadingFlags: preambleFlags, trailingFlags: 3)
    }

    /// Sends one frame (its FCS is computed and appended).
    public func send(_ frame: AX25Frame) throws {
        precondition(!finished, "send after finish")
        let levels = nrzi.encode(encoder.encode(frame.encode()))
        var samples: [Float] = []
        if baseband != nil {
            // G3RUH: NRZI levels scrambled (x^17 + x^12 + 1), then filtered NRZ.
            baseband!.appendBits(scrambler.scramble(levels), to: &samples)
            baseband!.appendSilence(seconds: gapSeconds, to: &samples)
        } else {
            modulator!.appendBits(levels, to: &samples)
            modulator!.appendSilence(seconds: gapSeconds, to: &samples)
        }
        try samples.withUnsafeBufferPointer { try sink.write($0) }
        framesSent += 1
    }

    /// Finishes the sink (drains a device, finalises a file).
    public func finish() throws {
        guard !finished else { return }
        finished = true
        try sink.finish()
    }
}
