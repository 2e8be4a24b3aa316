import ModemCodecs
import ModemLinkProtocol
import ModemTransport
import Synchronization

/// What a ``LinkTransport`` needs of the channel protocol's state machine at its end (the phone's or
/// the device's): start a duplex message, know its number, pause deliveries, count frames heard.
public protocol LinkTransportMachine: LinkMachine {
    /// The protocol parameters.
    var configuration: LinkConfiguration { get }
    /// Counts of frames; `framesReceived` growing means the peer was heard.
    var statistics: LinkStatistics { get }
    /// Back-pressure: while true no message is completed (see the machines' docs).
    var deliveriesPaused: Bool { get set }
    /// The number of our message on its way, if any (the newest, when several are).
    var messageInTransit: UInt16? { get }
    /// Whether the next message may be started now (``startMessage(_:timeout:now:)``): none is on
    /// its way, or the machine sends more than one at a time and has room.
    var acceptsMessage: Bool { get }
    /// Starts sending one duplex message; returns the machine's code (0 started) and its actions.
    mutating func startMessage(_ data: [UInt8], timeout: Double, now: Double) -> (code: Int32, actions: [LinkAction])
    /// A sign of life that asks for no answer: an acknowledgement of message 0 (a number never
    /// used) in the open session, which the peer counts as a frame heard and otherwise ignores. Nil
    /// when no session is open.
    var heartbeatFrame: LinkFrame? { get }
}

extension PhoneStateMachine: LinkTransportMachine {
    /// A duplex exchange: the outcome is `sendOK` or `timeout`.
    public mutating func startMessage(_ data: [UInt8], timeout: Double, now: Double) -> (code: Int32, actions: [LinkAction]) {
        exchange(data, timeout: timeout, now: now)
    }

    /// An acknowledgement of message 0 in the open session.
    public var heartbeatFrame: LinkFrame? {
        state == .waitingDevice || state == .deviceDetected ? nil : LinkFrame(kind: .ack, session: session, message: 0)
    }
}

extension DeviceStateMachine: LinkTransportMachine {
    /// One message at a time: none may be on its way.
    public var acceptsMessage: Bool { messageInTransit == nil }

    /// A message on the device's initiative: the outcome is `sendOK` or `timeout`.
    public mutating func startMessage(_ data: [UInt8], timeout: Double, now: Double) -> (code: Int32, actions: [LinkAction]) {
        send(data, timeout: timeout, now: now)
    }

    /// An acknowledgement of message 0 in the open session.
    public var heartbeatFrame: LinkFrame? {
        session.map { LinkFrame(kind: .ack, flags: .fromDevice, session: $0, message: 0) }
    }
}

/// Timers of a link transport, in seconds of the link's clock (channel time on the in-memory medium).
public struct LinkTransportOptions: Sendable, Hashable {
    /// The keepalive period: a heartbeat frame (an acknowledgement that asks for no answer) is sent
    /// when nothing was sent for a third of it, so the peer hears us even while it spends minutes
    /// sending one long message, and two or three lost heartbeats in a row (a noisy line) do not
    /// look like a dead one; the peer's transport reports each as `.peerHeard`. Sessions over a link
    /// send no PING of their own: this is their keepalive. Default 30 s.
    public var keepalive: Double
    /// The transport ends (`.localFailure`) when nothing at all was heard from the peer for this long.
    /// Default 60 s (2 x keepalive).
    public var silenceTimeout: Double
    /// Time allowed for one message to be acknowledged (default a day). A dead line is found by
    /// ``silenceTimeout``; a message stays unacknowledged while the peer's reader holds it back
    /// (back-pressure), which must not end the link.
    public var messageTimeout: Double
    /// Received frames held for a reader that is not reading before the link stops completing
    /// messages (back-pressure). Default 2.
    public var inboxLimit: Int

    /// Creates options.
    public init(keepalive: Double = 30, silenceTimeout: Double? = nil, messageTimeout: Double = 86_400, inboxLimit: Int = 2) {
        precondition(keepalive > 0 && keepalive.isFinite, "keepalive must be positive")
        precondition(inboxLimit >= 1, "inboxLimit must be at least 1")
        precondition(messageTimeout > 0 && messageTimeout.isFinite, "messageTimeout must be positive")
        self.keepalive = keepalive
        self.silenceTimeout = silenceTimeout ?? 2 * keepalive
        self.messageTimeout = messageTimeout
        self.inboxLimit = inboxLimit
    }
}

/// One connection of a link transport: the queues between the application (async calls) and the
/// link's thread (``service(_:now:)`` and ``handle(_:now:)``, called there). One duplex message
/// carries one frame; an empty message (never a frame) counts as a sign of life.
package final class LinkTransportCore<Machine: LinkTransportMachine>: Sendable {
    package let options: LinkTransportOptions
    package let maximumFrameSize: Int
    private let configuration: LinkConfiguration
    /// Runs on the link's thread when the application closes (the phone sends its close signal).
    private let onClose: @Sendable () -> Void

    private struct Waiter {
        var id: Int
        var data: [UInt8]
        var continuation: CheckedContinuation<Result<UInt16, TransportError>, Never>?
    }

    private struct State {
        var inbox: [[UInt8]] = []
        var inboxHead = 0
        var peerHeard = false
        var end: TransportEnd?
        var receiver: CheckedContinuation<TransportInput, Never>?
        var outbox: [Waiter] = []
        /// Messages started and not yet acknowledged, oldest first (more than one with
        /// ``LinkConfiguration/messagesInFlight`` above 1, whose senders are answered as soon as the
        /// machine has room for the next message: their continuations are then nil).
        var inFlight: [(waiter: Waiter, message: UInt16?)] = []
        var nextID = 1
        var lastHeard: Double?
        var lastSent: Double?
        var framesSeen: Int?
        var messagesSent = 0
        var messagesReceived = 0

        var inboxCount: Int { inbox.count - inboxHead }

        mutating func popFrame() -> [UInt8]? {
            guard inboxHead < inbox.count else { return nil }
            let f = inbox[inboxHead]
            inbox[inboxHead] = []
            inboxHead += 1
            if inboxHead == inbox.count { inbox.removeAll(keepingCapacity: true); inboxHead = 0 }
            return f
        }
    }
    private let state = Mutex(State())

    package init(configuration: LinkConfiguration, options: LinkTransportOptions, onClose: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        self.options = options
        self.onClose = onClose
        maximumFrameSize = min(configuration.maximumMessageSize, 65_560)
    }

    // MARK: Application side

    package func sendMessage(_ frame: [UInt8]) async throws(TransportError) -> UInt16 {
        guard !frame.isEmpty else { throw .emptyFrame }
        guard frame.count <= maximumFrameSize else {
            throw .frameTooLarge(size: frame.count, maximum: maximumFrameSize)
        }
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<UInt16, TransportError>, Never>) in
            let refused = state.withLock { s -> TransportEnd? in
                if let end = s.end { return end }
                s.outbox.append(Waiter(id: s.nextID, data: frame, continuation: c))
                s.nextID += 1
                return nil
            }
            if let refused { c.resume(returning: .failure(.ended(refused))) }
        }
        return try result.get()
    }

    package func receive() async -> TransportInput {
        await withCheckedContinuation { (c: CheckedContinuation<TransportInput, Never>) in
            let input = state.withLock { s -> TransportInput? in
                if let f = s.popFrame() { return .frame(f) }
                if s.peerHeard && s.end == nil { s.peerHeard = false; return .peerHeard }
                if let end = s.end { return .ended(end) }
                if s.receiver != nil { return .ended(.localFailure("two readers at once on one link transport")) }
                s.receiver = c
                return nil
            }
            if let input { c.resume(returning: input) }
        }
    }

    package func close() {
        let ended = finish(.localClose)
        if ended { onClose() }
    }

    /// Ends the connection (if it has not ended): pending sends fail, a waiting reader gets the end.
    /// Returns whether this call ended it.
    @discardableResult
    package func finish(_ end: TransportEnd) -> Bool {
        let (ended, waiters, receiver) = state.withLock { s -> (Bool, [Waiter], CheckedContinuation<TransportInput, Never>?) in
            guard s.end == nil else { return (false, [], nil) }
            s.end = end
            var w = s.outbox
            w += s.inFlight.map(\.waiter)
            s.outbox = []
            s.inFlight = []
            // Frames already received stay readable; the end comes after them.
            let r = s.inboxCount == 0 ? s.receiver : nil
            if r != nil { s.receiver = nil }
            return (true, w, r)
        }
        for w in waiters { w.continuation?.resume(returning: .failure(.ended(end))) }
        receiver?.resume(returning: .ended(end))
        return ended
    }

    package var isEnded: Bool { state.withLock { $0.end != nil } }

    /// Messages sent and acknowledged, and frames received (both excluding keepalives).
    package var counts: (sent: Int, received: Int) { state.withLock { ($0.messagesSent, $0.messagesReceived) } }

    // MARK: Link side (the link's thread)

    /// An event of the machine that belongs to this connection.
    package func handle(_ event: LinkEvent, now: Double) {
        switch event {
        case .sendOK(let message):
            let w = state.withLock { s -> Waiter? in
                guard let i = s.inFlight.firstIndex(where: { $0.message == message }) else { return nil }
                let f = s.inFlight.remove(at: i)
                s.messagesSent += 1
                return f.waiter
            }
            w?.continuation?.resume(returning: .success(message))
        case .timeout(let message):
            let mine = state.withLock { $0.inFlight.contains { $0.message == message } }
            if mine { finish(.localFailure("a message was not acknowledged in time: the link is lost")) }
        case .received(_, let data):
            let r = state.withLock { s -> (CheckedContinuation<TransportInput, Never>, TransportInput)? in
                s.lastHeard = now
                if data.isEmpty {
                    s.peerHeard = true
                } else {
                    s.messagesReceived += 1
                    s.inbox.append(data)
                }
                guard let r = s.receiver else { return nil }
                s.receiver = nil
                if let f = s.popFrame() { return (r, .frame(f)) }
                s.peerHeard = false
                return (r, .peerHeard)
            }
            r?.0.resume(returning: r!.1)
        case .error(let code, let message):
            switch code {
            case .cancelSucceeded, .cancelFailed: break
            default: finish(.localFailure("link error \(code.rawValue): \(message)"))
            }
        case .closed:
            finish(Machine.self == DeviceStateMachine.self ? .peerClosed : .localClose)
        case .opened, .progress, .cancelled:
            break
        }
    }

    /// Timers and queues, after each block on the link's thread: notes the peer heard, ends a silent
    /// link, applies back-pressure, starts the next message, sends the keepalive.
    package func service(_ m: inout Machine, now: Double) -> [LinkAction] {
        var actions: [LinkAction] = []
        var failure: (Waiter, TransportError)?
        var heard: CheckedContinuation<TransportInput, Never>?
        var silent = false
        var notOpen = false
        var started: (CheckedContinuation<Result<UInt16, TransportError>, Never>, UInt16)?
        state.withLock { s in
            guard s.end == nil else { m.deliveriesPaused = false; return }
            let frames = m.statistics.framesReceived
            if s.lastHeard == nil { s.lastHeard = now }
            if s.lastSent == nil { s.lastSent = now }
            if let seen = s.framesSeen, frames > seen {
                s.lastHeard = now
                if let r = s.receiver, s.inboxCount == 0 {
                    s.receiver = nil
                    heard = r
                } else {
                    s.peerHeard = true
                }
            }
            s.framesSeen = frames
            if now - s.lastHeard! >= options.silenceTimeout { silent = true; return }
            m.deliveriesPaused = s.inboxCount >= options.inboxLimit
            if s.inFlight.isEmpty, s.outbox.isEmpty, m.messageInTransit == nil, now - s.lastSent! >= options.keepalive / 3,
               let beat = m.heartbeatFrame {
                s.lastSent = now
                actions.append(.transmit([beat]))
            }
            guard !s.outbox.isEmpty, s.inFlight.isEmpty || configuration.messagesInFlight > 1, m.acceptsMessage else { return }
            let w = s.outbox.removeFirst()
            let (code, a) = m.startMessage(w.data, timeout: options.messageTimeout, now: now)
            if code == ReturnCode.ok {
                s.inFlight.append((w, m.messageInTransit))
                s.lastSent = now
                actions += a
            } else if code == ReturnCode.handshakeFailedOrCancelling {
                failure = (w, .frameTooLarge(size: w.data.count, maximum: maximumFrameSize))
            } else {
                s.outbox.insert(w, at: 0)
                notOpen = code == ReturnCode.notOpenedOrInput || code == ReturnCode.noDevice
            }
        }
        if configuration.messagesInFlight > 1 && m.acceptsMessage {
            // The machine has room for the next message before the newest one's acknowledgement:
            // its sender goes on now (a message lost later ends the link).
            started = state.withLock { s in
                guard s.end == nil, let i = s.inFlight.lastIndex(where: { $0.waiter.continuation != nil }),
                      let message = s.inFlight[i].message, let c = s.inFlight[i].waiter.continuation else { return nil }
                s.inFlight[i].waiter.continuation = nil
                return (c, message)
            }
        }
        heard?.resume(returning: .peerHeard)
        if let (c, message) = started { c.resume(returning: .success(message)) }
        if let (w, e) = failure { w.continuation?.resume(returning: .failure(e)) }
        if silent {
            let seconds = Int(options.silenceTimeout.rounded())
            finish(.localFailure("the link went silent: nothing heard from the peer for \(seconds) s"))
            m.deliveriesPaused = false
        } else if notOpen {
            finish(.localFailure("the link is not open any more"))
            m.deliveriesPaused = false
        }
        return actions
    }
}
