import ModemLinkProtocol
import ModemLinkTransport
import ModemTransport
import Synchronization

/// The phone end of link transports over Bluetooth RFCOMM, on our own host stack or the kernel's
/// Bluetooth (BlueZ sockets): connects to a
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
public final class BluetoothLinkPhone: BluetoothPhoneChannelOwner, Sendable {
    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    private let links: PhoneLinkHost
    private let way: any BluetoothPhoneWay

    /// Creates a phone end on our own host stack (not started).
    /// - Parameters:
    ///   - transport: the controller (our own host stack).
    ///   - address: the device to connect to.
    ///   - channel: its RFCOMM server channel; nil looks it up in SDP (Serial Port).
    ///   - configuration: must be duplex and match the device's (default: the byte-stream parameters).
    ///   - options: the transports' timers.
    ///   - gap: controller options; the role is always central.
    public convenience init(transport: any HCITransport, address: BDAddress, channel: UInt8? = nil,
                            configuration: LinkConfiguration = .byteStream(mode: .duplex),
                            options: LinkTransportOptions = LinkTransportOptions(), gap: GAPConfiguration = GAPConfiguration(role: .central)) {
        self.init(configuration: configuration, options: options,
                  way: BluetoothPhoneChannel(transport: transport, gap: gap, address: address, channel: channel,
                                             machine: Self.machine(configuration)))
    }

    /// Creates a phone end on the kernel's Bluetooth (BlueZ: SDP over an L2CAP socket unless a channel
    /// is given, then an RFCOMM socket), not started.
    /// - Parameters:
    ///   - address: the device to connect to.
    ///   - channel: its RFCOMM server channel; nil looks it up in SDP (Serial Port).
    ///   - adapter: the adapter number (`hci0` is 0).
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` or ``BluetoothError/notPowered(_:)`` at once when
    ///   this kernel has no Bluetooth or the adapter is missing or down.
    public convenience init(kernelAddress address: BDAddress, channel: UInt8? = nil, adapter: UInt16 = 0,
                            configuration: LinkConfiguration = .byteStream(mode: .duplex),
                            options: LinkTransportOptions = LinkTransportOptions()) throws(BluetoothError) {
        try BlueZ.adapter(device: adapter)
        self.init(kernelAddress: address, configuration: configuration, options: options) { () throws(BluetoothError) in
            try BlueZSerialBridge.connect(to: address, channel: channel, device: adapter)
        }
    }

    /// The kernel's way with the stream opened by `connect` (tests give a stand-in stream).
    convenience init(kernelAddress address: BDAddress, configuration: LinkConfiguration, options: LinkTransportOptions,
                     connect: @escaping BlueZPhoneDriver.Connect) {
        self.init(configuration: configuration, options: options,
                  way: BlueZPhoneDriver(address: address, machine: Self.machine(configuration), connect: connect))
    }

    private init(configuration: LinkConfiguration, options: LinkTransportOptions, way: any BluetoothPhoneWay) {
        self.configuration = configuration
        links = PhoneLinkHost(configuration: configuration, options: options)
        self.way = way
        way.owner = self
        links.scheduler.bind { [way] body in way.withMachine(body) }
    }

    private static func machine(_ configuration: LinkConfiguration) -> PhoneStateMachine {
        PhoneStateMachine(configuration: configuration, name: "SwiftModem messaging")
    }

    /// Starts the controller (or the kernel's connection) and connects.
    public func start() { way.start() }

    /// Disconnects and releases the controller; the connection and a dial under way end.
    public func stop() {
        way.stop()
        links.stop(.localClose)
    }

    /// Opens the link once the RFCOMM channel is up (the channel protocol's handshake).
    /// - Throws: ``ModemTransport/TransportError`` when the device cannot be reached or did not answer.
    public func dial() async throws(TransportError) -> LinkTransport {
        try await links.dial(session: UInt8.random(in: 1...255))
    }

    func phoneChannel(event: LinkEvent, machine: PhoneStateMachine, now: Double) { links.handle(event, now: now) }
    func phoneChannel(observe machine: PhoneStateMachine) {}
    func phoneChannel(service machine: inout PhoneStateMachine, now: Double) -> [LinkAction] { links.service(&machine, now: now) }

    func phoneChannel(failed: BluetoothPhoneFailure) {
        let reason = switch failed {
        case .controller(let reason): "the controller cannot be used: \(reason)"
        case .connect(let address, let reason, _): "cannot connect to \(address): \(reason)"
        case .closed(let reason): "the Bluetooth channel closed: \(reason)"
        case .transportClosed(let failure, _): BluetoothError.transportClosedWords(failure)
        }
        links.stop(.localFailure(reason))
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

    /// What happens to a device end, as it happens (on the host driver's thread). Each has its line
    /// for a log (``description``); callers decide by case.
    public enum Event: Sendable, Equatable, CustomStringConvertible {
        /// The controller is ready: discoverable and connectable as `name` at `address` (its own
        /// address), the Serial Port record published on RFCOMM `channel`.
        case ready(name: String, address: BDAddress, channel: UInt8)
        /// A phone opened our RFCOMM channel.
        case connected(BDAddress)
        /// The phone's channel closed, for the reason given.
        case disconnected(reason: String)
        /// The device end cannot go on (the controller failed, or its address is not the expected
        /// one) and stops; the text names the problem.
        case failed(String)

        /// The event in one line.
        public var description: String {
            switch self {
            case .ready(let name, let address, let channel):
                return "\(name) at \(address): discoverable, Serial Port on RFCOMM channel \(channel)"
            case .connected(let address): return "connected: \(address)"
            case .disconnected(let reason): return "disconnected: \(reason)"
            case .failed(let reason): return reason
            }
        }
    }

    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    private let name: String
    private let links: DeviceLinkHost
    private let expectedAddress: BDAddress?
    private let events: @Sendable (Event) -> Void
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
    ///   - events: called when the controller is ready (with its address), per connection, per
    ///     disconnection, and when the end fails.
    public init(transport: any HCITransport, name: String = "SwiftModem messaging", channel: UInt8 = 1,
                expectedAddress: BDAddress? = nil, configuration: LinkConfiguration = .byteStream(mode: .duplex),
                options: LinkTransportOptions = LinkTransportOptions(), gap: GAPConfiguration = GAPConfiguration(role: .central),
                events: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.configuration = configuration
        self.name = name
        self.expectedAddress = expectedAddress
        self.events = events
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
    /// - Throws: ``ModemTransport/TransportError`` when the device stopped or the controller failed.
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
            events(.ready(name: name, address: address, channel: stack.configuration.serverChannel ?? 0))
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
            events(.connected(address))
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
            events(.disconnected(reason: reason))
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
        if let failure { fail(BluetoothError.transportClosedWords(failure)) }
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
        events(.failed(reason))
        links.stop(.localFailure(reason))
        host.requestStop()
    }
}
