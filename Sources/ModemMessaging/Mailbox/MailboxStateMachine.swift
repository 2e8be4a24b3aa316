/// The mailbox's record kinds (inside a session's REC records; docs/messaging-plan.md section 3).
public enum MailboxRecordKind {
    /// `CHUNK`: seq u32 BE, then the chunk's bytes.
    public static let chunk: UInt8 = 0x10
    /// `HELD`: seq u32 BE, cumulative: the peer's application took every chunk up to seq.
    public static let held: UInt8 = 0x11
    /// `CONTACT`: the sender's vCard 4.0 text, or empty for "nothing to share". Each side sends it
    /// first, before any chunk; the mailbox counts as connected once the peer's has arrived and is valid.
    public static let contact: UInt8 = 0x12
}

/// Limits and flow control of one mailbox.
public struct MailboxConfiguration: Sendable, Equatable {
    /// Chunk payload, sent plus received, after which the session closes (`END_USER_QUIT` with a
    /// detail). Default 10 MB.
    public var maximumBytes: Int
    /// Session duration after which it closes (`END_USER_QUIT` with a detail). Default one hour.
    public var maximumSeconds: Double
    /// Chunks sent and not yet HELD by the peer, at most. A peer that stops reading stalls the sender.
    public var windowChunks: Int
    /// Bytes of chunks sent and not yet HELD, at most (one chunk is always allowed).
    public var windowBytes: Int
    /// Our contact card to give the peer, or nil to share nothing.
    public var contact: VCard?

    /// Creates a configuration; the defaults are the (10 MB, 1 h, 64 chunks or 1 MiB in flight).
    public init(maximumBytes: Int = 10_000_000, maximumSeconds: Double = 3600, windowChunks: Int = 64,
                windowBytes: Int = 1 << 20, contact: VCard? = nil) {
        self.maximumBytes = maximumBytes
        self.maximumSeconds = maximumSeconds
        self.windowChunks = max(1, windowChunks)
        self.windowBytes = max(1, windowBytes)
        self.contact = contact
    }
}

/// What a mailbox reports to its application (the mailbox API's delegate calls, as values).
public enum MailboxEvent: Sendable, Equatable {
    /// Both ends confirmed: chunks may flow. Carries who the other user is: name it by
    /// ``PeerIdentity/trustedName`` (or the identity's description), never by its claimed name alone.
    case connected(PeerIdentity)
    /// A chunk from the other user (handing it over tells the peer we hold it).
    case dataReceived([UInt8])
    /// The peer holds our chunk with this sequence number (chunks are numbered from 1).
    case sendSuccess(UInt32)
    /// The other user's contact card (only when it shared one).
    case contactReceived(VCard)
    /// The mailbox was connected and has ended.
    case disconnected(SessionEnd)
    /// The mailbox never connected.
    case connectFailed(SessionFailure)
}

/// Why a chunk was not sent.
public enum MailboxSendError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The chunk is larger than a record can carry.
    case tooLarge(Int, limit: Int)
    /// The mailbox is quitting or has ended (with the reason when known).
    case closed(String)
    /// Sending it would pass the session's byte limit (the mailbox closes).
    case limitReached(String)

    public var description: String {
        switch self {
        case .tooLarge(let size, let limit): "a chunk of \(size) bytes is over the limit of \(limit)"
        case .closed(let text): "the mailbox is closed: \(text)"
        case .limitReached(let text): text
        }
    }
}

/// What the driver must do for the machine.
public enum MailboxAction: Sendable, Equatable {
    /// Send this record on the session (in order).
    case sendRecord(kind: UInt8, body: [UInt8])
    /// Report an event to the application.
    case event(MailboxEvent)
    /// Hand this chunk to the application; call ``MailboxStateMachine/delivered(seq:now:)`` once it took it.
    case deliver(seq: UInt32, chunk: [UInt8])
    /// The chunk submitted under this ticket went out with this sequence number.
    case transmitted(ticket: Int, seq: UInt32)
    /// The chunk submitted under this ticket will not be sent.
    case refused(ticket: Int, MailboxSendError)
    /// Half-close the session after the records already ordered ("I will send no more").
    case closeSession
    /// Stop at once: the peer broke the protocol or the contact failed. Report the event given
    /// (already in the actions) and drop the session.
    case abort
}

/// The mailbox protocol (the mailbox API) as a pure value (house style): chunks numbered from 1 per
/// direction, cumulative HELD once the application took a chunk (which gives `sendSuccess` on the
/// sender), a bounded window of unacknowledged chunks, contact exchange, quit semantics and limits.
/// It never touches a session: ``MailboxAction``s say what to send and report.
///
/// Quit: ``quit(now:)`` stops new chunks, waits until every chunk submitted so far was sent and
/// HELD, then closes. The peer's close (``peerClosing(now:)``) makes the machine send what is pending
/// regardless of the window (the peer reads until our close) and close. The session's end
/// (``sessionEnded(_:now:)``) gives the disconnect reason.
public struct MailboxStateMachine: Sendable {
    /// Where the machine is.
    public enum Phase: Sendable, Equatable {
        /// Our CONTACT is out; waiting for the peer's.
        case awaitingContact
        /// Connected: chunks flow.
        case open
        /// Finished (ended, failed or aborted).
        case finished
    }

    public let configuration: MailboxConfiguration
    /// The largest chunk, in bytes (a record body less the 4-byte sequence number).
    public let maximumChunk: Int
    public private(set) var phase: Phase = .awaitingContact
    /// The other user (from the session's handshake): its key, trusted name and claimed name.
    public let peer: PeerIdentity

    private var nextSendSeq: UInt32 = 1
    private var inFlight: [(seq: UInt32, size: Int)] = []
    private var inFlightHead = 0
    private var inFlightBytes = 0
    private var pending: [(ticket: Int, chunk: [UInt8])] = []
    private var pendingHead = 0
    private var expectedSeq: UInt32 = 1
    private var heldUpTo: UInt32 = 0
    private var handedUpTo: UInt32 = 0
    private var bytesUsed = 0
    private var deadline: Double
    private var quitting = false
    private var peerClosed = false
    private var closeSent = false
    private var closeDetail: String?

    /// Chunks submitted and not yet sent (waiting for window space or for the connection).
    public var pendingCount: Int { pending.count - pendingHead }
    /// Chunks sent and not yet HELD.
    public var inFlightCount: Int { inFlight.count - inFlightHead }
    /// Bytes of chunks sent and not yet HELD.
    public var inFlightByteCount: Int { inFlightBytes }
    /// Chunk payload counted against the byte limit so far (sent plus received).
    public var bytesCounted: Int { bytesUsed }
    /// Whether we have half-closed (or are about to: the close is among the actions returned).
    public var hasClosed: Bool { closeSent }
    /// Whether the peer has closed its side.
    public var peerHasClosed: Bool { peerClosed }

    /// A machine for a session with `peer`; `maximumRecordBody` is the session's.
    public init(configuration: MailboxConfiguration, peer: PeerIdentity, maximumRecordBody: Int, now: Double) {
        self.configuration = configuration
        self.peer = peer
        self.maximumChunk = max(1, maximumRecordBody - 4)
        self.deadline = now + configuration.maximumSeconds
    }

    /// Starts the exchange: our CONTACT record (empty when we share nothing).
    public mutating func start(now: Double) -> [MailboxAction] {
        [.sendRecord(kind: MailboxRecordKind.contact, body: configuration.contact?.bytes ?? [])]
    }

    /// The application submits a chunk under `ticket`. It is sent at once when connected and the window
    /// has room (``MailboxAction/transmitted(ticket:seq:)``), kept pending otherwise, or refused.
    public mutating func submit(_ chunk: [UInt8], ticket: Int, now: Double) -> [MailboxAction] {
        guard chunk.count <= maximumChunk else {
            return [.refused(ticket: ticket, .tooLarge(chunk.count, limit: maximumChunk))]
        }
        guard phase != .finished, !quitting, !closeSent else {
            return [.refused(ticket: ticket, .closed(closeDetail ?? "quitting"))]
        }
        pending.append((ticket, chunk))
        var actions: [MailboxAction] = []
        pump(into: &actions)
        return actions
    }

    /// A record of a mailbox kind arrived.
    public mutating func record(kind: UInt8, body: [UInt8], now: Double) -> [MailboxAction] {
        guard phase != .finished else { return [] }
        var actions: [MailboxAction] = []
        switch kind {
        case MailboxRecordKind.contact:
            guard phase == .awaitingContact else { return violation("a second CONTACT record") }
            var card: VCard?
            if !body.isEmpty {
                do throws(VCardError) {
                    card = try VCard.parse(body)
                } catch {
                    phase = .finished
                    return [.event(.connectFailed(.badContact("the other user's contact: \(error)"))), .abort]
                }
            }
            phase = .open
            actions.append(.event(.connected(peer)))
            if let card { actions.append(.event(.contactReceived(card))) }
            pump(into: &actions)
        case MailboxRecordKind.chunk:
            guard phase == .open else { return violation("a CHUNK before CONTACT") }
            guard body.count >= 4 else { return violation("a CHUNK record of \(body.count) bytes") }
            let seq = readSeq(body)
            guard seq == expectedSeq else { return violation("CHUNK \(seq) where \(expectedSeq) was due") }
            expectedSeq &+= 1
            let chunk = Array(body[4...])
            bytesUsed += chunk.count
            actions.append(.deliver(seq: seq, chunk: chunk))
            if bytesUsed >= configuration.maximumBytes {
                hitLimit("the session limit of \(configuration.maximumBytes) bytes was reached", into: &actions)
            }
        case MailboxRecordKind.held:
            guard phase == .open else { return violation("HELD before CONTACT") }
            guard body.count == 4 else { return violation("a HELD record of \(body.count) bytes") }
            let seq = readSeq(body)
            guard seq >= heldUpTo, seq < nextSendSeq else {
                return violation("HELD \(seq) where chunks \(heldUpTo + 1)...\(nextSendSeq - 1) were outstanding")
            }
            while inFlightHead < inFlight.count, inFlight[inFlightHead].seq <= seq {
                let entry = inFlight[inFlightHead]
                inFlightHead += 1
                inFlightBytes -= entry.size
                actions.append(.event(.sendSuccess(entry.seq)))
            }
            compact()
            heldUpTo = seq
            pump(into: &actions)
        default:
            return violation("an unknown mailbox record kind 0x\(String(kind, radix: 16))")
        }
        return actions
    }

    /// The application took chunk `seq` (handed over by ``MailboxAction/deliver(seq:chunk:)``): HELD.
    public mutating func delivered(seq: UInt32, now: Double) -> [MailboxAction] {
        guard phase == .open, seq > handedUpTo, !closeSent else { return [] }
        handedUpTo = seq
        return [.sendRecord(kind: MailboxRecordKind.held, body: seqBytes(seq))]
    }

    /// The application quits: no new chunks; close once everything submitted was sent and HELD.
    public mutating func quit(now: Double) -> [MailboxAction] {
        guard phase != .finished, !quitting else { return [] }
        quitting = true
        var actions: [MailboxAction] = []
        pump(into: &actions)
        return actions
    }

    /// The application quits at once: pending chunks are refused, the close goes out now.
    public mutating func quitNow(now: Double) -> [MailboxAction] {
        guard phase != .finished else { return [] }
        quitting = true
        var actions: [MailboxAction] = []
        refusePending(.closed("disconnected"), into: &actions)
        if !closeSent {
            closeSent = true
            actions.append(.closeSession)
        }
        return actions
    }

    /// The peer will send no more: send what is pending (the window no longer applies, the peer
    /// reads until our close), then close.
    public mutating func peerClosing(now: Double) -> [MailboxAction] {
        guard phase != .finished else { return [] }
        peerClosed = true
        var actions: [MailboxAction] = []
        if phase == .awaitingContact {
            // The peer left before the mailbox connected.
            phase = .finished
            return [.event(.connectFailed(.userCanceled)), .abort]
        }
        pump(into: &actions)
        return actions
    }

    /// Time passes: the time limit.
    public mutating func tick(now: Double) -> [MailboxAction] {
        guard phase == .open, !closeSent, now >= deadline else { return [] }
        var actions: [MailboxAction] = []
        hitLimit("the session limit of \(formatSeconds(configuration.maximumSeconds)) was reached", into: &actions)
        return actions
    }

    /// When ``tick(now:)`` next matters, or nil.
    public var nextDeadline: Double? { phase == .finished || closeSent ? nil : deadline }

    /// The session ended: the disconnect (or connect-failed) event.
    public mutating func sessionEnded(_ end: SessionEnd, now: Double) -> [MailboxAction] {
        guard phase != .finished else { return [] }
        var actions: [MailboxAction] = []
        refusePending(.closed(end.seedName), into: &actions)
        if phase == .awaitingContact {
            phase = .finished
            let failure: SessionFailure = switch end {
            case .userQuit, .otherUserQuit: .userCanceled
            case .otherUserLost(let text), .lostNet(let text): .networkUnavailable(text)
            }
            actions.append(.event(.connectFailed(failure)))
            return actions
        }
        phase = .finished
        var reason = end
        if case .userQuit(nil) = end, let closeDetail { reason = .userQuit(closeDetail) }
        actions.append(.event(.disconnected(reason)))
        return actions
    }

    // MARK: Inside

    private mutating func pump(into actions: inout [MailboxAction]) {
        guard phase == .open, !closeSent else { return }
        while pendingHead < pending.count {
            let size = pending[pendingHead].chunk.count
            let windowOpen = inFlightCount == 0
                || (inFlightCount < configuration.windowChunks && inFlightBytes + size <= configuration.windowBytes)
            guard windowOpen || peerClosed else { break }
            let (ticket, chunk) = pending[pendingHead]
            if bytesUsed + size > configuration.maximumBytes {
                hitLimit("the session limit of \(configuration.maximumBytes) bytes was reached", into: &actions)
                return
            }
            pending[pendingHead].chunk = []
            pendingHead += 1
            let seq = nextSendSeq
            nextSendSeq &+= 1
            bytesUsed += size
            inFlight.append((seq, size))
            inFlightBytes += size
            actions.append(.sendRecord(kind: MailboxRecordKind.chunk, body: seqBytes(seq) + chunk))
            actions.append(.transmitted(ticket: ticket, seq: seq))
        }
        compact()
        if bytesUsed >= configuration.maximumBytes {
            hitLimit("the session limit of \(configuration.maximumBytes) bytes was reached", into: &actions)
            return
        }
        let everythingHeld = pendingCount == 0 && inFlightCount == 0
        if (quitting && everythingHeld) || (peerClosed && pendingCount == 0) {
            closeSent = true
            actions.append(.closeSession)
        }
    }

    private mutating func hitLimit(_ detail: String, into actions: inout [MailboxAction]) {
        guard !closeSent else { return }
        closeDetail = detail
        quitting = true
        refusePending(.limitReached(detail), into: &actions)
        closeSent = true
        actions.append(.closeSession)
    }

    private mutating func refusePending(_ error: MailboxSendError, into actions: inout [MailboxAction]) {
        while pendingHead < pending.count {
            actions.append(.refused(ticket: pending[pendingHead].ticket, error))
            pendingHead += 1
        }
        compact()
    }

    private mutating func violation(_ text: String) -> [MailboxAction] {
        phase = .finished
        return [.event(.disconnected(.lostNet("protocol error from the peer: \(text)"))), .abort]
    }

    private mutating func compact() {
        if pendingHead > 0, pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        } else if pendingHead > 64, pendingHead * 2 > pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        if inFlightHead > 0, inFlightHead == inFlight.count {
            inFlight.removeAll(keepingCapacity: true)
            inFlightHead = 0
        } else if inFlightHead > 64, inFlightHead * 2 > inFlight.count {
            inFlight.removeFirst(inFlightHead)
            inFlightHead = 0
        }
    }

    private func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}

/// A big-endian u32 from the first four bytes (the caller checked there are four).
private func readSeq(_ body: [UInt8]) -> UInt32 {
    UInt32(body[0]) << 24 | UInt32(body[1]) << 16 | UInt32(body[2]) << 8 | UInt32(body[3])
}

/// A u32 as four big-endian bytes.
private func seqBytes(_ value: UInt32) -> [UInt8] {
    [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
     UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
}
