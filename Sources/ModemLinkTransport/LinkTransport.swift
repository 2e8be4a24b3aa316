import ModemLinkProtocol
import ModemRuntime
import ModemTransport
import Synchronization

/// A ``ModemTransport/MessageTransport`` over the channel protocol in duplex mode: one session frame
/// is one duplex message. ``send(_:)`` returns once the peer's link acknowledged the message
/// (`sendOK`), or, when the phone keeps more than one message on its way
/// (``ModemLinkProtocol/LinkConfiguration/messagesInFlight``), as soon as its link has room for the
/// next one (a message lost after that ends the transport); ``receive()`` gives each message the peer sent, in order, and `.peerHeard` whenever the
/// link heard any valid frame of the peer (fragments, acknowledgements, polls), so a session's
/// keepalive survives a message that takes minutes on the air. A message that is not acknowledged
/// in time, a link that stays silent for ``LinkTransportOptions/silenceTimeout`` or an audio failure
/// ends the transport with `.localFailure`; the phone's close signal ends the device's with
/// `.peerClosed`. When nothing was sent for ``LinkTransportOptions/keepalive`` a heartbeat frame goes
/// out (an acknowledgement of message 0, which asks for no answer; the peer reports it as
/// `.peerHeard`). An empty duplex message is never a frame: it is taken as a sign of life too.
///
/// Memory is bounded: a reader that stops reading holds at most
/// ``LinkTransportOptions/inboxLimit`` frames, then the link stops completing messages and the
/// peer's sender waits (back-pressure through the channel protocol's polls).
///
/// Get one from ModemLink's `LinkPhone.dial()` or `LinkDevice.accept()` (audio) or `LinkLoopbackPair`
/// (both ends over the in-memory medium in channel time), or from ModemBluetooth's
/// `BluetoothLinkPhone.dial()` or `BluetoothLinkDevice.accept()` (RFCOMM). Those ends drive a
/// ``PhoneLinkHost`` or ``DeviceLinkHost`` on their link's thread.
public final class LinkTransport: MessageTransport {
    /// Which end of the channel protocol this is.
    public enum Role: String, Sendable, Hashable {
        /// The phone: it opened the link.
        case phone
        /// The device: it answered the phone's hello.
        case device
    }

    /// Always ``ModemMessaging/TransportKind/link``.
    public var kind: TransportKind { .link }
    /// The largest frame: the configuration's maximum message size, at most 65,560 bytes.
    public let maximumFrameSize: Int
    /// Which end this is.
    public let role: Role
    private let engine: any LinkTransportEngine

    package init(role: Role, engine: any LinkTransportEngine) {
        self.role = role
        self.engine = engine
        maximumFrameSize = engine.maximumFrameSize
    }

    /// Sends one frame as one duplex message; returns once the peer's link acknowledged it (with
    /// more than one message in flight: once the link has room for the next).
    /// - Throws: ``ModemTransport/TransportError`` for an empty or oversized frame, or when the link
    ///   ended before the acknowledgement.
    public func send(_ frame: [UInt8]) async throws(TransportError) {
        _ = try await engine.sendMessage(frame)
    }

    /// Sends one frame like ``send(_:)`` and returns the link's message number that carried it.
    public func sendMessage(_ frame: [UInt8]) async throws(TransportError) -> UInt16 {
        try await engine.sendMessage(frame)
    }

    /// The next input: a frame, `.peerHeard`, or the end (frames already received come first).
    public func receive() async -> TransportInput {
        await engine.receive()
    }

    /// Ends this transport (`.localClose`); the phone also sends the link's close signal.
    public func close() async {
        engine.close()
    }

    /// Whether the transport has ended.
    public var isEnded: Bool { engine.isEnded }
}

/// What ``LinkTransport`` calls on its connection.
package protocol LinkTransportEngine: Sendable {
    var maximumFrameSize: Int { get }
    var isEnded: Bool { get }
    func sendMessage(_ frame: [UInt8]) async throws(TransportError) -> UInt16
    func receive() async -> TransportInput
    func close()
}

extension LinkTransportCore: LinkTransportEngine {}

/// Runs closures on a link's thread with its machine (late-bound: the thread is built after the host).
package final class MachineScheduler<Machine: LinkMachine>: Sendable {
    package typealias Body = @Sendable (inout Machine, Double) -> [LinkAction]
    private let target = Mutex<(@Sendable (@escaping Body) -> Void)?>(nil)

    package func bind(_ run: @escaping @Sendable (@escaping Body) -> Void) { target.withLock { $0 = run } }

    package func schedule(_ body: @escaping Body) {
        target.withLock { $0 }?(body)
    }
}

/// The phone end's connections: open (the handshake), then one transport per successful open.
package final class PhoneLinkHost: Sendable {
    package let configuration: LinkConfiguration
    package let options: LinkTransportOptions
    package let scheduler = MachineScheduler<PhoneStateMachine>()

    private struct State {
        var current: LinkTransportCore<PhoneStateMachine>?
        var openWaiter: CheckedContinuation<Result<LinkTransport, TransportError>, Never>?
        var stopped = false
    }
    private let state = Mutex(State())

    package init(configuration: LinkConfiguration, options: LinkTransportOptions) {
        precondition(configuration.mode == .duplex, "a link transport runs the channel protocol in duplex mode")
        self.configuration = configuration
        self.options = options
    }

    /// Runs the handshake with a random session number and returns the new connection's transport.
    package func dial(session: UInt8) async throws(TransportError) -> LinkTransport {
        let r = await withCheckedContinuation { (c: CheckedContinuation<Result<LinkTransport, TransportError>, Never>) in
            let refusal = state.withLock { s -> TransportError? in
                if s.stopped { return .stopped(nil) }
                if s.openWaiter != nil { return .dialUnderWay }
                s.openWaiter = c
                return nil
            }
            if let refusal { return c.resume(returning: .failure(refusal)) }
            scheduler.schedule { m, now in m.open(session: session, now: now) }
        }
        return try r.get()
    }

    /// Link thread: an event of the phone machine.
    package func handle(_ e: LinkEvent, now: Double) {
        if case .opened(let code, _) = e {
            let core: LinkTransportCore<PhoneStateMachine>? = code == ReturnCode.ok
                ? LinkTransportCore(configuration: configuration, options: options, onClose: { [scheduler] in
                    scheduler.schedule { m, now in m.close(now: now) }
                }) : nil
            let (old, waiter) = state.withLock { s in
                defer { s.openWaiter = nil; if core != nil { s.current = core } }
                return (core != nil ? s.current : nil, s.openWaiter)
            }
            old?.finish(.reset)
            if let core {
                waiter?.resume(returning: .success(LinkTransport(role: .phone, engine: core)))
            } else {
                waiter?.resume(returning: .failure(code == ReturnCode.noDevice ? .noDevice : .handshakeFailed))
            }
            return
        }
        current?.handle(e, now: now)
    }

    /// Link thread: timers and queues of the current connection.
    package func service(_ m: inout PhoneStateMachine, now: Double) -> [LinkAction] {
        current?.service(&m, now: now) ?? []
    }

    /// The transport failed or was stopped: the connection and a dial under way end.
    package func stop(_ end: TransportEnd) {
        let (core, waiter) = state.withLock { s in
            defer { s.stopped = true; s.openWaiter = nil }
            return (s.current, s.openWaiter)
        }
        core?.finish(end)
        waiter?.resume(returning: .failure(.stopped(end)))
    }

    package var current: LinkTransportCore<PhoneStateMachine>? { state.withLock { $0.current } }
}

/// The device end's connections: each new session the phone opens (a hello with a new number) is
/// a new transport, handed to ``accept()``; the previous one ends (`.reset`).
package final class DeviceLinkHost: Sendable {
    package let configuration: LinkConfiguration
    package let options: LinkTransportOptions

    private struct State {
        var current: LinkTransportCore<DeviceStateMachine>?
        var session: UInt8?
        var pending: LinkTransport?
        var acceptWaiter: CheckedContinuation<Result<LinkTransport, TransportError>, Never>?
        var stopped: TransportEnd?
    }
    private let state = Mutex(State())

    package init(configuration: LinkConfiguration, options: LinkTransportOptions) {
        precondition(configuration.mode == .duplex, "a link transport runs the channel protocol in duplex mode")
        self.configuration = configuration
        self.options = options
    }

    /// Waits for the next connection.
    package func accept() async throws(TransportError) -> LinkTransport {
        let r = await withCheckedContinuation { (c: CheckedContinuation<Result<LinkTransport, TransportError>, Never>) in
            let ready = state.withLock { s -> Result<LinkTransport, TransportError>? in
                if let p = s.pending { s.pending = nil; return .success(p) }
                if let end = s.stopped { return .failure(.stopped(end)) }
                if s.acceptWaiter != nil { return .failure(.acceptUnderWay) }
                s.acceptWaiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
        return try r.get()
    }

    /// Link thread, before the step's events: the machine's session (a new one is a new connection).
    package func note(session: UInt8?) {
        let (old, waiter, transport, displaced) = state.withLock { s -> (LinkTransportCore<DeviceStateMachine>?,
                                                                      CheckedContinuation<Result<LinkTransport, TransportError>, Never>?,
                                                                      LinkTransport?, LinkTransport?) in
            guard session != s.session else { return (nil, nil, nil, nil) }
            s.session = session
            let old = s.current
            s.current = nil
            guard session != nil, s.stopped == nil else { return (old, nil, nil, nil) }
            let core = LinkTransportCore<DeviceStateMachine>(configuration: configuration, options: options, onClose: {})
            s.current = core
            let t = LinkTransport(role: .device, engine: core)
            if let w = s.acceptWaiter {
                s.acceptWaiter = nil
                return (old, w, t, nil)
            }
            let displaced = s.pending
            s.pending = t
            return (old, nil, nil, displaced)
        }
        old?.finish(session == nil ? .peerClosed : .reset)
        if let displaced { Simulation.spawn { await displaced.close() } }
        if let waiter, let transport { waiter.resume(returning: .success(transport)) }
    }

    /// Link thread: an event of the device machine.
    package func handle(_ e: LinkEvent, now: Double) {
        current?.handle(e, now: now)
    }

    /// Link thread: timers and queues of the current connection.
    package func service(_ m: inout DeviceStateMachine, now: Double) -> [LinkAction] {
        note(session: m.session)
        return current?.service(&m, now: now) ?? []
    }

    /// The transport failed or was stopped: the connection and an accept waiting end.
    package func stop(_ end: TransportEnd) {
        let (core, waiter, pending) = state.withLock { s in
            defer { s.stopped = end; s.acceptWaiter = nil; s.pending = nil }
            return (s.current, s.acceptWaiter, s.pending)
        }
        core?.finish(end)
        if let pending { Simulation.spawn { await pending.close() } }
        waiter?.resume(returning: .failure(.stopped(end)))
    }

    package var current: LinkTransportCore<DeviceStateMachine>? { state.withLock { $0.current } }
}
