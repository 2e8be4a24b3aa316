import ModemAudio
import ModemCodecs
import ModemDSP

/// Sends AX.25 frames as HDLC (NRZI, bit stuffing, FCS), or as FX.25 or IL2P when asked, over AFSK, or
/// over G3RUH scrambled baseband for the `g3ruh` profile, each as its own transmission:
/// a preamble of flags (TXDELAY; IL2P: 0x55 bytes), the frame, closing flags, then a short silence.
public final class PacketTransmitter {
    /// Where the audio goes.
    public let sink: any AudioSink
    /// Flags sent before each frame so receivers can lock (the TXDELAY).
    public let preambleFlags: Int
    /// Silence after each transmission, in seconds.
    public let gapSeconds: Double
    /// Frames sent so far.
    public private(set) var framesSent = 0
    /// Of those, frames too long for FX.25 or IL2P and sent as plain AX.25 (when one was asked for).
    public private(set) var framesSentPlain = 0

    private var modulator: HDLCModulator
    private var finished = false

    /// Creates a transmitter.
    /// - Parameters:
    ///   - settings: tones and baud.
    ///   - sink: the destination; its sample rate is used.
    ///   - amplitude: peak level, 0 < a <= 1.
    ///   - preambleMilliseconds: flags before each frame, in ms (default 300, as Dire Wolf's TXDELAY 30).
    ///   - gapSeconds: silence after each frame (default 0.5 s).
    ///   - fx25ParityCount: send each frame as FX.25 with 16, 32 or 64 check bytes (nil: plain AX.25).
    ///   - il2p: send each frame as IL2P with this encoder (its FEC level); nil: not IL2P. Not with
    ///     `fx25ParityCount`.
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sink's sample rate, the
    ///   FX.25 check-byte count is not 16, 32 or 64, or both FX.25 and IL2P are asked for.
    public init(settings: ModemSettings, sink: any AudioSink, amplitude: Float = 0.7,
                preambleMilliseconds: Double = 300, gapSeconds: Double = 0.5, fx25ParityCount: Int? = nil,
                il2p: IL2PEncoder? = nil) throws {
        modulator = try HDLCModulator(settings: settings, sampleRate: sink.sampleRate, amplitude: amplitude)
        if il2p != nil && fx25ParityCount != nil { throw ModemSettingsError("a frame goes as FX.25 or as IL2P, not both") }
        modulator.il2p = il2p
        if let fx25ParityCount {
            guard FX25Mode.parityCounts.contains(fx25ParityCount) else {
                throw ModemSettingsError("FX.25 sends 16, 32 or 64 check bytes, not \(fx25ParityCount)")
            }
            modulator.fx25 = FX25Encoder(parityCount: fx25ParityCount)
        }
        self.sink = sink
        preambleFlags = modulator.flags(milliseconds: preambleMilliseconds, minimum: 1)
        self.gapSeconds = max(0, gapSeconds)
    }

    /// Sends one frame (its FCS is computed and appended).
    public func send(_ frame: AX25Frame) throws {
        precondition(!finished, "send after finish")
        var samples: [Float] = []
        let bytes = frame.encode()
        if let fx25 = modulator.fx25, fx25.mode(for: bytes) == nil { framesSentPlain += 1 }
        if let il2p = modulator.il2p, il2p.encode(bytes) == nil { framesSentPlain += 1 }
        modulator.append(frames: [bytes], leadingFlags: preambleFlags, trailingFlags: 3, gapSeconds: gapSeconds,
                         to: &samples)
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
