import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines
import ModemRuntime

/// The channel protocol's frames over the OFDM modem, for one end of the link: frames become records
/// (`[length: 2 bytes][frame]`) in a byte stream cut into CRC-checked LDPC blocks, sent as one OFDM
/// transmission that stays open while frames keep coming (the preamble and training, 0.33 s, are
/// paid once per burst of traffic, not per frame) and ends after a short idle spell.
///
/// Each block starts with four bytes: this end's tag (so an end that hears itself on a shared line
/// ignores its own blocks), the configuration this end asks the peer to send with (0: none; bit 7 set:
/// this end lost the peer's transmission before its end, see below), and where the first record
/// starting in the block begins (so a lost block loses only the frames in it).
///
/// A receiver that loses a transmission before its last block (a burst of noise, a dropout: its
/// pilots gone or two blocks in a row failed) cannot find it again until a new preamble, and an open
/// transmission may go on for as long as frames keep coming. So it says so in its own blocks (a
/// one-block transmission if it has nothing else to send), and a sender told so ends its open
/// transmission and starts a new one; the link's acknowledgements resend what was lost.
///
/// Rate adaptation: every transmission's training measures the SNR of every carrier of the band, so
/// the receiving end knows the fastest configuration the line carries with margin
/// (``OFDMProfile/fastest(for:margin:)``) and asks for it in its own blocks; a block that fails
/// lowers the ask one step below what failed. The sending end sends with what the peer asked for;
/// until it has been asked, with what it measured of the peer's line (lines are mostly alike both
/// ways); with the configuration's start (``initialProfile``) when it has heard nothing. Two
/// transmissions in a row that nothing answered step it down one configuration. An end that hears a
/// transmission it cannot decode answers with a short one carrying its ask, so a start on a line too
/// poor for it costs one round trip. (The record stream, the adaptation and the output queue are
/// shared with ``HFLinkModem``.)
public final class OFDMLinkModem: LinkAudioModem {
    /// Samples per second (48,000).
    public let sampleRate: Int
    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// The configuration a link starts with before it has measured anything.
    public static var initialProfile: OFDMProfile { OFDMProfile.withID(17)! }
    /// The slowest configuration the adaptation falls to (timers allow for its blocks).
    public static var floorProfile: OFDMProfile { OFDMProfile.withID(2)! }
    /// dB of margin kept over a configuration's measured threshold.
    public static let margin = 3.0
    /// Seconds of idle blocks sent after the last frame before a transmission ends: an open
    /// transmission answers at once, a new one costs its 0.33 s start. Nil on a shared line
    /// (``useSharedMedium()``), where the other end waits for silence: one block, then the end.
    public private(set) var idleSecondsBeforeEnd: Double? = 8

    /// Both ends on one line: transmissions end right after their frames.
    public func useSharedMedium() { idleSecondsBeforeEnd = nil }

    /// Idle blocks of `profile` before a transmission ends.
    private func idleBlocks(_ profile: OFDMProfile) -> Int {
        guard let seconds = idleSecondsBeforeEnd else { return 1 }
        let block = Double(profile.code.length) / Double(profile.bitsPerSymbol) * profile.numerology.symbolSeconds
        return max(1, Int((seconds / block).rounded(.up)))
    }

    /// Frames decoded so far.
    public private(set) var framesDecoded = 0
    /// Blocks whose check failed.
    public private(set) var framesDamaged = 0
    /// Every frame travels coded.
    public var codedFramesDecoded: Int { framesDecoded }
    /// Records that were not link frames.
    public var framesForeign: Int { reader.foreign }
    /// The configuration this end sends with now.
    public var sendProfile: OFDMProfile { adaptation.sendProfile }
    /// What this end asks the peer to send with (nil: nothing heard yet).
    public var request: OFDMProfile? { adaptation.request }
    /// Transmissions sent and heard, and configuration changes made, so far.
    public private(set) var transmissionsSent = 0
    public private(set) var transmissionsHeard = 0
    public var profileChanges: Int { adaptation.profileChanges }

    private let tag: UInt8

    private let peak: Float = 0.5
    /// The amplitude of a tone with this modem's power (√2 times its RMS, a fifth of its 0.5 peak:
    /// ``OFDMTransmitter/peakToRMS``), for setting noise from an SNR (``LoopbackMedium``).
    public static let signalAmplitude = 2.0.squareRoot() * 0.5 / Double(OFDMTransmitter.peakToRMS)
    private var adaptation: LinkRateAdaptation<OFDMProfile>
    // Sending.
    private var stream = LinkRecordStream()
    private var sender: Sender?
    /// The data and hello frames queued for the next transmission.
    private var queuedKeys = Set<ResendKey>()

    /// What makes a frame sent again recognisable: a message's fragment, or a hello.
    private struct ResendKey: Hashable {
        let kind: LinkFrame.Kind, session: UInt8, message: UInt16, fragment: UInt16
        init?(_ f: LinkFrame) {
            guard f.kind == .data || f.kind == .hello else { return nil }
            kind = f.kind; session = f.session; message = f.message; fragment = f.fragment
        }
    }
    private var audio = LinkAudioQueue()
    private var answerOwed = false
    /// The peer said (bit 7 of its ask byte) that it lost this end's transmission; acted on once each
    /// time the bit comes on.
    private var peerLostUs = false
    /// Transmissions this end ended early because the peer had lost them.
    public private(set) var transmissionsRestarted = 0
    // Receiving.
    /// A peer transmission was lost before its end: said in this end's blocks until the peer is heard again.
    private var lostPeer = false
    private let demodulator: OFDMDemodulator
    private var receiving: Receiving?
    private var reader = LinkRecordReader()

    private final class Sender {
        let profile: OFDMProfile
        let modulator: OFDMModulator
        let codec: LDPCBlockCodec
        var bits: [UInt8] = []
        var block = 0
        var idle = 0
        var ending = false
        /// Blocks without frames after which the transmission ends.
        var idleLimit: Int
        /// Bits still to be played of blocks that carry frames, and of the block that ends what was queued.
        var frameBits = 0
        var doneBits: Int?
        /// The data and hello frames this transmission carries (or was given to carry).
        var carried = Set<ResendKey>()
        init(profile: OFDMProfile, rms: Float, idleLimit: Int) {
            self.idleLimit = idleLimit
            self.profile = profile
            modulator = OFDMModulator(numerology: profile.numerology, constellation: profile.constellation, rms: rms)
            codec = LDPCBlockCodec(code: profile.code)
        }
    }

    private final class Receiving {
        let profile: OFDMProfile
        var codec: LDPCBlockCodec
        var soft: [Float] = []
        var block = 0
        var failuresInARow = 0
        var good = 0
        var ownTransmission = false
        /// Its last block (marked so) was read: the transmission was not lost on the way.
        var endedWhole = false
        /// What its training said the line offers, taken as this end's ask once the transmission is
        /// known to be the peer's.
        var estimate: OFDMProfile?
        var estimateTaken = false
        init(profile: OFDMProfile) {
            self.profile = profile
            codec = LDPCBlockCodec(code: profile.code)
        }
    }

    /// Creates a modem.
    /// - Parameters:
    ///   - tag: this end's mark in its blocks (1...255; the two ends of a link need different ones;
    ///     default: drawn at random).
    /// - Throws: ``ModemSettingsError`` when `sampleRate` is not 48,000 Hz (the OFDM modem's).
    public init(configuration: LinkConfiguration, sampleRate: Int, tag: UInt8 = UInt8.random(in: 1...255)) throws {
        precondition(tag != 0, "OFDMLinkModem tags are 1...255")
        self.tag = tag
        guard sampleRate == Int(OFDMNumerology.sampleRate) else {
            throw ModemSettingsError("the OFDM link runs at 48000 Hz, not \(sampleRate) Hz")
        }
        self.sampleRate = sampleRate
        self.configuration = configuration
        adaptation = LinkRateAdaptation(all: OFDMProfile.all, initial: Self.initialProfile, floor: Self.floorProfile)
        demodulator = OFDMDemodulator(inputSampleRate: Double(sampleRate))
    }

    /// Timers for an OFDM link: a nominal rate of the starting configuration, and an acknowledgement
    /// timeout that covers the training and two blocks at the slowest configuration.
    public static func timing(latencySeconds: Double) -> LinkTiming {
        let floor = floorProfile
        let blockSeconds = Double(floor.code.length) / Double(floor.bitsPerSymbol) * floor.numerology.symbolSeconds
        let start = Double(OFDMNumerology.startLength) / OFDMNumerology.sampleRate
        return .ofdm(acknowledgementTimeout: start + 2 * blockSeconds + 0.5, bytesPerSecond: initialProfile.netBitRate / 8)
    }

    public var hearsCarrier: Bool { demodulator.isBusy }

    /// The net rate of the configuration this end sends with.
    public var sendBitRate: Double { sendProfile.netBitRate }

    /// "OFDM 4096qam 5/6 cable".
    public var sendDescription: String { "OFDM \(sendProfile.name)" }

    public var isTransmitting: Bool { sender != nil || audio.pending > 0 || !stream.isEmpty }

    // MARK: Sending

    public func send(_ frames: [LinkFrame]) {
        guard !frames.isEmpty else { return }
        let keys = frames.compactMap(ResendKey.init)
        if let s = sender, !s.ending {
            if keys.contains(where: s.carried.contains) {
                // A frame this open transmission already carried, sent again: its acknowledgement did
                // not come, and the peer may have lost this transmission (it cannot find it again
                // before a new start). The open transmission ends; the frames go with a new start.
                s.ending = true
                transmissionsRestarted += 1
                queuedKeys.formUnion(keys)
            } else {
                s.carried.formUnion(keys)
            }
        } else {
            queuedKeys.formUnion(keys)
        }
        if sender == nil { adaptation.opening() }
        stream.append(frames)
        answerOwed = false
        // An open transmission that was winding down carries these too.
        sender?.idle = 0
    }

    public func output(count: Int) -> (samples: [Float], frameSpans: [Range<Int>], finished: Bool) {
        adaptation.update()
        while audio.pending < count && (sender != nil || !stream.isEmpty || answerOwed) {
            produceSymbol()
        }
        return audio.take(count)
    }

    /// Queues the next symbol of the open transmission (opening one if needed), encoding blocks as
    /// its bits need them.
    private func produceSymbol() {
        if sender == nil {
            // A transmission opened only to answer what could not be decoded is one block long.
            let s = Sender(profile: sendProfile, rms: peak / OFDMTransmitter.peakToRMS, idleLimit: stream.isEmpty ? 1 : idleBlocks(sendProfile))
            s.carried = queuedKeys
            queuedKeys.removeAll()
            sender = s
            transmissionsSent += 1
            audio.append(s.modulator.start(headerBits: OFDMHeader(profileID: s.profile.id, payloadLength: nil).symbolBits), carriesFrames: false)
        }
        guard let s = sender else { return }
        let per = s.modulator.bitsPerSymbol
        while s.bits.count < per {
            if s.ending {
                // The last block is marked; the symbol's rest is padding.
                var rng = SplitMix64(seed: UInt64(s.block))
                while s.bits.count < per { s.bits.append(UInt8(rng.next() & 1)) }
                break
            }
            let (payload, carriesFrames, endsQueue) = nextBlockPayload(capacity: s.codec.payloadCapacity)
            s.idle = carriesFrames ? 0 : s.idle + 1
            let last = (stream.isEmpty && s.idle >= s.idleLimit) || s.profile != sendProfile
            s.bits += s.codec.encode(payload, index: s.block, last: last)
            s.block += 1
            if carriesFrames { s.frameBits = s.bits.count }
            if endsQueue { s.doneBits = s.bits.count }
            if last { s.ending = true }
        }
        let symbol = s.bits.withUnsafeBufferPointer { s.modulator.dataSymbol(UnsafeBufferPointer(rebasing: $0[0..<per])) }
        s.bits.removeFirst(per)
        // Frames are lost with the symbols that carry their blocks' bits.
        audio.append(symbol.map { min(peak, max(-peak, $0)) }, carriesFrames: s.frameBits > 0)
        let end = audio.end
        s.frameBits = max(0, s.frameBits - per)
        if let d = s.doneBits {
            // What was queued is on the air once the symbol with its block's last bit is.
            if d <= per { audio.markDone(at: end); s.doneBits = nil } else { s.doneBits = d - per }
        }
        if s.ending && s.bits.isEmpty {
            sender = nil
            if !audio.awaitsDone && stream.isEmpty && s.doneBits != nil { audio.markDone(at: end) }
        }
    }

    /// The next block's payload: the four header bytes, then as much of the record stream as fits.
    /// Also whether it carries frame bytes and whether the stream's queued records all ended in it.
    private func nextBlockPayload(capacity: Int) -> ([UInt8], Bool, Bool) {
        let (bytes, firstRecord) = stream.take(capacity - 4)
        // Where the first record that starts in this block begins (0xFFFF: none does).
        let first = firstRecord.map { UInt16($0) } ?? 0xFFFF
        let ask = UInt8(request?.id ?? 0) | (lostPeer ? 0x80 : 0)
        var payload: [UInt8] = [tag, ask, UInt8(first & 0xFF), UInt8(first >> 8)]
        payload += bytes
        answerOwed = false
        return (payload, !bytes.isEmpty, !bytes.isEmpty && stream.isEmpty)
    }

    // MARK: Receiving

    public func receive(_ samples: UnsafeBufferPointer<Float>) -> (frames: [LinkFrame], heardForeign: Bool) {
        demodulator.push(samples)
        var frames: [LinkFrame] = []
        var foreign = false
        while let event = demodulator.next() {
            switch event {
            case .header:
                guard let header = OFDMHeader(soft: demodulator.softBits), let profile = OFDMProfile.withID(header.profileID),
                      profile.numerology.fitsSounding else {
                    demodulator.rejectHeader()
                    foreign = true
                    continue
                }
                demodulator.beginData(OFDMDataPlan(numerology: profile.numerology, constellation: profile.constellation, symbolCount: nil,
                                                    fitChannel: profile.fitsChannel))
                receiving = Receiving(profile: profile)
                reader.lose()
            case .symbol(let index):
                guard let r = receiving else { continue }
                if index == 0 { measured(r) }
                r.soft += demodulator.softBits
                let length = r.profile.code.length
                while receiving != nil && r.soft.count >= length {
                    let result = r.soft.withUnsafeBufferPointer { r.codec.decode(UnsafeBufferPointer(rebasing: $0[0..<length]), index: r.block) }
                    r.soft.removeFirst(length)
                    r.block += 1
                    switch result {
                    case .failed:
                        framesDamaged += 1
                        r.failuresInARow += 1
                        reader.lose()
                        // Pilots that no longer look like pilots: the transmission ended (or the line was
                        // cut), which says nothing of its rate.
                        let gone = demodulator.statistics.pilotCoherence < 0.5
                        if !r.ownTransmission && !gone {
                            foreign = true
                            takeEstimate(r)
                            adaptation.failed(r.profile)
                        }
                        // Two in a row, or the signal gone: the line is lost (or the peer stopped); search again.
                        if r.failuresInARow >= 2 || gone { endReceiving() }
                    case .block(let payload, let last, _, _):
                        r.failuresInARow = 0
                        r.good += 1
                        frames += accept(payload, from: r)
                        if last { r.endedWhole = true; endReceiving() }
                    }
                }
            case .transmissionEnd, .truncated:
                endReceiving()
            }
        }
        return (frames, foreign)
    }

    /// The training just read: what the line offers, as this end's ask.
    private func measured(_ r: Receiving) {
        r.estimate = OFDMProfile.fastest(for: demodulator.statistics, margin: Self.margin) ?? Self.floorProfile
    }

    /// The peer's transmission's measurement becomes this end's ask (once per transmission).
    private func takeEstimate(_ r: Receiving) {
        guard !r.estimateTaken, let e = r.estimate else { return }
        r.estimateTaken = true
        adaptation.estimate(e)
    }

    private func endReceiving() {
        guard let r = receiving else { return }
        receiving = nil
        demodulator.endTransmission()
        if !r.ownTransmission {
            transmissionsHeard += 1
            // Not understood, or lost before its last block: said in this end's blocks.
            let lost = !r.endedWhole
            if lost { lostPeer = true }
            // ... and with nothing to say, said at least in one block (with what this end asks for).
            if lost && stream.isEmpty && sender == nil { answerOwed = true }
            // A clean transmission at the cap lifts it for the next measurement.
            if r.good > 0 && r.failuresInARow == 0 { adaptation.clean(r.profile) }
        }
    }

    /// The frames completed by a checked block; its header bytes read first.
    private func accept(_ payload: [UInt8], from r: Receiving) -> [LinkFrame] {
        guard payload.count >= 4 else { return [] }
        if payload[0] == tag {
            // This end's own transmission, heard on a shared line: nothing in it is news.
            r.ownTransmission = true
            return []
        }
        adaptation.answered()
        takeEstimate(r)
        lostPeer = false
        let ask = payload[1] & 0x7F, lostUs = payload[1] & 0x80 != 0
        if lostUs && !peerLostUs, let s = sender, !s.ending {
            // The peer lost this transmission and will not find it again: end it after the bits already
            // made, so what follows goes with a new start.
            s.ending = true
            transmissionsRestarted += 1
        }
        peerLostUs = lostUs
        if ask != 0, let p = OFDMProfile.withID(Int(ask)), p.numerology.fitsSounding { adaptation.peerRequest = p }
        let first = Int(payload[2]) | Int(payload[3]) << 8
        // After a gap the stream resumes where a record starts.
        let frames = reader.read(payload[4...], firstRecord: first == 0xFFFF ? nil : first)
        framesDecoded += frames.count
        return frames
    }
}
