import ModemAudio
import ModemCodecs
import ModemDSP

/// One AX.25 frame received.
public struct ReceivedPacket: Sendable {
    /// The frame's bytes, FCS removed.
    public var bytes: [UInt8]
    /// The frame, when its bytes parse as AX.25 (nil for other HDLC payloads).
    public var frame: AX25Frame?
    /// Absolute sample index at which the frame ended (its closing flag).
    public var endSample: Int
    /// Line bits that were inverted to make the FCS pass (0 for a frame received intact).
    public var repairedBits: Int
    /// The slicer that decoded it first.
    public var slicer: Int

    /// The frame in TNC2 monitor format (`SRC>DST,PATH*:info`), or the bytes in hex if not AX.25.
    public var monitorLine: String {
        if let frame { return frame.monitorLine() }
        return "<non-AX.25 frame " + bytes.map { String($0, radix: 16) }.joined(separator: " ") + ">"
    }
}

/// Counts of a packet reception.
public struct PacketStatistics: Sendable {
    /// Unique frames delivered (intact and repaired).
    public var decoded = 0
    /// Of those, frames made to pass their FCS by inverting one line bit.
    public var repaired = 0
    /// Frames that failed their FCS on the primary slicer and could not be repaired by any slicer.
    public var crcFailures = 0
    /// Copies of frames already delivered that other slicers decoded too (not delivered again).
    public var duplicates = 0
    /// Samples read.
    public var samples = 0
}

/// Receives AX.25 frames (HDLC, NRZI) over AFSK: Bell 202 1200 baud, 300 baud HF, any tone pair.
///
/// Several slicers decode in parallel (different space weights for de-emphasised audio, different
/// window lengths); each has its own PLL, NRZI decoder and HDLC decoder. A frame that fails its
/// FCS is repaired by inverting single line bits (two adjacent bits after NRZI) when that yields a
/// valid AX.25 frame; repaired frames are counted apart. A frame decoded by several slicers is
/// delivered once, in the order frames end on the air.
public final class PacketReceiver {
    /// Samples per bit.
    public let samplesPerBit: Double
    /// The audio.
    public let source: any AudioSource
    /// Whether single line-bit repair is attempted on frames that fail their FCS.
    public let repairs: Bool

    private var demodulator: FSKBitDemodulator?
    private var baseband: BasebandBitDemodulator?
    private var descramblers: [G3RUHDescrambler] = []
    private var nrzi: [NRZIDecoder]
    private var hdlc: [HDLCDecoder]
    private var recent: [(bytes: [UInt8], end: Int)] = []
    private var pendingFailures: [(end: Int, length: Int)] = []
    private var statistics = PacketStatistics()
    private var bits: [SlicedBit] = []
    /// Slack between slicers finding the same frame (about eight bytes of air time), in samples.
    private var frameWindow: Int { Int(samplesPerBit * 64) }

    /// The slicers used by default for a baud rate: three space weights (−6, 0, +6 dB) for
    /// de-emphasised or pre-emphasised audio, on 1.3-bit windows, plus a 1.5-bit window for 300 baud.
    public static func defaultSlicers(baudRate: Double) -> [FSKBitDemodulator.Slicer] {
        var s: [FSKBitDemodulator.Slicer] = [-6.0, 0, 6].map { .init(balanceDB: $0, windowBits: 1.3) }
        if baudRate <= 600 { s.append(.init(balanceDB: 0, windowBits: 1.5)) }
        return s
    }

    /// Creates a receiver.
    /// - Parameters:
    ///   - settings: tones and baud (the framing is ignored: HDLC).
    ///   - source: the audio; its sample rate is used (for ``process(_:)`` alone, any source with
    ///     the right sample rate).
    ///   - slicers: the demodulator's slicers (default: ``defaultSlicers(baudRate:)``).
    ///   - repairs: attempt single line-bit repair (default true).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sample rate.
    public init(settings: ModemSettings, source: any AudioSource, slicers: [FSKBitDemodulator.Slicer]? = nil,
                repairs: Bool = true) throws {
        self.source = source
        self.repairs = repairs
        let count: Int
        if settings.isBaseband {
            let rate = Double(source.sampleRate)
            guard (8000...192_000).contains(rate), settings.baudRate <= rate / 4 else {
                throw ModemSettingsError("\(settings.baudRate) baud baseband needs a sample rate of at least \(Int(settings.baudRate * 4)) Hz (8000...192000), got \(source.sampleRate)")
            }
            let windows = [0.55, 0.65, 0.75]
            baseband = BasebandBitDemodulator(sampleRate: rate, baudRate: settings.baudRate, windowBits: windows)
            descramblers = Array(repeating: G3RUHDescrambler(), count: windows.count)
            samplesPerBit = rate / settings.baudRate
            count = windows.count
        } else {
            let configuration = try settings.configuration(sampleRate: source.sampleRate)
            let sl = slicers ?? Self.defaultSlicers(baudRate: settings.baudRate)
            demodulator = FSKBitDemodulator(configuration: configuration, slicers: sl)
            samplesPerBit = configuration.samplesPerBit
            count = sl.count
        }
        nrzi = Array(repeating: NRZIDecoder(), count: count)
        hdlc = Array(repeating: HDLCDecoder(), count: count)
    }

    /// Runs until the source ends or `shouldStop` returns true.
    /// - Parameters:
    ///   - shouldStop: polled between blocks.
    ///   - onPacket: receives each unique frame as soon as it is decoded.
    ///   - onProgress: samples read so far.
    /// - Returns: the counts.
    /// - Throws: ``AudioError`` when reading fails, or what `onPacket` throws.
    public func run(shouldStop: () -> Bool = { false }, onPacket: (ReceivedPacket) throws -> Void,
                    onProgress: (Int) -> Void = { _ in }) throws -> PacketStatistics {
        var block = [Float](repeating: 0, count: 16384)
        while !shouldStop() {
            let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { break }
            for p in block.withUnsafeBufferPointer({ process(UnsafeBufferPointer(rebasing: $0[0..<n])) }) {
                try onPacket(p)
            }
            onProgress(statistics.samples)
        }
        return finish()
    }

    /// Feeds samples (for callers that drive the audio themselves, such as a TNC) and returns the
    /// unique frames they completed, in the order they ended.
    public func process(_ samples: UnsafeBufferPointer<Float>) -> [ReceivedPacket] {
        var found: [ReceivedPacket] = []
        statistics.samples += samples.count
        if baseband != nil { baseband!.process(samples, into: &bits) } else { demodulator!.process(samples, into: &bits) }
        let scrambled = baseband != nil
        for b in bits {
            let line = scrambled ? descramblers[b.slicer].descramble(b.mark) : b.mark
            let bit = nrzi[b.slicer].decode(line)
            guard let out = hdlc[b.slicer].decode(bit) else { continue }
            switch out {
            case .frame(let f):
                if let p = deliver(f.bytes, end: b.sample, repaired: 0, slicer: b.slicer) { found.append(p) }
            case .damaged(let candidate):
                let bitsLong = candidate.rawBits.count
                guard bitsLong >= HDLCDecoder.ax25MinimumLength * 8 else { continue }
                if b.slicer == 0 { pendingFailures.append((b.sample, bitsLong)) }
                // One wrong line bit: two adjacent wrong bits after NRZI, or six after G3RUH
                // descrambling and NRZI.
                if repairs, bitsLong <= 400 * 8,
                   let fixed = candidate.repair(pattern: scrambled ? [0, 1, 12, 13, 17, 18] : [0, 1],
                                                isAcceptable: { (try? AX25Frame(decoding: $0)) != nil }),
                   let p = deliver(fixed.bytes, end: b.sample, repaired: 1, slicer: b.slicer) {
                    found.append(p)
                }
            }
        }
        bits.removeAll(keepingCapacity: true)
        settleFailures(before: statistics.samples - 4 * frameWindow)
        return found
    }

    /// Ends the reception and returns the counts.
    public func finish() -> PacketStatistics {
        settleFailures(before: Int.max)
        return statistics
    }

    /// The counts so far.
    public var currentStatistics: PacketStatistics { statistics }

    private func deliver(_ bytes: [UInt8], end: Int, repaired: Int, slicer: Int) -> ReceivedPacket? {
        let window = frameWindow
        recent.removeAll { $0.end < end - 4 * window }
        if recent.contains(where: { $0.bytes == bytes && abs($0.end - end) <= window }) {
            statistics.duplicates += 1
            return nil
        }
        recent.append((bytes, end))
        // A frame some slicer decoded is not a failure, whatever the primary slicer saw.
        pendingFailures.removeAll { abs($0.end - end) <= window }
        statistics.decoded += 1
        if repaired > 0 { statistics.repaired += 1 }
        let frame = try? AX25Frame(decoding: bytes)
        return ReceivedPacket(bytes: bytes, frame: frame, endSample: end, repairedBits: repaired, slicer: slicer)
    }

    /// Primary-slicer FCS failures that no slicer recovered within the window count as failures.
    private func settleFailures(before sample: Int) {
        let settled = pendingFailures.filter { $0.end < sample }
        statistics.crcFailures += settled.count
        pendingFailures.removeAll { $0.end < sample }
    }
}
