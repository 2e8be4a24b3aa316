import Foundation
import ModemLinkProtocol
import Synchronization

/// The device end of the channel protocol on Bluetooth RFCOMM (`modem bt device`): a controller
/// set up as a discoverable, connectable device with a Serial Port record in SDP; each phone that
/// opens our RFCOMM channel gets a ``ModemLinkProtocol/DeviceStateMachine`` of its own, which
/// follows the phone's mode (the hello's duplex flag). Master-slave requests are answered by the
/// handler (echo by default); duplex messages are echoed back as the device's own messages.
public final class BluetoothDeviceEmulator: HostClient, @unchecked Sendable {
    // @unchecked Sendable: everything mutable is used on the host driver's thread only (this object
    // is its client); other threads only call ``start()``, ``stop()`` and read the Mutex-guarded counts.

    /// What the device answers to a request (master-slave).
    public typealias Handler = @Sendable ([UInt8]) -> [UInt8]

    private let name: String
    private let configuration: LinkConfiguration
    private let handler: Handler
    private let log: @Sendable (String) -> Void
    private var host: HostDriver!
    private var stations: [SerialChannelID: StreamLinkStation<DeviceStateMachine>] = [:]
    private var unsent: [SerialChannelID: Int] = [:]
    /// Duplex messages waiting to be echoed (the machine sends one message at a time).
    private var echoes: [SerialChannelID: [[UInt8]]] = [:]
    private let counts = Mutex((requests: 0, messages: 0, connections: 0))
    private let failure = Mutex<String?>(nil)

    /// Creates an emulator (not started).
    /// - Parameters:
    ///   - transport: the controller.
    ///   - name: the Bluetooth name, and the name given in the handshake.
    ///   - channel: the RFCOMM server channel published in SDP (1...30).
    ///   - configuration: the protocol parameters (the mode follows each phone's).
    ///   - gap: controller options; the role is always device.
    ///   - handler: the reply to a request (default: the request itself).
    ///   - log: one line per connection, disconnection and failure.
    public init(transport: any HCITransport, name: String, channel: UInt8 = 1,
                configuration: LinkConfiguration = .byteStream(mode: .masterSlave),
                gap: GAPConfiguration = GAPConfiguration(role: .central), handler: @escaping Handler = { $0 },
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.name = name
        self.configuration = configuration
        self.handler = handler
        self.log = log
        var gap = gap
        gap.role = .device(name: name, classOfDevice: 0x001F00)
        host = HostDriver(transport: transport,
                          stack: HostStack(configuration: HostConfiguration(gap: gap, serverChannel: channel, serviceName: name)),
                          client: self)
    }

    /// Starts serving.
    public func start() { host.start() }

    /// Stops serving and releases the controller.
    public func stop() { host.stop() }

    /// Waits until the emulator stops (by ``stop()`` or because the controller failed); the failure, if any.
    public func wait() -> String? {
        host.waitUntilStopped()
        return failure.withLock { $0 }
    }

    /// Requests answered so far (master-slave).
    public var requestsHandled: Int { counts.withLock { $0.requests } }
    /// Duplex messages echoed so far.
    public var messagesEchoed: Int { counts.withLock { $0.messages } }
    /// Connections accepted so far.
    public var connections: Int { counts.withLock { $0.connections } }

    public func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready(let address):
            log("\(name) at \(address): discoverable, Serial Port on RFCOMM channel \(stack.configuration.serverChannel ?? 0)")
        case .failed(let reason):
            failure.withLock { $0 = reason }
            log("the controller failed: \(reason)")
            host.requestStop()
        case .opened(let id, let address, let incoming) where incoming:
            var machine = DeviceStateMachine(configuration: configuration, name: name, mode: .followPhone)
            machine.attach()
            stations[id] = StreamLinkStation(machine: machine)
            unsent[id] = 0
            counts.withLock { $0.connections += 1 }
            log("connected: \(address), \(id)")
        case .received(let id, let bytes):
            guard var station = stations[id] else { return [] }
            let actions = station.received(bytes: bytes, now: now)
            stations[id] = station
            return carry(actions, on: id, stack: &stack, now: now)
        case .sent(let id, let bytes):
            guard stations[id] != nil else { return [] }
            let left = max(0, (unsent[id] ?? 0) - bytes)
            unsent[id] = left
            if left == 0, var station = stations[id] {
                let actions = station.transmitted(now: now)
                stations[id] = station
                return carry(actions, on: id, stack: &stack, now: now)
            }
        case .closed(let id, let reason, _):
            if stations.removeValue(forKey: id) != nil { log("disconnected: \(id): \(reason)") }
            unsent[id] = nil
            echoes[id] = nil
        case .damaged(let what):
            log("dropped: \(what)")
        default:
            break
        }
        return []
    }

    public func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        var out: [HostAction] = []
        for id in stations.keys.sorted(by: { ($0.handle, $0.dlci) < ($1.handle, $1.dlci) }) {
            guard var station = stations[id] else { continue }
            let actions = station.tick(now: now)
            stations[id] = station
            out += carry(actions + nextEcho(on: id, now: now), on: id, stack: &stack, now: now)
        }
        return out
    }

    public func hostStopped(failure reason: String?) {
        if let reason {
            failure.withLock { $0 = reason }
            log(BluetoothError.transportClosedWords(reason))
        }
    }

    /// Carries out a station's actions: writes on its channel; requests answered, duplex messages echoed.
    private func carry(_ actions: [StreamLinkAction], on id: SerialChannelID, stack: inout HostStack, now: Double) -> [HostAction] {
        var out: [HostAction] = []
        var queue = actions[...]
        while let action = queue.popFirst() {
            switch action {
            case .write(let bytes):
                unsent[id, default: 0] += bytes.count
                out += stack.write(id, bytes, now: now)
            case .event(.received(let message, let data)):
                guard var station = stations[id] else { continue }
                let more: [StreamLinkAction]
                if station.machine.mode == .masterSlave {
                    counts.withLock { $0.requests += 1 }
                    more = station.perform(station.machine.reply(handler(data), to: message, now: now).actions)
                } else {
                    echoes[id, default: []].append(data)
                    more = []
                }
                stations[id] = station
                queue.append(contentsOf: more)
            case .event, .releaseResources:
                break
            }
            if queue.isEmpty { queue.append(contentsOf: nextEcho(on: id, now: now)) }
        }
        return out
    }

    /// Duplex: starts echoing the oldest waiting message when the machine takes one.
    private func nextEcho(on id: SerialChannelID, now: Double) -> [StreamLinkAction] {
        guard let data = echoes[id]?.first, var station = stations[id] else { return [] }
        let (code, actions) = station.machine.send(data, now: now)
        guard code == ReturnCode.ok else { return [] }
        echoes[id]?.removeFirst()
        counts.withLock { $0.messages += 1 }
        let more = station.perform(actions)
        stations[id] = station
        return more
    }
}
