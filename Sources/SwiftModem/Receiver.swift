import ModemAudio
import ModemCodecs
import ModemDSP

/// Something the receiver noticed besides data, for diagnostics.
public enum ReceiverEvent: Sendable {
    /// A carrier appeared at this time (seconds from the start of the input).
    case carrier(seconds: Double)
    /// The carrier went away; statistics of the burst.
    case noCarrier(seconds: Double, ReceiverBurst)
}

/// Statistics of one carrier burst.
public struct ReceiverBurst: Sendable {
    /// Bytes delivered.
    public var bytes: Int
    /// Characters whose stop bit was wrong.
    public var framingErrors: Int
    /// Characters whose parity bit was wrong (they are still delivered).
    public var parityErrors: Int
    /// Mean confidence of the characters, 0...1.
    public var confidence: Float
    /// The baud rate measured from the signal.
    public var measuredBaudRate: Double
    /// Signal level, dBFS.
    public var levelDBFS: Float
}

/// Totals of a whole reception.
public struct ReceiverSummary: Sendable {
    /// Bytes delivered.
    public var bytes = 0
    /// Carrier bursts seen.
    public var bursts = 0
    /// Characters with a bad stop bit.
    public var framingErrors = 0
    /// Characters with a bad parity bit.
    public var parityErrors = 0
    /// Samples read from the source.
    public var samples = 0
}

/// Reads audio from an ``AudioSource``, demodulates it and delivers bytes as they are decoded.
///
/// Memory is bounded whatever the length of the input: the source is read in blocks and the
/// demodulator keeps a few characters of history.
public final class Receiver {
    /// The line settings.
    public let settings: ModemSettings
    /// Where samples come from.
    public let source: any AudioSource
    /// Samples read per block.
    public let blockSize: Int

    private var demodulator: FSKDemodulator
    private let uart: UARTDecoder?
    private var baudot = BaudotDecoder()
    private var burst = ReceiverBurst(bytes: 0, framingErrors: 0, parityErrors: 0, confidence: 0, measuredBaudRate: 0, levelDBFS: 0)

    /// Creates a receiver.
    /// - Parameters:
    ///   - settings: tones, baud, framing.
    ///   - source: the audio; its sample rate is used.
    ///   - blockSize: samples read per call to the source (256...1048576; default 32768).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the source's sample rate.
    public init(settings: ModemSettings, source: any AudioSource, blockSize: Int = 32768) throws {
        self.settings = settings
        self.source = source
        self.blockSize = max(256, min(1 << 20, blockSize))
        let config = try settings.configuration(sampleRate: source.sampleRate)
        demodulator = FSKDemodulator(configuration: config, shape: settings.framing.shape)
        if case .uart(let f) = settings.framing { uart = UARTDecoder(framing: f) } else { uart = nil }
    }

    /// Runs until the source ends or `shouldStop` returns true (checked between blocks).
    /// - Parameters:
    ///   - shouldStop: polled between blocks; return true to stop early (the tail is still flushed).
    ///   - onBytes: receives decoded bytes, in order, as soon as they are known.
    ///   - onEvent: receives carrier diagnostics.
    ///   - onProgress: receives the number of samples read so far after each block.
    /// - Returns: totals of the reception.
    /// - Throws: ``AudioError`` when reading the source fails.
    public func run(shouldStop: () -> Bool = { false },
                    onBytes: ([UInt8]) throws -> Void,
                    onEvent: (ReceiverEvent) -> Void = { _ in },
                    onProgress: (Int) -> Void = { _ in }) throws -> ReceiverSummary {
        var summary = ReceiverSummary()
        var block = [Float](repeating: 0, count: blockSize)
        var events: [FSKDemodulatorEvent] = []
        var bytes: [UInt8] = []
        let rate = Double(source.sampleRate)
        func deliver() throws {
            for e in events {
                switch e {
                case .character(let c):
                    if let b = decode(c) { bytes.append(b) }
                case .carrierDetected(let s):
                    baudot.reset()
                    burst = ReceiverBurst(bytes: 0, framingErrors: 0, parityErrors: 0, confidence: 0, measuredBaudRate: 0, levelDBFS: 0)
                    summary.bursts += 1
                    onEvent(.carrier(seconds: Double(s) / rate))
                case .carrierLost(let st):
                    burst.confidence = st.meanConfidence
                    burst.measuredBaudRate = st.measuredBaudRate
                    burst.levelDBFS = st.levelDBFS
                    summary.framingErrors += burst.framingErrors
                    summary.parityErrors += burst.parityErrors
                    if !bytes.isEmpty { try onBytes(bytes); summary.bytes += bytes.count; bytes.removeAll(keepingCapacity: true) }
                    onEvent(.noCarrier(seconds: Double(st.endSample) / rate, burst))
                }
            }
            events.removeAll(keepingCapacity: true)
            if !bytes.isEmpty { try onBytes(bytes); summary.bytes += bytes.count; bytes.removeAll(keepingCapacity: true) }
        }
        while !shouldStop() {
            let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { break }
            summary.samples += n
            block.withUnsafeBufferPointer { demodulator.process(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &events) }
            try deliver()
            onProgress(summary.samples)
        }
        demodulator.finish(into: &events)
        try deliver()
        return summary
    }

    private func decode(_ c: DemodulatedCharacter) -> UInt8? {
        if !c.stopBitOK { burst.framingErrors += 1 }
        burst.bytes += 1
        if let uart {
            let ch = uart.decode(dataAndParity: c.bits, stopBit: c.stopBitOK)
            if !ch.parityOK { burst.parityErrors += 1 }
            return ch.byte
        }
        return baudot.decode(UInt8(c.bits & 0x1F))
    }
}
