import ModemCodecs

/// The phone side of the channel protocol as a pure value: API calls, received frames and the passing
/// of time go in (each with the current time in seconds, from any clock), ``LinkAction``s come out.
///
/// States follow the Communication API: ``State/waitingDevice`` until a handshake succeeds, ``State/idle`` between
/// exchanges, ``State/dataExchange`` during one. Return codes are the Communication API's (see ``ReturnCode``).
///
/// ```swift
/// var phone = PhoneStateMachine(configuration: LinkConfiguration())
/// var actions = phone.open(session: 7, now: 0)          // [.transmit([hello])]
/// actions = phone.transmitted(now: 0.2)                 // start of the handshake timer
/// actions = phone.receive(helloAckFrame, now: 0.6)      // [.event(.opened(code: 0, ...))]
/// let (code, more) = phone.exchange([1, 2, 3], timeout: 10, now: 1)
/// ```
public struct PhoneStateMachine: Sendable {
    /// The Communication API's phone states.
    public enum State: String, Sendable, Hashable {
        /// No device opened: not connected, or the handshake has not succeeded.
        case waitingDevice = "WAITING DEVICE"
        /// A device answered a probe but is not opened.
        case deviceDetected = "DEVICE DETECTED"
        /// Opened, no exchange under way.
        case idle = "IDLE"
        /// An exchange is under way.
        case dataExchange = "DATA EXCHANGE"
    }

    private enum Signal: Sendable, Equatable {
        case hello, cancel(UInt16), close
    }

    private struct PendingSignal: Sendable {
        var signal: Signal
        var attempts: Int
        var deadline: Double?
    }

    private struct Exchange: Sendable {
        var message: UInt16
        var deadline: Double
        var sendReported = false
    }

    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// The current state.
    public private(set) var state: State = .waitingDevice
    /// Counts of frames and recoveries.
    public private(set) var statistics = LinkStatistics()
    /// The name the device gave at the handshake.
    public private(set) var deviceName: String?
    /// The session number of the open link.
    public private(set) var session: UInt8 = 0
    /// Back-pressure for an application that is not taking messages: while true, a fragment that
    /// would complete a message is dropped (not acknowledged), so the peer keeps polling and sends it
    /// again once deliveries resume. Nothing is delivered while paused; nothing is lost.
    public var deliveriesPaused = false
    /// The number of the message of the exchange under way (the one a ``LinkEvent/sendOK(message:)``
    /// or ``LinkEvent/timeout(message:)`` will name), nil when none is.
    public var messageInTransit: UInt16? { exchangeInProgress?.message }
    /// Whether ``exchange(_:timeout:now:)`` may be called for the next message (it may still refuse
    /// one for other reasons: not opened, cancelling): none is under way, or (duplex,
    /// ``LinkConfiguration/messagesInFlight`` above 1) the one under way has sent its whole burst and
    /// fewer than that many are waiting for their acknowledgements.
    public var acceptsMessage: Bool { exchangeInProgress == nil || mayGoAhead }

    /// A duplex message may go out before the acknowledgement of the one under way.
    private var mayGoAhead: Bool {
        guard configuration.mode == .duplex, let out = outbound, exchangeInProgress != nil else { return false }
        return earlier.count + 1 < configuration.messagesInFlight && !out.sent.contains(false)
    }

    private var opened = false
    private var noDevice = false
    private var heardDevice = false
    private var pending: PendingSignal?
    private var exchangeInProgress: Exchange?
    private var outbound: OutboundMessage?
    /// Duplex messages sent before the exchange under way whose acknowledgement has not come
    /// (``LinkConfiguration/messagesInFlight``), oldest first.
    private var earlier: [(out: OutboundMessage, exchange: Exchange)] = []
    private var inbound: InboundMessages
    private var numbers = MessageNumbers()
    private var sizer: FragmentSizer
    private let name: String

    /// Creates a phone that has opened nothing.
    /// - Parameters:
    ///   - configuration: the protocol parameters (both ends must agree).
    ///   - name: the name sent in the handshake.
    public init(configuration: LinkConfiguration, name: String = "phone") {
        self.configuration = configuration
        self.name = name
        sizer = FragmentSizer(maximum: configuration.framePayload)
        inbound = InboundMessages(maximumMessageSize: configuration.maximumMessageSize,
                                  framePayload: configuration.framePayload)
    }

    /// Whether a cancel is waiting for its confirmation.
    public var isCancelling: Bool {
        if case .cancel? = pending?.signal { return true }
        return false
    }

    // MARK: API calls

    /// Starts the handshake: sends the boot signal (a hello) up to ``LinkConfiguration/handshakeAttempts``
    /// times. The outcome comes as ``LinkEvent/opened(code:deviceName:)``.
    /// - Parameters:
    ///   - session: a number for the new session (pick it at random so old frames are not mistaken).
    ///   - now: the current time in seconds.
    public mutating func open(session: UInt8, now: Double) -> [LinkAction] {
        var actions = abandonExchange(event: .error(.exchangeState, "the device was opened again during the exchange"))
        self.session = session
        opened = false
        heardDevice = false
        inbound = InboundMessages(maximumMessageSize: configuration.maximumMessageSize, framePayload: configuration.framePayload)
        state = .waitingDevice
        pending = PendingSignal(signal: .hello, attempts: 1)
        actions.append(transmit([helloFrame()]))
        return actions
    }

    /// Starts an exchange. Master-slave: `data` is the request, the outcome is the reply
    /// (``LinkEvent/received(message:data:)``), a ``LinkEvent/timeout(message:)`` or an error.
    /// Duplex: `data` is a message, the outcome is ``LinkEvent/sendOK(message:)`` or a timeout.
    /// - Returns: 0 (started), -1 (an exchange is under way), -2 (not opened), -3 (data larger than
    ///   ``LinkConfiguration/maximumMessageSize``), -4 (no device detected); and the actions.
    public mutating func exchange(_ data: [UInt8], timeout: Double, now: Double) -> (code: Int32, actions: [LinkAction]) {
        guard opened else { return (noDevice ? ReturnCode.noDevice : ReturnCode.notOpenedOrInput, []) }
        if pending?.signal == .close { return (ReturnCode.notOpenedOrInput, []) }
        guard exchangeInProgress == nil || mayGoAhead, !isCancelling else { return (ReturnCode.busyOrOutput, []) }
        guard data.count <= configuration.maximumMessageSize else { return (ReturnCode.handshakeFailedOrCancelling, []) }
        precondition(timeout > 0 && timeout.isFinite, "exchange timeout must be a positive number of seconds")
        if let ex = exchangeInProgress, let o = outbound { earlier.append((o, ex)) }
        let message = numbers.take()
        // Ahead of an acknowledgement still to come: the receiver delivers it after the one before.
        var out = OutboundMessage(message: message, flags: earlier.isEmpty ? [] : .follows, data: data, framePayload: sizer.current)
        let frames = out.burst(session: session, base: [], window: configuration.windowFrames)
        outbound = out
        exchangeInProgress = Exchange(message: message, deadline: now + timeout)
        state = .dataExchange
        return (ReturnCode.ok, [transmit(frames)])
    }

    /// Cancels the exchange under way: sends the cancel command up to
    /// ``LinkConfiguration/signalAttempts`` times; the outcome is error 12 (success) or 13 (failure).
    /// - Returns: 0 (cancelling), -1 (nothing to cancel), -2 (not opened), -3 (already cancelling),
    ///   -4 (no device); and the actions.
    public mutating func cancel(now: Double) -> (code: Int32, actions: [LinkAction]) {
        guard opened else { return (noDevice ? ReturnCode.noDevice : ReturnCode.notOpenedOrInput, []) }
        if isCancelling { return (ReturnCode.handshakeFailedOrCancelling, []) }
        guard let ex = exchangeInProgress else { return (ReturnCode.busyOrOutput, []) }
        pending = PendingSignal(signal: .cancel(ex.message), attempts: 1)
        return (ReturnCode.ok, [transmit([signalFrame(.cancel, message: ex.message)])])
    }

    /// Closes the device: sends the close signal up to ``LinkConfiguration/signalAttempts`` times, then
    /// releases the audio resources (``LinkAction/releaseResources``) and reports ``LinkEvent/closed``.
    public mutating func close(now: Double) -> [LinkAction] {
        guard opened else { return closeResources() }
        var actions = abandonExchange(event: .error(.exchangeState, "the device was closed during the exchange"))
        pending = PendingSignal(signal: .close, attempts: 1)
        actions.append(transmit([signalFrame(.close, message: 0)]))
        return actions
    }

    /// Releases the audio resources without powering the device off.
    public mutating func closeResources() -> [LinkAction] {
        var actions = abandonExchange(event: .error(.exchangeState, "the audio resources were released during the exchange"))
        opened = false
        pending = nil
        state = .waitingDevice
        actions += [.releaseResources, .event(.closed)]
        return actions
    }

    /// The driver failed to play or record (codes 9, 10): the exchange ends with that error and the
    /// device must be opened again.
    public mutating func transportFailed(_ error: CommunicationError, _ message: String) -> [LinkAction] {
        var actions = abandonExchange(event: nil)
        actions.append(.event(.error(error, message)))
        opened = false
        pending = nil
        state = .waitingDevice
        return actions
    }

    // MARK: Driver inputs

    /// The driver finished playing what it was given: acknowledgement timers start now.
    public mutating func transmitted(now: Double) -> [LinkAction] {
        let wait = configuration.acknowledgementTimeout
        if outbound?.awaitingAck == true && outbound?.deadline == nil { outbound?.deadline = now + wait }
        for i in earlier.indices where earlier[i].out.awaitingAck && earlier[i].out.deadline == nil { earlier[i].out.deadline = now + wait }
        if var p = pending, p.deadline == nil {
            // The device may need a moment to power on and answer a hello.
            p.deadline = now + wait + (p.signal == .hello ? 0.3 : 0)
            pending = p
        }
        return []
    }

    /// Time passes: deadlines are checked.
    public mutating func tick(now: Double) -> [LinkAction] {
        var actions: [LinkAction] = []
        if let ex = exchangeInProgress, now >= ex.deadline {
            if isCancelling {
                pending = nil
                actions.append(.event(.error(.cancelFailed, "the exchange ended before the device confirmed the cancel")))
            }
            if let out = outbound { sizer.record(out, abandoned: true) }
            outbound = nil
            exchangeInProgress = nil
            state = .idle
            actions.append(.event(.timeout(message: ex.message)))
        }
        if let p = pending, let d = p.deadline, now >= d {
            if p.attempts < (p.signal == .hello ? configuration.handshakeAttempts : configuration.signalAttempts) {
                pending!.attempts += 1
                pending!.deadline = nil
                let frame: LinkFrame
                switch p.signal {
                case .hello: frame = helloFrame()
                case .cancel(let m): frame = signalFrame(.cancel, message: m)
                case .close: frame = signalFrame(.close, message: 0)
                }
                actions.append(transmit([frame]))
            } else {
                pending = nil
                switch p.signal {
                case .hello:
                    noDevice = !heardDevice
                    state = .waitingDevice
                    actions.append(.event(.opened(code: heardDevice ? ReturnCode.handshakeFailedOrCancelling : ReturnCode.noDevice,
                                                  deviceName: nil)))
                case .cancel:
                    actions.append(.event(.error(.cancelFailed, CommunicationError.cancelFailed.description)))
                case .close:
                    actions += closeResources()
                }
            }
        }
        if var out = outbound, out.awaitingAck, let d = out.deadline, now >= d {
            let poll = out.poll(session: session, base: [])
            outbound = out
            statistics.polls += 1
            actions.append(transmit([poll]))
        }
        for i in earlier.indices.reversed() where now >= earlier[i].exchange.deadline {
            let e = earlier.remove(at: i)
            sizer.record(e.out, abandoned: true)
            actions.append(.event(.timeout(message: e.exchange.message)))
        }
        for i in earlier.indices where earlier[i].out.awaitingAck && earlier[i].out.deadline.map({ now >= $0 }) == true {
            let poll = earlier[i].out.poll(session: session, base: [])
            statistics.polls += 1
            actions.append(transmit([poll]))
        }
        if exchangeInProgress == nil && state == .dataExchange && earlier.isEmpty { state = .idle }
        return actions
    }

    /// Something was heard that is not a valid frame (damaged, or another protocol's): used to tell
    /// "handshake failed" (-3) from "no device" (-4).
    public mutating func heardSignal() {
        if pending?.signal == .hello { heardDevice = true }
        if !opened && state == .waitingDevice { state = .deviceDetected }
    }

    /// A frame arrived.
    public mutating func receive(_ frame: LinkFrame, now: Double) -> [LinkAction] {
        guard frame.flags.contains(.fromDevice) else { return [] }  // our own echo, or another phone
        if frame.kind == .helloAck {
            guard pending?.signal == .hello, frame.session == session else { statistics.staleFrames += 1; return [] }
            statistics.framesReceived += 1
            pending = nil
            opened = true
            noDevice = false
            deviceName = String(decoding: frame.payload, as: UTF8.self)
            state = .idle
            return [.event(.opened(code: ReturnCode.ok, deviceName: deviceName))]
        }
        guard opened, frame.session == session else {
            heardSignal()
            statistics.staleFrames += 1
            return []
        }
        statistics.framesReceived += 1
        switch frame.kind {
        case .ack:
            return receiveAck(frame)
        case .data:
            return receiveData(frame)
        case .poll:
            return [transmit([inbound.ack(for: frame.message, count: frame.fragmentCount, session: session, base: [])])]
        case .cancelAck:
            guard case .cancel(let m)? = pending?.signal, m == frame.message else { statistics.staleFrames += 1; return [] }
            pending = nil
            outbound = nil
            exchangeInProgress = nil
            state = .idle
            return [.event(.error(.cancelSucceeded, CommunicationError.cancelSucceeded.description))]
        case .closeAck:
            guard pending?.signal == .close else { statistics.staleFrames += 1; return [] }
            pending = nil
            return closeResources()
        case .hello, .helloAck, .cancel, .close:
            statistics.staleFrames += 1
            return []
        }
    }

    // MARK: Internals

    private mutating func receiveAck(_ frame: LinkFrame) -> [LinkAction] {
        if let i = earlier.firstIndex(where: { $0.out.message == frame.message }) {
            var e = earlier[i]
            // Its one burst was all sent before the next message started: an acknowledgement
            // answers its poll even while this end is still sending (the missing go again at once).
            if e.out.awaitingAck && e.out.deadline == nil { e.out.deadline = .infinity }
            switch e.out.handle(ack: frame, session: session, base: [], window: configuration.windowFrames) {
            case .complete:
                earlier.remove(at: i)
                sizer.record(e.out)
                if exchangeInProgress == nil && earlier.isEmpty { state = .idle }
                return [.event(.sendOK(message: e.exchange.message))]
            case .wait:
                earlier[i] = e
                return []
            case .resend(let frames, let resent):
                statistics.retransmissions += resent
                earlier[i] = e
                return [.event(.progress(bytes: e.out.ackedBytes, total: e.out.totalBytes)), transmit(frames)]
            }
        }
        guard var out = outbound, out.message == frame.message else { statistics.staleFrames += 1; return [] }
        var actions: [LinkAction] = []
        switch out.handle(ack: frame, session: session, base: [], window: configuration.windowFrames) {
        case .complete:
            outbound = nil
            sizer.record(out)
            actions += reportSent(out.message)
        case .wait:
            outbound = out
        case .resend(let frames, let resent):
            statistics.retransmissions += resent
            outbound = out
            actions.append(.event(.progress(bytes: out.ackedBytes, total: out.totalBytes)))
            actions.append(transmit(frames))
        }
        return actions
    }

    private mutating func reportSent(_ message: UInt16) -> [LinkAction] {
        guard var ex = exchangeInProgress, ex.message == message, !ex.sendReported else { return [] }
        ex.sendReported = true
        if configuration.mode == .duplex {
            exchangeInProgress = nil
            if earlier.isEmpty { state = .idle }
            var actions: [LinkAction] = [.event(.sendOK(message: message))]
            if isCancelling {
                pending = nil
                actions.append(.event(.error(.cancelFailed, "the message was delivered before the cancel")))
            }
            return actions
        }
        exchangeInProgress = ex
        return [.event(.sendOK(message: message))]
    }

    private mutating func receiveData(_ frame: LinkFrame) -> [LinkAction] {
        let before = inbound.duplicateFrames
        let isReply = frame.flags.contains(.reply)
        // Master-slave: only the reply to the exchange under way is taken; a reply to an exchange that
        // already ended is acknowledged (so the device stops sending it) and dropped.
        if configuration.mode == .masterSlave && (!isReply || exchangeInProgress?.message != frame.message)
            && !inbound.isFinished(frame.message) {
            statistics.staleFrames += 1
            var actions: [LinkAction] = []
            if isReply {
                inbound.markFinished(frame.message)
                actions.append(transmit([inbound.ack(for: frame.message, count: frame.fragmentCount, session: session, base: [])]))
            }
            return actions
        }
        let (delivery, progress) = inbound.receive(frame, canComplete: !deliveriesPaused)
        statistics.duplicateFrames += inbound.duplicateFrames - before
        // Complete, but held until the message before it is delivered (``LinkFrame/Flags/follows``).
        let completedHeld = delivery == nil && inbound.duplicateFrames == before && inbound.held.contains { $0.message == frame.message }
        var actions: [LinkAction] = []
        if let (b, t) = progress, delivery == nil { actions.append(.event(.progress(bytes: b, total: t))) }
        if let d = delivery {
            statistics.messagesDelivered += 1
            if configuration.mode == .masterSlave {
                // The reply proves the request arrived.
                if let out = outbound, out.message == d.message { sizer.record(out); outbound = nil }
                actions += reportSent(d.message)
                exchangeInProgress = nil
                state = .idle
                if isCancelling {
                    pending = nil
                    actions.append(.event(.received(message: d.message, data: d.data)))
                    actions.append(.event(.error(.cancelFailed, "the reply arrived before the cancel")))
                } else {
                    actions.append(.event(.received(message: d.message, data: d.data)))
                }
            } else {
                actions.append(.event(.received(message: d.message, data: d.data)))
            }
        }
        if delivery != nil || completedHeld || frame.flags.contains(.poll) {
            actions.append(transmit([inbound.ack(for: frame.message, count: frame.fragmentCount, session: session, base: [])]))
        }
        if configuration.mode == .duplex {
            for d in inbound.releaseHeld() {
                statistics.messagesDelivered += 1
                actions.append(.event(.received(message: d.message, data: d.data)))
            }
        }
        return actions
    }

    /// Ends the exchange under way (if any) with `event`.
    private mutating func abandonExchange(event: LinkEvent?) -> [LinkAction] {
        earlier.removeAll()
        guard exchangeInProgress != nil else { return [] }
        exchangeInProgress = nil
        outbound = nil
        if isCancelling { pending = nil }
        state = opened ? .idle : .waitingDevice
        return event.map { [.event($0)] } ?? []
    }

    /// The hello names the phone and, with the duplex flag, its mode (a device may follow it).
    private func helloFrame() -> LinkFrame {
        LinkFrame(kind: .hello, flags: configuration.mode == .duplex ? .duplex : [], session: session,
                  payload: Array(name.utf8.prefix(64)))
    }

    private func signalFrame(_ kind: LinkFrame.Kind, message: UInt16) -> LinkFrame {
        LinkFrame(kind: kind, session: session, message: message)
    }

    private mutating func transmit(_ frames: [LinkFrame]) -> LinkAction {
        statistics.framesSent += frames.count
        return .transmit(frames)
    }
}
