/// Asks devices for their names one at a time with Remote_Name_Request (Core Vol 4 Part E
/// §7.1.19), on an adapter the kernel owns: the commands go out and the events come back on a raw
/// HCI socket, shared with bluetoothd, so only the events about the device being asked count. A
/// value: ``start(now:)``, then every packet to ``received(_:now:)`` and the time to ``tick(now:)``.
public struct BlueZNameRequests: Sendable {
    /// What to do next.
    public enum Action: Sendable, Hashable {
        /// Send this command on the raw HCI socket.
        case send(HCIPacket)
        /// A device gave its name.
        case named(BDAddress, String)
        /// Every device was asked (or gave up on).
        case finished
    }

    /// How long one device may take to answer, in seconds; then the request is cancelled.
    public let nameTimeout: Double
    private var pending: [HCIInquiryResponse]
    private var current: (address: BDAddress, deadline: Double)?
    /// Whether every device was asked.
    public private(set) var isFinished = false

    /// Requests for each of `devices` (in this order), `nameTimeout` seconds each.
    public init(devices: [HCIInquiryResponse], nameTimeout: Double = 5) {
        pending = devices
        self.nameTimeout = nameTimeout
    }

    /// The first request (or ``Action/finished`` when there is nobody to ask).
    public mutating func start(now: Double) -> [Action] { next(now: now) }

    /// One packet from the socket: the name, or the controller's refusal, of the device being asked
    /// ends its request; anything else (other devices, bluetoothd's traffic, damage) is ignored.
    public mutating func received(_ packet: HCIPacket, now: Double) -> [Action] {
        guard let asking = current, case let .event(code, parameters) = packet,
              let event = try? HCIEvent(code: code, parameters: parameters) else { return [] }
        switch event {
        case let .remoteNameRequestComplete(status, address, name) where address == asking.address:
            current = nil
            let named: [Action] = status == 0 && !name.isEmpty ? [.named(address, name)] : []
            return named + next(now: now)
        case let .commandStatus(status, _, opcode) where opcode == HCICommand.Opcode.remoteNameRequest && status != 0:
            current = nil
            return next(now: now)
        default:
            return []
        }
    }

    /// Gives up on a device that did not answer in ``nameTimeout`` (cancelling its request).
    public mutating func tick(now: Double) -> [Action] {
        guard let asking = current, now >= asking.deadline else { return [] }
        current = nil
        return [.send(HCICommand.remoteNameRequestCancel(asking.address))] + next(now: now)
    }

    private mutating func next(now: Double) -> [Action] {
        guard !pending.isEmpty else {
            if isFinished { return [] }
            isFinished = true
            return [.finished]
        }
        let device = pending.removeFirst()
        current = (device.address, now + nameTimeout)
        return [.send(HCICommand.remoteNameRequest(device.address, pageScanRepetitionMode: device.pageScanRepetitionMode,
                                                   clockOffset: device.clockOffset | 0x8000))]
    }
}
