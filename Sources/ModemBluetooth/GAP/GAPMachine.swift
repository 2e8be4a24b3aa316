/// The generic access profile over an ``HCIMachine`` as a pure value (Core Vol 3 Part C §4 and §6):
/// inquiry with names, outgoing and incoming ACL connections, disconnection with reasons, and Secure
/// Simple Pairing "just works". Inputs carry `now`; outputs are ``GAPAction``s for a driver.
public struct GAPMachine: Sendable {
    private struct Found: Sendable {
        var name: String?
        var complete = false
        var pageScanRepetitionMode: UInt8 = 1
        var clockOffset: UInt16 = 0
    }

    private enum InquiryPhase: Sendable {
        case scanning(deadline: Double)
        case cancelling
        case naming(address: BDAddress, deadline: Double)
    }

    private struct Inquiry: Sendable {
        var phase: InquiryPhase
        var order: [BDAddress] = []
        var found: [BDAddress: Found] = [:]
        var toName: [BDAddress] = []
    }

    private struct Link: Sendable {
        var address: BDAddress
        var incoming: Bool
        var silent = false  // one we did not want: disconnected without telling anyone
    }

    /// The most devices one inquiry keeps (the air is not trusted).
    public static let maximumDevicesPerInquiry = 255

    /// The configuration.
    public let configuration: GAPConfiguration
    /// Accepts incoming connections (always true for a device).
    public var acceptIncoming: Bool
    /// The HCI layer underneath (state, ACL sizes, warnings).
    public private(set) var hci: HCIMachine

    private var inquiry: Inquiry?
    private var links: [UInt16: Link] = [:]
    private var outgoing: [BDAddress: Double] = [:]   // deadline
    private var accepting: [BDAddress: Double] = [:]  // deadline
    private var abandoned: Set<BDAddress> = []

    /// A machine for `configuration`; nothing happens before ``start(now:)``.
    public init(configuration: GAPConfiguration) {
        self.configuration = configuration
        var extra: [HCIPacket] = []
        if case let .device(name, classOfDevice) = configuration.role {
            extra = [
                HCICommand.writeLocalName(name),
                HCICommand.writeClassOfDevice(classOfDevice),
                HCICommand.writeExtendedInquiryResponse(EIRData.build(name: name, uuid16s: configuration.serviceUUID16s)),
                HCICommand.writeScanEnable(0x03),
            ]
            acceptIncoming = true
        } else {
            acceptIncoming = configuration.acceptIncoming
        }
        hci = HCIMachine(extraScript: extra, pageTimeoutSlots: configuration.pageTimeoutSlots,
                         aclMTUOverride: configuration.aclMTUOverride, aclCountOverride: configuration.aclCountOverride,
                         commandTimeout: configuration.commandTimeout)
    }

    // MARK: - Inputs

    /// Resets the controller and runs the init script; ``GAPAction/ready(address:)`` when done.
    public mutating func start(now: Double) -> [GAPAction] {
        inquiry = nil
        links = [:]
        outgoing = [:]
        accepting = [:]
        abandoned = []
        return map(hci.start(now: now), now: now)
    }

    /// A packet from the transport.
    public mutating func received(_ packet: HCIPacket, now: Double) -> [GAPAction] {
        map(hci.received(packet, now: now), now: now)
    }

    /// Timers: command timeouts, the end of inquiry, name and connection guards.
    public mutating func tick(now: Double) -> [GAPAction] {
        var out = map(hci.tick(now: now), now: now)
        if let current = inquiry {
            switch current.phase {
            case let .scanning(deadline) where now >= deadline:
                inquiry?.phase = .cancelling
                out += command(HCICommand.inquiryCancel(), now: now)
            case let .naming(_, deadline) where now >= deadline:
                out += nextName(now: now)
            default:
                break
            }
        }
        for (address, deadline) in outgoing where now >= deadline {
            outgoing[address] = nil
            abandoned.insert(address)
            out += command(HCICommand.createConnectionCancel(address), now: now)
            out.append(.connectFailed(address: address,
                                      reason: "no answer from \(address) (no Connection Complete in \(seconds(configuration.connectTimeout)))"))
        }
        for (address, deadline) in accepting where now >= deadline {
            accepting[address] = nil
            out.append(.connectFailed(address: address, reason: "\(address) paged us but the connection never completed"))
        }
        return out
    }

    /// Runs an inquiry (GIAC) for `seconds`, then asks each device without a complete name for it;
    /// ``GAPAction/found(address:name:)`` per device and per name, then
    /// ``GAPAction/inquiryComplete(failure:)``. Ignored while an inquiry runs.
    public mutating func inquire(seconds: Double, now: Double) -> [GAPAction] {
        if case let .failed(reason) = hci.state { return [.inquiryComplete(failure: reason)] }
        guard inquiry == nil else { return [] }
        let length = UInt8(min(max((max(0, seconds) / 1.28).rounded(.up), 1), 0x30))
        inquiry = Inquiry(phase: .scanning(deadline: now + max(0, seconds)))
        return command(HCICommand.inquiry(length: length), now: now)
    }

    /// Pages `address`: ``GAPAction/connected(handle:address:incoming:)`` or
    /// ``GAPAction/connectFailed(address:reason:)``.
    public mutating func connect(_ address: BDAddress, now: Double) -> [GAPAction] {
        if case let .failed(reason) = hci.state { return [.connectFailed(address: address, reason: reason)] }
        if let (handle, _) = links.first(where: { $0.value.address == address && !$0.value.silent }) {
            return [.connected(handle: handle, address: address, incoming: links[handle]!.incoming)]
        }
        guard outgoing[address] == nil else { return [] }
        abandoned.remove(address)
        outgoing[address] = now + configuration.connectTimeout
        var psrm: UInt8 = 1, clock: UInt16 = 0
        if let seen = inquiry?.found[address] ?? lastFound[address] {
            psrm = seen.pageScanRepetitionMode
            clock = seen.clockOffset | 0x8000
        }
        return command(HCICommand.createConnection(address, pageScanRepetitionMode: psrm, clockOffset: clock), now: now)
    }

    /// Disconnects `handle` with `reason` (0x13 remote user terminated connection, usually);
    /// ``GAPAction/disconnected(handle:reason:description:)`` follows. Unknown handles are ignored.
    public mutating func disconnect(handle: UInt16, reason: UInt8, now: Double) -> [GAPAction] {
        guard links[handle] != nil else { return [] }
        return command(HCICommand.disconnect(handle: handle, reason: reason), now: now)
    }

    /// Queues a whole L2CAP frame for `handle`; it leaves fragmented, paced by ACL credits.
    public mutating func sendL2CAP(handle: UInt16, pdu: [UInt8]) -> [GAPAction] {
        map(hci.sendACL(handle: handle, pdu: pdu), now: 0)
    }

    /// Bytes queued for `handle` and not yet given to the controller.
    public func queuedACLBytes(handle: UInt16) -> Int { hci.queuedACLBytes(handle: handle) }

    /// Asks for authentication on `handle` (Secure Simple Pairing, answered "just works").
    public mutating func authenticate(handle: UInt16, now: Double) -> [GAPAction] {
        guard links[handle] != nil else { return [] }
        return command(HCICommand.authenticationRequested(handle: handle), now: now)
    }

    /// The open links: handle → address.
    public var connections: [UInt16: BDAddress] { links.filter { !$0.value.silent }.mapValues(\.address) }

    /// The earliest time ``tick(now:)`` has work to do, if any.
    public var nextDeadline: Double? {
        var times: [Double] = Array(outgoing.values) + Array(accepting.values)
        if let d = hci.nextDeadline { times.append(d) }
        switch inquiry?.phase {
        case let .scanning(deadline)?: times.append(deadline)
        case let .naming(_, deadline)?: times.append(deadline)
        default: break
        }
        return times.min()
    }

    // Devices of the last finished inquiry, for their page scan mode and clock offset.
    private var lastFound: [BDAddress: Found] = [:]

    // MARK: - Plumbing

    private mutating func command(_ packet: HCIPacket, now: Double) -> [GAPAction] {
        map(hci.command(packet, now: now), now: now)
    }

    private mutating func map(_ outputs: [HCIMachine.Output], now: Double) -> [GAPAction] {
        var out: [GAPAction] = []
        for output in outputs {
            switch output {
            case let .send(packet): out.append(.send(packet))
            case let .ready(address): out.append(.ready(address: address))
            case let .failed(reason): out += failed(reason)
            case let .acl(handle, pdu):
                if links[handle]?.silent == false { out.append(.l2cap(handle: handle, pdu: pdu)) }
            case let .aclTransmitted(handle): out.append(.aclTransmitted(handle: handle))
            case let .damaged(reason): out.append(.damaged(reason))
            case let .commandFinished(command, result): out += finished(command, result, now: now)
            case let .event(event): out += handle(event, now: now)
            }
        }
        return out
    }

    private mutating func failed(_ reason: String) -> [GAPAction] {
        var out: [GAPAction] = [.failed(reason)]
        if inquiry != nil {
            inquiry = nil
            out.append(.inquiryComplete(failure: reason))
        }
        for address in outgoing.keys.sorted() { out.append(.connectFailed(address: address, reason: reason)) }
        outgoing = [:]
        accepting = [:]
        for (handle, link) in links.sorted(by: { $0.key < $1.key }) where !link.silent {
            out.append(.disconnected(handle: handle, reason: 0x1F, description: reason))
        }
        links = [:]
        return out
    }

    private static func address(in command: [UInt8]) -> BDAddress? {
        command.count >= 6 ? BDAddress(wire: command.prefix(6)) : nil
    }

    private func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    private mutating func finished(_ command: HCIPacket, _ result: HCIMachine.CommandResult, now: Double) -> [GAPAction] {
        guard case let .command(opcode, parameters) = command else { return [] }
        let failure: String?
        switch result {
        case let .status(status): failure = status == 0 ? nil : HCIErrorCode.describe(status)
        case let .complete(returned): failure = (returned.first ?? 0) == 0 ? nil : HCIErrorCode.describe(returned[0])
        case .timedOut: failure = "no answer from the controller to \(HCICommand.name(of: opcode))"
        }
        switch opcode {
        case HCICommand.Opcode.inquiry:
            guard let failure else { return [] }
            inquiry = nil
            if result == .timedOut { return [.inquiryComplete(failure: failure)] }
            return [.inquiryComplete(failure: "the controller refused Inquiry: \(failure)")]
        case HCICommand.Opcode.inquiryCancel:
            if case .cancelling? = inquiry?.phase { return startNaming(now: now) }
            return []
        case HCICommand.Opcode.createConnection:
            guard let failure, let address = Self.address(in: parameters), outgoing[address] != nil else { return [] }
            outgoing[address] = nil
            return [.connectFailed(address: address, reason: "cannot connect to \(address): \(failure)")]
        case HCICommand.Opcode.remoteNameRequest:
            guard failure != nil, let address = Self.address(in: parameters),
                  case let .naming(current, _)? = inquiry?.phase, current == address else { return [] }
            return nextName(now: now)
        case HCICommand.Opcode.acceptConnectionRequest:
            guard let failure, let address = Self.address(in: parameters), accepting[address] != nil else { return [] }
            accepting[address] = nil
            return [.connectFailed(address: address, reason: "cannot accept \(address): \(failure)")]
        default:
            return []
        }
    }

    // MARK: - Events

    private mutating func handle(_ event: HCIEvent, now: Double) -> [GAPAction] {
        switch event {
        case .inquiryComplete:
            if case .scanning? = inquiry?.phase { return startNaming(now: now) }
            return []
        case let .inquiryResult(responses), let .inquiryResultWithRSSI(responses):
            return responses.flatMap { seen($0, name: nil) }
        case let .extendedInquiryResult(response):
            return seen(response, name: response.eir.flatMap { EIRData(parsing: $0).name })
        case let .remoteNameRequestComplete(status, address, name):
            guard case let .naming(current, _)? = inquiry?.phase, current == address else { return [] }
            var out: [GAPAction] = []
            if status == 0 {
                inquiry?.found[address]?.name = name
                inquiry?.found[address]?.complete = true
                out.append(.found(address: address, name: name))
            }
            return out + nextName(now: now)
        case let .connectionComplete(status, handle, address, linkType, _):
            guard linkType == 0x01 else { return [] }
            return connectionComplete(status: status, handle: handle, address: address, now: now)
        case let .connectionRequest(address, _, linkType):
            if linkType == 0x01, acceptIncoming, links.count < 7 {
                accepting[address] = now + configuration.connectTimeout
                return command(HCICommand.acceptConnectionRequest(address, role: 0x01), now: now)
            }
            return command(HCICommand.rejectConnectionRequest(address, reason: linkType == 0x01 ? 0x0F : 0x0D), now: now)
        case let .disconnectionComplete(status, handle, reason):
            guard status == 0, let link = links.removeValue(forKey: handle) else { return [] }
            if link.silent { return [] }
            return [.disconnected(handle: handle, reason: reason, description: HCIErrorCode.name(reason))]
        case let .linkKeyRequest(address):
            return command(HCICommand.linkKeyRequestNegativeReply(address), now: now)
        case let .pinCodeRequest(address):
            return command(HCICommand.pinCodeRequestNegativeReply(address), now: now)
        case let .ioCapabilityRequest(address):
            return command(HCICommand.ioCapabilityRequestReply(address), now: now)
        case let .userConfirmationRequest(address, _):
            return command(HCICommand.userConfirmationRequestReply(address), now: now)
        case let .hardwareError(code):
            return failed("the controller reports hardware error \(HCIFormat.hex8(code))")
        default:
            return []
        }
    }

    private mutating func connectionComplete(status: UInt8, handle: UInt16, address: BDAddress, now: Double) -> [GAPAction] {
        if outgoing.removeValue(forKey: address) != nil {
            guard status == 0 else {
                let reason = status == 0x04
                    ? "no answer from \(address) (page timeout)"
                    : "cannot connect to \(address): \(HCIErrorCode.describe(status))"
                return [.connectFailed(address: address, reason: reason)]
            }
            links[handle] = Link(address: address, incoming: false)
            return [.connected(handle: handle, address: address, incoming: false)]
        }
        if accepting.removeValue(forKey: address) != nil {
            guard status == 0 else {
                return [.connectFailed(address: address, reason: "\(address) paged us but the connection failed: \(HCIErrorCode.describe(status))")]
            }
            links[handle] = Link(address: address, incoming: true)
            return [.connected(handle: handle, address: address, incoming: true)]
        }
        guard status == 0 else { return [] }
        if abandoned.remove(address) != nil {
            // We gave up on it before it completed: nobody wants this link.
            links[handle] = Link(address: address, incoming: false, silent: true)
            return command(HCICommand.disconnect(handle: handle, reason: 0x13), now: now)
        }
        links[handle] = Link(address: address, incoming: true)
        return [.connected(handle: handle, address: address, incoming: true)]
    }

    /// Results count while scanning and until the cancel is answered, never during names.
    private mutating func seen(_ response: HCIInquiryResponse, name: (text: String, complete: Bool)?) -> [GAPAction] {
        switch inquiry?.phase {
        case .scanning?, .cancelling?: return seenRecord(response, name: name)
        default: return []
        }
    }

    private mutating func seenRecord(_ response: HCIInquiryResponse, name: (text: String, complete: Bool)?) -> [GAPAction] {
        let address = response.address
        var entry: Found
        var out: [GAPAction] = []
        if let known = inquiry?.found[address] {
            entry = known
        } else {
            guard (inquiry?.order.count ?? 0) < Self.maximumDevicesPerInquiry else { return [] }
            entry = Found()
            inquiry?.order.append(address)
        }
        let isNew = inquiry?.found[address] == nil
        entry.pageScanRepetitionMode = response.pageScanRepetitionMode
        entry.clockOffset = response.clockOffset
        var nameChanged = false
        if let name, !name.text.isEmpty, !entry.complete, name.complete || entry.name == nil {
            nameChanged = entry.name != name.text || name.complete
            entry.name = name.text
            entry.complete = name.complete
        }
        inquiry?.found[address] = entry
        if isNew || nameChanged { out.append(.found(address: address, name: entry.name)) }
        return out
    }

    private mutating func startNaming(now: Double) -> [GAPAction] {
        guard var current = inquiry else { return [] }
        current.toName = current.order.filter { !(current.found[$0]?.complete ?? false) }
        inquiry = current
        return nextName(now: now)
    }

    private mutating func nextName(now: Double) -> [GAPAction] {
        guard var current = inquiry else { return [] }
        guard !current.toName.isEmpty else {
            lastFound = current.found
            inquiry = nil
            return [.inquiryComplete(failure: nil)]
        }
        let address = current.toName.removeFirst()
        current.phase = .naming(address: address, deadline: now + configuration.nameTimeout)
        inquiry = current
        let seen = current.found[address]
        return command(HCICommand.remoteNameRequest(address, pageScanRepetitionMode: seen?.pageScanRepetitionMode ?? 1,
                                                    clockOffset: (seen?.clockOffset ?? 0) | 0x8000), now: now)
    }
}
