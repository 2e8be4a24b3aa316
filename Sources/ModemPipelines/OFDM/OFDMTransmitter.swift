import ModemAudio
import ModemCodecs
import ModemDSP
import ModemRuntime

/// Errors of the OFDM transmitter and receiver.
public struct OFDMError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong, in one line.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// Sends bytes as one OFDM transmission: the preamble, the header (configuration and length), the
/// training, then the payload in CRC-checked LDPC blocks on the data symbols. Streams: bytes are
/// sent as blocks fill (one block is held back until it is known whether it is the last), so memory
/// does not grow with the input.
public final class OFDMTransmitter {
    /// The configuration.
    public let profile: OFDMProfile
    /// Where the audio goes (48 kHz).
    public let sink: any AudioSink
    /// The payload length the header announced (nil: a stream).
    public let payloadLength: Int?
    /// Audio samples written so far.
    public private(set) var samplesWritten = 0
    /// Payload bytes accepted so far.
    public private(set) var bytesSent = 0

    /// The clipping level over the RMS: 5 (14 dB). An OFDM symbol's samples are near Gaussian; at 4
    /// times the RMS a peak clipped about once in 420 symbols was enough to lose a 4096-QAM block on
    /// an otherwise clean line, at 5 once in 140,000 samples by a little.
    public static let peakToRMS: Float = 5

    private let modulator: OFDMModulator
    private let codec: LDPCBlockCodec
    private let peak: Float
    private var pending: [UInt8] = []
    private var bits: [UInt8] = []
    private var blocks = 0
    private var started = false
    private var finished = false

    /// Creates a transmitter.
    /// - Parameters:
    ///   - profile: the configuration.
    ///   - sink: the destination; its sample rate must be 48,000 Hz.
    ///   - peak: the level samples are clipped at (0 < peak ≤ 1); the signal's RMS is a fifth of it
    ///     (``peakToRMS``).
    ///   - payloadLength: the bytes that will be sent, for the header (nil: not known; the last block
    ///     is marked instead).
    /// - Throws: ``OFDMError`` when the sink is not at 48 kHz.
    public init(profile: OFDMProfile, sink: any AudioSink, peak: Float = 0.7, payloadLength: Int?) throws(OFDMError) {
        guard sink.sampleRate == Int(OFDMNumerology.sampleRate) else {
            throw OFDMError("OFDM is made at 48000 Hz; the output is at \(sink.sampleRate) Hz")
        }
        precondition(peak > 0 && peak <= 1, "OFDMTransmitter peak must be in (0, 1]")
        self.profile = profile
        self.sink = sink
        self.peak = peak
        self.payloadLength = payloadLength
        modulator = OFDMModulator(numerology: profile.numerology, constellation: profile.constellation, rms: peak / Self.peakToRMS)
        codec = LDPCBlockCodec(code: profile.code)
    }

    /// Sends `bytes` (blocks go out as they fill).
    public func send(_ bytes: some Collection<UInt8>) throws {
        precondition(!finished, "send after finish")
        if let payloadLength, bytesSent + bytes.count > payloadLength {
            throw OFDMError("the input grew past the \(payloadLength) bytes announced in the header")
        }
        try startIfNeeded()
        pending.append(contentsOf: bytes)
        bytesSent += bytes.count
        let capacity = codec.payloadCapacity
        // Keep one block back: whether it is the last is known only at the end.
        var at = 0
        while pending.count - at > capacity {
            try emit(block: pending[at..<(at + capacity)], last: false)
            at += capacity
        }
        if at > 0 { pending.removeFirst(at) }
    }

    /// Sends the last block, pads the last symbol and finishes the sink.
    public func finish() throws {
        guard !finished else { return }
        if let payloadLength, bytesSent != payloadLength {
            throw OFDMError("the input ended after \(bytesSent) of the \(payloadLength) bytes announced in the header")
        }
        try startIfNeeded()
        try emit(block: pending[...], last: true)
        pending.removeAll()
        if !bits.isEmpty {
            // Fill the last symbol with scrambled padding.
            var rng = SplitMix64(seed: 0x9AD0)
            while bits.count < modulator.bitsPerSymbol { bits.append(UInt8(rng.next() & 1)) }
            try flushSymbols()
        }
        finished = true
        try sink.finish()
    }

    private func startIfNeeded() throws {
        guard !started else { return }
        started = true
        try write(modulator.start(headerBits: OFDMHeader(profileID: profile.id, payloadLength: payloadLength).symbolBits))
    }

    private func emit(block: ArraySlice<UInt8>, last: Bool) throws {
        bits.append(contentsOf: codec.encode(block, index: blocks, last: last))
        blocks += 1
        try flushSymbols()
    }

    private func flushSymbols() throws {
        let per = modulator.bitsPerSymbol
        var at = 0
        while bits.count - at >= per {
            let symbol = bits.withUnsafeBufferPointer { modulator.dataSymbol(UnsafeBufferPointer(rebasing: $0[at..<(at + per)])) }
            try write(symbol)
            at += per
        }
        if at > 0 { bits.removeFirst(at) }
    }

    private func write(_ samples: [Float]) throws {
        var s = samples
        let p = peak
        for i in s.indices { s[i] = min(p, max(-p, s[i])) }
        try s.withUnsafeBufferPointer { try sink.write($0) }
        samplesWritten += s.count
    }
}
