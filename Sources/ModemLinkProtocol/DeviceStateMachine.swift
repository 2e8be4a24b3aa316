import ModemCodecs

/// The device side of the channel protocol as a pure value (see ``PhoneStateMachine``).
///
/// States follow the Communication API: ``State/notReady`` until attached to the audio, ``State/deviceReady`` while
/// powered off and listening for the boot signal, ``State/idle`` once the phone's hello was answered,
/// ``State/dataProcess`` while a request is being received, processed and replied to.
public struct DeviceStateMachine: Sendable {
    /// The Communication API's device states.
    public enum State: String, Sendable, Hashable {
        /// Not attached to the audio.
        case notReady = "NOT READY"
        /// Attached, powered off, waiting for the boot signal.
        case deviceReady = "DEVICE READY"
        /// Powered on, connected to the phone, ready to receive.
        case idle = "IDLE"
        /// Receiving or processing data.
        case dataProcess = "DATA PROCESS"
    }

    /// Where the device's mode comes from.
    public enum ModeSource: Sendable, Hashable {
        /// The configuration's mode, whatever the phone runs.
        case configuration
        /// The phone's mode, announced by the duplex flag of each hello (no flag: master-slave). For a
        /// device that serves phones of either mode (a Bluetooth device with no mode option).
        case followPhone
    }

    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// The name given in the handshake.
    public let name: String
    /// Where ``mode`` comes from.
    public let modeSource: ModeSource
    /// The mode in force: the configuration's, or (``ModeSource/followPhone``) the last hello's.
    public private(set) var mode: CommunicationMode
    /// The current state.
    public private(set) var state: State = .notReady
    /// Counts of frames and recoveries.
    public private(set) var statistics = LinkStatistics()
    /// The phone's session, once a hello was answered.
    public private(set) var session: UInt8?
    /// Master-slave: the request delivered and not yet replied to.
    public private(set) var pendingRequest: UInt16?
    /// Back-pressure for an application that is not taking messages: while true, a fragment that
    /// would complete a message is dropped (not acknowledged), so the peer keeps polling and sends it
    /// again once deliveries resume. Nothing is delivered while paused; nothing is lost.
    public var deliveriesPaused = false
    /// The number of the message of ours still on its way (the one the next
    /// ``LinkEvent/sendOK(message:)`` or ``LinkEvent/timeout(message:)`` will name), nil when none is.
    public var messageInTransit: UInt16? { outbound?.message }

    private var outbound: OutboundMessage?
    private var outboundDeadline: Double?
    private var inbound: InboundMessages
    private var numbers = MessageNumbers()
    private var sizer: FragmentSizer

    /// Creates a device, not yet attached.
    /// - Parameters:
    ///   - configuration: the protocol parameters (both ends must agree).
    ///   - name: the name given in the handshake.
    ///   - mode: ``ModeSource/configuration`` (default) or ``ModeSource/followPhone``.
    public init(configuration: LinkConfiguration, name: String = "SwiftModem device emulator",
                mode: ModeSource = .configuration) {
        self.configuration = configuration
        self.name = name
        modeSource = mode
        self.mode = configuration.mode
        sizer = FragmentSizer(maximum: configuration.framePayload)
        inbound = InboundMessages(maximumMessageSize: configuration.maximumMessageSize, framePayload: configuration.framePayload)
    }

    /// The audio is attached: wait for the boot signal.
    public mutating func attach() {
        if state == .notReady { state = .deviceReady }
    }

    /// The audio is gone.
    public mutating func detach() {
        state = .notReady
        session = nil
        outbound = nil
        pendingRequest = nil
    }

    /// Whether a message of ours is still on its way.
    public var isSending: Bool { outbound != nil }

    /// Master-slave: answers the request `message` (delivered as ``LinkEvent/received(message:data:)``).
    /// - Returns: 0 (sending), -1 (that request is no longer awaiting a reply: cancelled or superseded),
    ///   -2 (not connected), -3 (reply larger than the maximum message size); and the actions.
    public mutating func reply(_ data: [UInt8], to message: UInt16, now: Double) -> (code: Int32, actions: [LinkAction]) {
        guard session != nil, state == .idle || state == .dataProcess else { return (ReturnCode.notOpenedOrInput, []) }
        guard pendingRequest == message else { return (ReturnCode.busyOrOutput, []) }
        guard data.count <= configuration.maximumMessageSize else { return (ReturnCode.handshakeFailedOrCancelling, []) }
        pendingRequest = nil
        return startSending(data, message: message, flags: .reply, deadline: nil)
    }

    /// Duplex: sends a message on the device's initiative.
    /// - Parameters:
    ///   - timeout: seconds to get it acknowledged; nil gives up after ``LinkConfiguration/maximumPolls``
    ///     unanswered polls.
    /// - Returns: 0 (sending), -1 (a message is still on its way), -2 (not connected), -3 (too large).
    public mutating func send(_ data: [UInt8], timeout: Double? = nil, now: Double) -> (code: Int32, actions: [LinkAction]) {
        guard session != nil, state == .idle || state == .dataProcess else { return (ReturnCode.notOpenedOrInput, []) }
        guard outbound == nil else { return (ReturnCode.busyOrOutput, []) }
        guard data.count <= configuration.maximumMessageSize else { return (ReturnCode.handshakeFailedOrCancelling, []) }
        let message = numbers.take()
        return startSending(data, message: message, flags: [], deadline: timeout.map { now + $0 })
    }

    /// The driver finished playing what it was given.
    public mutating func transmitted(now: Double) -> [LinkAction] {
        if outbound?.awaitingAck == true && outbound?.deadline == nil {
            outbound?.deadline = now + configuration.acknowledgementTimeout
        }
        return []
    }

    /// Time passes.
    public mutating func tick(now: Double) -> [LinkAction] {
        guard var out = outbound else { return [] }
        if let d = outboundDeadline, now >= d {
            return giveUp(out.message)
        }
        guard out.awaitingAck, let d = out.deadline, now >= d else { return [] }
        if outboundDeadline == nil && out.unansweredPolls >= configuration.maximumPolls {
            return giveUp(out.message)
        }
        let poll = out.poll(session: session ?? 0, base: .fromDevice)
        outbound = out
        statistics.polls += 1
        return [transmit([poll])]
    }

    /// A frame arrived.
    public mutating func receive(_ frame: LinkFrame, now: Double) -> [LinkAction] {
        guard !frame.flags.contains(.fromDevice), state != .notReady else { return [] }
        if frame.kind == .hello {
            statistics.framesReceived += 1
            // A device following the phone takes its mode from each hello; a change of mode starts
            // afresh like a new session (an old phone never sets the flag: master-slave).
            let announced: CommunicationMode = frame.flags.contains(.duplex) ? .duplex : .masterSlave
            let newMode = modeSource == .followPhone ? announced : mode
            if session != frame.session || newMode != mode {
                mode = newMode
                session = frame.session
                outbound = nil
                outboundDeadline = nil
                pendingRequest = nil
                inbound = InboundMessages(maximumMessageSize: configuration.maximumMessageSize, framePayload: configuration.framePayload)
                state = .idle
            }
            if state == .deviceReady { state = .idle }
            return [transmit([LinkFrame(kind: .helloAck, flags: .fromDevice, session: frame.session,
                                        payload: Array(name.utf8.prefix(64)))])]
        }
        guard let s = session, frame.session == s else { statistics.staleFrames += 1; return [] }
        statistics.framesReceived += 1
        switch frame.kind {
        case .data:
            return receiveData(frame, session: s)
        case .poll:
            return [transmit([inbound.ack(for: frame.message, count: frame.fragmentCount, session: s, base: .fromDevice)])]
        case .ack:
            guard var out = outbound, out.message == frame.message else { statistics.staleFrames += 1; return [] }
            switch out.handle(ack: frame, session: s, base: .fromDevice, window: configuration.windowFrames) {
            case .complete:
                sizer.record(out)
                outbound = nil
                outboundDeadline = nil
                if pendingRequest == nil && state == .dataProcess { state = .idle }
                return [.event(.sendOK(message: out.message))]
            case .wait:
                outbound = out
                return []
            case .resend(let frames, let resent):
                statistics.retransmissions += resent
                outbound = out
                return [.event(.progress(bytes: out.ackedBytes, total: out.totalBytes)), transmit(frames)]
            }
        case .cancel:
            inbound.markFinished(frame.message)
            var actions: [LinkAction] = []
            // The cancel names the phone's message: only a reply to it (not a duplex message of ours
            // that happens to carry the same number) is dropped.
            let replyToIt = outbound.map { $0.message == frame.message && $0.flags.contains(.reply) } ?? false
            if pendingRequest == frame.message || replyToIt {
                if replyToIt { outbound = nil; outboundDeadline = nil }
                pendingRequest = nil
                actions.append(.event(.cancelled(message: frame.message)))
            }
            if state == .dataProcess && outbound == nil { state = .idle }
            actions.append(transmit([LinkFrame(kind: .cancelAck, flags: .fromDevice, session: s, message: frame.message)]))
            return actions
        case .close:
            let ack = LinkFrame(kind: .closeAck, flags: .fromDevice, session: s)
            session = nil
            outbound = nil
            outboundDeadline = nil
            pendingRequest = nil
            state = .deviceReady
            return [transmit([ack]), .event(.closed)]
        case .hello, .helloAck, .cancelAck, .closeAck:
            statistics.staleFrames += 1
            return []
        }
    }

    private mutating func receiveData(_ frame: LinkFrame, session s: UInt8) -> [LinkAction] {
        let before = inbound.duplicateFrames
        let (delivery, progress) = inbound.receive(frame, canComplete: !deliveriesPaused)
        statistics.duplicateFrames += inbound.duplicateFrames - before
        // Complete, but held until the message before it is delivered (``LinkFrame/Flags/follows``).
        let completedHeld = delivery == nil && inbound.duplicateFrames == before && inbound.held.contains { $0.message == frame.message }
        var actions: [LinkAction] = []
        if let (b, t) = progress, delivery == nil {
            if mode == .masterSlave { state = .dataProcess }
            actions.append(.event(.progress(bytes: b, total: t)))
        }
        // Acknowledge first, so the acknowledgement leads the reply in the same transmission.
        if delivery != nil || completedHeld || frame.flags.contains(.poll) {
            actions.append(transmit([inbound.ack(for: frame.message, count: frame.fragmentCount, session: s, base: .fromDevice)]))
        }
        if let d = delivery {
            statistics.messagesDelivered += 1
            if mode == .masterSlave {
                // A new request supersedes the reply still on its way to an exchange that ended.
                if outbound != nil { outbound = nil; outboundDeadline = nil }
                pendingRequest = d.message
                state = .dataProcess
            }
            actions.append(.event(.received(message: d.message, data: d.data)))
        }
        // Messages that went ahead of this one's acknowledgement (``LinkFrame/Flags/follows``) come after it.
        for d in inbound.releaseHeld() {
            statistics.messagesDelivered += 1
            actions.append(.event(.received(message: d.message, data: d.data)))
        }
        return actions
    }

    private mutating func startSending(_ data: [UInt8], message: UInt16, flags: LinkFrame.Flags, deadline: Double?) -> (code: Int32, actions: [LinkAction]) {
        var out = OutboundMessage(message: message, flags: flags, data: data, framePayload: sizer.current)
        let frames = out.burst(session: session ?? 0, base: .fromDevice, window: configuration.windowFrames)
        outbound = out
        outboundDeadline = deadline
        if mode == .masterSlave { state = .dataProcess }
        return (ReturnCode.ok, [transmit(frames)])
    }

    private mutating func giveUp(_ message: UInt16) -> [LinkAction] {
        if let out = outbound { sizer.record(out, abandoned: true) }
        outbound = nil
        outboundDeadline = nil
        if state == .dataProcess && pendingRequest == nil { state = .idle }
        return [.event(.timeout(message: message))]
    }

    private mutating func transmit(_ frames: [LinkFrame]) -> LinkAction {
        statistics.framesSent += frames.count
        return .transmit(frames)
    }
}
