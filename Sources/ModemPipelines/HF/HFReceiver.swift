import ModemAudio
import ModemCodecs
import ModemDSP

/// What ``HFReceiver/run(onBytes:onEvent:)`` tells as it goes.
public enum HFReceiverEvent: Sendable {
    /// A transmission began: its configuration, its length, where (s) and what the preamble and the
    /// header measured.
    case started(profile: HFProfile, payloadLength: Int, seconds: Double, frequencyOffset: Double, headerSNR: Double)
    /// A header checked but named a configuration this receiver does not know (skipped).
    case unknownProfile(id: Int, seconds: Double)
    /// The transmission ended with every block checked: the SNR on the data carriers (dB).
    case ended(bytes: Int, carrierSNR: Double)
}

/// How reading ended.
public struct HFReceiverSummary: Sendable {
    /// Transmissions whose every block checked.
    public var transmissions = 0
    /// Payload bytes delivered (all of them checked).
    public var bytes = 0
    /// Blocks delivered, and of those, blocks in which the code corrected bits.
    public var blocks = 0
    public var blocksCorrected = 0
    /// Input samples read.
    public var samples = 0
    /// Why the output stopped early: nil when every transmission found was complete.
    public var failure: Failure?

    /// Why the output stopped.
    public enum Failure: Sendable, Equatable {
        /// A block failed its check: bytes from `offset` (of the transmission) on are missing.
        case lostBlock(offset: Int, transmissionStart: Double)
        /// The input ended inside a transmission.
        case truncated(offset: Int, expected: Int)
    }
}

/// Receives HF transmissions from an audio source (8 kHz or a whole multiple): reads the input to its
/// end, finds each transmission's preamble (with its frequency offset), reads its header (so it needs
/// no settings), decodes its blocks and hands over their bytes, each block only once its CRC checked.
/// The first block that fails ends the output.
public final class HFReceiver {
    /// The audio read.
    public let source: any AudioSource
    private let factor: Int

    /// Creates a receiver.
    /// - Throws: ``HFError`` when the source's rate is not a whole multiple of 8000 Hz.
    public init(source: any AudioSource) throws(HFError) {
        guard source.sampleRate > 0, source.sampleRate % Int(HFGrid.sampleRate) == 0, source.sampleRate <= 192_000 else {
            throw HFError("the HF modem needs a sample rate of 8000 Hz or a whole multiple of it (up to 192000); the input is at \(source.sampleRate) Hz")
        }
        self.source = source
        factor = source.sampleRate / Int(HFGrid.sampleRate)
    }

    /// Reads the source to its end, then delivers the checked bytes of every transmission in it.
    /// - Parameters:
    ///   - shouldStop: checked between reads.
    ///   - onBytes: each checked block's payload, in order.
    ///   - onEvent: transmissions starting and ending.
    public func run(shouldStop: () -> Bool = { false }, onBytes: ([UInt8]) throws -> Void,
                    onEvent: (HFReceiverEvent) -> Void = { _ in }) throws -> HFReceiverSummary {
        var summary = HFReceiverSummary()
        var decimator = HFFilters.Decimator(factor: factor)
        var samples = [Float]()
        var chunk = [Float](repeating: 0, count: 65536)
        while !shouldStop() {
            let n = try chunk.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { break }
            summary.samples += n
            chunk.withUnsafeBufferPointer { decimator.push(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &samples) }
        }
        // The decimator's delay, removed so sample times match the sender's.
        if decimator.delay > 0 { samples.removeFirst(min(decimator.delay, samples.count)) }
        // A recording cut a little short (a channel's delay, a recorder stopped early) loses only
        // part of the last symbol: up to one wide symbol of silence is added, which the code's
        // interleaving absorbs.
        samples.append(contentsOf: [Float](repeating: 0, count: HFGrid.wide.symbolLength))
        let demodulator = HFDemodulator(samples: samples)
        var position = 0
        while let sync = demodulator.findPreamble(from: position) {
            let seconds = Double(sync.start) / HFGrid.sampleRate
            let headerStart = sync.start + HFGrid.preambleLength
            let (header, h) = Self.readHeader(demodulator, sync: sync)
            guard let header else {
                position = max(position, sync.start) + HFGrid.preamblePeriod
                continue
            }
            guard let profile = HFProfile.withID(header.profileID) else {
                onEvent(.unknownProfile(id: header.profileID, seconds: seconds))
                position = max(position + HFGrid.preamblePeriod, headerStart)
                continue
            }
            let frequency = sync.frequencyOffset + h.residualFrequency
            onEvent(.started(profile: profile, payloadLength: header.payloadLength, seconds: seconds,
                             frequencyOffset: frequency, headerSNR: h.carrierSNR))
            guard let d = Self.readData(demodulator, start: sync.start, frequencyOffset: frequency, profile: profile,
                                        payloadLength: header.payloadLength) else {
                summary.failure = .truncated(offset: 0, expected: header.payloadLength)
                return summary
            }
            var delivered = 0
            for payload in d.blocks {
                try onBytes(payload)
                delivered += payload.count
            }
            summary.bytes += delivered
            summary.blocks += d.blocks.count
            summary.blocksCorrected += d.blocksCorrected
            if d.failedBlock != nil {
                summary.failure = .lostBlock(offset: delivered, transmissionStart: seconds)
                return summary
            }
            summary.transmissions += 1
            onEvent(.ended(bytes: delivered, carrierSNR: d.carrierSNR))
            position = max(position + HFGrid.preamblePeriod, d.end)
        }
        return summary
    }
}

/// What the data of one HF transmission gave (``HFReceiver/readData(_:start:frequencyOffset:profile:payloadLength:)``).
public struct HFTransmissionData: Sendable {
    /// The checked blocks' payloads in order, up to the first that failed.
    public var blocks: [[UInt8]]
    /// The first block that failed its check (nil: all checked).
    public var failedBlock: Int?
    /// Blocks in which the code corrected bits.
    public var blocksCorrected: Int
    /// The SNR on the data carriers (dB), measured on the pilots.
    public var carrierSNR: Double
    /// The sample (in the demodulator's samples) after the last data symbol.
    public var end: Int
}

extension HFReceiver {
    /// Reads the header after the preamble `sync` found: the header (nil when its check failed) and
    /// what its symbols measured (the SNR on the carriers, the residual frequency offset).
    public static func readHeader(_ demodulator: HFDemodulator, sync: HFSync) -> (header: HFHeader?, symbols: HFSymbols) {
        let h = demodulator.demodulate(grid: .robust, constellation: .qpsk, header: true, start: sync.start + HFGrid.preambleLength,
                                       count: HFGrid.headerSymbols, frequencyOffset: sync.frequencyOffset)
        return (HFHeader(soft: h.soft), h)
    }

    /// Reads and decodes the data of the transmission whose preamble starts at sample `start`: every
    /// copy of every block's bits gathered from the interleaving, each block decoded and checked.
    /// - Returns: nil when the samples end before the last data symbol.
    public static func readData(_ demodulator: HFDemodulator, start: Int, frequencyOffset: Double, profile: HFProfile,
                                payloadLength: Int) -> HFTransmissionData? {
        let symbols = profile.symbolCount(forPayload: payloadLength)
        let dataStart = start + HFGrid.startLength
        let d = demodulator.demodulate(grid: profile.grid, constellation: profile.constellation, header: false, start: dataStart,
                                       count: symbols, frequencyOffset: frequencyOffset)
        guard d.symbolsRead == symbols else { return nil }
        let interleaver = HFInterleaver(profile: profile, payloadLength: payloadLength)
        let (blocks, n) = profile.blockLayout(forPayload: payloadLength)
        var combined = [Float](repeating: 0, count: blocks * n)
        for i in 0..<interleaver.streamLength { combined[i % combined.count] += d.soft[Int(interleaver.slot[i])] }
        var codec = LDPCBlockCodec(code: profile.code(forPayload: payloadLength))
        var out = HFTransmissionData(blocks: [], failedBlock: nil, blocksCorrected: 0, carrierSNR: d.carrierSNR,
                                     end: dataStart + symbols * profile.grid.symbolLength)
        for b in 0..<blocks {
            let result = combined.withUnsafeBufferPointer {
                codec.decode(UnsafeBufferPointer(rebasing: $0[(b * n)..<((b + 1) * n)]), index: b, maximumIterations: 100)
            }
            switch result {
            case .failed:
                out.failedBlock = b
                return out
            case .block(let payload, _, let corrected, _):
                out.blocks.append(payload)
                if corrected > 0 { out.blocksCorrected += 1 }
            }
        }
        return out
    }
}
