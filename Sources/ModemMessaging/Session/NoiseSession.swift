import ModemRuntime
import ModemCrypto
import ModemTransport
import Synchronization

/// The running parts of a ``NoiseSession``: the machine behind a mutex, a bounded queue of records
/// to send, a bounded queue of inputs received, and three tasks (reader, writer, timer) that move
/// them between the machine and the transport.
final class SessionCore: Sendable {
    enum Outgoing {
        case record(kind: UInt8, body: [UInt8])
        case close
    }

    struct State {
        var machine: SessionStateMachine
        var outgoing: [Outgoing] = []
        var outgoingHead = 0
        var outgoingBytes = 0
        var senders: [CheckedContinuation<Void, Never>] = []
        var incoming: [SessionIncoming] = []
        var incomingHead = 0
        var incomingBytes = 0
        var receiver: CheckedContinuation<SessionIncoming, Never>?
        var writerIdle: CheckedContinuation<Void, Never>?
        var readerPaused: CheckedContinuation<Void, Never>?
        var establishWaiter: CheckedContinuation<Result<PeerIdentity, SessionFailure>, Never>?
        var establishResult: Result<PeerIdentity, SessionFailure>?
        var end: SessionEnd?
        var closeRequested = false
        var closingTransport = false
        var transportClosed = false
        var closedWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Records queued for sending beyond this many bytes make ``RecordSession/send(kind:body:)`` wait.
    static let outgoingLimit = 256 * 1024
    /// Received records held for the consumer beyond this many bytes pause reading.
    static let incomingLimit = 1 << 20

    let transport: any MessageTransport
    let state: Mutex<State>
    let clock: TimerClock
    let tickInterval: Double
    /// The timer loop, cancelled once the transport is closed.
    private let timer = Mutex<Task<Void, Never>?>(nil)

    init(transport: any MessageTransport, machine: SessionStateMachine, clock: TimerClock) {
        self.transport = transport
        self.clock = clock
        state = Mutex(State(machine: machine))
        tickInterval = max(0.05, min(0.25, machine.configuration.keepalive / 8))
    }

    var now: Double { clock.now() }

    /// Continuations to resume once the mutex is released.
    struct Wakeups {
        var list: [() -> Void] = []
        mutating func add(_ f: @escaping () -> Void) { list.append(f) }
        func run() { for f in list { f() } }
    }

    /// Applies the machine's actions to the queues (under the mutex) and collects the wakeups.
    static func apply(_ actions: [SessionAction], _ s: inout State, _ w: inout Wakeups) {
        for action in actions {
            switch action {
            case .established(let peer):
                s.establishResult = .success(peer)
                if let c = s.establishWaiter { s.establishWaiter = nil; w.add { c.resume(returning: .success(peer)) } }
            case .failed(let failure):
                s.establishResult = .failure(failure)
                if let c = s.establishWaiter { s.establishWaiter = nil; w.add { c.resume(returning: .failure(failure)) } }
                if s.end == nil { s.end = .lostNet("\(failure)") }
            case .deliver(let kind, let body):
                s.incomingBytes += body.count + 16
                deliver(.record(kind: kind, body: body), &s, &w)
            case .peerClosing:
                deliver(.peerClosing, &s, &w)
            case .ended(let end):
                // Reported to the consumer once the last frames (CLOSED...) are on the line and the
                // transport is closed (finishTransport), so a process may exit as soon as it sees it.
                s.end = end
            case .closeTransport:
                s.closingTransport = true
            }
        }
        if s.end != nil {
            // Nothing queued will be sent now: release every waiting sender, and a paused reader.
            for c in s.senders { w.add { c.resume() } }
            s.senders.removeAll()
            if let r = s.readerPaused {
                s.readerPaused = nil
                w.add { r.resume() }
            }
        }
        if s.machine.hasOutput || s.closingTransport || s.outgoingHead < s.outgoing.count, let c = s.writerIdle {
            s.writerIdle = nil
            w.add { c.resume() }
        }
    }

    static func deliver(_ input: SessionIncoming, _ s: inout State, _ w: inout Wakeups) {
        if case .ended = input {
            // Sticky: every later receive() gives it again.
            if s.incoming.last.map({ if case .ended = $0 { true } else { false } }) != true { s.incoming.append(input) }
            if let c = s.receiver {
                s.receiver = nil
                w.add { c.resume(returning: input) }
            }
            return
        }
        if let c = s.receiver {
            s.receiver = nil
            if case .record(_, let body) = input { s.incomingBytes -= body.count + 16 }
            w.add { c.resume(returning: input) }
        } else {
            s.incoming.append(input)
        }
    }

    /// Runs `body` on the state with the machine, then applies the actions it returns.
    func step(_ body: (inout State, Double) -> [SessionAction]) {
        let t = now
        var w = Wakeups()
        state.withLock { s in
            let actions = body(&s, t)
            Self.apply(actions, &s, &w)
        }
        w.run()
    }

    func start() {
        step { s, t in s.machine.start(now: t) }
        Simulation.spawn { await self.readLoop() }
        Simulation.spawn { await self.writeLoop() }
        let task = Simulation.spawn { await self.timerLoop() }
        let closed = timer.withLock { t in
            t = task
            return state.withLock { $0.transportClosed }
        }
        if closed { task.cancel() }
    }

    /// Waits for the handshake's outcome.
    func waitEstablished() async -> Result<PeerIdentity, SessionFailure> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<PeerIdentity, SessionFailure>, Never>) in
                let ready: Result<PeerIdentity, SessionFailure>? = state.withLock { s in
                    if let r = s.establishResult { return r }
                    s.establishWaiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            self.step { s, t in s.machine.close(now: t) }
        }
    }

    /// Waits until the transport was closed (after a failure's last frame went out).
    func waitTransportClosed() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s in
                if s.transportClosed { return true }
                s.closedWaiters.append(c)
                return false
            }
            if done { c.resume() }
        }
    }

    private func readLoop() async {
        while true {
            // Pull-based: wait while the consumer has a full queue.
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let go = state.withLock { s in
                    if s.incomingBytes < Self.incomingLimit || s.end != nil { return true }
                    s.readerPaused = c
                    return false
                }
                if go { c.resume() }
            }
            let finished = state.withLock { $0.machine.isFinished }
            if finished { return }
            var input = await transport.receive()
            var stop = false
            step { s, t in
                switch input {
                case .frame(let frame): return s.machine.receive(frame: frame, now: t)
                case .peerHeard:
                    s.machine.peerHeard(now: t)
                    return []
                case .ended(let end):
                    stop = true
                    return s.machine.transportEnded(end, now: t)
                }
            }
            if stop { return }
            if case .frame(let frame) = input {
                // Opened: its storage takes the next frame (the transport may reuse it).
                input = .peerHeard
                transport.recycle(frame)
            }
        }
    }

    private func writeLoop() async {
        var flushDeadline: Double?
        // The last record frame, back from the transport: the next record is sealed into its storage,
        // so a stream of 64 KiB records does not allocate (and free) a frame each (the allocator
        // settings stay the process's business).
        var spare: [UInt8] = []
        while true {
            enum Next { case frame([UInt8]), record([UInt8]), wait, finish }
            let t = now
            var w = Wakeups()
            let next: Next = state.withLock { s in
                var actions: [SessionAction] = []
                defer { Self.apply(actions, &s, &w) }
                if let frame = s.machine.nextFrame(now: t) { return .frame(frame) }
                if !s.machine.isFinished, s.machine.isOpen, s.outgoingHead < s.outgoing.count {
                    let item = s.outgoing[s.outgoingHead]
                    s.outgoingHead += 1
                    if s.outgoingHead > 64 && s.outgoingHead * 2 > s.outgoing.count {
                        s.outgoing.removeFirst(s.outgoingHead)
                        s.outgoingHead = 0
                    }
                    switch item {
                    case .record(let kind, let body):
                        s.outgoingBytes -= body.count
                        // Hysteresis: wake the waiting senders once the queue is half empty, not per record.
                        if !s.senders.isEmpty, s.outgoingBytes <= Self.outgoingLimit / 2 {
                            for c in s.senders { w.add { c.resume() } }
                            s.senders.removeAll()
                        }
                        var frame = spare
                        spare = []
                        if (try? s.machine.seal(kind: kind, body: body, now: t, into: &frame)) != nil { return .record(frame) }
                        return .wait
                    case .close:
                        actions = s.machine.close(now: t)
                        if let frame = s.machine.nextFrame(now: t) { return .frame(frame) }
                        return .wait
                    }
                }
                if s.closingTransport { return .finish }
                return .wait
            }
            w.run()
            switch next {
            case .frame(let frame), .record(let frame):
                do {
                    try await transport.send(frame)
                    if case .record = next { spare = frame }
                } catch {
                    step { s, t in s.machine.transportEnded(.localFailure(error.description), now: t) }
                    if flushDeadline != nil || state.withLock({ $0.closingTransport }) {
                        await finishTransport()
                        return
                    }
                }
            case .finish:
                await finishTransport()
                return
            case .wait:
                if flushDeadline == nil, state.withLock({ $0.closingTransport }) { flushDeadline = now + 2 }
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let go = state.withLock { s in
                        if s.machine.hasOutput || s.closingTransport || (s.machine.isOpen && !s.machine.isFinished && s.outgoingHead < s.outgoing.count) {
                            return true
                        }
                        s.writerIdle = c
                        return false
                    }
                    if go { c.resume() }
                }
            }
        }
    }

    private func finishTransport() async {
        await transport.close()
        var w = Wakeups()
        state.withLock { s in
            s.transportClosed = true
            for c in s.closedWaiters { w.add { c.resume() } }
            s.closedWaiters = []
            if let end = s.end { Self.deliver(.ended(end), &s, &w) }
        }
        w.run()
        timer.withLock { $0 }?.cancel()  // nothing left to time
    }

    private func timerLoop() async {
        var closingSince: Double?
        while true {
            do { try await clock.sleep(tickInterval) } catch { return }  // cancelled: the transport is closed
            var transportClosed = false
            step { s, t in
                transportClosed = s.transportClosed
                if s.incomingHead < s.incoming.count || s.readerPaused != nil {
                    s.machine.peerHeard(now: t)  // the consumer is behind, not the peer
                }
                return s.machine.tick(now: t)
            }
            if transportClosed { return }
            let closing = state.withLock { $0.closingTransport }
            if closing {
                closingSince = closingSince ?? now
                if now - closingSince! > 2 {
                    // The last frames could not leave in time (a peer that stopped reading): cut.
                    await transport.close()
                }
                if now - closingSince! > 5 {
                    // A transport whose send ignores close: report the end regardless.
                    var w = Wakeups()
                    state.withLock { s in
                        guard !s.transportClosed else { return }
                        s.transportClosed = true
                        for c in s.closedWaiters { w.add { c.resume() } }
                        s.closedWaiters = []
                        if let end = s.end { Self.deliver(.ended(end), &s, &w) }
                    }
                    w.run()
                    return
                }
            }
        }
    }

    // MARK: the consumer's side

    func send(kind: UInt8, body: [UInt8], limit: Int) async throws(SessionSendError) {
        guard kind >= 0x10 else { throw .invalid("record kind 0x\(String(kind, radix: 16)) belongs to the session itself (modules use 0x10 and up)") }
        guard body.count <= limit else { throw .invalid("a record body of \(body.count) bytes (at most \(limit))") }
        while true {
            enum Outcome { case queued, wait, error(SessionSendError) }
            var w = Wakeups()
            let outcome: Outcome = state.withLock { s in
                if let end = s.end { return .error(.ended(end)) }
                if s.closeRequested || !s.machine.canSend { return .error(.closing) }
                if s.outgoingBytes >= Self.outgoingLimit { return .wait }
                s.outgoing.append(.record(kind: kind, body: body))
                s.outgoingBytes += body.count
                if let c = s.writerIdle { s.writerIdle = nil; w.add { c.resume() } }
                return .queued
            }
            w.run()
            switch outcome {
            case .queued: return
            case .error(let e): throw e
            case .wait:
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let go = state.withLock { s in
                        if s.end != nil || s.outgoingBytes < Self.outgoingLimit { return true }
                        s.senders.append(c)
                        return false
                    }
                    if go { c.resume() }
                }
            }
        }
    }

    func receive() async -> SessionIncoming {
        await withCheckedContinuation { (c: CheckedContinuation<SessionIncoming, Never>) in
            var w = Wakeups()
            let ready: SessionIncoming? = state.withLock { s in
                guard s.incomingHead < s.incoming.count else {
                    s.receiver = c
                    return nil
                }
                let input = s.incoming[s.incomingHead]
                if case .ended = input { return input }  // sticky
                s.incomingHead += 1
                if s.incomingHead > 64 && s.incomingHead * 2 > s.incoming.count {
                    s.incoming.removeFirst(s.incomingHead)
                    s.incomingHead = 0
                }
                if case .record(_, let body) = input { s.incomingBytes -= body.count + 16 }
                if s.incomingBytes <= Self.incomingLimit / 2, let r = s.readerPaused {
                    s.readerPaused = nil
                    w.add { r.resume() }
                }
                return input
            }
            w.run()
            if let ready { c.resume(returning: ready) }
        }
    }

    func close() {
        var w = Wakeups()
        state.withLock { s in
            guard s.end == nil, !s.closeRequested else { return }
            s.closeRequested = true
            s.outgoing.append(.close)
            if let c = s.writerIdle { s.writerIdle = nil; w.add { c.resume() } }
        }
        w.run()
    }

    var replaysDropped: Int { state.withLock { $0.machine.replaysDropped } }

    /// The session object is gone: close the line unless it is already over.
    func abandon() {
        let open = state.withLock { !$0.machine.isFinished && !$0.transportClosed }
        guard open else { return }
        let transport = self.transport
        Simulation.spawn { await transport.close() }
    }
}

/// A session over any ``MessageTransport``: the Noise XX handshake with both identities checked
/// against the key store's trust before anything else moves, then encrypted records (see
/// ``SessionStateMachine``). This is the driver: it performs the machine's work on the transport
/// with back-pressure both ways (a full line makes ``send(kind:body:)`` wait; a consumer that does
/// not call ``receive()`` stops the reading).
public final class NoiseSession: RecordSession, Sendable {
    /// Who is at the other end.
    public let peer: PeerIdentity
    /// The largest record body.
    public let maximumRecordBody: Int
    let core: SessionCore

    private init(peer: PeerIdentity, maximumRecordBody: Int, core: SessionCore) {
        self.peer = peer
        self.maximumRecordBody = maximumRecordBody
        self.core = core
    }

    /// Runs the handshake over `transport` and returns the established session.
    /// - Parameters:
    ///   - initiator: whether this side sends Noise's first message (the dialer).
    ///   - options: user name, service, keepalive, limits, keys.
    ///   - ephemeralKey: this session's ephemeral key (random unless a test fixes it).
    /// - Throws: ``SessionFailure`` with the mailbox API's reason: `FAIL_INVALID_AUTHORIZATION` for an
    ///   untrusted key (either side), `FAIL_EXPIRED_KEY`, `FAIL_NETWORK_UNAVAILABLE`,
    ///   `FAIL_EXCEEDED_RATE_LIMIT`, `FAIL_USER_CANCELED` when the task is cancelled. The transport
    ///   is closed after a failure (once the refusal went out).
    public static func establish(over transport: any MessageTransport, initiator: Bool, options: SessionOptions,
                                 ephemeralKey: X25519PrivateKey = .init()) async throws(SessionFailure) -> NoiseSession {
        let identity: X25519PrivateKey
        let trusted: [TrustedPeer]
        do {
            identity = try options.keys.identity()
            trusted = try options.keys.trustedPeers() + options.sessionTrust
        } catch {
            await transport.close()
            throw .invalidAuthorization("the keys folder cannot be used: \(error.description)")
        }
        var configuration = SessionConfiguration(
            role: initiator ? .initiator : .responder, userName: options.userName, service: options.service,
            transportKind: transport.kind, keepalive: options.keepalive(for: transport.kind), limits: options.limits,
            handshakeTimeout: options.handshakeTimeout ?? (transport.kind == .stream ? 15 : 120), staticKey: identity,
            ephemeralKey: ephemeralKey, trusted: trusted, maximumFrameSize: transport.maximumFrameSize)
        configuration.prologueBinding = options.prologueBinding
        let machine = SessionStateMachine(configuration: configuration)
        let core = SessionCore(transport: transport, machine: machine, clock: options.clock)
        core.start()
        switch await core.waitEstablished() {
        case .success(let peer):
            return NoiseSession(peer: peer, maximumRecordBody: machine.maximumRecordBody, core: core)
        case .failure(let failure):
            await core.waitTransportClosed()
            throw failure
        }
    }

    public func send(kind: UInt8, body: [UInt8]) async throws(SessionSendError) {
        try await core.send(kind: kind, body: body, limit: maximumRecordBody)
    }

    public func receive() async -> SessionIncoming {
        await core.receive()
    }

    public func close() async {
        core.close()
    }

    /// Records dropped as replays so far.
    public var replaysDropped: Int { core.replaysDropped }

    /// A session dropped while still open closes its line (the peer sees END_OTHER_USER_LOST).
    deinit { core.abandon() }
}
