import ModemAudio
import ModemCodecs
import ModemDSP

/// What ``OFDMReceiver/run(shouldStop:onBytes:onEvent:onProgress:)`` tells as it goes.
public enum OFDMReceiverEvent: Sendable {
    /// A transmission began: its configuration, announced length (nil: a stream) and what the
    /// preamble measured.
    case started(profile: OFDMProfile, payloadLength: Int?, statistics: OFDMStatistics)
    /// A header checked but named a configuration this receiver does not know (skipped).
    case unknownProfile(id: Int, seconds: Double)
    /// The transmission ended with every block checked.
    case ended(bytes: Int, statistics: OFDMStatistics)
}

/// How reading ended.
public struct OFDMReceiverSummary: Sendable {
    /// Transmissions whose every block checked.
    public var transmissions = 0
    /// Payload bytes delivered (all of them checked).
    public var bytes = 0
    /// Blocks delivered, and of those, blocks in which the code corrected bits.
    public var blocks = 0
    public var blocksCorrected = 0
    /// Bits the code corrected in all.
    public var bitsCorrected = 0
    /// Input samples read.
    public var samples = 0
    /// Why the output stopped early: nil when every transmission found was complete.
    public var failure: Failure?
    /// The last transmission's statistics.
    public var statistics: OFDMStatistics?

    /// Why the output stopped.
    public enum Failure: Sendable, Equatable {
        /// A block failed its check: bytes from `offset` (of the transmission) on are missing.
        case lostBlock(offset: Int, transmissionStart: Double)
        /// The input ended inside a transmission: bytes from `offset` on are missing (of `expected`, when known).
        case truncated(offset: Int, expected: Int?)
        /// The transmission needs carriers this input's sample rate cannot hold.
        case bandBeyondInput(highestHz: Double, sampleRate: Int)
    }
}

/// Receives OFDM transmissions from an audio source: finds each, reads its header (so it needs no
/// settings), decodes its blocks and hands over their bytes, each block only once its CRC checked.
/// The first block that fails ends the output (``OFDMReceiverSummary/failure``): no byte after a
/// gap is ever delivered.
public final class OFDMReceiver {
    /// The audio read.
    public let source: any AudioSource
    private let demodulator: OFDMDemodulator

    /// Creates a receiver.
    /// - Throws: ``OFDMError`` when the source's sample rate is outside 16,000...192,000 Hz.
    public init(source: any AudioSource) throws(OFDMError) {
        guard (16000...192_000).contains(source.sampleRate) else {
            throw OFDMError("OFDM needs a sample rate of 16000...192000 Hz; the input is at \(source.sampleRate) Hz")
        }
        self.source = source
        demodulator = OFDMDemodulator(inputSampleRate: Double(source.sampleRate))
    }

    /// The transmission being read.
    private final class Current {
        let profile: OFDMProfile
        let payloadLength: Int?
        var codec: LDPCBlockCodec
        var soft: [Float] = []
        var block = 0
        var delivered = 0

        init(profile: OFDMProfile, payloadLength: Int?) {
            self.profile = profile
            self.payloadLength = payloadLength
            codec = LDPCBlockCodec(code: profile.code)
            soft.reserveCapacity(profile.code.length + profile.bitsPerSymbol)
        }
    }

    /// Reads the source to its end (or until `shouldStop`), delivering checked bytes.
    /// - Parameters:
    ///   - shouldStop: checked between reads.
    ///   - onBytes: each checked block's payload, in order.
    ///   - onEvent: transmissions starting and ending.
    ///   - onProgress: input samples read so far.
    /// - Returns: the counts, and why the output stopped early if it did.
    /// - Throws: what the source or `onBytes` throws.
    public func run(shouldStop: () -> Bool = { false }, onBytes: ([UInt8]) throws -> Void,
                    onEvent: (OFDMReceiverEvent) -> Void = { _ in },
                    onProgress: (Int) -> Void = { _ in }) throws -> OFDMReceiverSummary {
        var summary = OFDMReceiverSummary()
        var chunk = [Float](repeating: 0, count: 16384)
        var current: Current?
        let nyquist = Double(source.sampleRate) / 2
        reading: while !shouldStop() {
            let n = try chunk.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 {
                demodulator.finishInput()
            } else {
                chunk.withUnsafeBufferPointer { demodulator.push(UnsafeBufferPointer(rebasing: $0[0..<n])) }
                summary.samples += n
                onProgress(summary.samples)
            }
            while let event = demodulator.next() {
                switch event {
                case .header(let seconds):
                    guard let header = OFDMHeader(soft: demodulator.softBits) else {
                        demodulator.rejectHeader()
                        continue
                    }
                    guard let profile = OFDMProfile.withID(header.profileID) else {
                        demodulator.rejectHeader()
                        onEvent(.unknownProfile(id: header.profileID, seconds: seconds))
                        continue
                    }
                    let highest = Double(profile.numerology.lastCarrier) * profile.numerology.carrierSpacing
                    guard highest < 0.95 * nyquist else {
                        demodulator.rejectHeader()
                        summary.failure = .bandBeyondInput(highestHz: highest, sampleRate: source.sampleRate)
                        break reading
                    }
                    let count = header.payloadLength.map { profile.symbolCount(forPayload: $0) }
                    demodulator.beginData(OFDMDataPlan(numerology: profile.numerology, constellation: profile.constellation,
                                                       symbolCount: count))
                    current = Current(profile: profile, payloadLength: header.payloadLength)
                    onEvent(.started(profile: profile, payloadLength: header.payloadLength, statistics: demodulator.statistics))
                case .symbol:
                    guard let c = current else { continue }
                    c.soft.append(contentsOf: demodulator.softBits)
                    let length = c.profile.code.length
                    while current != nil && c.soft.count >= length {
                        let result = c.soft.withUnsafeBufferPointer {
                            c.codec.decode(UnsafeBufferPointer(rebasing: $0[0..<length]), index: c.block)
                        }
                        c.soft.removeFirst(length)
                        switch result {
                        case .failed:
                            summary.failure = .lostBlock(offset: c.delivered, transmissionStart: demodulator.statistics.startSeconds)
                            summary.statistics = demodulator.statistics
                            break reading
                        case .block(let payload, let last, let corrected, _):
                            try onBytes(payload)
                            c.delivered += payload.count
                            c.block += 1
                            summary.bytes += payload.count
                            summary.blocks += 1
                            summary.bitsCorrected += corrected
                            if corrected > 0 { summary.blocksCorrected += 1 }
                            let expectedLast = c.payloadLength.map { c.delivered >= $0 } ?? false
                            if last || expectedLast {
                                summary.transmissions += 1
                                summary.statistics = demodulator.statistics
                                onEvent(.ended(bytes: c.delivered, statistics: demodulator.statistics))
                                current = nil
                                // The rest of the last symbol is padding; a stream's end is not known to the demodulator.
                                demodulator.endTransmission()
                            }
                        }
                    }
                case .transmissionEnd:
                    if let c = current {
                        // Every announced symbol was read but the last block never checked.
                        summary.failure = .lostBlock(offset: c.delivered, transmissionStart: demodulator.statistics.startSeconds)
                        summary.statistics = demodulator.statistics
                        break reading
                    }
                case .truncated:
                    if let c = current {
                        summary.failure = .truncated(offset: c.delivered, expected: c.payloadLength)
                        summary.statistics = demodulator.statistics
                        break reading
                    }
                }
            }
            if n == 0 { break }
        }
        return summary
    }
}
