import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines

/// Frames to audio and back for one end of the link: HDLC (flags, bit stuffing, FCS-16) with NRZI on
/// AFSK at the configured baud rate (Bell 202 tones at 1200), the ``LinkFrame`` (with its CRC-32)
/// inside each HDLC frame. A transmission is a preamble of flags, the frames with flags between them,
/// and closing flags; frames queued while one is being played join it without a new preamble.
///
/// Forward error correction (``LinkConfiguration/forwardErrorCorrection``): frames go out as coded frames
/// (``CodedFrame``) when it is on, never when it is off, and with auto as the line asks. Each end judges
/// the frames it receives: clean when a coded frame arrives with fewer than ``cleanLevelErrorRate`` of its
/// levels wrong or ``cleanFramesToStandDown`` plain frames arrive intact in a row, noisy when a plain frame
/// needed repair or a coded frame shows more errors; it tells the peer in every frame it sends
/// (``LinkFrame/Flags/lineClean``, ``LinkFrame/Flags/lineNoisy``, neither before it has judged). With
/// auto, an end sends plain frames when the peer says it hears this end clean, coded ones when it says
/// noisy; before the peer has judged, it goes by its own judgement of the peer's frames (lines are
/// mostly alike both ways), and codes when it has none. Two transmissions in a row unanswered make it
/// code until the peer says otherwise. So the open handshake is coded and the data that follows is
/// plain on a clean line. Coded and plain frames are decoded alike whatever this end sends. Frames this
/// end hears of its own (a shared line) judge nothing.
public final class LinkModem {
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The protocol parameters (baud rate, preamble).
    public let configuration: LinkConfiguration
    /// Frames decoded (valid CRC-32) so far.
    public private(set) var framesDecoded = 0
    /// Frames heard whose FCS failed and could not be repaired: channel damage (``PacketStatistics/crcFailures``:
    /// not the chance flag patterns of noise, nor the code bits of a coded frame).
    public var framesDamaged: Int { receiver.currentStatistics.crcFailures }
    /// Frames with a good FCS that are not link frames of this version (another protocol, or a bad CRC-32).
    public private(set) var framesForeign = 0
    /// Whether frames sent now go out coded.
    public private(set) var codesFrames: Bool
    /// Frames received as coded frames.
    public private(set) var codedFramesDecoded = 0

    /// Auto FEC: a coded frame with fewer of its levels wrong than this shows a line plain frames cross.
    public static let cleanLevelErrorRate = 3e-4
    /// Auto FEC: intact plain frames in a row that show a clean line.
    public static let cleanFramesToStandDown = 3
    private var intactInARow = 0
    private var unanswered = 0
    /// This end's judgement of the frames it receives (nil: none yet), sent to the peer in each frame.
    public private(set) var hearsPeerClean: Bool?
    /// What the peer's last frame said of this end's frames (nil: the peer had not judged).
    private var peerHearsUsClean: Bool?
    /// Recently sent frames (their bytes), so that hearing them back on a shared line judges nothing.
    private var recentlySent: [[UInt8]] = []

    private var modulator: HDLCModulator
    private var carrier: CarrierDetector
    private let receiver: PacketReceiver
    private var queue: [Float] = []
    private var queueRead = 0
    /// Output samples handed out so far.
    private var emitted = 0
    /// Where each frame's bits are in the output (absolute sample indices).
    private var spans: [Range<Int>] = []
    private let preambleFlags: Int
    private let separatingFlags = 3

    /// Creates a modem.
    /// - Parameters:
    ///   - configuration: baud rate and preamble.
    ///   - sampleRate: audio rate in Hz (8000...192000).
    ///   - amplitude: peak level of the tones, 0 < a <= 1 (default 0.5).
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit the sample rate.
    public init(configuration: LinkConfiguration, sampleRate: Int, amplitude: Float = 0.5) throws {
        guard amplitude > 0, amplitude <= 1 else { throw ModemSettingsError("amplitude must be in 0 < a <= 1, got \(amplitude)") }
        let settings = try ModemSettings(baudRate: configuration.baudRate)
        modulator = try HDLCModulator(settings: settings, sampleRate: sampleRate, amplitude: amplitude)
        carrier = CarrierDetector(configuration: try settings.configuration(sampleRate: sampleRate))
        self.sampleRate = sampleRate
        self.configuration = configuration
        codesFrames = configuration.forwardErrorCorrection != .off
        preambleFlags = max(2, Int((configuration.preambleSeconds * configuration.baudRate / 8).rounded()))
        let longest = LinkFrame.overhead + configuration.framePayload + 2
        let format = PacketFormat(minimumLength: LinkFrame.overhead + 2, maximumLength: longest * 6 / 5,
                                  accepts: { (try? LinkFrame(decoding: $0)) != nil })
        // Three fixed space weights, one that follows the tone levels (de-emphasised lines), and one
        // with a steady clock that holds the bits in deep noise (coded frames far below the cliff).
        var slicers: [FSKBitDemodulator.Slicer] = [-6.0, 0, 6].map { .init(balanceDB: $0, windowBits: 1.3) }
        slicers.append(.init(balanceDB: 0, windowBits: 1.3, adaptive: true))
        slicers.append(.init(balanceDB: 0, windowBits: 1.3, clockInertia: 0.95))
        receiver = try PacketReceiver(settings: settings, sampleRate: sampleRate, slicers: slicers, repairs: true, format: format)
    }

    /// Whether the line's tones are heard now (``CarrierDetector``): the carrier sense for shared media.
    public var hearsCarrier: Bool { carrier.isBusy }

    /// Whether queued audio has not all been handed out yet.
    public var isTransmitting: Bool { queueRead < queue.count }

    /// Queues frames for sending: after what is already queued (no new preamble), or as a new
    /// transmission.
    public func send(_ frames: [LinkFrame]) {
        guard !frames.isEmpty else { return }
        // Joining a transmission: its closing flags are already queued; with these they separate.
        let leading = isTransmitting ? separatingFlags - 1 : preambleFlags
        if !isTransmitting {
            unanswered += 1
            if unanswered > 2 { peerHearsUsClean = false }
        }
        if configuration.forwardErrorCorrection == .auto { codesFrames = !(peerHearsUsClean ?? hearsPeerClean ?? false) }
        modulator.codesFrames = codesFrames
        let encoded = frames.map { f -> [UInt8] in
            var f = f
            f.flags.subtract([.lineClean, .lineNoisy])
            if let clean = hearsPeerClean { f.flags.insert(clean ? .lineClean : .lineNoisy) }
            return f.encode()
        }
        recentlySent += encoded
        if recentlySent.count > 64 { recentlySent.removeFirst(recentlySent.count - 64) }
        // The output index of the first new sample.
        let base = emitted - queueRead
        let frameSpans = modulator.append(frames: encoded, leadingFlags: leading,
                                          separatingFlags: separatingFlags, trailingFlags: 2, to: &queue)
        spans += frameSpans.map { base + $0.lowerBound ..< base + $0.upperBound }
    }

    /// Hands out the next `count` samples to play (silence when nothing is queued), with the spans of
    /// frames among them (relative to the block), and whether the transmission ended in this block.
    public func output(count: Int) -> (samples: [Float], frameSpans: [Range<Int>], finished: Bool) {
        var out = [Float](repeating: 0, count: count)
        let wasTransmitting = isTransmitting
        let n = min(count, queue.count - queueRead)
        if n > 0 {
            for i in 0..<n { out[i] = queue[queueRead + i] }
            queueRead += n
        }
        let blockStart = emitted
        emitted += count
        var rel: [Range<Int>] = []
        for s in spans where s.lowerBound < emitted && s.upperBound > blockStart {
            rel.append(max(0, s.lowerBound - blockStart) ..< min(count, s.upperBound - blockStart))
        }
        spans.removeAll { $0.upperBound <= emitted }
        if queueRead == queue.count && queueRead > 0 {
            queue.removeAll(keepingCapacity: true)
            queueRead = 0
        } else if queueRead >= 1 << 16 && queueRead >= queue.count / 2 {
            // A transmission that others keep joining never drains: drop what was played.
            queue.removeFirst(queueRead)
            queueRead = 0
        }
        return (out, rel, wasTransmitting && !isTransmitting)
    }

    /// Demodulates received audio; returns the frames it completed and whether frames with a good FCS
    /// that are not link frames were heard (a peer speaking something else).
    public func receive(_ samples: UnsafeBufferPointer<Float>) -> (frames: [LinkFrame], heardForeign: Bool) {
        let before = framesForeign
        carrier.process(samples)
        var frames: [LinkFrame] = []
        for p in receiver.process(samples) {
            if var f = try? LinkFrame(decoding: p.bytes) {
                framesDecoded += 1
                if p.isCoded { codedFramesDecoded += 1 }
                if !recentlySent.contains(p.bytes) {
                    judgeLine(by: p)
                    peerHearsUsClean = f.flags.contains(.lineClean) ? true : f.flags.contains(.lineNoisy) ? false : nil
                }
                f.flags.subtract([.lineClean, .lineNoisy])
                frames.append(f)
            } else {
                framesForeign += 1
            }
        }
        return (frames, framesForeign != before)
    }

    /// What a frame from the peer says about the line from the peer to this end.
    private func judgeLine(by p: ReceivedPacket) {
        unanswered = 0
        if let rate = p.codedLevelErrorRate {
            intactInARow = 0
            hearsPeerClean = rate < Self.cleanLevelErrorRate
        } else if p.repairedBits > 0 {
            intactInARow = 0
            hearsPeerClean = false
        } else {
            intactInARow += 1
            if intactInARow >= Self.cleanFramesToStandDown { hearsPeerClean = true }
        }
    }
}
