import ModemAudio
import ModemCodecs
import ModemDSP

/// Turns bytes into FSK audio and writes it to an ``AudioSink`` (a file, a sound device).
///
/// Streams: bytes can be sent in any number of calls; memory holds one call's audio at most.
/// The carrier starts with a mark leader and ends with a mark trailer so receivers can lock on.
public final class Transmitter {
    /// The line settings.
    public let settings: ModemSettings
    /// Where the audio goes.
    public let sink: any AudioSink
    /// Characters that the framing could not carry (e.g. `%` in Baudot), skipped.
    public var unencodableCount: Int { baudot.unencodableCount }
    /// Bytes with bits set above the framing's data bits (e.g. 0x80 in 7E1); sent with those bits dropped.
    public private(set) var truncatedCount = 0
    /// Samples written so far.
    public private(set) var samplesWritten = 0

    private var modulator: FSKModulator
    private let leaderBits: Double
    private let trailerBits: Double
    private var started = false
    private var finished = false
    private var uart: UARTEncoder?
    private var baudot = BaudotEncoder()
    private var buffer: [Float] = []

    /// Creates a transmitter.
    /// - Parameters:
    ///   - settings: tones, baud, framing.
    ///   - sink: the destination; its sample rate is used.
    ///   - amplitude: peak level, 0 < a <= 1 (default 0.7, about -3 dBFS).
    ///   - leaderBits: mark bit periods sent before the first character (>= 0; default 2, as minimodem).
    ///   - trailerBits: mark bit periods after the last character (>= 0; default 2).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sink's sample rate.
    public init(settings: ModemSettings, sink: any AudioSink, amplitude: Float = 0.7,
                leaderBits: Double = 2, trailerBits: Double = 2) throws {
        guard amplitude > 0, amplitude <= 1 else { throw ModemSettingsError("amplitude must be in 0 < a <= 1, got \(amplitude)") }
        guard settings.framing.isAsynchronous else {
            throw ModemSettingsError("framing \(settings.framing) is synchronous: use PacketTransmitter")
        }
        self.settings = settings
        self.sink = sink
        modulator = FSKModulator(configuration: try settings.configuration(sampleRate: sink.sampleRate), amplitude: amplitude)
        self.leaderBits = max(0, leaderBits)
        self.trailerBits = max(0, trailerBits)
        // Bound the audio held at once (about 1 Mi samples), however slow the line: at 1 baud and
        // 192 kHz one character is 2 Mi samples, and a batch of 1024 would be 8 GB.
        let samplesPerBit = modulator.configuration.samplesPerBit
        batchCharacters = max(1, min(1024, Int(Double(Self.blockSamples) / (samplesPerBit * settings.framing.shape.length))))
        toneChunkBits = max(1, (Double(Self.blockSamples) / samplesPerBit).rounded(.down))
        if case .uart(let f) = settings.framing { uart = UARTEncoder(framing: f) }
    }

    /// Samples rendered before they are written: the bound of the memory a send takes.
    static let blockSamples = 1 << 20
    /// Characters rendered per batch.
    private let batchCharacters: Int
    /// Bits of a leader or trailer rendered at a time.
    private let toneChunkBits: Double

    /// Renders a steady tone of `bits` bit periods in bounded chunks, writing each.
    private func sendTone(mark: Bool, bits: Double) throws {
        var left = bits
        while left > 0 {
            let n = min(left, toneChunkBits)
            modulator.appendTone(mark: mark, bits: n, to: &buffer)
            try flush()
            left -= n
        }
    }

    /// Modulates `bytes` and writes them.
    public func send(_ bytes: some Sequence<UInt8>) throws {
        precondition(!finished, "send after finish")
        buffer.removeAll(keepingCapacity: true)
        if !started {
            started = true
            if leaderBits > 0 { try sendTone(mark: true, bits: leaderBits) }
        }
        // Characters are rendered in batches: one modulator call per batch is much faster than
        // one per character, and a batch bounds the audio held in memory.
        var words: [UInt32] = []
        words.reserveCapacity(1024)
        let shape = settings.framing.shape
        func render() throws {
            modulator.appendCharacters(words, bitsBeforeStop: shape.bitsBeforeStop, stopBits: shape.stopBits, to: &buffer)
            words.removeAll(keepingCapacity: true)
            try flush()
        }
        switch settings.framing {
        case .uart(let f):
            let enc = uart!
            let limit = f.dataBits >= 8 ? 256 : 1 << f.dataBits
            for b in bytes {
                if Int(b) >= limit { truncatedCount += 1 }
                words.append(enc.encode(b))
                if words.count >= batchCharacters { try render() }
            }
        case .baudot:
            for b in bytes {
                for code in baudot.encode(b) { words.append(UInt32(code) << 1) }
                if words.count >= batchCharacters { try render() }
            }
        case .ax25:
            preconditionFailure("checked at init")
        }
        try render()
        try flush()
    }

    /// Sends the trailer and finishes the sink (drains a device, finalises a file).
    public func finish() throws {
        guard !finished else { return }
        finished = true
        buffer.removeAll(keepingCapacity: true)
        if started, trailerBits > 0 { try sendTone(mark: true, bits: trailerBits) }
        try flush()
        try sink.finish()
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBufferPointer { try sink.write($0) }
        samplesWritten += buffer.count
        buffer.removeAll(keepingCapacity: true)
    }
}
