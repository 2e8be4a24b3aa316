import Foundation
import ModemLinkProtocol
import Synchronization

/// Where a Bluetooth manager finds its controller: our own host stack over an HCI transport, or
/// (nil) the kernel's Bluetooth.
public typealias HCITransportFactory = @Sendable () throws(BluetoothError) -> any HCITransport

/// The phone side of the Communication API over Bluetooth RFCOMM (its `BluetoothManager`):
/// the same state machine, calls, errors and events as ``ModemLink/AudioJackManager``, with the
/// channel protocol's frames written back to back on the RFCOMM byte stream.
///
/// ```swift
/// let manager = BluetoothManager(hci: try HCITransportAddress(parsing: "tcp:127.0.0.1:9000"))
/// try await manager.open(identifier: "00:1B:DC:00:00:0B")
/// let reply = try await manager.exchange(Array("ping".utf8), timeout: .seconds(5))
/// await manager.close()
/// ```
/// When the link goes away (the device disconnects, closes the channel, the link is lost), error 20
/// (``CommunicationError/bluetoothDisconnected``) arrives on ``events`` at once and the state
/// returns to WAITING DEVICE. The callback facade (``openDevice(_:)``, ``exchangeData(_:timeout:callback:)``,
/// ``cancelExchange()``, ``closeDevice()``, ``closeResource()``) has the Communication API's names and codes.
public final class BluetoothManager: CommunicationManager {
    /// Always ``DeviceCommunicationChannel/bluetooth``.
    public var channel: DeviceCommunicationChannel { .bluetooth }
    /// The protocol parameters.
    public var configuration: LinkConfiguration { session.configuration }
    /// Events, newest 1024 kept when nobody reads them.
    public var events: AsyncStream<CommunicationEvent> { session.events }
    public var state: PhoneStateMachine.State { session.state }
    public var deviceName: String? { session.deviceName }

    private let session: PhoneSession<BluetoothPhoneDriver>
    private let target = TargetBox()

    /// The device `open` connects to, shared with the session's driver factory.
    private final class TargetBox: Sendable {
        let value = Mutex<(address: BDAddress, channel: UInt8?)?>(nil)
    }

    /// The way down to the radio.
    enum Way: Sendable {
        /// Our own host stack over an HCI transport.
        case hostStack(HCITransportFactory)
        /// The kernel's Bluetooth: `check` runs at once in `open` (no kernel Bluetooth, no adapter,
        /// adapter down), `connect` on the driver's thread (SDP unless a channel is given, RFCOMM).
        case kernel(check: @Sendable () throws(BluetoothError) -> Void,
                    connect: @Sendable (BDAddress, UInt8?) throws(BluetoothError) -> BlueZRFCOMMStream)
    }

    /// Creates a manager.
    /// - Parameters:
    ///   - configuration: the protocol parameters (default: ``ModemLinkProtocol/LinkConfiguration/byteStream(mode:)`` master-slave).
    ///   - gap: controller options (ACL overrides); the role is always central. Our own host stack only.
    ///   - transport: opens the controller's transport (our own host stack); nil uses the kernel's
    ///     Bluetooth: its RFCOMM sockets on adapter hci0, which BlueZ owns (SDP over its L2CAP socket).
    public convenience init(configuration: LinkConfiguration = .byteStream(mode: .masterSlave),
                            gap: GAPConfiguration = GAPConfiguration(role: .central), transport: HCITransportFactory?) {
        let way: Way
        if let transport {
            way = .hostStack(transport)
        } else {
            way = .kernel(check: { () throws(BluetoothError) in try BlueZ.adapter() },
                          connect: { (address, channel) throws(BluetoothError) in
                              try BlueZSerialBridge.connect(to: address, channel: channel)
                          })
        }
        self.init(configuration: configuration, gap: gap, way: way)
    }

    /// A manager on either way down (tests give the kernel way a stand-in stream).
    init(configuration: LinkConfiguration, gap: GAPConfiguration, way: Way) {
        let target = self.target
        var gap = gap
        gap.role = .central
        let central = gap
        session = PhoneSession(configuration: configuration) { hooks throws(LinkError) in
            guard let (address, channel) = target.value.withLock({ $0 }) else {
                throw .transportUnavailable(code: -1, "no address: call open(identifier:) with the device's address")
            }
            switch way {
            case .kernel(let check, let connect):
                do throws(BluetoothError) {
                    try check()
                } catch {
                    throw .transportUnavailable(code: error.seedOpenCode, error.description)
                }
                return BluetoothPhoneDriver(BlueZPhoneDriver(address: address, machine: PhoneStateMachine(configuration: configuration),
                                                             connect: { () throws(BluetoothError) in try connect(address, channel) }),
                                            hooks: hooks)
            case .hostStack(let transport):
                let opened: any HCITransport
                do throws(BluetoothError) {
                    opened = try transport()
                } catch {
                    throw .transportUnavailable(code: error.seedOpenCode, error.description)
                }
                return BluetoothPhoneDriver(BluetoothPhoneChannel(transport: opened, gap: central, address: address, channel: channel,
                                                                  machine: PhoneStateMachine(configuration: configuration)),
                                            hooks: hooks)
            }
        }
    }

    /// A manager on our own host stack over `hci` (tcp:, serial: or hciN).
    public convenience init(hci: HCITransportAddress, configuration: LinkConfiguration = .byteStream(mode: .masterSlave),
                            gap: GAPConfiguration = GAPConfiguration(role: .central), capture: PcapWriter? = nil) {
        self.init(configuration: configuration, gap: gap, transport: { () throws(BluetoothError) in try hci.open(capture: capture) })
    }

    /// Connects to the device at `identifier` (a Bluetooth address, "00:1B:DC:00:00:0B"; optionally
    /// "ADDRESS/CHANNEL" to skip the SDP look-up) and runs the handshake.
    /// - Throws: ``ModemLinkProtocol/LinkError/transportUnavailable(code:_:)`` with the Communication API's codes
    ///   (-1 illegal address, -2 connection failed, -4 no Bluetooth, -5 not powered, -6 unknown), or
    ///   the handshake's errors as for ``open()``.
    public func open(identifier: String) async throws(LinkError) {
        let parts = identifier.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = BDAddress(first) else {
            throw .transportUnavailable(code: -1, "not a Bluetooth address: \(identifier)")
        }
        var channel: UInt8?
        if parts.count == 2 {
            guard let c = UInt8(parts[1]), (1...30).contains(c) else {
                throw .transportUnavailable(code: -1, "not an RFCOMM channel (1...30): \(parts[1])")
            }
            channel = c
        }
        target.value.withLock { $0 = (address, channel) }
        try await session.open()
    }

    /// Runs the handshake with the device given to the last ``open(identifier:)`` (connecting again if needed).
    public func open() async throws(LinkError) { try await session.open() }

    public func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8] {
        try await session.exchange(data, timeout: timeout)
    }

    public func cancel() async throws(LinkError) { try await session.cancel() }

    /// Sends the close signal (up to 3 times), then disconnects.
    public func close() async { await session.close() }

    /// Disconnects without powering the device off.
    public func closeResources() async { await session.closeResources() }

    // MARK: The Communication API's facade

    /// The Communication API's `openDevice(identifier)` (blocking).
    /// - Returns: 0 connected; -1 illegal address; -2 connection failed; -4 no Bluetooth; -5 not powered; -6 unknown error.
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func openDevice(_ identifier: String) -> Int32 {
        session.openDevice({ () throws(LinkError) in try await self.open(identifier: identifier) }) { error in
            // A device that did not answer the handshake: the connection failed.
            if case .transportUnavailable(let code, _) = error { return code }
            return -2
        }
    }

    /// The Communication API's `exchangeData` (see ``ModemLinkProtocol/PhoneSession/exchangeData(_:timeout:callback:)``).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func exchangeData(_ data: [UInt8], timeout: Double, callback: any CommunicationCallback) -> Int32 {
        session.exchangeData(data, timeout: timeout, callback: callback)
    }

    /// The Communication API's `cancelExchange`.
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func cancelExchange() -> Int32 { session.cancelExchange() }

    /// The Communication API's `closeDevice`: the close signal, then disconnect (blocking).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func closeDevice() { session.closeDevice() }

    /// The Communication API's `closeResource`: disconnect (blocking).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func closeResource() { session.closeResource() }
}

/// The driver behind a Bluetooth manager, whichever the way down (our own host stack or the kernel's
/// RFCOMM socket): events and the machine's state to the session, error 20 when the channel goes
/// away, the Communication API's open codes when it never opens.
final class BluetoothPhoneDriver: PhoneDriver, BluetoothPhoneChannelOwner {
    private let hooks: PhoneDriverHooks
    private let way: any BluetoothPhoneWay

    init(_ way: any BluetoothPhoneWay, hooks: PhoneDriverHooks) {
        self.hooks = hooks
        self.way = way
        way.owner = self
    }

    func start() { way.start() }
    func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction]) { way.withMachine(body) }
    func stop() { way.stop() }

    func phoneChannel(event: LinkEvent, machine: PhoneStateMachine, now: Double) { hooks.onEvent(event) }
    func phoneChannel(observe machine: PhoneStateMachine) { hooks.observe(machine) }
    func phoneChannel(service machine: inout PhoneStateMachine, now: Double) -> [LinkAction] { [] }

    func phoneChannel(failed: BluetoothPhoneFailure) {
        switch failed {
        case .controller(let reason):
            hooks.onOpenFailure(.transportUnavailable(code: -4, "the controller cannot be used: \(reason)"))
        case .connect(let address, let reason, let code):
            hooks.onOpenFailure(.transportUnavailable(code: code, "cannot connect to \(address): \(reason)"))
        case .closed(let reason):
            hooks.onFailure(.bluetoothDisconnected, "Bluetooth channel disconnected: \(reason)")
        case .transportClosed(let failure, whileOpen: false):
            hooks.onOpenFailure(.transportUnavailable(code: -4, BluetoothError.transportClosedWords(failure)))
        case .transportClosed(let failure, whileOpen: true):
            hooks.onFailure(.bluetoothDisconnected, "Bluetooth channel disconnected: \(BluetoothError.transportClosedWords(failure))")
        }
    }
}
