#if canImport(Glibc)
import Glibc
#endif
import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines

/// The channel protocol's frames over the HF (SSB channel) modem, for one end of the link: the frames
/// queued when a transmission starts become records (`[length: 2 bytes][frame]`) in the payload of
/// one HF transmission (``HFTransmitter``: the preamble, the header with the configuration and the
/// length, CRC-checked LDPC blocks interleaved over the whole transmission), made at 8 kHz and raised
/// to the link's rate. The receiving end reads a transmission once its last symbol is in (the
/// header says how long it is), so an answer can go out right after.
///
/// A transmission's payload starts with six bytes: this end's tag (so an end that hears itself on a
/// shared line ignores its own transmissions), the configuration this end asks the peer to send with
/// (0: none), and the configuration and length (24 bits) of the peer's last transmission this end
/// could not read (0: none), which the peer then sends again at once instead of after its
/// acknowledgement timeout. A transmission carries at most ``maximumTransmissionSeconds`` of data (at least
/// one frame): what is left goes in the next one, right after, so an answer the peer owes this end
/// never waits behind more than one transmission of the peer's.
///
/// Rate adaptation, as ``OFDMLinkModem``'s (the same ``LinkRateAdaptation``): the pilots of every
/// transmission the peer sends measure the SNR on the carriers, and the fastest configuration whose
/// white-noise threshold (``ModemPipelines/HFProfile/requiredCarrierSNR``) it clears by ``margin`` dB
/// plus what failures taught (``learnedMargin``: a fading line needs more than its SNR says) becomes
/// this end's ask; a transmission that fails also caps the ask one step below it, and two clean ones
/// in a row at or below the cap raise it one step. The sending end sends with what the peer asked
/// for, else with its own ask, else with ``initialProfile``; two transmissions in a row that nothing
/// answered step it down one configuration. An end that hears a transmission it cannot decode, with
/// nothing of its own to send, answers with a short one that carries its ask.
public final class HFLinkModem: LinkAudioModem {
    /// Samples per second (a whole multiple of 8000 Hz; 48,000 on the link's sound cards).
    public let sampleRate: Int
    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// The configuration a link starts with: QPSK 1/2 on the robust grid (1,580 bit/s).
    public static var initialProfile: HFProfile { HFProfile.standard }
    /// The slowest configuration the adaptation falls to: QPSK 1/2 x4 on the robust grid (395 bit/s;
    /// timers allow for a frame at it).
    public static var floorProfile: HFProfile { HFProfile.withID(4)! }
    /// dB of margin kept over a configuration's threshold.
    public static let margin = 3.0
    /// The fastest configuration a short transmission (fewer than ``shortTransmission`` bytes: an
    /// acknowledgement, a poll) is sent with: QPSK 3/5 on the robust grid. Short code words at
    /// 64- and 256-QAM fail where long ones pass, and a lost acknowledgement costs a timeout, while
    /// the robust configuration adds a few tenths of a second to a 0.42 s start.
    public static var shortProfile: HFProfile { HFProfile.withID(20)! }
    /// Below this many payload bytes a transmission is short (``shortProfile``).
    public static let shortTransmission = 256
    /// Seconds of data one transmission carries at most (at least one frame, whatever its length).
    public static let maximumTransmissionSeconds = 10.0

    /// Frames decoded so far.
    public private(set) var framesDecoded = 0
    /// Blocks whose check failed.
    public private(set) var framesDamaged = 0
    /// Every frame travels coded.
    public var codedFramesDecoded: Int { framesDecoded }
    /// Records that were not link frames.
    public var framesForeign: Int { reader.foreign }
    /// The configuration this end sends with now.
    public var sendProfile: HFProfile { adaptation.sendProfile }
    /// What this end asks the peer to send with (nil: nothing heard yet).
    public var request: HFProfile? { adaptation.request }
    /// Configuration changes made so far.
    public var profileChanges: Int { adaptation.profileChanges }
    /// Transmissions sent, and transmissions of the peer's heard (decoded or not), so far.
    public private(set) var transmissionsSent = 0
    public private(set) var transmissionsHeard = 0
    /// The SNR on the carriers (dB) of the last transmission of the peer's that was read.
    public private(set) var lastCarrierSNR: Double?
    /// dB the line has shown it needs over the white-noise thresholds (a fading line's): 3 dB more
    /// after every transmission of the peer's that failed, 0.25 dB less after every clean one that
    /// was not short (0...20).
    /// The ask is the fastest configuration that clears its threshold by ``margin`` plus this.
    public private(set) var learnedMargin = 0.0

    private let tag: UInt8
    private let factor: Int
    private let peak: Float = 0.5
    /// The amplitude of a tone with this modem's power (√2 times its RMS, a quarter of its 0.5 peak:
    /// ``ModemPipelines/HFTransmitter/peakToRMS``), for setting noise from an SNR.
    public static let signalAmplitude = 2.0.squareRoot() * 0.5 / Double(HFTransmitter.peakToRMS)

    private var adaptation: LinkRateAdaptation<HFProfile>
    // Sending.
    private var stream = LinkRecordStream()
    private var audio = LinkAudioQueue()
    private var answerOwed = false
    /// The last transmissions that carried frames: their configuration, payload length and records,
    /// so one the peer could not read is sent again at once.
    private var recent: [(profile: Int, length: Int, records: [UInt8])] = []
    /// The configuration and length of the peer's last transmission that could not be read, said in
    /// this end's next one (nil: none).
    private var failedHeard: (profile: Int, length: Int)?
    /// Transmissions sent again because the peer said it could not read them.
    public private(set) var transmissionsRepeated = 0
    // Receiving, at 8 kHz: `pcm[0]` is sample `base` since the start.
    private var decimator: HFFilters.Decimator
    private var pcm: [Float] = []
    private var base = 0
    private var searchFrom = 0
    private var nextSearchAt = 0
    private var reading: Reading?
    private var reader = LinkRecordReader()

    /// A transmission whose header was read, waiting for its last symbol.
    private struct Reading {
        let start: Int
        let frequencyOffset: Double
        let profile: HFProfile
        let length: Int
        let end: Int
        let headerSNR: Double
    }

    /// Samples kept on either side of what the demodulator reads (its filters' edges, the timing search).
    private static let margin8k = 256

    /// Creates a modem.
    /// - Parameters:
    ///   - tag: this end's mark in its transmissions (1...255; the two ends of a link need different
    ///     ones; default: drawn at random).
    /// - Throws: ``ModemSettingsError`` when `sampleRate` is not a whole multiple of 8000 Hz.
    public init(configuration: LinkConfiguration, sampleRate: Int, tag: UInt8 = UInt8.random(in: 1...255)) throws {
        precondition(tag != 0, "HFLinkModem tags are 1...255")
        guard sampleRate > 0, sampleRate % Int(HFGrid.sampleRate) == 0, sampleRate <= 192_000 else {
            throw ModemSettingsError("the HF link runs at 8000 Hz or a whole multiple of it (48000), not \(sampleRate) Hz")
        }
        self.tag = tag
        self.sampleRate = sampleRate
        self.configuration = configuration
        factor = sampleRate / Int(HFGrid.sampleRate)
        decimator = HFFilters.Decimator(factor: factor)
        adaptation = LinkRateAdaptation(all: HFProfile.all.filter(\.pickedByBitRate), initial: Self.initialProfile, floor: Self.floorProfile,
                                        cleanToLift: 2, liftOneStep: true)
    }

    /// Seconds on the air of a transmission of `bytes` of payload with `profile`, the tail included.
    static func seconds(_ bytes: Int, _ profile: HFProfile) -> Double { profile.seconds(forPayload: bytes) + 0.025 }

    /// Timers for an HF link with frames of up to `framePayload` bytes: a nominal rate of the starting
    /// configuration, and an acknowledgement timeout that covers the longest transmission the peer
    /// may be in the middle of (``maximumTransmissionSeconds`` of data, or one frame at the floor)
    /// and its answer at the floor, with a second to spare.
    public static func timing(latencySeconds: Double, framePayload: Int = 512) -> LinkTiming {
        let frame = LinkFrame.overhead + 2 + framePayload
        let longest = max(seconds(Int(floorProfile.netBitRate * maximumTransmissionSeconds / 8), floorProfile), seconds(frame + 2, floorProfile))
        let answer = seconds(2 + 2 * (LinkFrame.overhead + 2 + 16), floorProfile)
        return .hf(acknowledgementTimeout: longest + answer + 1, bytesPerSecond: initialProfile.netBitRate / 8)
    }

    /// The link's configuration over HF: frames of `framePayload` bytes (default 512: 16 KiB in a
    /// window of 32), the HF timers.
    public static func linkConfiguration(mode: CommunicationMode, framePayload: Int = 512, windowFrames: Int = 32,
                                         latencySeconds: Double = 0) -> LinkConfiguration {
        LinkConfiguration(mode: mode, framePayload: framePayload, windowFrames: windowFrames, latencySeconds: latencySeconds,
                          timing: timing(latencySeconds: latencySeconds, framePayload: framePayload))
    }

    public var hearsCarrier: Bool { reading != nil }

    /// The net rate of the configuration this end sends with.
    public var sendBitRate: Double { sendProfile.netBitRate }

    /// "HF QPSK 1/2 robust".
    public var sendDescription: String { "HF \(sendProfile.name)" }

    public var isTransmitting: Bool { audio.pending > 0 || !stream.isEmpty }

    /// Nothing changes: every transmission ends with its frames anyway.
    public func useSharedMedium() {}

    // MARK: Sending

    public func send(_ frames: [LinkFrame]) {
        guard !frames.isEmpty else { return }
        if !isTransmitting { adaptation.opening() }
        stream.append(frames)
        answerOwed = false
    }

    public func output(count: Int) -> (samples: [Float], frameSpans: [Range<Int>], finished: Bool) {
        if audio.pending < count && (!stream.isEmpty || answerOwed) { transmit() }
        return audio.take(count)
    }

    /// Queues the next transmission: this end's tag and ask, then the records that fit.
    private func transmit() {
        adaptation.update()
        var profile = sendProfile
        let room = max(1, Int(profile.netBitRate * Self.maximumTransmissionSeconds / 8) - 2)
        let records = stream.isEmpty ? [] : stream.takeRecords(room)
        answerOwed = false
        // The header: tag, ask, and the peer's transmission this end could not read (its configuration
        // and 24 bits of its length; 0: none).
        let nak = failedHeard
        failedHeard = nil
        let n = nak?.length ?? 0
        let payload = [tag, UInt8(request?.id ?? 0), UInt8(nak?.profile ?? 0), UInt8(truncatingIfNeeded: n >> 16),
                       UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] + records
        if payload.count < Self.shortTransmission && profile.netBitRate > Self.shortProfile.netBitRate { profile = Self.shortProfile }
        guard var samples = try? HFTransmitter.samples(payload: payload, profile: profile, peak: peak) else { return }
        if factor > 1 { samples = HFFilters.interpolate(samples, factor: factor).map { min(1, max(-1, $0)) } }
        transmissionsSent += 1
        if !records.isEmpty {
            recent.append((profile.id, payload.count, records))
            if recent.count > 4 { recent.removeFirst() }
        }
        audio.append(samples, carriesFrames: !records.isEmpty)
        if !records.isEmpty && stream.isEmpty { audio.markDone(at: audio.end) }
    }

    // MARK: Receiving

    public func receive(_ samples: UnsafeBufferPointer<Float>) -> (frames: [LinkFrame], heardForeign: Bool) {
        decimator.push(samples, into: &pcm)
        var frames: [LinkFrame] = []
        var foreign = false
        while step(&frames, &foreign) {}
        trim()
        return (frames, foreign)
    }

    /// One step of reading: a search, a header or a whole transmission; whether to try another.
    private func step(_ frames: inout [LinkFrame], _ foreign: inout Bool) -> Bool {
        let available = base + pcm.count
        let M = Self.margin8k
        if let r = reading {
            guard available >= r.end + M else { return false }
            reading = nil
            searchFrom = r.end
            nextSearchAt = 0
            let from = max(base, r.start - M)
            let demodulator = HFDemodulator(samples: Array(pcm[(from - base)..<(r.end + M - base)]))
            let data = HFReceiver.readData(demodulator, start: r.start - from, frequencyOffset: r.frequencyOffset, profile: r.profile,
                                           payloadLength: r.length)
            frames += heard(r, data, &foreign)
            return true
        }
        let L = HFGrid.preamblePeriod, W = (HFGrid.preambleRepeats - 2) * L
        guard available >= nextSearchAt, available - searchFrom >= W + L + 64 else { return false }
        let from = max(base, searchFrom - M)
        let demodulator = HFDemodulator(samples: Array(pcm[(from - base)...]))
        guard let sync = demodulator.findPreamble(from: searchFrom - from) else {
            // Nothing: the next search starts where this one could no longer look, after 128 ms more.
            searchFrom = max(searchFrom, available - W - L)
            nextSearchAt = available + 1024
            return false
        }
        let start = from + sync.start
        guard available >= start + HFGrid.startLength + M else {
            // The header is not all in: search again once it is.
            searchFrom = max(searchFrom, start - M)
            nextSearchAt = start + HFGrid.startLength + M
            return false
        }
        let (header, h) = HFReceiver.readHeader(demodulator, sync: sync)
        guard let header, let profile = HFProfile.withID(header.profileID), header.payloadLength >= Self.headerBytes else {
            // Not one of ours, or not read: something else is on the line.
            foreign = true
            searchFrom = max(searchFrom, start) + L
            nextSearchAt = 0
            return true
        }
        let end = start + HFGrid.startLength + profile.symbolCount(forPayload: header.payloadLength) * profile.grid.symbolLength
        reading = Reading(start: start, frequencyOffset: sync.frequencyOffset + h.residualFrequency, profile: profile,
                          length: header.payloadLength, end: end, headerSNR: h.carrierSNR)
        return true
    }

    /// A whole transmission read: its frames, the ask it carries, what it measured of the line.
    private func heard(_ r: Reading, _ data: HFTransmissionData?, _ foreign: inout Bool) -> [LinkFrame] {
        reader.lose()
        let payload = data?.blocks.joined().map { $0 } ?? []
        if payload.count >= 1 && payload[0] == tag {
            // This end's own transmission, heard on a shared line: nothing in it is news.
            return []
        }
        transmissionsHeard += 1
        // The data's pilots measure the line over the whole transmission, but too few symbols (an
        // answer of a few bytes) measure little: the header's eight then say more.
        let symbols = r.profile.symbolCount(forPayload: r.length)
        let snr = symbols >= 8 ? data?.carrierSNR ?? r.headerSNR : r.headerSNR
        lastCarrierSNR = snr
        let failed = data?.failedBlock != nil || data == nil
        // A short transmission that came through says little of what the line carries at length.
        let short = r.length < Self.shortTransmission
        if failed { learnedMargin = min(20, learnedMargin + 3) } else if !short { learnedMargin = max(0, learnedMargin - 0.25) }
        adaptation.estimate(HFProfile.fastest(forCarrierSNR: snr, margin: Self.margin + learnedMargin) ?? Self.floorProfile)
        var frames: [LinkFrame] = []
        if payload.count >= Self.headerBytes {
            adaptation.answered()
            if payload[1] != 0, let p = HFProfile.withID(Int(payload[1])), p.pickedByBitRate { adaptation.peerRequest = p }
            if payload[2] != 0 { repeatFailed(profile: Int(payload[2]), length: Int(payload[3]) << 16 | Int(payload[4]) << 8 | Int(payload[5])) }
            frames = reader.read(payload[Self.headerBytes...], firstRecord: 0)
            framesDecoded += frames.count
        }
        if failed {
            framesDamaged += 1
            foreign = true
            adaptation.failed(r.profile)
            // Say which transmission could not be read (in this end's next one: at once when it has
            // nothing else to send), so the peer sends it again without waiting for its timeout.
            failedHeard = (r.profile.id, r.length & 0xFF_FFFF)
            if !isTransmitting { answerOwed = true }
        } else if !short {
            adaptation.clean(r.profile)
        }
        return frames
    }

    /// Bytes before the records: tag, ask, and the configuration and length of a transmission not read.
    static let headerBytes = 6

    /// The peer could not read this end's transmission of `length` payload bytes with configuration
    /// `profile`: its records go out again first, in the next transmission.
    private func repeatFailed(profile: Int, length: Int) {
        guard let i = recent.lastIndex(where: { $0.profile == profile && $0.length & 0xFF_FFFF == length }) else { return }
        let again = recent.remove(at: i)
        stream.prepend(records: again.records)
        transmissionsRepeated += 1
    }

    /// Drops the samples no search or read will look at again.
    private func trim() {
        let keep = (reading.map { $0.start } ?? searchFrom) - 2 * Self.margin8k
        let drop = keep - base
        if drop > 1 << 15 {
            pcm.removeFirst(drop)
            base += drop
        }
    }
}
