import ModemCodecs
import ModemDSP

/// HDLC frames to audio: the one transmit path for packets over the modem, used by
/// ``PacketTransmitter``, the KISS TNC and the channel protocol's link modem.
///
/// A call appends one run of flags and frames: leading flags, each frame (its FCS computed and
/// appended, bit-stuffed) with flags between frames, trailing flags, all NRZI-coded; on AFSK for the
/// tone profiles, scrambled (G3RUH, x¹⁷ + x¹² + 1) as filtered NRZ baseband for `g3ruh`, or as the phase
/// changes of differential PSK for `qpsk2400` and `8psk4800` (``PSKModulator``, not scrambled). The line
/// level (NRZI), the scrambler and the modulator's phase carry over from one call to the next, so a
/// call can continue a transmission that is still being played. With ``fx25`` set, frames go out as
/// FX.25 blocks; with ``il2p`` set, as IL2P frames (no HDLC at all).
public struct HDLCModulator: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// Line rate, in baud.
    public let baudRate: Double

    private var afsk: FSKModulator?
    private var baseband: BasebandModulator?
    private var psk: PSKModulator?
    private var scrambler = G3RUHScrambler()
    private var nrzi = NRZIEncoder()
    private let encoder = HDLCEncoder()

    /// When set, each frame is sent as an FX.25 block (a correlation tag and a Reed-Solomon block around
    /// the HDLC frame) that receivers without FX.25 still decode as plain AX.25; a frame too long for
    /// FX.25 is sent plain. Default nil: plain HDLC.
    public var fx25: FX25Encoder?

    /// When set, each frame is sent as IL2P (``IL2PEncoder``): the flags become 0x55 idle bytes and each
    /// frame a sync word and Reed-Solomon blocks, sent as they are (no NRZI, and on G3RUH baseband no
    /// x¹⁷ + x¹² + 1 scrambling: IL2P scrambles its own blocks), as Dire Wolf 1.7+ and the NinoTNC send
    /// it. Only IL2P receivers decode it. A frame too long for IL2P (over 1023 bytes) is sent as plain
    /// HDLC between flags, as Dire Wolf does. Takes precedence over ``fx25``; default nil.
    public var il2p: IL2PEncoder?

    /// When true, each frame is sent as a ``CodedFrame`` (a concatenated Reed-Solomon and convolutional
    /// code, as line levels without NRZI) between the flags: the channel protocol's coded mode, which
    /// only receivers that look for coded frames decode. Takes precedence over ``fx25``.
    public var codesFrames = false

    /// Creates a modulator.
    /// - Parameters:
    ///   - settings: tones and baud (a tone profile, `g3ruh` for baseband, `qpsk2400` or `8psk4800` for PSK).
    ///   - sampleRate: output rate in Hz (8000...192000; at least 4 samples per bit for baseband).
    ///   - amplitude: peak level, 0 < a <= 1.
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sample rate or the amplitude
    ///   is out of range.
    public init(settings: ModemSettings, sampleRate: Int, amplitude: Float) throws {
        guard amplitude > 0, amplitude <= 1 else { throw ModemSettingsError("amplitude must be in 0 < a <= 1, got \(amplitude)") }
        if let mode = settings.psk {
            guard (8000...192_000).contains(sampleRate) else {
                throw ModemSettingsError("PSK needs a sample rate of 8000...192000 Hz, got \(sampleRate)")
            }
            psk = PSKModulator(mode: mode, sampleRate: Double(sampleRate), amplitude: amplitude)
        } else if settings.isBaseband {
            guard (8000...192_000).contains(sampleRate), settings.baudRate * 4 <= Double(sampleRate) else {
                throw ModemSettingsError("\(settings.baudRate) baud baseband needs a sample rate of at least \(Int(settings.baudRate * 4)) Hz (8000...192000)")
            }
            baseband = BasebandModulator(sampleRate: Double(sampleRate), baudRate: settings.baudRate, amplitude: amplitude)
        } else {
            afsk = FSKModulator(configuration: try settings.configuration(sampleRate: sampleRate), amplitude: amplitude)
        }
        self.sampleRate = sampleRate
        baudRate = settings.baudRate
    }

    /// The number of flags (8 bits each) that fill `milliseconds` at the line's baud rate, at least `minimum`.
    public func flags(milliseconds: Double, minimum: Int) -> Int {
        max(minimum, Int((milliseconds / 1000 * baudRate / 8).rounded()))
    }

    /// Appends the audio of flags and frames to `samples`.
    /// - Parameters:
    ///   - frames: the frames' bytes without FCS (it is computed here).
    ///   - leadingFlags: flags before the first frame (the preamble, TXDELAY), 0 or more.
    ///   - separatingFlags: flags between two frames, at least 1.
    ///   - trailingFlags: flags after the last frame (TXTAIL), 0 or more.
    ///   - gapSeconds: silence after the flags, in seconds (0 or more).
    ///   - samples: where the audio goes.
    /// - Returns: where each frame's bits are, as indices into `samples`.
    @discardableResult
    public mutating func append(frames: [[UInt8]], leadingFlags: Int, separatingFlags: Int = 1, trailingFlags: Int,
                                gapSeconds: Double = 0, to samples: inout [Float]) -> [Range<Int>] {
        precondition(separatingFlags >= 1, "HDLCModulator separatingFlags must be at least 1, got \(separatingFlags)")
        if let il2p, !codesFrames {
            return appendIL2P(il2p, frames: frames, leadingBytes: leadingFlags, separatingBytes: separatingFlags,
                              trailingBytes: trailingFlags, gapSeconds: gapSeconds, to: &samples)
        }
        // HDLC bits wait in `bits` for NRZI; a coded frame's levels go straight to `levels`.
        var levels: [Bool] = []
        var bits: [Bool] = []
        bits.reserveCapacity((leadingFlags + trailingFlags) * 8 + frames.reduce(0) { $0 + ($1.count + 2) * 10 + separatingFlags * 8 })
        var frameBits: [Range<Int>] = []
        HDLCEncoder.appendFlags(leadingFlags, to: &bits)
        for (i, frame) in frames.enumerated() {
            if i > 0 { HDLCEncoder.appendFlags(separatingFlags, to: &bits) }
            if codesFrames {
                levels += nrzi.encode(bits)
                bits.removeAll(keepingCapacity: true)
                let start = levels.count
                CodedFrame.append(frame, to: &levels)
                frameBits.append(start..<levels.count)
                nrzi.reset(initialLevel: levels[levels.count - 1])
                continue
            }
            let start = levels.count + bits.count
            if fx25?.append(frame, to: &bits) != true {
                encoder.appendFrame(frame, to: &bits)
            }
            frameBits.append(start..<(levels.count + bits.count))
        }
        HDLCEncoder.appendFlags(trailingFlags, to: &bits)
        levels += nrzi.encode(bits)

        let base = samples.count
        appendLine(levels, scramble: true, to: &samples)
        if gapSeconds > 0 { appendSilence(seconds: gapSeconds, to: &samples) }
        let samplesPerBit = Double(sampleRate) / baudRate
        return frameBits.map { base + Int(Double($0.lowerBound) * samplesPerBit) ..< base + Int(Double($0.upperBound) * samplesPerBit) }
    }

    /// Frames sent as plain HDLC because IL2P could not carry them (too long), since creation.
    public private(set) var framesTooLongForIL2P = 0

    /// ``append(frames:leadingFlags:separatingFlags:trailingFlags:gapSeconds:to:)`` for IL2P: idle bytes
    /// instead of flags, frames as IL2P, the bits on the line as they are.
    private mutating func appendIL2P(_ il2p: IL2PEncoder, frames: [[UInt8]], leadingBytes: Int, separatingBytes: Int,
                                     trailingBytes: Int, gapSeconds: Double, to samples: inout [Float]) -> [Range<Int>] {
        // Runs of line levels; a frame IL2P cannot carry goes as NRZI HDLC (G3RUH-scrambled on baseband).
        var runs: [(levels: [Bool], isHDLC: Bool)] = []
        var bits: [Bool] = []
        var frameBits: [Range<Int>] = []
        var sent = 0
        IL2PEncoder.appendPreamble(leadingBytes, to: &bits)
        for (i, frame) in frames.enumerated() {
            if i > 0 { IL2PEncoder.appendPreamble(separatingBytes, to: &bits) }
            let start = sent + bits.count
            if il2p.append(frame, to: &bits) {
                frameBits.append(start..<(sent + bits.count))
                continue
            }
            framesTooLongForIL2P += 1
            runs.append((bits, false))
            sent += bits.count
            // Flags enough for a G3RUH descrambler to settle (17 bits) before the frame.
            bits = []
            HDLCEncoder.appendFlags(4, to: &bits)
            encoder.appendFrame(frame, to: &bits)
            HDLCEncoder.appendFlags(2, to: &bits)
            nrzi.reset()
            let levels = nrzi.encode(bits)
            frameBits.append((sent + 32)..<(sent + levels.count - 16))
            runs.append((levels, true))
            sent += levels.count
            bits = []
        }
        IL2PEncoder.appendPreamble(trailingBytes, to: &bits)
        runs.append((bits, false))
        let base = samples.count
        for run in runs where !run.levels.isEmpty {
            appendLine(run.levels, scramble: run.isHDLC, to: &samples)
        }
        if gapSeconds > 0 { appendSilence(seconds: gapSeconds, to: &samples) }
        let samplesPerBit = Double(sampleRate) / baudRate
        return frameBits.map { base + Int(Double($0.lowerBound) * samplesPerBit) ..< base + Int(Double($0.upperBound) * samplesPerBit) }
    }

    /// Line levels to audio on the modulator in use; `scramble`: through the G3RUH scrambler on baseband.
    private mutating func appendLine(_ levels: [Bool], scramble: Bool, to samples: inout [Float]) {
        if baseband != nil {
            baseband!.appendBits(scramble ? scrambler.scramble(levels) : levels, to: &samples)
        } else if psk != nil {
            psk!.appendBits(levels, to: &samples)
        } else {
            afsk!.appendBits(levels, to: &samples)
        }
    }

    private mutating func appendSilence(seconds: Double, to samples: inout [Float]) {
        if baseband != nil {
            baseband!.appendSilence(seconds: seconds, to: &samples)
        } else if psk != nil {
            psk!.appendSilence(seconds: seconds, to: &samples)
        } else {
            afsk!.appendSilence(seconds: seconds, to: &samples)
        }
    }

    /// Forgets the line level, the scrambler and the phase, as at creation.
    public mutating func reset() {
        nrzi.reset()
        scrambler = G3RUHScrambler()
        afsk?.reset()
        psk?.reset()
        if let b = baseband { baseband = BasebandModulator(sampleRate: b.sampleRate, baudRate: b.baudRate, amplitude: b.amplitude) }
    }
}
