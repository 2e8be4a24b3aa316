import Dispatch
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

/// A block decoded on another thread while the receiver's own thread decodes the one before it.
///
/// `@unchecked Sendable`: one thread at a time uses it. The receiver sets ``index`` and ``soft``,
/// hands it to a worker through a dispatch group, and reads ``result`` only after the group's
/// `wait()` (which orders the worker's writes before the read); it never touches it in between.
final class PairedBlock: @unchecked Sendable {
    private var codec: LDPCBlockCodec
    /// The block's index (its scrambler) and its soft bits.
    var index = 0
    var soft: [Float]
    /// What ``decode()`` made of it.
    private(set) var result = LDPCBlockCodec.Decoded.failed(iterations: 0)

    init(code: LDPCCode) {
        codec = LDPCBlockCodec(code: code)
        soft = [Float](repeating: 0, count: code.length)
    }

    func decode() { result = codec.decode(soft, index: index) }
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
        /// The second block of a pair, decoded on another core at the same time.
        let helper: PairedBlock
        var soft: [Float] = []
        var block = 0
        var delivered = 0

        init(profile: OFDMProfile, payloadLength: Int?) {
            self.profile = profile
            self.payloadLength = payloadLength
            codec = LDPCBlockCodec(code: profile.code)
            helper = PairedBlock(code: profile.code)
            soft.reserveCapacity(2 * profile.code.length + profile.bitsPerSymbol)
        }

        /// Whether to decode now: two blocks' soft bits are in, or one and it is the last of an
        /// announced length, or one of a stream (whose end is not known; it is not kept waiting).
        var ready: Bool {
            let length = profile.code.length
            guard soft.count >= length else { return false }
            guard soft.count < 2 * length, let payloadLength else { return true }
            return block + 1 >= max(1, (payloadLength + profile.blockPayload - 1) / profile.blockPayload)
        }

        /// Decodes the next block, or the next two at once (two cores) when their soft bits are all
        /// here, and drops their soft bits: the decoder is most of the receiver's time, and a
        /// 16,384-QAM transmission decoded one block at a time read 10 s of audio in 0.6 s of one core.
        func decodeNext() -> [LDPCBlockCodec.Decoded] {
            let length = profile.code.length
            let index = block
            guard soft.count >= 2 * length else {
                let one = soft.withUnsafeBufferPointer { codec.decode(UnsafeBufferPointer(rebasing: $0[0..<length]), index: index) }
                soft.removeFirst(length)
                return [one]
            }
            let job = helper
            job.index = index + 1
            job.soft.replaceSubrange(0..<length, with: soft[length..<(2 * length)])
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) { job.decode() }
            let first = soft.withUnsafeBufferPointer { codec.decode(UnsafeBufferPointer(rebasing: $0[0..<length]), index: index) }
            group.wait()
            soft.removeFirst(2 * length)
            return [first, job.result]
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
                                                       symbolCount: count, fitChannel: profile.fitsChannel))
                    current = Current(profile: profile, payloadLength: header.payloadLength)
                    onEvent(.started(profile: profile, payloadLength: header.payloadLength, statistics: demodulator.statistics))
                case .symbol:
                    guard let c = current else { continue }
                    c.soft.append(contentsOf: demodulator.softBits)
                    while current != nil && c.ready {
                        for result in c.decodeNext() where current != nil {
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
