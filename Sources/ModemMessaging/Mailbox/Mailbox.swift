import ModemRuntime

/// The two-party mailbox (the mailbox API, with Bump's names and reasons) over a ``RecordSession``: `send(chunk)` with a `sendSuccess` per
/// chunk once the peer's application holds it, received chunks, contact exchange, the mailbox API's
/// disconnect and connect-failed reasons, and session limits.
///
/// ```swift
/// let mailbox = Mailbox(userName: "alice")
/// await mailbox.start(session: session)        // or: await mailbox.connect { try await open() }
/// Task { for await event in mailbox.events { print(event) } }
/// let seq = try await mailbox.send(Array("hello".utf8))
/// await mailbox.disconnect()
/// ```
///
/// ``events`` is pulled: a received chunk is acknowledged (HELD) when the application, done with it,
/// asks for the next event (or quits, or the mailbox closes), so an application that stops reading stalls the peer's sender, and memory stays
/// bounded on both sides. ``send(_:)`` returns once the chunk was given to the session (with its
/// sequence number); it suspends while the window of unacknowledged chunks is full.
///
/// The mailbox logic is ``MailboxStateMachine``; this actor is its driver: one task reads the
/// session, one writes records in order, one waits for the time limit.
public actor Mailbox {
    /// Our user name (what the session announced to the peer).
    public nonisolated let userName: String
    /// Limits, window and our contact.
    public nonisolated let configuration: MailboxConfiguration
    /// The other user, once connected: name it by ``PeerIdentity/trustedName`` (or its description).
    public private(set) var peer: PeerIdentity?

    /// Called when the peer quits first, before we close: chunks the application still has queued
    /// (for example lines already read from standard input). They are sent before our close.
    private let pendingOnPeerQuit: (@Sendable () async -> [[UInt8]])?

    private enum Queued {
        case event(MailboxEvent)
        case chunk(seq: UInt32, bytes: [UInt8])
    }

    private struct Outgoing {
        var kind: UInt8
        var body: [UInt8]
        var ticket: Int?
        var seq: UInt32
    }

    /// The clock of the time limit (``MailboxConfiguration/maximumSeconds``).
    private let clock: TimerClock
    private var machine: MailboxStateMachine?
    private var session: (any RecordSession)?
    private var connecting = false
    private var cancelledBeforeStart = false

    // Events, pulled by the application.
    private var queue: [Queued] = []
    private var queueHead = 0
    private var eventWaiter: CheckedContinuation<MailboxEvent?, Never>?
    private var finished = false
    /// The chunk handed to the application last: acknowledged (HELD) when it asks for the next event.
    private var lastHandedSeq: UInt32?

    // Received chunks not yet taken: the reader pauses beyond twice the window.
    private var bufferedChunks = 0
    private var bufferedBytes = 0
    private var readerWaiter: CheckedContinuation<Void, Never>?

    // Sending.
    private var nextTicket = 0
    private var earlySubmissions: [(ticket: Int, chunk: [UInt8])] = []
    private var quitBeforeStart = false
    private var sendWaiters: [Int: CheckedContinuation<UInt32, any Error>] = [:]
    private var outgoing: [Outgoing] = []
    private var outgoingHead = 0
    private var writerWaiter: CheckedContinuation<Void, Never>?
    private var closeRequested = false
    private var aborted = false
    private var timer: Task<Void, Never>?

    /// A mailbox for `userName`, not yet connected. `pendingOnPeerQuit`, when given, is asked for the
    /// application's still-queued chunks when the peer quits first (they go out before our close).
    /// `clock` runs the time limit (the system's monotonic clock unless a test or a simulation gives
    /// its own).
    public init(userName: String, configuration: MailboxConfiguration = MailboxConfiguration(),
                pendingOnPeerQuit: (@Sendable () async -> [[UInt8]])? = nil, clock: TimerClock = .continuous) {
        self.userName = userName
        self.configuration = configuration
        self.pendingOnPeerQuit = pendingOnPeerQuit
        self.clock = clock
    }

    /// The mailbox's events in order, ending after `.disconnected` or `.connectFailed`. Pulled: take
    /// them promptly (a chunk is acknowledged to the peer when taken). One consumer at a time.
    public nonisolated var events: AsyncStream<MailboxEvent> {
        AsyncStream(unfolding: { [self] in await self.nextEvent() })
    }

    /// Opens a session with `open` and starts the mailbox on it; a failure to open becomes
    /// `.connectFailed` (a ``SessionFailure`` as it is; other errors as `FAIL_NETWORK_UNAVAILABLE`,
    /// cancellation as `FAIL_USER_CANCELED`). Returns whether the session opened.
    @discardableResult
    public func connect(using open: @Sendable () async throws -> any RecordSession) async -> Bool {
        guard session == nil, !connecting, !finished else { return false }
        connecting = true
        do {
            let opened = try await open()
            connecting = false
            if cancelledBeforeStart {
                await opened.close()
                return false
            }
            start(session: opened)
            return true
        } catch {
            connecting = false
            let failure: SessionFailure = switch error {
            case let failure as SessionFailure: failure
            case is CancellationError: .userCanceled
            default: .networkUnavailable(String(describing: error))
            }
            failBeforeStart(failure)
            return false
        }
    }

    /// Starts the mailbox on an established session: our CONTACT goes out, and `.connected` follows
    /// when the peer's arrives.
    public func start(session: any RecordSession) {
        guard self.session == nil, !finished else { return }
        self.session = session
        var machine = MailboxStateMachine(configuration: configuration, peer: session.peer,
                                          maximumRecordBody: session.maximumRecordBody, now: now())
        let start = machine.start(now: now())
        self.machine = machine
        perform(start)
        for early in earlySubmissions { perform(self.machine?.submit(early.chunk, ticket: early.ticket, now: now()) ?? []) }
        earlySubmissions = []
        if quitBeforeStart { perform(self.machine?.quit(now: now()) ?? []) }
        Task { await self.readLoop(session) }
        Task { await self.writeLoop(session) }
        let seconds = configuration.maximumSeconds
        // The limit counts from the start, but the machine only enforces it once the session is open
        // (the peer's CONTACT may come late on a loaded machine or a slow link): tick again until it ends.
        let clock = self.clock
        timer = Task { [weak self] in
            guard seconds.isFinite, seconds >= 0 else { return }
            var wait = seconds
            // At most a day at a time: Duration.seconds traps past Int64 seconds, and the loop ticks again anyway.
            while (try? await clock.sleep(min(wait, 86400))) != nil {
                guard let self, let next = await self.timeTick() else { return }
                wait = next
            }
        }
    }

    /// Sends one chunk; returns its sequence number (from 1) once the session took it. Suspends while
    /// the window of unacknowledged chunks is full or before the mailbox connected; throws
    /// ``MailboxSendError`` when the chunk is too large, the mailbox is quitting or has ended, or a
    /// limit is reached. `sendSuccess` with the same number follows when the peer holds it.
    public func send(_ chunk: [UInt8]) async throws -> UInt32 {
        if finished { throw MailboxSendError.closed(finalReason ?? "ended") }
        nextTicket += 1
        let ticket = nextTicket
        return try await withCheckedThrowingContinuation { continuation in
            sendWaiters[ticket] = continuation
            if machine == nil {
                if quitBeforeStart || cancelledBeforeStart {
                    sendWaiters[ticket] = nil
                    continuation.resume(throwing: MailboxSendError.closed("quitting"))
                } else {
                    earlySubmissions.append((ticket, chunk))
                }
            } else {
                perform(machine!.submit(chunk, ticket: ticket, now: now()))
            }
        }
    }

    /// Quits: no new chunks; once every chunk sent so far is held by the peer, the session closes and
    /// `.disconnected(END_USER_QUIT)` follows (or `END_OTHER_USER_QUIT` if the peer was first).
    /// While ``connect(using:)`` is opening the session it cancels (`FAIL_USER_CANCELED`); before
    /// anything was started the quit waits for the start (chunks already given still go first).
    public func disconnect() {
        acknowledgeHanded()
        if machine == nil {
            if connecting {
                cancelledBeforeStart = true
                failBeforeStart(.userCanceled)
            } else if !finished {
                quitBeforeStart = true
            }
            return
        }
        perform(machine!.quit(now: now()))
    }

    /// Quits at once: chunks not yet sent are refused, the close goes out now (chunks already sent
    /// still arrive, in order, before it).
    public func disconnectNow() {
        acknowledgeHanded()
        guard machine != nil else {
            disconnect()
            return
        }
        perform(machine!.quitNow(now: now()))
    }

    /// Chunks given to ``send(_:)`` and not yet taken by the session (waiting for the connection or
    /// for window space).
    public var unsentCount: Int {
        earlySubmissions.count + (machine?.pendingCount ?? 0)
            + outgoing[outgoingHead...].count { $0.kind == MailboxRecordKind.chunk }
    }

    // MARK: Driver

    private var finalReason: String?

    private func now() -> Double { clock.now() }

    private func failBeforeStart(_ failure: SessionFailure) {
        guard !finished else { return }
        for (ticket, _) in earlySubmissions {
            sendWaiters.removeValue(forKey: ticket)?.resume(throwing: MailboxSendError.closed(failure.seedName))
        }
        earlySubmissions = []
        enqueue(.event(.connectFailed(failure)))
        markFinished(failure.seedName)
    }

    private func perform(_ actions: [MailboxAction]) {
        for action in actions {
            switch action {
            case .sendRecord(let kind, let body):
                if kind == MailboxRecordKind.held, outgoing.count - 1 > outgoingHead,
                   outgoing[outgoing.count - 1].kind == MailboxRecordKind.held {
                    // HELD is cumulative: the newer one replaces one still waiting. Never the head:
                    // the writer may be sending it (it took a copy), and the newer one would be lost.
                    outgoing[outgoing.count - 1].body = body
                } else {
                    outgoing.append(Outgoing(kind: kind, body: body, ticket: nil, seq: 0))
                }
                wakeWriter()
            case .transmitted(let ticket, let seq):
                // The chunk record just queued: its sender resumes once the session took it.
                if outgoingHead < outgoing.count {
                    outgoing[outgoing.count - 1].ticket = ticket
                    outgoing[outgoing.count - 1].seq = seq
                }
            case .refused(let ticket, let error):
                sendWaiters.removeValue(forKey: ticket)?.resume(throwing: error)
            case .event(let event):
                if case .connected(let other) = event { peer = other }
                enqueue(.event(event))
                switch event {
                case .disconnected(let end): markFinished(end.seedName)
                case .connectFailed(let failure): markFinished(failure.seedName)
                default: break
                }
            case .deliver(let seq, let chunk):
                bufferedChunks += 1
                bufferedBytes += chunk.count
                enqueue(.chunk(seq: seq, bytes: chunk))
            case .closeSession:
                // The chunk handed last is held too: say so before our close.
                if let seq = lastHandedSeq {
                    lastHandedSeq = nil
                    outgoing.append(Outgoing(kind: MailboxRecordKind.held, body: heldBody(seq), ticket: nil, seq: 0))
                }
                closeRequested = true
                wakeWriter()
            case .abort:
                aborted = true
                closeRequested = true
                wakeWriter()
                wakeReader()
            }
        }
    }

    private func markFinished(_ reason: String) {
        guard !finished else { return }
        finished = true
        finalReason = reason
        timer?.cancel()
        timer = nil
        // Chunks whose record never reached the session.
        for entry in outgoing[outgoingHead...] {
            if let ticket = entry.ticket {
                sendWaiters.removeValue(forKey: ticket)?.resume(throwing: MailboxSendError.closed(reason))
            }
        }
        for (_, waiter) in sendWaiters { waiter.resume(throwing: MailboxSendError.closed(reason)) }
        sendWaiters = [:]
        wakeWriter()
        wakeReader()
    }

    private func enqueue(_ item: Queued) {
        queue.append(item)
        if let waiter = eventWaiter {
            eventWaiter = nil
            waiter.resume(returning: popEvent())
        }
    }

    private func nextEvent() async -> MailboxEvent? {
        // The application asks for more: it is done with the chunk handed last, which it now holds.
        acknowledgeHanded()
        if let event = popEvent() { return event }
        if finished { return nil }
        return await withCheckedContinuation { continuation in
            if let event = popEvent() {
                continuation.resume(returning: event)
            } else if finished {
                continuation.resume(returning: nil)
            } else {
                eventWaiter = continuation
            }
        }
    }

    /// HELD for the chunk handed last (the application is done with it: it asks for more or quits).
    private func acknowledgeHanded() {
        guard let seq = lastHandedSeq else { return }
        lastHandedSeq = nil
        if !finished, let actions = machine?.delivered(seq: seq, now: now()) { perform(actions) }
    }

    private func popEvent() -> MailboxEvent? {
        guard queueHead < queue.count else { return nil }
        let item = queue[queueHead]
        queueHead += 1
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 256, queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        switch item {
        case .event(let event):
            return event
        case .chunk(let seq, let bytes):
            bufferedChunks -= 1
            bufferedBytes -= bytes.count
            wakeReader()
            lastHandedSeq = seq
            return .dataReceived(bytes)
        }
    }

    private var readerShouldPause: Bool {
        !finished && !aborted
            && (bufferedChunks >= 2 * configuration.windowChunks || bufferedBytes >= 2 * configuration.windowBytes)
    }

    private func wakeReader() {
        if let waiter = readerWaiter, !readerShouldPause {
            readerWaiter = nil
            waiter.resume()
        }
    }

    private func wakeWriter() {
        if let waiter = writerWaiter {
            writerWaiter = nil
            waiter.resume()
        }
    }

    private func readLoop(_ session: any RecordSession) async {
        while !finished, !aborted {
            if readerShouldPause {
                await withCheckedContinuation { readerWaiter = $0 }
                continue
            }
            let input = await session.receive()
            guard !aborted, machine != nil else { return }
            switch input {
            case .record(let kind, let body):
                perform(machine!.record(kind: kind, body: body, now: now()))
            case .peerClosing:
                if let pendingOnPeerQuit, machine!.phase == .open, !machine!.hasClosed {
                    for chunk in await pendingOnPeerQuit() {
                        nextTicket += 1
                        perform(machine!.submit(chunk, ticket: nextTicket, now: now()))
                    }
                }
                perform(machine!.peerClosing(now: now()))
            case .ended(let end):
                perform(machine!.sessionEnded(end, now: now()))
                wakeWriter()
                return
            }
        }
    }

    private func writeLoop(_ session: any RecordSession) async {
        var closed = false
        while true {
            if outgoingHead < outgoing.count, !aborted {
                let record = outgoing[outgoingHead]
                do throws(SessionSendError) {
                    try await session.send(kind: record.kind, body: record.body)
                } catch {
                    // The session is over or closing; the reader reports how it ended.
                    if let ticket = record.ticket {
                        sendWaiters.removeValue(forKey: ticket)?.resume(throwing: MailboxSendError.closed(error.description))
                    }
                    outgoingHead += 1
                    continue
                }
                outgoing[outgoingHead].body = []
                outgoingHead += 1
                if let ticket = record.ticket { sendWaiters.removeValue(forKey: ticket)?.resume(returning: record.seq) }
                if outgoingHead == outgoing.count {
                    outgoing.removeAll(keepingCapacity: true)
                    outgoingHead = 0
                }
                continue
            }
            if closeRequested, !closed {
                closed = true
                await session.close()
                continue
            }
            if finished || aborted { return }
            await withCheckedContinuation { writerWaiter = $0 }
        }
    }

    /// Ticks the machine's session-time limit; returns the seconds until it next matters (at least
    /// 0.05), or nil once the mailbox has finished or has no limit left to enforce.
    private func timeTick() -> Double? {
        guard !finished, machine != nil else { return nil }
        perform(machine!.tick(now: now() + 0.001))
        guard !finished, let deadline = machine?.nextDeadline, deadline.isFinite else { return nil }
        return max(0.05, deadline - now())
    }
}

/// A HELD record's body: the sequence number, big-endian.
private func heldBody(_ seq: UInt32) -> [UInt8] {
    [UInt8(truncatingIfNeeded: seq >> 24), UInt8(truncatingIfNeeded: seq >> 16),
     UInt8(truncatingIfNeeded: seq >> 8), UInt8(truncatingIfNeeded: seq)]
}

/// The mailbox API's delegate methods (Bump's names: `bumpDidConnect`, `bumpDidDisconnect:`,
/// `bumpConnectFailed:`, `bumpDataReceived:`, `bumpSendSuccess`, `bumpContactExchangeSuccess:`).
/// Called in order, from one task, by ``MailboxDelegateAdapter``.
public protocol MailboxDelegate: AnyObject, Sendable {
    /// Both users confirmed; chunks may be sent and received. `peer` names the other user by the
    /// name its key is trusted under here (``PeerIdentity/trustedName``); what it calls itself is
    /// ``PeerIdentity/claimedName``, a claim only.
    func mailboxDidConnect(peer: PeerIdentity)
    /// The connected mailbox ended, with the mailbox API's reason.
    func mailboxDidDisconnect(reason: SessionEnd)
    /// The mailbox never connected, with the mailbox API's reason.
    func mailboxConnectFailed(reason: SessionFailure)
    /// A chunk from the other user.
    func mailboxDataReceived(chunk: [UInt8])
    /// The other user holds our chunk `seq`.
    func mailboxSendSuccess(seq: UInt32)
    /// The other user's contact card.
    func mailboxContactExchangeSuccess(contact: VCard)
}

extension MailboxDelegate {
    /// Default: ignored.
    public func mailboxSendSuccess(seq: UInt32) {}
    /// Default: ignored.
    public func mailboxContactExchangeSuccess(contact: VCard) {}
}

/// The mailbox API's callback style over a ``Mailbox``: events become delegate calls, in order.
public final class MailboxDelegateAdapter: Sendable {
    /// The mailbox driven.
    public let mailbox: Mailbox
    private let task: Task<Void, Never>

    /// Starts delivering `mailbox`'s events to `delegate` (held strongly until the mailbox ends).
    public init(mailbox: Mailbox, delegate: any MailboxDelegate) {
        self.mailbox = mailbox
        task = Task {
            for await event in mailbox.events {
                switch event {
                case .connected(let peer): delegate.mailboxDidConnect(peer: peer)
                case .dataReceived(let chunk): delegate.mailboxDataReceived(chunk: chunk)
                case .sendSuccess(let seq): delegate.mailboxSendSuccess(seq: seq)
                case .contactReceived(let card): delegate.mailboxContactExchangeSuccess(contact: card)
                case .disconnected(let reason): delegate.mailboxDidDisconnect(reason: reason)
                case .connectFailed(let reason): delegate.mailboxConnectFailed(reason: reason)
                }
            }
        }
    }

    /// Sends a chunk (see ``Mailbox/send(_:)``).
    public func send(_ chunk: [UInt8]) async throws -> UInt32 { try await mailbox.send(chunk) }

    /// Quits (see ``Mailbox/disconnect()``).
    public func disconnect() async { await mailbox.disconnect() }

    /// Our user name.
    public var userName: String { mailbox.userName }

    /// The other user, once connected.
    public var peer: PeerIdentity? { get async { await mailbox.peer } }

    /// Waits until every event was delivered to the delegate.
    public func finished() async { await task.value }
}
