import Foundation
import ModemDSP
import ModemLink
import ModemMessaging
import ModemRuntime
import ModemTransport
import Synchronization

/// What `modem transfer-test` runs.
public struct TransferTestOptions: Sendable, Hashable {
    /// Line rate in baud.
    public var baudRate: Double
    /// Payload bytes to move.
    public var size: Int
    /// Full-band SNR in dB of the in-memory channel; nil: no noise.
    public var snrDB: Double?
    /// Probability that a frame is lost.
    public var frameLoss: Double
    /// Cuts: times the line is muted mid-transfer (at delivered fractions i/(cuts+1)).
    public var cuts: Int
    /// Seed of the payload, the channel and the cut jitter.
    public var seed: UInt64
    /// The link transports' keepalive in channel seconds (silence ends a link after 2x, a cut lasts 3x).
    public var keepalive: Double
    /// Payload bytes per block: one block per link message (16 x 1024-byte fragments, one window).
    public var blockSize: Int
    /// Plain records and the harness's own blocks instead of Noise sessions and data connections
    /// (to see what the link alone gives).
    public var plain: Bool
    /// Channel seconds without a newly verified block after which the test gives up (the report
    /// says so and is not completed); nil: ``defaultGiveUpSeconds``.
    public var giveUpSeconds: Double?
    /// Forward error correction on the link (coded frames): auto (default), on or off.
    public var forwardErrorCorrection: LinkFEC
    /// The OFDM modem under the link (``ModemLink/OFDMLinkModem``: its rate adapted to the line)
    /// instead of AFSK at ``baudRate``; its blocks are then ``ofdmBlockSize`` bytes (2048-byte frames,
    /// a window of 32, two messages in flight).
    public var ofdm: Bool
    /// The HF modem under the link (``ModemLink/HFLinkModem``: its rate adapted to the line) instead
    /// of AFSK; its blocks are ``linkBlockSize`` bytes (1024-byte frames, a window of 16). Meant with
    /// an HF line (``TransferLine/hf``, ``TransferLine/hfFading``).
    public var hf: Bool
    /// A simulated line (band limits, echo, drift, noise) instead of white noise alone; ``snrDB``,
    /// when given, overrides its SNR.
    public var line: TransferLine?

    /// Creates options.
    public init(baudRate: Double = 1200, size: Int, snrDB: Double? = nil, frameLoss: Double = 0, cuts: Int = 0,
                seed: UInt64 = 1, keepalive: Double = 30, blockSize: Int? = nil, plain: Bool = false,
                giveUpSeconds: Double? = nil, forwardErrorCorrection: LinkFEC = .auto, ofdm: Bool = false, hf: Bool = false,
                line: TransferLine? = nil) {
        precondition(!(ofdm && hf), "one modem under the link: OFDM or HF")
        self.ofdm = ofdm
        self.hf = hf
        self.line = line
        self.forwardErrorCorrection = forwardErrorCorrection
        self.plain = plain
        self.giveUpSeconds = giveUpSeconds
        self.baudRate = baudRate
        self.size = size
        self.snrDB = snrDB
        self.frameLoss = frameLoss
        self.cuts = cuts
        self.seed = seed
        self.keepalive = keepalive
        self.blockSize = blockSize ?? (ofdm ? Self.ofdmBlockSize : Self.linkBlockSize)
    }

    /// 63,000 bytes over OFDM: with its record header, hash and the session's overhead, one window of
    /// 32 fragments of 2048 bytes, under a session record's 65,535.
    public static let ofdmBlockSize = 63_000

    /// The link's configuration: duplex, AFSK at the baud rate with 1024-byte frames and a window of
    /// 16, OFDM with 2048-byte frames, a window of 32 and two messages in flight
    /// (``ModemLinkProtocol/LinkConfiguration/messagesInFlight``), or HF with 1024-byte frames and a window of 16.
    public var linkConfiguration: LinkConfiguration {
        if hf { return HFLinkModem.linkConfiguration(mode: .duplex, framePayload: 1024, windowFrames: 16) }
        if ofdm {
            var c = LinkConfiguration(mode: .duplex, framePayload: 2048, maximumMessageSize: 1 << 20, windowFrames: 32,
                                      timing: OFDMLinkModem.timing(latencySeconds: 0))
            // The next block goes out while the last one's acknowledgement is on its way back.
            c.messagesInFlight = 2
            return c
        }
        return LinkConfiguration(mode: .duplex, baudRate: baudRate, framePayload: 1024, maximumMessageSize: 1 << 20,
                                 windowFrames: 16, forwardErrorCorrection: forwardErrorCorrection)
    }

    /// The in-memory channel's impairments: the line's (its SNR overridden by ``snrDB``), or white
    /// noise at ``snrDB``, with the frame loss and seed.
    public var impairments: LinkImpairments {
        var i: LinkImpairments
        switch line {
        case .cable?: i = .cable(seed: seed)
        case .speaker?: i = .speaker(seed: seed)
        case .hf?, .hfFading?: i = .hf(snr3k: snrDB ?? 15, fading: line == .hfFading, seed: seed)
        case nil: i = LinkImpairments(seed: seed)
        }
        if let snrDB, i.hf == nil { i.snrDB = snrDB }
        i.frameLoss = frameLoss
        return i
    }

    /// The line rate the give-up time and the cut jitter reckon with: the baud rate, or for OFDM the
    /// slowest configuration the link falls back to.
    var reckonedBitRate: Double { ofdm ? OFDMLinkModem.floorProfile.netBitRate : hf ? HFLinkModem.floorProfile.netBitRate : baudRate }

    /// 16,256 bytes: a block, its record header and hash, and the session's record overhead fit one
    /// window of 16 fragments of 1024 bytes (one link message per block).
    public static let linkBlockSize = 16_256

    /// The give-up time when none is set: 10 x the keepalive (a cut lasts 3 x, and the ends notice
    /// it after 2 x) plus 5 x one block's air time at the line rate (with a fragment of overhead),
    /// so a slow but moving transfer, or one resuming after a cut, is not given up. 899 s at
    /// 1200 baud with 16,256-byte blocks and FEC off; coded frames take 2.3 times the air time.
    public var defaultGiveUpSeconds: Double {
        let coding = forwardErrorCorrection == .off || ofdm || hf ? 1.0 : 2.3
        let blockAirtime = Double(min(size, blockSize) + 1024) * 8 * 1.04 * coding / reckonedBitRate
        return 10 * keepalive + 5 * blockAirtime
    }

    /// The give-up time in use: ``giveUpSeconds`` or ``defaultGiveUpSeconds``.
    public var effectiveGiveUpSeconds: Double { giveUpSeconds ?? defaultGiveUpSeconds }

    /// Checks the ranges; the text names the bad option.
    public func validate() throws(TransferTestError) {
        guard (50...9600).contains(baudRate) else { throw .invalidOption("--baud must be 50...9600, got \(baudRate)") }
        guard size >= 1 && size <= 16 << 20 else { throw .invalidOption("--size must be 1...\(16 << 20) bytes, got \(size)") }
        if let s = snrDB, !s.isFinite || s < -20 || s > 100 { throw .invalidOption("--snr must be -20...100 dB, got \(s)") }
        guard (0...0.9).contains(frameLoss) else { throw .invalidOption("--loss must be 0...0.9, got \(frameLoss)") }
        guard (0...100).contains(cuts) else { throw .invalidOption("--cuts must be 0...100, got \(cuts)") }
        guard keepalive >= 1 && keepalive <= 600 else { throw .invalidOption("keepalive must be 1...600 s, got \(keepalive)") }
        guard blockSize >= 64 && blockSize <= 63_000 else { throw .invalidOption("block size must be 64...63000, got \(blockSize)") }
        if let g = giveUpSeconds, !(g.isFinite && g >= 1 && g <= 31_536_000) {
            throw .invalidOption("--give-up must be 1...31536000 s of channel time, got \(g)")
        }
    }
}

/// A simulated line for `transfer-test --line`.
public enum TransferLine: String, Sendable, Hashable, CaseIterable {
    /// A sound-card cable: SNR 40 dB, 100 ppm, 20-20,000 Hz (``ModemLink/LinkImpairments/cable(seed:)``).
    case cable
    /// A speaker and a microphone: SNR 24 dB, 250-9000 Hz, a 1.5 ms echo, 300 ppm (``ModemLink/LinkImpairments/speaker(seed:)``).
    case speaker
    /// Two SSB radios: the radio's band, SNR3k 15 dB (``TransferTestOptions/snrDB`` sets it), 25 Hz
    /// mistuning (``ModemLink/LinkImpairments/hf(snr3k:fading:seed:)``).
    case hf
    /// The same with two paths 2 ms apart fading with a 1 Hz Doppler spread.
    case hfFading = "hf-fading"
}

/// A transfer test that could not run.
public enum TransferTestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An option is out of range.
    case invalidOption(String)
    /// The link could not be opened (again).
    case linkFailed(String)
    /// A session could not be established.
    case sessionFailed(String)

    public var description: String {
        switch self {
        case .invalidOption(let t): t
        case .linkFailed(let t): "link: \(t)"
        case .sessionFailed(let t): "session: \(t)"
        }
    }
}

/// Why a transfer test ended before the receiver's verdict.
public enum TransferTestEnd: String, Sendable, Equatable {
    /// No block was verified for ``TransferTestOptions/effectiveGiveUpSeconds`` of channel time.
    case gaveUp = "gave-up"
    /// The caller's stop condition held (a signal).
    case interrupted
}

/// The counts of a transfer test, taken by the harness from what it gave the sender and what the
/// receiver wrote.
public struct TransferTestReport: Sendable, Equatable {
    /// Payload bytes given to the sender.
    public var bytes = 0
    /// Payload bytes the receiver wrote (verified blocks).
    public var delivered = 0
    /// Whether what was written is byte for byte what was given (SHA-256 of both).
    public var sha256Match = false
    /// Cuts made.
    public var cuts = 0
    /// Sessions after the first (reconnections that resumed the transfer).
    public var resumes = 0
    /// Payload bytes of blocks sent more than once.
    public var bytesResent = 0
    /// Payload bytes per block.
    public var blockSize = 0
    /// Channel seconds from the first hello to the receiver's verdict at the sender.
    public var channelSeconds = 0.0
    /// `bytes x 8 / channelSeconds`.
    public var goodputBps = 0.0
    /// Whether the transfer finished (the sender got the receiver's verdict).
    public var completed = false
    /// Link frames lost to the channel's frame loss.
    public var framesLost = 0
    /// Data fragments sent again by the link (both ends).
    public var retransmissions = 0
    /// Why the test ended early; nil when it ran to the receiver's verdict.
    public var endedEarly: TransferTestEnd?
    /// How the sender's end sent at the end (e.g. "OFDM 4096qam 5/6 cable") and that line rate in bit/s.
    public var senderLine = ""
    public var senderLineBitRate = 0.0
    /// Turnarounds measured on the line (``ModemLink/TurnaroundMeter``): from the last sample of one
    /// end's frames to the first sample of the other end's answer, in channel seconds, for answers
    /// that went out in a transmission still open, and apart for those that opened one (their start
    /// included).
    public var turnaround = TurnaroundMeter.Summary()
    public var openingTurnaround = TurnaroundMeter.Summary()
    /// Channel seconds of frame-carrying audio the sender played (the rest of ``channelSeconds`` it
    /// waited, or played a transmission's start or idle blocks).
    public var senderFrameSeconds = 0.0

    /// One line of JSON with the keys the checks read first (the counts first, completed, the link's
    /// counters and endedEarly last).
    public var json: String {
        func num(_ d: Double) -> String { d.isFinite ? String(format: "%.3f", d) : "0" }
        var fields: [String] = []
        fields.append("\"bytes\":\(bytes),\"delivered\":\(delivered),\"sha256Match\":\(sha256Match),\"cuts\":\(cuts)")
        fields.append("\"resumes\":\(resumes),\"bytesResent\":\(bytesResent),\"blockSize\":\(blockSize)")
        // The turnarounds before the keys the checks read at the end.
        fields.append("\"turnarounds\":\(turnaround.count),\"turnaroundMin\":\(num(turnaround.minimum))")
        fields.append("\"turnaroundMedian\":\(num(turnaround.median)),\"turnaroundMax\":\(num(turnaround.maximum))")
        fields.append("\"openingTurnarounds\":\(openingTurnaround.count),\"openingTurnaroundMedian\":\(num(openingTurnaround.median))")
        fields.append("\"openingTurnaroundMax\":\(num(openingTurnaround.maximum)),\"senderFrameSeconds\":\(num(senderFrameSeconds))")
        fields.append("\"channelSeconds\":\(num(channelSeconds)),\"goodputBps\":\(num(goodputBps)),\"completed\":\(completed)")
        fields.append("\"framesLost\":\(framesLost),\"retransmissions\":\(retransmissions)")
        let ended = endedEarly.map { "\"\($0.rawValue)\"" } ?? "null"
        fields.append("\"endedEarly\":" + ended)
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// How the two ends get a session over their link transports. The default is the plaintext
/// ``FrameRecordSession``; the Noise session plugs in here.
public typealias TransferSessionFactory = @Sendable (_ dialer: LinkTransport, _ listener: LinkTransport) async throws -> (any RecordSession, any RecordSession)

/// `modem transfer-test`: a sender and a receiver over ``ModemLink/LinkTransport`` on the in-memory
/// medium in channel time, a seeded random payload, cuts at delivered fractions i/(N+1) plus a seeded
/// jitter inside one block (both lines muted for 3 x keepalive, both sessions end `END_LOST_NET`,
/// the sender reconnects and resumes), counted against what was given.
public struct TransferTest: Sendable {
    /// The options.
    public let options: TransferTestOptions
    private let makeSessions: TransferSessionFactory

    /// Creates a test.
    /// - Parameters:
    ///   - options: what to run.
    ///   - sessions: how to make the two sessions over a connection (default: plaintext records).
    public init(options: TransferTestOptions, sessions: TransferSessionFactory? = nil) {
        self.options = options
        makeSessions = sessions ?? { d, l in (FrameRecordSession(transport: d), FrameRecordSession(transport: l)) }
    }

    /// The seeded payload.
    public static func payload(size: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed ^ 0xDA7A_DA7A)
        var out = [UInt8](repeating: 0, count: size)
        var i = 0
        while i < size {
            var v = rng.next()
            for _ in 0..<8 where i < size { out[i] = UInt8(truncatingIfNeeded: v); v >>= 8; i += 1 }
        }
        return out
    }

    /// Runs the transfer until the receiver's verdict reaches the sender, until no block was verified
    /// for ``TransferTestOptions/effectiveGiveUpSeconds`` of channel time, or until `stopWhen` holds;
    /// the last two end the medium (every wait above it ends) and return the counts so far with
    /// ``TransferTestReport/endedEarly`` set.
    /// - Parameters:
    ///   - stopWhen: checked once per 10 ms of channel time (e.g. an atomic set by a signal handler).
    ///   - progress: called now and then with the report so far (delivered, cuts, time).
    /// - Throws: ``TransferTestError`` for bad options or a link that cannot be opened again.
    public func run(stopWhen: (@Sendable () -> Bool)? = nil,
                    progress: @escaping @Sendable (TransferTestReport) -> Void = { _ in }) async throws(TransferTestError) -> TransferTestReport {
        try options.validate()
        let configuration = options.linkConfiguration
        let impairments = options.impairments
        let pair: LinkLoopbackPair
        do {
            pair = try LinkLoopbackPair(configuration: configuration, impairments: impairments,
                                        options: LinkTransportOptions(keepalive: options.keepalive))
        } catch {
            throw .invalidOption("\(error)")
        }
        let watch = StallWatch(pair: pair, seconds: options.effectiveGiveUpSeconds)
        if let stopWhen { pair.end(when: stopWhen, reason: StallWatch.interrupted) }

        let payload = Self.payload(size: options.size, seed: options.seed)
        if !options.plain {
            let run: DataTransferRun
            do { run = try DataTransferRun(payload: payload, blockSize: options.blockSize, seed: options.seed) } catch {
                throw .sessionFailed("cannot prepare the files and keys: \(error)")
            }
            defer { run.removeFiles() }
            return try await inChannelTime(pair) { pair throws(TransferTestError) in
                try await self.runDataConnections(pair: pair, run: run, payload: payload, watch: watch, progress: progress)
            }
        }
        return try await inChannelTime(pair) { pair throws(TransferTestError) in
            try await self.runPlain(pair: pair, payload: payload, watch: watch, progress: progress)
        }
    }

    /// Runs `body` in the pair's channel time (a simulation: the figures are a function of the seed).
    private func inChannelTime(_ pair: LinkLoopbackPair,
                               _ body: @escaping @Sendable (LinkLoopbackPair) async throws(TransferTestError) -> TransferTestReport)
        async throws(TransferTestError) -> TransferTestReport {
        do {
            return try await pair.run { pair in try await body(pair) }
        } catch let error as TransferTestError {
            throw error
        } catch {
            throw .linkFailed("\(error)")
        }
    }

    /// The plaintext record sessions: blocks from a ``BlockSender`` to a ``BlockReceiver``, resumed after cuts.
    private func runPlain(pair: LinkLoopbackPair, payload: [UInt8], watch: StallWatch,
                          progress: @escaping @Sendable (TransferTestReport) -> Void) async throws(TransferTestError) -> TransferTestReport {
        var sender = BlockSender(payload: payload, blockSize: options.blockSize)
        var receiver = BlockReceiver(maximumSize: options.size)
        let cutPlan = CutPlan(options: options, pair: pair, watch: watch)
        var report = TransferTestReport()
        report.bytes = payload.count
        report.blockSize = options.blockSize
        let start = 0.0  // channel time counts from the medium's start
        var sessions = 0
        var finished = false
        var failedDials = 0

        while !finished && pair.endReason == nil {
            guard let (dialer, listener) = try await connect(pair, failedDials: &failedDials) else { continue }
            let ends: (any RecordSession, any RecordSession)
            do {
                ends = try await makeSessions(dialer, listener)
            } catch {
                await dialer.close()
                await listener.close()
                if pair.isMuted || pair.endReason != nil { continue }
                throw .sessionFailed("\(error)")
            }
            sessions += 1
            let (dialSession, listenSession) = ends
            let s = sender, r = receiver
            let progressReport = report
            async let senderRun: (BlockSender, SessionOutcome) = {
                var s = s
                let o = await s.run(over: dialSession)
                return (s, o)
            }()
            async let receiverRun: (BlockReceiver, SessionOutcome) = {
                var r = r
                let o = await r.run(over: listenSession) { delivered in
                    cutPlan.delivered(delivered)
                    var p = progressReport
                    p.delivered = delivered
                    progress(p)
                }
                return (r, o)
            }()
            let (s2, senderOutcome) = await senderRun
            sender = s2
            if case .done = senderOutcome {
                report.channelSeconds = pair.now - start
                report.completed = true
                finished = true
                // The receiver's verdict reached us: its run has ended too.
            }
            if finished {
                await dialSession.close()
            }
            let (r2, _) = await receiverRun
            receiver = r2
            await dialer.close()
            await listener.close()
        }
        if !finished { report.channelSeconds = pair.now - start }
        report.delivered = receiver.delivered
        report.sha256Match = receiver.isComplete && receiver.written == payload
        report.bytesResent = sender.bytesResent
        report.finish(pair: pair, watch: watch, sessions: sessions)
        progress(report)
        return report
    }
}

private func acceptResult(_ pair: LinkLoopbackPair) async -> Result<LinkTransport, TransportError> {
    do { return .success(try await pair.accept()) } catch { return .failure(error) }
}

/// One connection of the pair once a cut is over: the dialer's and the listener's transports, or nil
/// when the dial failed (counted in `failedDials`; the fifth failure in a row is thrown) or the
/// medium has ended (the give-up time or a stop).
private func connect(_ pair: LinkLoopbackPair, failedDials: inout Int) async throws(TransferTestError) -> (LinkTransport, LinkTransport)? {
    await pair.lineRestored()
    if pair.endReason != nil { return nil }
    async let accepted = acceptResult(pair)
    let dialer: LinkTransport
    do {
        dialer = try await pair.dial()
    } catch {
        _ = await accepted
        if pair.endReason != nil { return nil }
        failedDials += 1
        if failedDials >= 5 { throw .linkFailed("\(error) (\(failedDials) attempts)") }
        return nil
    }
    switch await accepted {
    case .success(let listener):
        failedDials = 0
        return (dialer, listener)
    case .failure(let e):
        await dialer.close()
        if pair.endReason != nil { return nil }
        throw .linkFailed("\(e)")
    }
}

extension TransferTest {
    /// Noise sessions and data connections: a file from a folder to a folder, resumed after cuts.
    func runDataConnections(pair: LinkLoopbackPair, run: DataTransferRun, payload: [UInt8], watch: StallWatch,
                            progress: @escaping @Sendable (TransferTestReport) -> Void) async throws(TransferTestError) -> TransferTestReport {
        let cutPlan = CutPlan(options: options, pair: pair, watch: watch)
        var report = TransferTestReport()
        report.bytes = payload.count
        report.blockSize = options.blockSize
        let start = 0.0  // channel time counts from the medium's start
        let confirmedAt = Mutex<Double?>(nil)
        var sessions = 0
        var failedDials = 0
        var failedSessions = 0
        while confirmedAt.withLock({ $0 }) == nil && pair.endReason == nil {
            guard let (dialer, listener) = try await connect(pair, failedDials: &failedDials) else { continue }
            sessions += 1
            let base = report
            let done = await run.session(dialer: dialer, listener: listener, clock: TimerClock(pair.clock), delivered: { delivered in
                cutPlan.delivered(delivered)
                var p = base
                p.delivered = delivered
                progress(p)
            }, confirmed: { confirmedAt.withLock { $0 = pair.now } })
            if !done && run.delivered == 0 && !pair.isMuted && pair.endReason == nil {
                failedSessions += 1
                if failedSessions >= 5 { throw .sessionFailed("no data moved in \(failedSessions) sessions in a row") }
            } else {
                failedSessions = 0
            }
        }
        let confirmed = confirmedAt.withLock { $0 }
        report.channelSeconds = (confirmed ?? pair.now) - start
        report.completed = confirmed != nil
        report.delivered = run.delivered
        report.sha256Match = run.receivedMatches(payload)
        report.bytesResent = run.bytesResent
        report.finish(pair: pair, watch: watch, sessions: sessions)
        progress(report)
        return report
    }
}

extension TransferTestReport {
    /// The counts both stacks take alike, once `completed`, `channelSeconds` and `delivered` are set:
    /// cuts, resumes, goodput (of the delivered bytes when not completed), the link's counters, and
    /// why it ended early.
    fileprivate mutating func finish(pair: LinkLoopbackPair, watch: StallWatch, sessions: Int) {
        if !completed { endedEarly = watch.end }
        cuts = pair.cutsMade
        resumes = max(0, sessions - 1)
        goodputBps = channelSeconds > 0 ? Double((completed ? bytes : delivered) * 8) / channelSeconds : 0
        framesLost = pair.framesLost
        let st = pair.statistics
        retransmissions = st.phone.retransmissions + st.device.retransmissions
        // The dialer (the phone end) sends the payload.
        senderLine = pair.lines.phone.description
        senderLineBitRate = pair.lines.phone.bitRate
        let meter = pair.turnarounds
        turnaround = TurnaroundMeter.summary(meter.open)
        openingTurnaround = TurnaroundMeter.summary(meter.opening)
        senderFrameSeconds = meter.frameSeconds.phone
    }
}

/// When to cut: at delivered fractions i/(N+1) of the payload plus a seeded jitter inside one block;
/// each cut mutes both lines for 3 x keepalive of channel time.
final class CutPlan: Sendable {
    private let thresholds: [Int]
    private let delays: [Double]
    private let seconds: Double
    private let pair: LinkLoopbackPair
    private let next = Mutex((index: 0, made: 0))

    private let watch: StallWatch

    init(options: TransferTestOptions, pair: LinkLoopbackPair, watch: StallWatch) {
        self.watch = watch
        var rng = SplitMix64(seed: options.seed ^ 0xC075)
        let n = options.cuts
        thresholds = n == 0 ? [] : (1...n).map { i in options.size * i / (n + 1) }
        // The receiver sees whole blocks; the cut falls at a seeded moment inside the next block's air time.
        let blockAirtime = Double(options.blockSize) * 8 * 1.04 / options.reckonedBitRate
        delays = (0..<n).map { _ in rng.uniform() * blockAirtime }
        seconds = 3 * options.keepalive
        self.pair = pair
    }

    /// The receiver wrote `delivered` bytes so far: cut when the next threshold is passed.
    func delivered(_ delivered: Int) {
        watch.delivered(delivered)
        let cut = next.withLock { n -> Double? in
            guard n.index < thresholds.count, delivered >= thresholds[n.index], !pair.isMuted else { return nil }
            // One cut per block at most: a later threshold the same block passed cuts at the next block.
            n.index += 1
            n.made += 1
            return delays[n.index - 1]
        }
        if let after = cut { pair.mute(seconds: seconds, after: after) }
    }

    var made: Int { next.withLock { $0.made } }
}

/// Gives the transfer up after a while of channel time without a newly verified block: the medium's
/// end is set `seconds` ahead at the start and pushed on whenever the receiver verifies more bytes.
final class StallWatch: Sendable {
    /// The medium's end reason for a caller's stop.
    static let interrupted = "the transfer test was stopped"
    private let pair: LinkLoopbackPair
    private let seconds: Double
    private let reason: String
    private let best = Mutex(0)

    init(pair: LinkLoopbackPair, seconds: Double) {
        self.pair = pair
        self.seconds = seconds
        reason = "no block was verified in \(String(format: "%g", seconds)) s of channel time: the transfer test gave up"
        pair.end(atChannelTime: seconds, reason: reason)
    }

    /// The receiver holds `bytes` verified bytes: progress moves the end on.
    func delivered(_ bytes: Int) {
        let moved = best.withLock { b -> Bool in
            guard bytes > b else { return false }
            b = bytes
            return true
        }
        if moved { pair.end(atChannelTime: pair.now + seconds, reason: reason) }
    }

    /// Why the medium ended, if it did.
    var end: TransferTestEnd? {
        switch pair.endReason {
        case nil: nil
        case Self.interrupted?: .interrupted
        default: .gaveUp
        }
    }
}
