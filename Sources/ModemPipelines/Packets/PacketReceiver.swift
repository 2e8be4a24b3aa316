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
    /// When it came first out of an FX.25 block: the bytes the Reed-Solomon code corrected in that block
    /// (0 for a clean block). Nil when it came as plain AX.25.
    public var fecCorrectedBytes: Int? = nil
    /// Whether that block needed the demodulator's doubtful bytes as erasures.
    public var fecUsedErasures = false
    /// When it came as a coded frame (``CodedFrame``): the share of its line levels that were wrong.
    public var codedLevelErrorRate: Double? = nil
    /// Whether a corrected FX.25 block carried it (first, or as a copy of the plain AX.25 frame inside).
    public var cameInFX25Block = false
    /// When it came as an IL2P frame: the bytes (symbols) the Reed-Solomon codes corrected in its header
    /// and payload (0 for a clean frame). Nil when it came as plain AX.25 or FX.25.
    public var il2pCorrectedSymbols: Int? = nil
    /// Whether that IL2P frame needed the demodulator's doubtful bytes as erasures.
    public var il2pUsedErasures = false
    /// Whether it came as an IL2P frame.
    public var cameAsIL2P: Bool { il2pCorrectedSymbols != nil }
    /// Whether it came as a coded frame.
    public var isCoded: Bool { codedLevelErrorRate != nil }

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
    /// Frames that failed their FCS on every slicer that saw them and could not be repaired, and were
    /// heard as frames: their closing flag seen by at least half the slicers at one place (noise makes
    /// flag patterns too, but each on a slicer or two), outside any corrected FX.25 block or coded frame.
    public var crcFailures = 0
    /// Every damaged candidate that no slicer decoded and no repair saved: ``crcFailures`` and the
    /// "frames" noise makes between chance flag patterns (what repairs were tried on).
    public var failedCandidates = 0
    /// Copies of frames already delivered that other slicers decoded too (not delivered again).
    public var duplicates = 0
    /// Repairs that made a frame pass its FCS but were rejected because the result is implausible
    /// (for AX.25 see ``AX25Plausibility``): each is a CRC collision, a frame that was never sent.
    public var implausibleRepairs = 0
    /// Those by reason (for AX.25 the ``AX25Plausibility/Problem`` names: malformed, address, control,
    /// pid, info).
    public var implausibleByReason: [String: Int] = [:]
    /// Repair positions tried (each inverts one line bit and checks the FCS; on a frame that cannot be
    /// repaired each is a 1 in 65,536 chance that it passes its FCS anyway).
    public var repairTrials = 0
    /// Of those, the positions tried on damaged frames whose bits de-stuff to whole bytes. On the others
    /// (misaligned) only a flip that adds or removes a stuffing bit can give whole bytes, so almost all
    /// false FCS passes come from these: expect about `alignedRepairTrials / 65536` of them.
    public var alignedRepairTrials = 0
    /// Frames delivered that a corrected FX.25 block carried, whether the plain AX.25 inside was
    /// decoded too (a clean block: both paths have it) or not (the block saved it).
    public var fx25Frames = 0
    /// Of those, frames that came first out of their FX.25 block and whose block had bytes corrected
    /// by the Reed-Solomon code: each is a frame FEC saved.
    public var fecCorrected = 0
    /// Bytes the code corrected in those blocks.
    public var fecBytesFixed = 0
    /// Of ``fecCorrected``, frames whose block needed the demodulator's doubtful bytes as erasures.
    public var fecWithErasures = 0
    /// FX.25 blocks beyond correction whose frame no other path delivered (counted once, however many
    /// slicers saw the block).
    public var fx25Uncorrectable = 0
    /// Coded frames (``CodedFrame``, the channel protocol's coded mode) delivered.
    public var codedFrames = 0
    /// Frames delivered that came as IL2P (``IL2PDecoder``; AX.25 formats only).
    public var il2pFrames = 0
    /// Of those, frames with bytes corrected by IL2P's Reed-Solomon codes (each is a frame FEC saved or
    /// cleaned up: IL2P has no other check).
    public var il2pCorrected = 0
    /// Bytes (symbols) the codes corrected in those frames, header and payload.
    public var il2pSymbolsFixed = 0
    /// Of ``il2pCorrected``, frames whose blocks needed the demodulator's doubtful bytes as erasures.
    public var il2pWithErasures = 0
    /// IL2P frames with a good header whose payload was beyond correction and that no other slicer
    /// delivered (counted once, however many slicers saw the frame).
    public var il2pUncorrectable = 0
    /// IL2P copies that differed from another slicer's copy of the same frame (one was miscorrected);
    /// of each pair the one the codes changed less was kept.
    public var il2pConflicts = 0
    /// Coded frames announced by a good header that no slicer could decode (counted per slicer copy).
    public var codedLost = 0
    /// Samples read.
    public var samples = 0

    /// All counts zero.
    public init() {}
}

/// What frames a ``PacketReceiver`` looks for: their length limits and what makes a repaired frame
/// believable.
public struct PacketFormat: Sendable {
    /// Smallest frame in bytes, FCS included.
    public var minimumLength: Int
    /// Largest frame in bytes, FCS included.
    public var maximumLength: Int
    /// Whether frames are AX.25 (decoded into ``ReceivedPacket/frame``).
    public var isAX25: Bool
    /// Why bytes (without the FCS) are not acceptable as a repaired frame: a short reason for the
    /// statistics, or `nil` when they are acceptable.
    public var problem: @Sendable ([UInt8]) -> String?

    /// Whether bytes (without the FCS) are acceptable as a repaired frame.
    public var accepts: @Sendable ([UInt8]) -> Bool {
        let problem = self.problem
        return { problem($0) == nil }
    }

    /// Creates a format whose repaired frames are judged by a yes/no test (a rejection is counted as
    /// `"implausible"`).
    public init(minimumLength: Int, maximumLength: Int, isAX25: Bool = false, accepts: @escaping @Sendable ([UInt8]) -> Bool) {
        self.init(minimumLength: minimumLength, maximumLength: maximumLength, isAX25: isAX25,
                  problem: { accepts($0) ? nil : "implausible" })
    }

    /// Creates a format whose repaired frames are judged by `problem` (nil: acceptable).
    public init(minimumLength: Int, maximumLength: Int, isAX25: Bool = false, problem: @escaping @Sendable ([UInt8]) -> String?) {
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
        self.isAX25 = isAX25
        self.problem = problem
    }

    /// AX.25 frames up to 400 bytes; a repaired frame must pass ``AX25Plausibility`` (strict callsigns,
    /// reserved SSID bits, control and PID values AX.25 defines, text under PID 0xF0).
    public static let ax25 = PacketFormat(minimumLength: HDLCDecoder.ax25MinimumLength, maximumLength: 400, isAX25: true,
                                          problem: { AX25Plausibility.problem(in: $0)?.rawValue })
}

/// Receives AX.25 frames (HDLC, NRZI) over AFSK (Bell 202 1200 baud, 300 baud HF, any tone
/// pair), G3RUH scrambled baseband (9600 baud) or differential PSK (2400 bit/s QPSK, 4800 bit/s 8PSK:
/// ``PSKBitDemodulator``, whose slicers take the AFSK slicers' place).
///
/// Several slicers decode in parallel (different space weights for de-emphasised audio, different
/// window lengths); each has its own PLL, NRZI decoder and HDLC decoder. A frame that fails its
/// FCS is repaired by inverting single line bits (two adjacent bits after NRZI; for AX.25 only the
/// least confident ones, ``PacketReceiver/repairPositions``) when that yields a plausible AX.25 frame
/// (``AX25Plausibility``); repaired frames and rejected repairs are counted apart. Each slicer also
/// looks for FX.25 correlation tags (``FX25Decoder``) and corrects the Reed-Solomon blocks after them,
/// with the bytes it was least sure of as erasures, and (for AX.25) for IL2P sync words (``IL2PDecoder``,
/// on the line bits before NRZI and before G3RUH descrambling), so FX.25, IL2P and plain AX.25 decode
/// from one stream. A frame decoded by several slicers (or both plain and through FX.25) is delivered
/// once, in the order frames end on the air (held for a few frame-lengths of audio first, and while an
/// FX.25 block or IL2P frame that may hold it is still arriving).
public final class PacketReceiver {
    /// Samples per bit.
    public let samplesPerBit: Double
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The audio that ``run(shouldStop:onPacket:onProgress:)`` reads, if the receiver was made with one.
    public let source: (any AudioSource)?
    /// Whether single line-bit repair is attempted on frames that fail their FCS (never for PSK).
    public let repairs: Bool
    /// The frames looked for.
    public let format: PacketFormat

    private var demodulator: FSKBitDemodulator?
    private var psk: PSKBitDemodulator?
    private var baseband: [BasebandLane]?
    private var nrzi: [NRZIDecoder]
    private var hdlc: [HDLCDecoder]
    private var recent: [(bytes: [UInt8], end: Int, inFX25Block: Bool)] = []
    private var held: [ReceivedPacket] = []
    private var damaged: [(end: Int, slicer: Int, candidate: HDLCFrameCandidate, confidence: [Float]?)] = []
    /// Per AFSK slicer, the confidence of its recent line bits.
    private var confidence: [LineConfidence]
    /// Per AFSK slicer, its FX.25 decoder and the confidence of its last line bit.
    private var fx25: [FX25Decoder]
    private var lastConfidence: [Float]
    /// Per AFSK slicer, its decoder of coded frames.
    private var coded: [CodedFrameDecoder]
    /// Per AFSK slicer, its IL2P decoder (empty when the format is not AX.25).
    private var il2p: [IL2PDecoder]
    /// IL2P frames whose payload was beyond correction, not yet settled: their sync word's and last bit's samples.
    private var failedIL2P: [(start: Int, end: Int)] = []
    /// FX.25 blocks beyond correction, not yet settled: their tag and last bit's samples.
    private var failedBlocks: [(start: Int, end: Int)] = []
    /// Corrected FX.25 blocks (from the tag to the last check byte): what the plain HDLC path finds
    /// damaged inside one (the check bytes, read as bits between flags) is no frame and no CRC failure.
    private var correctedBlocks: [(start: Int, end: Int)] = []
    /// Slicers in all (AFSK or baseband).
    private let slicerCount: Int
    private var statistics = PacketStatistics()
    private var bits: [SlicedBit] = []
    /// Slack between slicers finding the same frame (about eight bytes of air time), in samples.
    private var frameWindow: Int { Int(samplesPerBit * 64) }

    /// The slicers used by default for a baud rate.
    ///
    /// 1200 baud and up: fixed space weights −12, 0, +12 dB on 1.3-bit windows, plus two adaptive
    /// slicers (1.3- and 1-bit windows) whose weight follows the tone levels measured on their own
    /// decisions. On de-emphasised audio at low SNR the best weight is sharp (400 Hz de-emphasis,
    /// SNR 10: 3 dB decodes 27 of 30, 0 or 6 dB 2-5) and lies below the tone level difference, so a
    /// fixed grid misses it; the adaptive slicer lands on it (see ``FSKBitDemodulator/Slicer/adaptive``).
    /// 300 baud (and below): −12...+12 dB in 6 dB steps on 1.3-bit windows plus a 1.5-bit window.
    public static func defaultSlicers(baudRate: Double) -> [FSKBitDemodulator.Slicer] {
        if baudRate <= 600 {
            var s: [FSKBitDemodulator.Slicer] = [-12.0, -6, 0, 6, 12].map { .init(balanceDB: $0, windowBits: 1.3) }
            s.append(.init(balanceDB: 0, windowBits: 1.5))
            s.append(.init(balanceDB: 0, windowBits: 1.3, clockInertia: 0.95))
            return s
        }
        var s: [FSKBitDemodulator.Slicer] = [-12.0, 0, 12].map { .init(balanceDB: $0, windowBits: 1.3) }
        s.append(.init(balanceDB: 0, windowBits: 1.3, adaptive: true))
        s.append(.init(balanceDB: 0, windowBits: 1, adaptive: true))
        s.append(.init(balanceDB: 0, windowBits: 1.3, clockInertia: 0.95))
        return s
    }

    /// Creates a receiver that reads `source` when ``run(shouldStop:onPacket:onProgress:)`` is called.
    /// - Parameters:
    ///   - settings: tones and baud (the framing is ignored: HDLC).
    ///   - source: the audio; its sample rate is used.
    ///   - slicers: the AFSK demodulator's slicers (default: ``defaultSlicers(baudRate:)``; baseband and PSK use their own).
    ///   - repairs: attempt single line-bit repair (default true).
    ///   - format: the frames looked for (default AX.25).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sample rate.
    public convenience init(settings: ModemSettings, source: any AudioSource, slicers: [FSKBitDemodulator.Slicer]? = nil,
                            repairs: Bool = true, format: PacketFormat = .ax25) throws {
        try self.init(settings: settings, sampleRate: source.sampleRate, source: source, slicers: slicers, repairs: repairs,
                      format: format)
    }

    /// Creates a receiver fed through ``process(_:)`` by a caller that drives the audio itself.
    /// - Parameters:
    ///   - settings: tones and baud (the framing is ignored: HDLC).
    ///   - sampleRate: the rate of the samples that will be fed, in Hz.
    ///   - slicers: the AFSK demodulator's slicers (default: ``defaultSlicers(baudRate:)``; baseband and PSK use their own).
    ///   - repairs: attempt single line-bit repair (default true).
    ///   - format: the frames looked for (default AX.25).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the sample rate.
    public convenience init(settings: ModemSettings, sampleRate: Int, slicers: [FSKBitDemodulator.Slicer]? = nil,
                            repairs: Bool = true, format: PacketFormat = .ax25) throws {
        try self.init(settings: settings, sampleRate: sampleRate, source: nil, slicers: slicers, repairs: repairs, format: format)
    }

    private init(settings: ModemSettings, sampleRate: Int, source: (any AudioSource)?, slicers: [FSKBitDemodulator.Slicer]?,
                 repairs: Bool, format: PacketFormat) throws {
        self.sampleRate = sampleRate
        self.source = source
        // PSK: no single line-bit repair. It saved 1 frame of 285 on the gen_packets noise files, and on
        // a file of random text at -4 dB it delivered a frame that was never sent (a CRC collision whose
        // text was still printable; 12,269 trials, 3,597 of them on whole-byte copies).
        self.repairs = repairs && settings.psk == nil
        self.format = format
        repairPositions = format.isAX25 ? 32 : Int.max
        let count: Int
        if let mode = settings.psk {
            let rate = Double(sampleRate)
            guard (8000...192_000).contains(rate) else {
                throw ModemSettingsError("PSK needs a sample rate of 8000...192000 Hz, got \(sampleRate)")
            }
            let d = PSKBitDemodulator(mode: mode, sampleRate: rate)
            psk = d
            count = d.slicers.count
            slicerCount = count
            samplesPerBit = rate / mode.bitRate
        } else if settings.isBaseband {
            let rate = Double(sampleRate)
            guard (8000...192_000).contains(rate), settings.baudRate <= rate / 4 else {
                throw ModemSettingsError("\(settings.baudRate) baud baseband needs a sample rate of at least \(Int(settings.baudRate * 4)) Hz (8000...192000), got \(sampleRate)")
            }
            // Three window lengths, each sliced at three levels (−0.1, 0, +0.1 of the signal's RMS).
            // One lane; several lanes (shares of the slicers) could run on threads of their own, but
            // on a loaded two-core machine two threads measured no faster.
            var all: [(windowBits: Double, threshold: Double)] = []
            for w in [0.55, 0.65, 0.75] { for t in [-0.1, 0, 0.1] { all.append((windowBits: w, threshold: t)) } }
            let decoder = HDLCDecoder(minimumLength: format.minimumLength,
                                      maximumLength: max(format.maximumLength, HDLCDecoder.ax25MaximumLength))
            baseband = [0..<9].map { range in
                BasebandLane(demodulator: BasebandBitDemodulator(sampleRate: rate, baudRate: settings.baudRate,
                                                                 slicers: Array(all[range]), firstSlicer: range.lowerBound),
                             decoder: decoder, maximumFrameBits: format.maximumLength * 8, il2p: format.isAX25)
            }
            count = 0
            slicerCount = all.count
            samplesPerBit = rate / settings.baudRate
        } else {
            let configuration = try settings.configuration(sampleRate: sampleRate)
            let sl = slicers ?? Self.defaultSlicers(baudRate: settings.baudRate)
            demodulator = FSKBitDemodulator(configuration: configuration, slicers: sl)
            samplesPerBit = configuration.samplesPerBit
            count = sl.count
            slicerCount = sl.count
        }
        nrzi = Array(repeating: NRZIDecoder(), count: count)
        confidence = Array(repeating: LineConfidence(maximumFrameBits: format.maximumLength * 8), count: count)
        let fx = FX25Decoder(minimumFrameLength: format.minimumLength, maximumFrameLength: format.maximumLength)
        fx25 = Array(repeating: fx, count: count)
        coded = Array(repeating: CodedFrameDecoder(maximumLength: format.maximumLength), count: count)
        il2p = format.isAX25 ? Array(repeating: IL2PDecoder(), count: count) : []
        lastConfidence = Array(repeating: 0, count: count)
        hdlc = Array(repeating: HDLCDecoder(minimumLength: format.minimumLength,
                                            maximumLength: max(format.maximumLength, HDLCDecoder.ax25MaximumLength)),
                     count: count)
    }

    /// Runs until the source ends or `shouldStop` returns true. Needs a receiver made with a source.
    /// - Parameters:
    ///   - shouldStop: polled between blocks.
    ///   - onPacket: receives each unique frame as soon as it is decoded.
    ///   - onProgress: samples read so far.
    /// - Returns: the counts.
    /// - Throws: ``AudioError`` when reading fails, or what `onPacket` throws.
    public func run(shouldStop: () -> Bool = { false }, onPacket: (ReceivedPacket) throws -> Void,
                    onProgress: (Int) -> Void = { _ in }) throws -> PacketStatistics {
        guard let source else { preconditionFailure("PacketReceiver.run needs a receiver made with a source") }
        var block = [Float](repeating: 0, count: 16384)
        while !shouldStop() {
            let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { break }
            for p in block.withUnsafeBufferPointer({ process(UnsafeBufferPointer(rebasing: $0[0..<n])) }) {
                try onPacket(p)
            }
            onProgress(statistics.samples)
        }
        for p in flush() { try onPacket(p) }
        return finish()
    }

    /// Feeds samples (for callers that drive the audio themselves, such as a TNC) and returns the
    /// unique frames now settled, in the order they ended on the air. A frame is held for a few
    /// frame-lengths of audio so that the slicers' copies and any repair can be compared first.
    public func process(_ samples: UnsafeBufferPointer<Float>) -> [ReceivedPacket] {
        statistics.samples += samples.count
        if baseband != nil {
            processBaseband(samples)
            return settle(before: horizon)
        }
        if psk != nil { psk!.process(samples, into: &bits) } else { demodulator!.process(samples, into: &bits) }
        // Work on local copies: mutating a class's arrays in the loop costs a runtime exclusivity
        // check per access.
        var nrzi = self.nrzi, hdlc = self.hdlc, confidence = self.confidence, fx25 = self.fx25, last = lastConfidence
        var coded = self.coded, il2p = self.il2p
        self.fx25 = []
        self.coded = []
        self.il2p = []
        let decodesIL2P = !il2p.isEmpty
        var codedFrames: [(slicer: Int, bytes: [UInt8], start: Int, end: Int, errorRate: Double)] = []
        var blocks: [(slicer: Int, block: FX25Block)] = []
        var il2pFrames: [(slicer: Int, reception: IL2PReception)] = []
        for b in bits {
            let k = b.slicer
            // IL2P takes the line bits as they are (no NRZI).
            if decodesIL2P, let r = il2p[k].decode(b.mark, confidence: b.confidence, stamp: b.sample) {
                il2pFrames.append((k, r))
            }
            // The line bit with HDLC bit index i decides data bits i and i + 1 (NRZI).
            confidence[k].append(b.confidence)
            if let f = coded[k].decode(b.mark ? b.confidence : -b.confidence, stamp: b.sample) {
                codedFrames.append((k, f.bytes, f.tagStamp, f.endStamp, f.levelErrorRate))
            }
            let bit = nrzi[k].decode(b.mark)
            if let block = fx25[k].decode(bit, confidence: min(b.confidence, last[k]), stamp: b.sample) {
                blocks.append((k, block))
            }
            last[k] = b.confidence
            let out = hdlc[k].decode(bit)
            confidence[k].trim(bitIndex: hdlc[k].bitIndex)
            guard let out else { continue }
            switch out {
            case .frame(let f):
                hold(f.bytes, end: b.sample, repaired: 0, slicer: k)
            case .damaged(let candidate):
                let n = candidate.rawBits.count
                if n >= format.minimumLength * 8 && n <= format.maximumLength * 8 {
                    damaged.append((b.sample, k, candidate, confidence[k].values(for: candidate)))
                }
            }
        }
        self.nrzi = nrzi; self.hdlc = hdlc; self.confidence = confidence; self.fx25 = fx25; lastConfidence = last
        statistics.codedLost = coded.reduce(0) { $0 + $1.framesLost }
        self.coded = coded
        self.il2p = il2p
        for (k, block) in blocks { take(block, slicer: k) }
        for (k, r) in il2pFrames { take(r, slicer: k) }
        for f in codedFrames where format.problem(f.bytes) == nil {
            hold(f.bytes, end: f.end, repaired: 0, slicer: f.slicer, codedErrorRate: f.errorRate)
            // The plain path's "frames" inside it (chance flag patterns in the code bits) are no damage.
            correctedBlocks.append((f.start, f.end))
        }
        bits.removeAll(keepingCapacity: true)
        return settle(before: horizon)
    }

    /// Frames ending before this sample may be settled: a few frame-lengths back, and before any FX.25
    /// block still arriving (its frame may rescue a damaged one, or duplicate an intact one).
    private var horizon: Int {
        var h = statistics.samples - 4 * frameWindow
        for d in fx25 { if let s = d.oldestPendingStamp { h = min(h, s) } }
        for d in coded { if let s = d.oldestPendingStamp { h = min(h, s) } }
        for d in il2p { if let s = d.oldestPendingStamp { h = min(h, s) } }
        if let lanes = baseband {
            for l in lanes {
                for d in l.fx25 { if let s = d.oldestPendingStamp { h = min(h, s) } }
                for d in l.il2p { if let s = d.oldestPendingStamp { h = min(h, s) } }
            }
        }
        return h
    }

    /// Holds the frames of a corrected FX.25 block; remembers a block beyond correction.
    private func take(_ block: FX25Block, slicer: Int) {
        guard let corrected = block.correctedBytes else {
            failedBlocks.append((block.tagStamp, block.endStamp))
            return
        }
        var kept = false
        for (frame, end) in block.frames {
            // With many erasures the code checks little by itself: such frames must also look like
            // AX.25, as repaired frames must.
            if block.usedErasures, let reason = format.problem(frame.bytes) {
                statistics.implausibleRepairs += 1
                statistics.implausibleByReason[reason, default: 0] += 1
                continue
            }
            hold(frame.bytes, end: end, repaired: 0, slicer: slicer, fec: corrected, erasures: block.usedErasures)
            kept = true
        }
        // Only a block whose frame was taken: otherwise a damaged plain copy inside it may still be repaired.
        if kept { correctedBlocks.append((block.tagStamp, block.endStamp)) }
    }

    /// Holds the frame of a decoded IL2P frame; remembers one beyond correction.
    ///
    /// IL2P has no FCS, so a frame is as good as its code: one whose blocks needed erasures, or whose
    /// header or small payload blocks (2 or 4 check bytes, which correct one or two bytes and check little
    /// beyond) had bytes corrected, must also look like AX.25, as a repaired frame must; one with no
    /// payload whose header was corrected is dropped.
    private func take(_ r: IL2PReception, slicer: Int) {
        guard let frame = r.frame, let corrected = r.correctedSymbols else {
            failedIL2P.append((r.syncStamp, r.endStamp))
            return
        }
        if r.usedErasures || r.smallBlockCorrected, let reason = format.problem(frame) {
            statistics.implausibleRepairs += 1
            statistics.implausibleByReason[reason, default: 0] += 1
            return
        }
        // A corrected header with no payload: only the header's own two check bytes vouch for it. On
        // band-limited 8PSK noise (flag runs read as IL2P bytes) one such frame, `0BRRRR-2>MRRRRR-3:`,
        // passed every other test.
        if r.header.payloadCount == 0, corrected > 0 {
            statistics.implausibleRepairs += 1
            statistics.implausibleByReason["il2p-header", default: 0] += 1
            return
        }
        hold(frame, end: r.endStamp, repaired: 0, slicer: slicer, erasures: r.usedErasures, il2p: corrected)
        // The plain path's damaged "frames" inside it (chance flag patterns in its bytes) are no damage.
        correctedBlocks.append((r.syncStamp - Int(samplesPerBit * 32), r.endStamp))
    }

    /// The baseband path: each lane (a share of the slicers with its own demodulator, descramblers,
    /// NRZI and HDLC decoders) runs in turn; their frames are then taken in the order a single pass
    /// over all slicers would give (by sample, then slicer).
    private func processBaseband(_ samples: UnsafeBufferPointer<Float>) {
        var lanes = baseband!
        baseband = nil
        let minBits = format.minimumLength * 8, maxBits = format.maximumLength * 8
        for i in lanes.indices { lanes[i].process(samples, minimumBits: minBits, maximumBits: maxBits) }
        var cursor = [Int](repeating: 0, count: lanes.count)
        while true {
            var pick = -1
            for l in lanes.indices where cursor[l] < lanes[l].events.count {
                let e = lanes[l].events[cursor[l]]
                if pick < 0 {
                    pick = l
                } else {
                    let p = lanes[pick].events[cursor[pick]]
                    if (e.sample, e.slicer) < (p.sample, p.slicer) { pick = l }
                }
            }
            if pick < 0 { break }
            let e = lanes[pick].events[cursor[pick]]
            cursor[pick] += 1
            switch e.output {
            case .frame(let f): hold(f.bytes, end: e.sample, repaired: 0, slicer: e.slicer)
            case .damaged(let candidate): damaged.append((e.sample, e.slicer, candidate, e.confidence))
            }
        }
        for l in lanes.indices { lanes[l].events.removeAll(keepingCapacity: true) }
        let blocks = lanes.flatMap(\.blocks)
        for l in lanes.indices { lanes[l].blocks.removeAll(keepingCapacity: true) }
        let il2pFrames = lanes.flatMap(\.il2pFrames)
        for l in lanes.indices { lanes[l].il2pFrames.removeAll(keepingCapacity: true) }
        baseband = lanes
        for (k, block) in blocks { take(block, slicer: k) }
        for (k, r) in il2pFrames.sorted(by: { ($0.reception.endStamp, $0.slicer) < ($1.reception.endStamp, $1.slicer) }) {
            take(r, slicer: k)
        }
    }

    /// Ends the reception: settles what is held and returns it (``run`` delivers it itself).
    public func flush() -> [ReceivedPacket] {
        settle(before: Int.max)
    }

    /// Ends the reception and returns the counts (call ``flush()`` first when driving ``process(_:)``).
    public func finish() -> PacketStatistics {
        statistics
    }

    /// Keeps a decoded frame unless a slicer already has it.
    private func hold(_ bytes: [UInt8], end: Int, repaired: Int, slicer: Int, fec: Int? = nil, erasures: Bool = false,
                      codedErrorRate: Double? = nil, il2p: Int? = nil) {
        let window = frameWindow
        if let il2p, let i = held.firstIndex(where: { $0.cameAsIL2P && $0.bytes != bytes && abs($0.endSample - end) <= window }) {
            // Two slicers' IL2P copies of one frame (they end at one place) differ: the codes miscorrected
            // one. Keep the one they changed less.
            statistics.il2pConflicts += 1
            if il2p < held[i].il2pCorrectedSymbols! {
                held[i] = ReceivedPacket(bytes: bytes, frame: format.isAX25 ? try? AX25Frame(decoding: bytes) : nil, endSample: end,
                                         repairedBits: 0, slicer: slicer, il2pCorrectedSymbols: il2p, il2pUsedErasures: erasures)
            }
            return
        }
        if let i = held.firstIndex(where: { $0.bytes == bytes && abs($0.endSample - end) <= window }) {
            // A copy; from an FX.25 block, it says the frame came in one too.
            if fec != nil { held[i].cameInFX25Block = true }
            statistics.duplicates += 1
            return
        }
        if let i = recent.firstIndex(where: { $0.bytes == bytes && abs($0.end - end) <= window }) {
            if fec != nil && !recent[i].inFX25Block {
                recent[i].inFX25Block = true
                statistics.fx25Frames += 1
            }
            statistics.duplicates += 1
            return
        }
        held.append(ReceivedPacket(bytes: bytes, frame: format.isAX25 ? try? AX25Frame(decoding: bytes) : nil, endSample: end,
                                   repairedBits: repaired, slicer: slicer, fecCorrectedBytes: fec, fecUsedErasures: fec != nil && erasures,
                                   codedLevelErrorRate: codedErrorRate, cameInFX25Block: fec != nil,
                                   il2pCorrectedSymbols: il2p, il2pUsedErasures: il2p != nil && erasures))
    }

    /// Repair attempts per damaged frame (copies from different slicers; each costs one de-stuffing
    /// per bit of the frame).
    static let repairAttempts = 9

    /// The line bits tried per damaged AX.25 frame copy: the ones the slicer was least sure of
    /// (smallest ``SlicedBit/confidence``). Every position tried is about a 1 in 65,536 chance that a
    /// frame that cannot be repaired passes its FCS anyway, so trying 32 instead of all (about 830 on a
    /// 100-byte frame) makes such false repairs about 25 times rarer. On 32 files of 60 frames at
    /// -4...-2 dB (scripts/bench-ax25-corrupt.sh) all positions gave 1222 true frames and 11 false FCS
    /// passes (all rejected by ``AX25Plausibility``), 64: 1211 and 2, 32: 1201 and 1, 16: 1187 and 0;
    /// `gen_packets -n 100` gave 80 at 1200 baud and 78 at 300 with any of these. The baseband (G3RUH)
    /// path does the same with ``BasebandBitDemodulator``'s confidences: position p is the line bit with
    /// HDLC bit index p, whose error the descrambler and NRZI spread to data bits p, p + 1, p + 12,
    /// p + 13, p + 17, p + 18 (the repair pattern). Formats other than AX.25 (the link modem's
    /// frames) default to `Int.max`: every position, in line order, as before.
    public var repairPositions: Int

    /// The indices of the `count` smallest values, in increasing order of value.
    static func leastConfident(_ values: [Float], count: Int) -> [Int] {
        guard count < values.count else { return Array(values.indices).sorted { values[$0] < values[$1] } }
        return Array(values.indices.sorted { values[$0] < values[$1] }.prefix(count))
    }

    /// Damaged frames that no slicer decoded get up to ``repairAttempts`` repair attempts (from
    /// different slicers); then frames ending before `horizon` are delivered in time order.
    private func settle(before horizon: Int) -> [ReceivedPacket] {
        let window = frameWindow
        // Inside a corrected FX.25 block the plain path's damaged "frames" are its check bytes, up to
        // the flag after them (two bytes' worth of line bits of slack); inside a coded frame, chance
        // flag patterns in its code bits.
        let blocks = correctedBlocks, slack = Int(samplesPerBit * 16)
        let ripe = damaged.filter { d in d.end < horizon && !blocks.contains { d.end >= $0.start && d.end <= $0.end + slack } }
        damaged.removeAll { $0.end < horizon }
        var i = 0
        while i < ripe.count {
            // A cluster: damaged copies of one frame from several slicers.
            var j = i + 1
            while j < ripe.count && ripe[j].end - ripe[i].end <= window { j += 1 }
            let cluster = ripe[i..<j]
            let decoded = held.contains { abs($0.endSample - cluster.first!.end) <= window }
                || recent.contains { abs($0.end - cluster.first!.end) <= window }
            if !decoded {
                var fixedOne = false
                if repairs {
                    let pattern = baseband != nil ? [0, 1, 12, 13, 17, 18] : [0, 1]
                    var tried: [[Bool]] = []
                    let problem = format.problem
                    for c in cluster.sorted(by: { $0.slicer < $1.slicer }).prefix(Self.repairAttempts) {
                        // Slicers often hand in the same bits: their repair would fail alike.
                        if tried.contains(c.candidate.rawBits) { continue }
                        tried.append(c.candidate.rawBits)
                        // Every FCS pass that fails the plausibility test is a CRC collision: count it.
                        var rejected: [String] = []
                        // exhaustive: false makes 9600 about 35 % faster but loses a frame on the noise test.
                        // AFSK: only the line bits the slicer was least sure of (see repairPositions).
                        let positions = repairPositions == Int.max ? nil
                            : c.confidence.map { Self.leastConfident($0, count: repairPositions) }
                        let fixed = c.candidate.repair(pattern: pattern, exhaustive: true, positions: positions) { bytes in
                            guard let reason = problem(bytes) else { return true }
                            rejected.append(reason)
                            return false
                        }
                        statistics.implausibleRepairs += rejected.count
                        for r in rejected { statistics.implausibleByReason[r, default: 0] += 1 }
                        var trials = positions?.count ?? c.candidate.rawBits.count
                        if let fixed, let first = fixed.flippedBitIndices.first {
                            let p = first - c.candidate.startBitIndex
                            trials = (positions?.firstIndex(of: p) ?? p) + 1
                        }
                        statistics.repairTrials += trials
                        if !c.candidate.isMisaligned { statistics.alignedRepairTrials += trials }
                        if let fixed {
                            hold(fixed.bytes, end: c.end, repaired: 1, slicer: c.slicer)
                            fixedOne = true
                            break
                        }
                    }
                }
                if !fixedOne {
                    statistics.failedCandidates += 1
                    // A frame that was sent ends where most slicers see its closing flag.
                    if Set(cluster.map(\.slicer)).count * 2 >= slicerCount { statistics.crcFailures += 1 }
                }
            }
            i = j
        }
        let out = held.filter { $0.endSample < horizon }.sorted { $0.endSample < $1.endSample }
        held.removeAll { $0.endSample < horizon }
        for p in out {
            statistics.decoded += 1
            if p.repairedBits > 0 { statistics.repaired += 1 }
            if p.isCoded { statistics.codedFrames += 1 }
            if p.cameInFX25Block { statistics.fx25Frames += 1 }
            if let fixed = p.il2pCorrectedSymbols {
                statistics.il2pFrames += 1
                if fixed > 0 {
                    statistics.il2pCorrected += 1
                    statistics.il2pSymbolsFixed += fixed
                    if p.il2pUsedErasures { statistics.il2pWithErasures += 1 }
                }
            }
            if let fixed = p.fecCorrectedBytes {
                if fixed > 0 {
                    statistics.fecCorrected += 1
                    statistics.fecBytesFixed += fixed
                    if p.fecUsedErasures { statistics.fecWithErasures += 1 }
                }
            }
            recent.append((p.bytes, p.endSample, p.cameInFX25Block))
        }
        // A block beyond correction on every slicer, whose frame came by no other path, is counted once.
        let failed = failedBlocks.filter { $0.end < horizon }.sorted { $0.start < $1.start }
        failedBlocks.removeAll { $0.end < horizon }
        var lastCounted: Int?
        for f in failed where lastCounted.map({ f.start - $0 > window }) ?? true {
            let delivered = recent.contains { $0.end >= f.start - window && $0.end <= f.end + window }
            if !delivered {
                statistics.fx25Uncorrectable += 1
                lastCounted = f.start
            }
        }
        // The same for IL2P frames beyond correction.
        let failedFrames = failedIL2P.filter { $0.end < horizon }.sorted { $0.start < $1.start }
        failedIL2P.removeAll { $0.end < horizon }
        lastCounted = nil
        for f in failedFrames where lastCounted.map({ f.start - $0 > window }) ?? true {
            let delivered = recent.contains { $0.end >= f.start - window && $0.end <= f.end + window }
            if !delivered {
                statistics.il2pUncorrectable += 1
                lastCounted = f.start
            }
        }
        recent.removeAll { $0.end < horizon - 8 * window }
        correctedBlocks.removeAll { $0.end < horizon - 8 * window }
        return out
    }

    /// The counts so far.
    public var currentStatistics: PacketStatistics { statistics }

}

/// A share of the baseband slicers with everything after them up to HDLC.
private struct BasebandLane {
    struct Event {
        var sample: Int
        var slicer: Int
        var output: HDLCDecoderOutput
        /// For a damaged frame, the confidence of the line bits that gave its raw bits (the line bit with
        /// HDLC bit index i first reaches data bit i), when still held.
        var confidence: [Float]? = nil
    }

    var demodulator: BasebandBitDemodulator
    var descramblers: [G3RUHDescrambler]
    var nrzi: [NRZIDecoder]
    var hdlc: [HDLCDecoder]
    var bits: [[SlicedBit]]
    /// Per slicer, the confidence of its recent line bits.
    var confidence: [LineConfidence]
    /// Frames and damaged frames of the length looked for, in order of sample then slicer.
    var events: [Event] = []
    /// Per slicer, its FX.25 decoder and the confidence of its last line bit.
    var fx25: [FX25Decoder]
    var lastConfidence: [Float]
    /// FX.25 blocks completed, with their slicer.
    var blocks: [(slicer: Int, block: FX25Block)] = []
    /// Per slicer, its IL2P decoder (none when the format is not AX.25).
    var il2p: [IL2PDecoder]
    /// IL2P frames completed, with their slicer.
    var il2pFrames: [(slicer: Int, reception: IL2PReception)] = []

    init(demodulator: BasebandBitDemodulator, decoder: HDLCDecoder, maximumFrameBits: Int, il2p decodesIL2P: Bool) {
        self.demodulator = demodulator
        let n = demodulator.windowBits.count
        descramblers = Array(repeating: G3RUHDescrambler(), count: n)
        nrzi = Array(repeating: NRZIDecoder(), count: n)
        hdlc = Array(repeating: decoder, count: n)
        bits = Array(repeating: [], count: n)
        confidence = Array(repeating: LineConfidence(maximumFrameBits: maximumFrameBits), count: n)
        fx25 = Array(repeating: FX25Decoder(minimumFrameLength: decoder.minimumLength, maximumFrameLength: maximumFrameBits / 8), count: n)
        lastConfidence = Array(repeating: 0, count: n)
        il2p = decodesIL2P ? Array(repeating: IL2PDecoder(), count: n) : []
    }

    mutating func process(_ samples: UnsafeBufferPointer<Float>, minimumBits: Int, maximumBits: Int) {
        demodulator.process(samples, perSlicer: &bits)
        let start = events.count
        for k in bits.indices {
            var descrambler = descramblers[k], nrzi = self.nrzi[k], hdlc = self.hdlc[k]
            var confidence = self.confidence[k], fx = fx25[k], last = lastConfidence[k]
            // Taken out while in use: a copy left in the array would make each of its gatherings copy its bytes.
            var il: IL2PDecoder?
            if !il2p.isEmpty { il = il2p[k]; il2p[k] = IL2PDecoder() }
            for b in bits[k] {
                // IL2P at 9600 baud is not G3RUH-scrambled and has no NRZI: the line bits as they are.
                if il != nil, let r = il!.decode(b.mark, confidence: b.confidence, stamp: b.sample) {
                    il2pFrames.append((b.slicer, r))
                }
                // The line bit with HDLC bit index i is descrambled into bits i, i + 12 and i + 17, and
                // NRZI spreads each to the next bit too: it first reaches data bit i, which is where
                // the repair pattern [0, 1, 12, 13, 17, 18] starts.
                confidence.append(b.confidence)
                let bit = nrzi.decode(descrambler.descramble(b.mark))
                if let block = fx.decode(bit, confidence: min(b.confidence, last), stamp: b.sample) {
                    blocks.append((b.slicer, block))
                }
                last = b.confidence
                let out = hdlc.decode(bit)
                confidence.trim(bitIndex: hdlc.bitIndex)
                guard let out else { continue }
                var lineConfidence: [Float]? = nil
                if case .damaged(let candidate) = out {
                    let n = candidate.rawBits.count
                    guard n >= minimumBits && n <= maximumBits else { continue }
                    lineConfidence = confidence.values(for: candidate)
                }
                events.append(Event(sample: b.sample, slicer: b.slicer, output: out, confidence: lineConfidence))
            }
            descramblers[k] = descrambler; self.nrzi[k] = nrzi; self.hdlc[k] = hdlc
            self.confidence[k] = confidence; fx25[k] = fx; lastConfidence[k] = last
            if let il { il2p[k] = il }
            bits[k].removeAll(keepingCapacity: true)
        }
        events[start...].sort { ($0.sample, $0.slicer) < ($1.sample, $1.slicer) }
    }
}

/// The confidence of one slicer's recent line bits: enough for the longest frame, and the HDLC bit
/// index of the first one kept, so a damaged frame's bits can be looked up.
struct LineConfidence {
    private var values: [Float] = []
    private var firstBitIndex = 0
    /// How many are kept after a trim (a little more than the longest frame's stuffed bits).
    private let keep: Int

    init(maximumFrameBits: Int) { keep = maximumFrameBits + maximumFrameBits / 4 + 64 }

    /// Records the next line bit's confidence (before the HDLC decoder takes the bit).
    mutating func append(_ confidence: Float) { values.append(confidence) }

    /// Drops old values once twice ``keep`` have gathered; `bitIndex` is the HDLC decoder's bit index
    /// after the last appended bit.
    mutating func trim(bitIndex: Int) {
        guard values.count >= 2 * keep else { return }
        values.removeFirst(values.count - keep)
        firstBitIndex = bitIndex - keep
    }

    /// The confidences of `candidate`'s raw bits, or nil when some are no longer (or not yet) kept.
    func values(for candidate: HDLCFrameCandidate) -> [Float]? {
        let from = candidate.startBitIndex - firstBitIndex, n = candidate.rawBits.count
        return from >= 0 && from + n <= values.count ? Array(values[from..<(from + n)]) : nil
    }
}
