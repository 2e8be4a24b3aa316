import ModemCodecs
import ModemPipelines

// The parts the two block modems under the channel protocol share (``OFDMLinkModem``,
// ``HFLinkModem``): the record stream their blocks carry, the rate adaptation, and the queue of
// audio to play with the spans of frames in it. Each modem keeps only what its physical layer makes
// different: how a transmission is opened, cut into blocks and read.

/// A configuration a rate-adapting link modem sends with: an id its blocks carry (1...255) and a net rate.
protocol AdaptiveLinkProfile: Equatable {
    /// The id the header and the blocks' asks carry.
    var id: Int { get }
    /// The net payload rate in bit/s.
    var netBitRate: Double { get }
}

extension OFDMProfile: AdaptiveLinkProfile {}
extension HFProfile: AdaptiveLinkProfile {}

/// The rate adaptation of a block link modem, for one end.
///
/// The receiving end measures each of the peer's transmissions and takes the fastest configuration
/// the line carries with margin as its ask (``estimate(_:)``); a block that fails caps the ask one
/// step below what failed (``failed(_:)``), and clean transmissions at or below the cap
/// (``cleanToLift`` in a row) lift it, or raise it one step (``liftOneStep``) (``clean(_:)``). The sending end sends with what the peer asked for (``peerRequest``); until it has
/// been asked, with its own ask (the line is mostly alike both ways); with its start when it has heard
/// nothing. Two transmissions in a row that nothing answered step it down one configuration.
struct LinkRateAdaptation<Profile: AdaptiveLinkProfile> {
    /// The configurations the adaptation moves among: every one at or above the floor.
    let ladder: [Profile]
    /// The slowest configuration it falls to.
    let floor: Profile
    /// Clean transmissions in a row at or below the cap that lift it.
    let cleanToLift: Int
    /// Whether a lift raises the cap one step (else it goes).
    let liftOneStep: Bool
    /// The configuration this end sends with now.
    private(set) var sendProfile: Profile
    /// What this end asks the peer to send with (nil: nothing heard yet).
    private(set) var request: Profile?
    /// Configuration changes made so far.
    private(set) var profileChanges = 0
    /// What the peer asked this end to send with (nil: not asked, or an ask that did not work).
    var peerRequest: Profile?
    private var heard: Profile?
    private var cap: Profile?
    private var cleanAtCap = 0
    private var unanswered = 0

    init(all: [Profile], initial: Profile, floor: Profile, cleanToLift: Int = 1, liftOneStep: Bool = false) {
        ladder = all.filter { $0.netBitRate >= floor.netBitRate }
        self.floor = floor
        self.cleanToLift = cleanToLift
        self.liftOneStep = liftOneStep
        sendProfile = initial
    }

    /// The next configuration below `profile` on the ladder, or nil.
    private func below(_ profile: Profile) -> Profile? {
        ladder.filter { $0.netBitRate < profile.netBitRate }.max { $0.netBitRate < $1.netBitRate }
    }

    /// A transmission is opened for frames: a third in a row that nothing answered steps down.
    mutating func opening() {
        unanswered += 1
        if unanswered > 2 {
            // One configuration slower, and forget an ask that did not work.
            peerRequest = nil
            unanswered = 1
            if let slower = below(sendProfile) { choose(slower) }
        }
    }

    /// Something of the peer's was read: the line works both ways.
    mutating func answered() { unanswered = 0 }

    /// Sends with what is wanted now: the peer's ask, else this end's own, else as before.
    mutating func update() { choose(peerRequest ?? request ?? sendProfile) }

    private mutating func choose(_ profile: Profile) {
        guard profile != sendProfile else { return }
        sendProfile = profile
        profileChanges += 1
    }

    /// The peer's transmission measured `profile` as what the line carries: this end's ask (under the cap).
    mutating func estimate(_ profile: Profile) {
        heard = profile.netBitRate >= floor.netBitRate ? profile : floor
        updateRequest()
    }

    /// A block of the peer's sent with `profile` failed: the ask is capped one step below it.
    mutating func failed(_ profile: Profile) {
        let lower = below(profile) ?? floor
        if cap == nil || lower.netBitRate < cap!.netBitRate { cap = lower }
        cleanAtCap = 0
        updateRequest()
    }

    /// A transmission with `profile` came through whole: a cap at or above it is lifted after ``cleanToLift`` of them.
    mutating func clean(_ profile: Profile) {
        guard let c = cap, profile.netBitRate <= c.netBitRate else { return }
        cleanAtCap += 1
        if cleanAtCap >= cleanToLift {
            cap = liftOneStep ? ladder.filter { $0.netBitRate > c.netBitRate }.min { $0.netBitRate < $1.netBitRate } : nil
            cleanAtCap = 0
            if liftOneStep { updateRequest() }
        }
    }

    private mutating func updateRequest() {
        guard var r = heard else { return }
        if let c = cap, c.netBitRate < r.netBitRate { r = c }
        request = r
    }
}

/// The record stream a block link modem sends: each frame as `[length: 2 bytes, little-endian][frame]`,
/// with where each record starts (so a receiver that lost a block resumes at the next record).
struct LinkRecordStream {
    private(set) var bytes: [UInt8] = []
    /// Offsets in ``bytes`` where records begin.
    private(set) var starts: [Int] = []

    var isEmpty: Bool { bytes.isEmpty }
    var count: Int { bytes.count }

    /// Appends frames as records.
    mutating func append(_ frames: [LinkFrame]) {
        for f in frames {
            let encoded = f.encode()
            starts.append(bytes.count)
            bytes.append(UInt8(encoded.count & 0xFF))
            bytes.append(UInt8(encoded.count >> 8))
            bytes.append(contentsOf: encoded)
        }
    }

    /// Puts whole records (as ``takeRecords(_:)`` gave them) before everything queued.
    mutating func prepend(records: [UInt8]) {
        var offsets: [Int] = []
        var at = 0
        while at + 2 <= records.count {
            offsets.append(at)
            at += 2 + (Int(records[at]) | Int(records[at + 1]) << 8)
        }
        starts = offsets + starts.map { $0 + records.count }
        bytes = records + bytes
    }

    /// Takes up to `room` bytes; also where the first record starting in them begins (nil: none does).
    mutating func take(_ room: Int) -> (bytes: ArraySlice<UInt8>, firstRecord: Int?) {
        let n = min(room, bytes.count)
        let first = starts.first { $0 < n }
        let out = bytes[0..<n]
        bytes.removeFirst(n)
        starts = starts.compactMap { $0 >= n ? $0 - n : nil }
        return (ArraySlice(out), first)
    }

    /// Takes whole records while they fit in `room` bytes (at least one, whatever its size).
    mutating func takeRecords(_ room: Int) -> [UInt8] {
        var end = starts.count > 1 ? starts[1] : bytes.count
        for s in starts.dropFirst(2) where s <= room { end = s }
        if bytes.count <= room { end = bytes.count }
        return Array(take(end).bytes)
    }
}

/// Reads records back out of checked blocks, in order; after a lost block, from the next record start.
struct LinkRecordReader {
    private var partial: [UInt8] = []
    private var synchronised = false
    /// Records that were not link frames.
    private(set) var foreign = 0

    /// A block was lost (or a new transmission begins): what was partly read is dropped.
    mutating func lose() {
        partial.removeAll()
        synchronised = false
    }

    /// The frames completed by `data`, whose first record starting in it begins at `firstRecord`
    /// (nil: none does; only read when the stream is not in step).
    mutating func read(_ data: ArraySlice<UInt8>, firstRecord: Int?) -> [LinkFrame] {
        var data = data
        if !synchronised {
            guard let first = firstRecord, first < data.count else { return [] }
            data = data.dropFirst(first)
            partial.removeAll()
            synchronised = true
        }
        partial += data
        var frames: [LinkFrame] = []
        var at = 0
        while partial.count - at >= 2 {
            let length = Int(partial[at]) | Int(partial[at + 1]) << 8
            guard partial.count - at - 2 >= length else { break }
            let bytes = Array(partial[(at + 2)..<(at + 2 + length)])
            at += 2 + length
            if let f = try? LinkFrame(decoding: bytes) { frames.append(f) } else { foreign += 1 }
        }
        partial.removeFirst(at)
        return frames
    }
}

/// The audio a block link modem has made and not yet handed out, counted on the output's clock:
/// where frames lie in it (a channel that loses a frame mutes those samples) and when what was
/// queued for sending is all on the air.
struct LinkAudioQueue {
    private var queue: [Float] = []
    private var read = 0
    /// Samples handed out so far.
    private(set) var emitted = 0
    private var doneAt: Int?
    private var spans: [Range<Int>] = []

    /// Samples made and not handed out.
    var pending: Int { queue.count - read }
    /// Where the next sample appended will be played (counted from the first handed out).
    var end: Int { emitted + pending }
    /// Whether a moment at which what was queued is on the air is waiting to be reported.
    var awaitsDone: Bool { doneAt != nil }

    /// Appends samples; with `carriesFrames`, their span is one that frames lie in.
    mutating func append(_ samples: [Float], carriesFrames: Bool) {
        let start = end
        queue += samples
        if carriesFrames { spans.append(start..<end) }
    }

    /// What was queued for sending is on the air once the output reaches `position`.
    mutating func markDone(at position: Int) { doneAt = position }

    /// The next `count` samples (silence past what was made), the spans of frames among them
    /// (relative to the block), and whether what was queued has all been played by the block's end.
    mutating func take(_ count: Int) -> (samples: [Float], frameSpans: [Range<Int>], finished: Bool) {
        var out = [Float](repeating: 0, count: count)
        let n = min(count, pending)
        for i in 0..<n { out[i] = queue[read + i] }
        read += n
        let blockStart = emitted
        emitted += count
        var finished = false
        if let d = doneAt, d <= emitted {
            finished = true
            doneAt = nil
        }
        var rel: [Range<Int>] = []
        for s in spans where s.lowerBound < emitted && s.upperBound > blockStart {
            rel.append(max(0, s.lowerBound - blockStart) ..< min(count, s.upperBound - blockStart))
        }
        spans.removeAll { $0.upperBound <= emitted }
        if read >= 1 << 16 || read == queue.count {
            queue.removeFirst(read)
            read = 0
        }
        return (out, rel, finished)
    }
}
