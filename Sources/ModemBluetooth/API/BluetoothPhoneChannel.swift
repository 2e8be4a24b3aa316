import ModemLinkProtocol

/// A phone's state machine on an RFCOMM byte stream, whichever the way down: our own host stack
/// (``BluetoothPhoneChannel``) or the kernel's RFCOMM socket (``BlueZPhoneDriver``).
protocol BluetoothPhoneWay: AnyObject, Sendable {
    /// Told of events and failures (weak: the owner keeps the way); set before ``start()``.
    var owner: (any BluetoothPhoneChannelOwner)? { get set }
    /// Connects (on the way's own thread).
    func start()
    /// Runs `body` with the machine on the way's thread (held until the channel is open).
    func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction])
    /// Disconnects and waits until the way's thread has ended.
    func stop()
}

/// Why a phone's RFCOMM channel ended or never opened.
enum BluetoothPhoneFailure: Sendable {
    /// The controller could not be brought up.
    case controller(String)
    /// Page, SDP or RFCOMM failed; `code` is the Communication API's open code (-2 connection failed, -4, -5).
    case connect(address: BDAddress, reason: String, code: Int32)
    /// The open channel closed (the device disconnected, the link was lost).
    case closed(String)
    /// The controller's transport closed (`whileOpen`: after the channel had opened).
    case transportClosed(String, whileOpen: Bool)
}

/// What a ``BluetoothPhoneWay`` tells the one who runs it.
protocol BluetoothPhoneChannelOwner: AnyObject, Sendable {
    /// An event of the phone's machine (on the host thread, with the host's clock).
    func phoneChannel(event: LinkEvent, machine: PhoneStateMachine, now: Double)
    /// The machine after each step.
    func phoneChannel(observe machine: PhoneStateMachine)
    /// Timers and queues of the owner's own, run on each tick while the channel is open.
    func phoneChannel(service machine: inout PhoneStateMachine, now: Double) -> [LinkAction]
    /// The channel ended or never opened (once; the way is stopping).
    func phoneChannel(failed: BluetoothPhoneFailure)
}

/// Runs a phone's state machine on an RFCOMM channel of our own host stack: connects (page, SDP
/// unless a channel is given, RFCOMM) when started, holds the machine's calls until the channel is
/// open, writes its frames on the channel back to back (``ModemLinkProtocol/StreamLinkStation``) and
/// feeds it what arrives. Shared by ``BluetoothManager`` (the Communication API's phone) and ``BluetoothLinkPhone``
/// (link transports for messaging), which differ only in what they do with events and failures.
///
/// `@unchecked Sendable`: the station and the channel are used on the host driver's thread only
/// (this object is the driver's ``HostClient``); other threads reach them through ``withMachine(_:)``.
final class BluetoothPhoneChannel: BluetoothPhoneWay, HostClient, @unchecked Sendable {
    /// Told of events and failures (weak: the owner keeps this channel); set before ``start()``.
    weak var owner: (any BluetoothPhoneChannelOwner)?
    private let address: BDAddress
    private let serverChannel: UInt8?
    private var host: HostDriver!
    private var station: StreamLinkStation<PhoneStateMachine>
    private var open: SerialChannelID?
    private var request: Int?
    private var held: [@Sendable (inout PhoneStateMachine, Double) -> [LinkAction]] = []
    private var unsent = 0
    private var ended = false

    /// - Parameters:
    ///   - machine: the phone's machine (its configuration and handshake name).
    ///   - gap: controller options; the role is always central.
    init(transport: any HCITransport, gap: GAPConfiguration, address: BDAddress, channel: UInt8?, machine: PhoneStateMachine) {
        self.address = address
        serverChannel = channel
        station = StreamLinkStation(machine: machine)
        var gap = gap
        gap.role = .central
        host = HostDriver(transport: transport, stack: HostStack(configuration: HostConfiguration(gap: gap)), client: self)
    }

    /// Starts the controller and connects.
    func start() { host.start() }

    /// Runs `body` with the machine on the host thread (held until the channel is open).
    func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction]) {
        host.perform { [self] stack, now in
            guard let open else {
                held.append(body)
                return []
            }
            return carry(station.perform(body(&station.machine, now)), on: open, stack: &stack, now: now)
        }
    }

    /// Disconnects (unless the channel already ended) and releases the controller.
    func stop() {
        if !ended {
            host.perform { [self] stack, now in
                guard let open else { return [] }
                return stack.disconnect(handle: open.handle, now: now)
            }
        }
        host.stop()
    }

    /// Carries out the station's actions: writes go on the channel, events to the owner.
    private func carry(_ actions: [StreamLinkAction], on channel: SerialChannelID, stack: inout HostStack, now: Double) -> [HostAction] {
        var out: [HostAction] = []
        for action in actions {
            switch action {
            case .write(let bytes):
                unsent += bytes.count
                out += stack.write(channel, bytes, now: now)
            case .event(let e):
                owner?.phoneChannel(observe: station.machine)
                owner?.phoneChannel(event: e, machine: station.machine, now: now)
            case .releaseResources:
                break
            }
        }
        owner?.phoneChannel(observe: station.machine)
        return out
    }

    func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready:
            let (id, actions) = stack.openSerialPort(to: address, channel: serverChannel, now: now)
            request = id
            return actions
        case .failed(let reason):
            fail(.controller(reason))
        case .openFailed(let id, let reason) where id == request:
            fail(.connect(address: address, reason: reason, code: -2))
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
            fail(.closed(reason))
        default:
            break
        }
        return []
    }

    func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        guard let open else { return [] }
        var actions = station.tick(now: now)
        if let owner { actions += station.perform(owner.phoneChannel(service: &station.machine, now: now)) }
        return carry(actions, on: open, stack: &stack, now: now)
    }

    func hostStopped(failure: String?) {
        guard !ended, let failure else { return }
        ended = true
        owner?.phoneChannel(failed: .transportClosed(failure, whileOpen: open != nil))
    }

    private func fail(_ failure: BluetoothPhoneFailure) {
        guard !ended else { return }
        ended = true
        owner?.phoneChannel(failed: failure)
        host.requestStop()
    }
}
