import ModemLinkProtocol
import ModemLinkTransport
import ModemMessaging
import Synchronization

/// The phone end of link transports over Bluetooth RFCOMM on our own host stack: connects to a
/// device (page, SDP unless a channel is given, RFCOMM), runs a ``ModemLinkProtocol/PhoneStateMachine``
/// in duplex mode on the channel's byte stream (frames back to back, ``ModemLinkProtocol/StreamLinkStation``)
/// and gives the connection as a ``ModemLinkTransport/LinkTransport``: one session frame is one
/// duplex message, exactly as over audio.
///
/// ```swift
/// let phone = BluetoothLinkPhone(transport: try HCITransportAddress(parsing: "tcp:127.0.0.1:9000").open(),
///                                address: BDAddress("00:1B:DC:00:00:0B")!)
/// phone.start()
/// let transport = try await phone.dial()
/// ```
public final class BluetoothLinkPhone: HostClient, @unchecked Sendable {
    // @unchecked Sendable: the station, the channel and the held calls are used on the host driver's
    // thread only (this object is its client); other threads reach them through `host.perform`, and
    // the link host (`links`) is Mutex-guarded inside.

    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    private let links: PhoneLinkHost
    private let address: BDAddress
    private let serverChannel: UInt8?
    private var host: HostDriver!
    private var station: StreamLinkStation<PhoneStateMachine>
    private var open: SerialChannelID?
    private var request: Int?
    private var held: [MachineScheduler<PhoneStateMachine>.Body] = []
    private var unsent = 0
    private var ended = false

    /// Creates a phone end (not started).
    /// - Parameters:
    ///   - transport: the controller (our own host stack).
    ///   - address: the device to connect to.
    ///   - channel: its RFCOMM server channel; nil looks it up in SDP (Serial Port).
    ///   - configuration: must be duplex and match the device's (default: the byte-stream parameters).
    ///   - options: the transports' timers.
    ///   - gap: controller options; the role is always central.
    public init(transport: any HCITransport, address: BDAddress, channel: UInt8? = nil,
                configuration: LinkConfiguration = .byteStream(mode: .duplex),
                options: LinkTransportOptions = LinkTransportOptions(), gap: GAPConfiguration = GAPConfiguration(role: .central)) {
        self.configuration = configuration
        self.address = address
        serverChannel = channel
        links = PhoneLinkHost(configuration: configuration, options: options)
        station = StreamLinkStation(machine: PhoneStateMachine(configuration: configuration, name: "SwiftModem messaging"))
        var gap = gap
        gap.role = .central
        host = HostDriver(transport: transport, stack: HostStack(configuration: HostConfiguration(gap: gap)), client: self)
        links.scheduler.bind { [self] body in
            host.perform { [self] stack, now in
                guard let open else {
                    held.append(body)
                    return []
                }
                return carry(station.perform(body(&station.machine, now)), on: open, stack: &stack, now: now)
            }
        }
    }

    /// Starts the controller and connects.
    public func start() { host.start() }

    /// Disconnects and releases the controller; the connection and a dial under way end.
    public func stop() {
        host.perform { [self] stack, now in
            guard let open else { return [] }
            return stack.disconnect(handle: open.handle, now: now)
        }
        host.stop()
        links.stop(.localClose)
    }

    /// Opens the link once the RFCOMM channel is up (the channel protocol's handshake).
    /// - Throws: ``ModemMessaging/TransportError`` when the device cannot be reached or did not answer.
    public func dial() async throws(TransportError) -> LinkTransport {
        try await links.dial(session: UInt8.random(in: 1...255))
    }

    private func carry(_ actions: [StreamLinkAction], on channel: SerialChannelID, stack: inout HostStack, now: Double) -> [HostAction] {
        var out: [HostAction] = []
        for action in actions {
            switch action {
            case .write(let bytes):
                unsent += bytes.count
                out += stack.write(channel, bytes, now: now)
            case .event(let e):
                links.handle(e, now: now)
            case .releaseResources:
                break
            }
        }
        return out
    }

    public func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready:
            let (id, actions) = stack.openSerialPort(to: address, channel: serverChannel, now: now)
            request = id
            return actions
        case .failed(let reason):
            fail("the controller cannot be used: \(reason)")
        case .openFailed(let id, let reason) where id == request:
            fail("cannot connect to \(address): \(reason)")
        case .opened(let id, _, let incoming) where !incoming && open == nil:
            open = id
            var out: [HostAction] = []
            for body in held {
                out += carry(station.perform(body(&station.machine, now)), on: id, stack: &stack, now: now)
            }
            held.removeAll()
            return out
        case .received(let id, let bytes) where id == open:
            return carry(station.received(bytes: bytes, now: now), on: id, stack: &stack, now: now)
        case .sent(let id, let bytes) where id == open:
            unsent = max(0, unsent - bytes)
            if unsent == 0 { return carry(station.transmitted(now: now), on: id, stack: &stack, now: now) }
        case .closed(let id, let reason, _) where id == open:
            open = nil
            fail("the Bluetooth channel closed: \(reason)")
        default:
            break
        }
        return []
    }

    public func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        guard let open else { return [] }
        var actions = station.tick(now: now)
        actions += station.perform(links.service(&station.machine, now: now))
        return carry(actions, on: open, stack: &stack, now: now)
    }

    public func hostStopped(failure: String?) {
        if let failure { fail("the controller transport closed: \(failure)") }
    }

    private func fail(_ reason: String) {
        guard !ended else { return }
        ended = true
        links.stop(.localFailure(reason))
        host.requestStop()
    }
}

/// The device end of link transports over Bluetooth RFCOMM on our own host stack: a discoverable,
/// connectable controller with a Serial Port record in SDP (like ``BluetoothDeviceEmulator``); a
/// phone that opens our RFCOMM channel gets a ``ModemLinkProtocol/DeviceStateMachine`` in duplex
/// mode, and each session it opens is a ``ModemLinkTransport/LinkTransport`` handed out by
/// ``accept()``. One phone at a time: a second phone's channel replaces the first (which is
/// disconnected, its transport ends).
public final class BluetoothLinkDevice: HostClient, @unchecked Sendable {
    // @unchecked Sendable: the station and the channel are used on the host driver's thread only
    // (this object is its client); the link host (`links`) and `ownAddress` are Mutex-guarded.

    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    private let name: String
    private let links: DeviceLinkHost
    private let expectedAddress: BDAddress?
    private let log: @Sendable (String) -> Void
    private var host: HostDriver!
    private var station: StreamLinkStation<DeviceStateMachine>?
    private var channel: SerialChannelID?
    private var unsent = 0
    private let ownAddress = Mutex<BDAddress?>(nil)

    /// Creates a device end (not started).
    /// - Parameters:
    ///   - transport: the controller (our own host stack).
    ///   - name: the Bluetooth name, and the name given in the handshake.
    ///   - channel: the RFCOMM server channel published in SDP (1...30).
    ///   - expectedAddress: when given, the controller's own address must be this one (the
    ///     controller stops with an error naming both otherwise).
    ///   - configuration: must be duplex and match the phone's (default: the byte-stream parameters).
    ///   - options: the transports' timers.
    ///   - gap: controller options; the role is always device.
    ///   - log: one line when ready, per connection and per disconnection.
    public init(transport: any HCITransport, name: String = "SwiftModem messaging", channel: UInt8 = 1,
                expectedAddress: BDAddress? = nil, configuration: LinkConfiguration = .byteStream(mode: .duplex),
                options: LinkTransportOptions = LinkTransportOptions(), gap: GAPConfiguration = GAPConfiguration(role: .central),
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.configuration = configuration
        self.name = name
        self.expectedAddress = expectedAddress
        self.log = log
        links = DeviceLinkHost(configuration: configuration, options: options)
        var gap = gap
        gap.role = .device(name: name, classOfDevice: 0x001F00)
        host = HostDriver(transport: transport,
                          stack: HostStack(configuration: HostConfiguration(gap: gap, serverChannel: channel, serviceName: name)),
                          client: self)
    }

    /// Starts serving.
    public func start() { host.start() }

    /// Stops serving and releases the controller; the connection and a waiting ``accept()`` end.
    public func stop() {
        host.stop()
        links.stop(.localClose)
    }

    /// The controller's own address, once it is ready.
    public var address: BDAddress? { ownAddress.withLock { $0 } }

    /// The next connection (a phone opened a session).
    /// - Throws: ``ModemMessaging/TransportError`` when the device stopped or the controller failed.
    public func accept() async throws(TransportError) -> LinkTransport {
        try await links.accept()
    }

    public func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready(let address):
            ownAddress.withLock { $0 = address }
            if let expectedAddress, expectedAddress != address {
                fail("the controller's address is \(address), not \(expectedAddress)")
                return []
            }
            log("\(name) at \(address): discoverable, Serial Port on RFCOMM channel \(stack.configuration.serverChannel ?? 0)")
        case .failed(let reason):
            fail("the controller cannot be used: \(reason)")
        case .opened(let id, let address, let incoming) where incoming:
            var out: [HostAction] = []
            if let old = channel {
                dropConnection("another phone connected")
                out += stack.disconnect(handle: old.handle, now: now)
            }
            var machine = DeviceStateMachine(configuration: configuration, name: name)
            machine.attach()
            station = StreamLinkStation(machine: machine)
            channel = id
            unsent = 0
            log("connected: \(address)")
            return out
        case .received(let id, let bytes) where id == channel:
            guard var s = station else { return [] }
            let actions = s.received(bytes: bytes, now: now)
            station = s
            return carry(actions, on: id, stack: &stack, now: now)
        case .sent(let id, let bytes) where id == channel:
            unsent = max(0, unsent - bytes)
            if unsent == 0, var s = station {
                let actions = s.transmitted(now: now)
                station = s
                return carry(actions, on: id, stack: &stack, now: now)
            }
        case .closed(let id, let reason, _) where id == channel:
            dropConnection("the Bluetooth channel closed: \(reason)")
            log("disconnected: \(reason)")
        default:
            break
        }
        return []
    }

    public func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        guard let id = channel, var s = station else { return [] }
        var actions = s.tick(now: now)
        actions += s.perform(links.service(&s.machine, now: now))
        station = s
        return carry(actions, on: id, stack: &stack, now: now)
    }

    public func hostStopped(failure: String?) {
        if let failure { fail("the controller transport closed: \(failure)") }
    }

    /// Carries out the station's actions: writes on the channel, events to the connection (after
    /// noting the machine's session, so a new session's first message finds its transport).
    private func carry(_ actions: [StreamLinkAction], on id: SerialChannelID, stack: inout HostStack, now: Double) -> [HostAction] {
        if let s = station { links.note(session: s.machine.session) }
        var out: [HostAction] = []
        for action in actions {
            switch action {
            case .write(let bytes):
                unsent += bytes.count
                out += stack.write(id, bytes, now: now)
            case .event(let e):
                links.handle(e, now: now)
            case .releaseResources:
                break
            }
        }
        return out
    }

    /// The phone's channel went away: its transport ends (`.localFailure`) unless it already ended.
    private func dropConnection(_ reason: String) {
        links.current?.finish(.localFailure(reason))
        links.note(session: nil)
        station = nil
        channel = nil
    }

    private func fail(_ reason: String) {
        log(reason)
        links.stop(.localFailure(reason))
        host.requestStop()
    }
}
