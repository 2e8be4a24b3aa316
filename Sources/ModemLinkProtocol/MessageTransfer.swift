import ModemCodecs

/// One message on its way out: fragments, which of them the peer acknowledged, and the poll timer.
/// Selective repeat: a burst carries up to a window of unacknowledged fragments, its last frame asks
/// for an acknowledgement, and the acknowledgement's bitmap says what to send again.
struct OutboundMessage: Sendable {
    let message: UInt16
    let flags: LinkFrame.Flags
    let fragments: [[UInt8]]
    let totalBytes: Int
    var acked: [Bool]
    /// Fragments sent at least once.
    var sent: [Bool]
    /// Fragments sent again (retransmissions) so far.
    var resent = 0
    /// A burst or poll ended with a request for an acknowledgement that has not come.
    var awaitingAck = false
    /// When the poll is overdue (set once our own transmission has ended).
    var deadline: Double?
    /// Polls sent since the last acknowledgement.
    var unansweredPolls = 0

    init(message: UInt16, flags: LinkFrame.Flags, data: [UInt8], framePayload: Int) {
        self.message = message
        self.flags = flags
        totalBytes = data.count
        var parts: [[UInt8]] = []
        var i = 0
        repeat {
            let end = min(data.count, i + framePayload)
            parts.append(Array(data[i..<end]))
            i = end
        } while i < data.count
        fragments = parts
        acked = Array(repeating: false, count: parts.count)
        sent = acked
    }

    var isComplete: Bool { !acked.contains(false) }
    var ackedBytes: Int { zip(fragments, acked).reduce(0) { $0 + ($1.1 ? $1.0.count : 0) } }

    /// The next burst: up to `window` unacknowledged fragments, the last one polling.
    mutating func burst(session: UInt8, base: LinkFrame.Flags, window: Int) -> [LinkFrame] {
        let count = UInt16(fragments.count)
        var frames: [LinkFrame] = []
        for i in acked.indices where !acked[i] {
            frames.append(LinkFrame(kind: .data, flags: base.union(flags), session: session, message: message,
                                    fragment: UInt16(i), fragmentCount: count, payload: fragments[i]))
            if sent[i] { resent += 1 }
            sent[i] = true
            if frames.count == window { break }
        }
        if !frames.isEmpty { frames[frames.count - 1].flags.insert(.poll) }
        awaitingAck = true
        deadline = nil
        return frames
    }

    /// A poll for the acknowledgement of this message.
    mutating func poll(session: UInt8, base: LinkFrame.Flags) -> LinkFrame {
        unansweredPolls += 1
        awaitingAck = true
        deadline = nil
        return LinkFrame(kind: .poll, flags: base.union(flags), session: session, message: message,
                         fragmentCount: UInt16(fragments.count))
    }

    /// What an acknowledgement leads to.
    enum AckOutcome {
        /// Every fragment arrived.
        case complete
        /// A late or repeated answer: the bitmap was noted, nothing to send.
        case wait
        /// Missing fragments to send again (`resent` of them had been sent before).
        case resend([LinkFrame], resent: Int)
    }

    /// Applies an acknowledgement and says what follows: done, nothing yet, or the next burst.
    mutating func handle(ack: LinkFrame, session: UInt8, base: LinkFrame.Flags, window: Int) -> AckOutcome {
        let answersPoll = apply(ack: ack)
        if isComplete { return .complete }
        guard answersPoll else { return .wait }
        let before = resent
        let frames = burst(session: session, base: base, window: window)
        return .resend(frames, resent: resent - before)
    }

    /// Applies an acknowledgement. Returns whether it answers the poll that ended our last
    /// transmission (we finished sending and are waiting): only then are missing fragments sent
    /// again. An acknowledgement that arrives while a burst is still being sent (a late or repeated
    /// answer to an earlier poll) only updates the bitmap, so duplicates never trigger extra bursts.
    private mutating func apply(ack: LinkFrame) -> Bool {
        let answersPoll = awaitingAck && deadline != nil
        if ack.flags.contains(.complete) {
            for i in acked.indices { acked[i] = true }
        } else {
            for i in acked.indices where i / 8 < ack.payload.count && ack.payload[i / 8] & (1 << (i % 8)) != 0 {
                acked[i] = true
            }
        }
        if answersPoll {
            unansweredPolls = 0
            awaitingAck = false
            deadline = nil
        }
        return answersPoll
    }
}

/// Message numbers of one sender: 1, 2, ... 65535, then 1 again (0 is never used).
struct MessageNumbers: Sendable {
    private var next: UInt16 = 1

    mutating func take() -> UInt16 {
        defer { next = next == UInt16.max ? 1 : next + 1 }
        return next
    }
}

/// Chooses the fragment size of the next message from how the last one fared: half its largest
/// fragment (down to 64 bytes) when more than a quarter of its fragments had to be sent again or it
/// was abandoned,
/// doubled (up to the configured size) after two messages in a row that needed no retransmission. Short frames survive a noisy line; long ones
/// waste less air time on a clean one. The receiver accepts any size.
struct FragmentSizer: Sendable {
    let maximum: Int
    let minimum: Int
    private(set) var current: Int
    private var cleanStreak = 0

    init(maximum: Int) {
        self.maximum = maximum
        minimum = min(64, maximum)
        current = maximum
    }

    mutating func record(_ message: OutboundMessage, abandoned: Bool = false) {
        let sent = max(1, message.fragments.count)
        if abandoned || message.resent * 4 > sent {
            // Half of what was really sent (a short message's one fragment may be far below `current`).
            let largest = message.fragments.map(\.count).max() ?? current
            current = max(minimum, min(current, largest) / 2)
            cleanStreak = 0
        } else if message.resent == 0 {
            cleanStreak += 1
            if cleanStreak >= 2 { current = min(maximum, current * 2) }
        } else {
            cleanStreak = 0
        }
    }
}

/// Messages on their way in: reassembly of fragments, duplicate suppression and acknowledgements.
struct InboundMessages: Sendable {
    struct Partial: Sendable {
        let message: UInt16
        let flags: LinkFrame.Flags
        var parts: [[UInt8]?]
        var received = 0
        var bytes = 0
    }

    /// A complete message to hand to the application.
    struct Delivery: Sendable, Equatable {
        var message: UInt16
        var flags: LinkFrame.Flags
        var data: [UInt8]
    }

    let maximumMessageSize: Int
    let framePayload: Int
    private(set) var partials: [Partial] = []
    /// Messages delivered (or cancelled) recently, newest last: their frames are duplicates.
    private(set) var finished: [UInt16] = []
    /// Frames that repeated fragments already held or messages already delivered.
    private(set) var duplicateFrames = 0
    /// Messages refused for being larger than ``maximumMessageSize``.
    private(set) var refused = 0
    /// Completing fragments dropped while deliveries were paused (back-pressure).
    private(set) var withheld = 0
    /// Complete messages marked ``LinkFrame/Flags/follows`` whose message before is not delivered
    /// yet, in order (``releaseHeld()`` hands them out); they count as finished (acknowledged).
    private(set) var held: [Delivery] = []
    static let memory = 64

    init(maximumMessageSize: Int, framePayload: Int) {
        self.maximumMessageSize = maximumMessageSize
        self.framePayload = framePayload
    }

    func isFinished(_ message: UInt16) -> Bool { finished.contains(message) }

    /// Whether `message` is older than everything remembered (a stale frame from long ago).
    func isStale(_ message: UInt16) -> Bool {
        guard let newest = finished.last, finished.count >= Self.memory else { return false }
        let age = newest &- message
        return age < 0x8000 && age >= UInt16(Self.memory)
    }

    mutating func markFinished(_ message: UInt16) {
        partials.removeAll { $0.message == message }
        finished.removeAll { $0 == message }
        finished.append(message)
        if finished.count > Self.memory { finished.removeFirst(finished.count - Self.memory) }
    }

    /// The acknowledgement of `message` as things stand.
    func ack(for message: UInt16, count: UInt16, session: UInt8, base: LinkFrame.Flags) -> LinkFrame {
        if isFinished(message) {
            return LinkFrame(kind: .ack, flags: base.union(.complete), session: session, message: message, fragmentCount: count)
        }
        var bitmap: [UInt8] = []
        if let p = partials.first(where: { $0.message == message }) {
            bitmap = Array(repeating: 0, count: (p.parts.count + 7) / 8)
            for i in p.parts.indices where p.parts[i] != nil { bitmap[i / 8] |= 1 << (i % 8) }
        }
        return LinkFrame(kind: .ack, flags: base, session: session, message: message, fragmentCount: count, payload: bitmap)
    }

    /// Takes a data frame. Returns the message it completed, if any, and progress (bytes, total).
    /// With `canComplete` false a fragment that would complete a message is dropped unheld (the
    /// application is not taking messages: the sender's polls find it missing and send it again later).
    mutating func receive(_ frame: LinkFrame, canComplete: Bool = true) -> (delivery: Delivery?, progress: (Int, Int)?) {
        if isFinished(frame.message) || isStale(frame.message) {
            duplicateFrames += 1
            return (nil, nil)
        }
        let count = Int(frame.fragmentCount)
        // Fragments are at least 64 bytes (or the configured size if smaller), except the last.
        let smallest = min(64, framePayload)
        if count > 1 && (count - 1) * smallest > maximumMessageSize {
            refused += 1
            return (nil, nil)
        }
        var index = partials.firstIndex { $0.message == frame.message }
        if let i = index, partials[i].parts.count != count { partials.remove(at: i); index = nil }
        if index == nil {
            partials.append(Partial(message: frame.message, flags: frame.flags.intersection([.reply, .follows]),
                                    parts: Array(repeating: nil, count: count)))
            // Keep two messages in reassembly at most: older ones were abandoned by their sender.
            if partials.count > 2 { partials.removeFirst(partials.count - 2) }
            index = partials.count - 1
        }
        let i = index!
        let f = Int(frame.fragment)
        if partials[i].parts[f] != nil {
            duplicateFrames += 1
            return (nil, nil)
        }
        if !canComplete && partials[i].received + 1 == partials[i].parts.count {
            withheld += 1
            return (nil, nil)
        }
        if partials[i].bytes + frame.payload.count > maximumMessageSize {
            refused += 1
            partials.remove(at: i)
            return (nil, nil)
        }
        partials[i].parts[f] = frame.payload
        partials[i].received += 1
        partials[i].bytes += frame.payload.count
        let p = partials[i]
        guard p.received == p.parts.count else {
            let typical = max(frame.payload.count, p.bytes / p.received)
            return (nil, (p.bytes, p.bytes + (p.parts.count - p.received) * typical))
        }
        var data: [UInt8] = []
        data.reserveCapacity(p.bytes)
        for part in p.parts { data.append(contentsOf: part!) }
        markFinished(p.message)
        let delivery = Delivery(message: p.message, flags: p.flags.subtracting(.follows), data: data)
        if p.flags.contains(.follows) && waitsForPrevious(p.message) {
            held.append(delivery)
            return (nil, (p.bytes, p.bytes))
        }
        return (delivery, (p.bytes, p.bytes))
    }

    /// The number before `message` (65535 before 1: 0 is never used).
    static func previous(_ message: UInt16) -> UInt16 { message == 1 ? UInt16.max : message &- 1 }

    /// Whether the message before `message` has not been delivered yet (not finished, or held).
    private func waitsForPrevious(_ message: UInt16) -> Bool {
        let before = Self.previous(message)
        return !isFinished(before) || held.contains { $0.message == before }
    }

    /// The held messages whose message before has now been delivered, in order.
    mutating func releaseHeld() -> [Delivery] {
        var out: [Delivery] = []
        while let i = held.firstIndex(where: { !waitsForPrevious($0.message) }) {
            out.append(held.remove(at: i))
        }
        return out
    }
}
