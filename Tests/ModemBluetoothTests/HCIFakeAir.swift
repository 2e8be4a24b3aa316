import Testing
import ModemTestSupport
@testable import ModemBluetooth

/// A scripted fake of controllers sharing one air, for driving host machines with no threads and
/// no Python: each controller answers the init commands, inquiry (results per inquiry mode, with
/// EIR), remote names, paging (request, accept, reject, page timeout, cancel), disconnection with
/// reasons (the local side sees 0x16), and ACL data with Number Of Completed Packets, checking the
/// host never sends more than its ACL buffers or longer fragments than the ACL length.
final class HCIFakeAir {
    /// A device on the air with no host of ours: discoverable, answers its name, never connectable.
    struct Bystander {
        var address: BDAddress
        var name: String
        var classOfDevice: UInt32 = 0x5A020C
        var eir: Bool = true
        /// False: name requests end in a page timeout.
        var answersName: Bool = true
    }

    final class Controller {
        let address: BDAddress
        var aclLength: Int
        var aclCount: Int
        /// Opcodes answered with 0x01 unknown command.
        var unsupported: Set<UInt16> = []
        /// Opcodes never answered.
        var silent: Set<UInt16> = []
        var localName = ""
        var classOfDevice: UInt32 = 0
        var eir: [UInt8]?
        var scan: UInt8 = 0
        var inquiryMode: UInt8 = 0
        var commands: [HCIPacket] = []
        var aclInFlight: [UInt16: Int] = [:]
        var maxACLInFlight = 0
        var violations: [String] = []
        var links: [UInt16: (peer: Int, peerHandle: UInt16)] = [:]
        var nextHandle: UInt16 = 0x0001
        /// Data received per handle, as sent by the peer host (fragments joined by PB).
        var aclFragmentsFromHost: [(handle: UInt16, boundary: UInt8, data: [UInt8])] = []

        init(address: BDAddress, aclLength: Int, aclCount: Int) {
            self.address = address
            self.aclLength = aclLength
            self.aclCount = aclCount
        }

        var totalInFlight: Int { aclInFlight.values.reduce(0, +) }
    }

    private struct Scheduled {
        var at: Double
        var controller: Int
        var packet: HCIPacket
        var key: String?
        var order: Int
    }

    var controllers: [Controller] = []
    var bystanders: [Bystander] = []
    var now: Double = 0
    /// Seconds before an unanswered page or name request ends with 0x04.
    var pageTimeout: Double = 5.12
    /// Seconds before the controller reports an ACL packet complete; by default immediate.
    var completionDelay: (inout TestRandom) -> Double = { _ in 0.001 }
    var random = TestRandom(seed: 1)
    private var pending: [Scheduled] = []
    private var counter = 0
    /// Pages waiting for the paged host's answer: (from, to).
    private var pages: [(from: Int, to: Int)] = []

    @discardableResult
    func addController(_ address: String, aclLength: Int = 1021, aclCount: Int = 8) -> Int {
        controllers.append(Controller(address: BDAddress(address)!, aclLength: aclLength, aclCount: aclCount))
        return controllers.count - 1
    }

    private func schedule(_ packet: HCIPacket, to controller: Int, after delay: Double = 0, key: String? = nil) {
        counter += 1
        pending.append(Scheduled(at: now + delay, controller: controller, packet: packet, key: key, order: counter))
    }

    private func event(_ event: HCIEvent, to controller: Int, after delay: Double = 0, key: String? = nil) {
        schedule(event.packet, to: controller, after: delay, key: key)
    }

    /// The next packet due for any host by `time`, earliest first.
    func nextDue(by time: Double) -> (controller: Int, packet: HCIPacket)? {
        guard let index = pending.indices.filter({ pending[$0].at <= time })
            .min(by: { (pending[$0].at, pending[$0].order) < (pending[$1].at, pending[$1].order) }) else { return nil }
        let item = pending.remove(at: index)
        let c = controllers[item.controller]
        if case let .event(code, parameters) = item.packet, code == HCIEvent.Code.numberOfCompletedPackets,
           case let .numberOfCompletedPackets(entries)? = try? HCIEvent(code: code, parameters: parameters) {
            for e in entries { c.aclInFlight[e.handle, default: 0] -= Int(e.count) }
        }
        return (item.controller, item.packet)
    }

    private func controller(at address: BDAddress) -> Int? {
        controllers.firstIndex { $0.address == address }
    }

    private func complete(_ i: Int, _ opcode: UInt16, _ parameters: [UInt8] = [0]) {
        event(.commandComplete(numCommands: 1, opcode: opcode, returnParameters: parameters), to: i)
    }

    private func status(_ i: Int, _ opcode: UInt16, _ status: UInt8 = 0) {
        event(.commandStatus(status: status, numCommands: 1, opcode: opcode), to: i)
    }

    private func inquiryResult(for i: Int, address: BDAddress, classOfDevice: UInt32, eir: [UInt8]?) -> HCIEvent {
        let response = HCIInquiryResponse(address: address, pageScanRepetitionMode: 1, classOfDevice: classOfDevice,
                                          clockOffset: 0x1234, rssi: -50, eir: eir)
        switch controllers[i].inquiryMode {
        case 2 where eir != nil: return .extendedInquiryResult(response)
        case 1, 2: return .inquiryResultWithRSSI([response])
        default:
            var plain = response
            plain.rssi = nil
            return .inquiryResult([plain])
        }
    }

    /// A packet from host `i` to its controller.
    func fromHost(_ i: Int, _ packet: HCIPacket) {
        let c = controllers[i]
        switch packet {
        case let .command(opcode, p):
            c.commands.append(packet)
            if c.silent.contains(opcode) { return }
            if c.unsupported.contains(opcode) { return complete(i, opcode, [0x01]) }
            command(i, opcode, p)
        case let .acl(handle, boundary, _, data):
            if data.count > c.aclLength { c.violations.append("fragment of \(data.count) > \(c.aclLength)") }
            c.aclInFlight[handle, default: 0] += 1
            c.maxACLInFlight = max(c.maxACLInFlight, c.totalInFlight)
            if c.totalInFlight > c.aclCount { c.violations.append("\(c.totalInFlight) ACL packets in flight > \(c.aclCount)") }
            c.aclFragmentsFromHost.append((handle, boundary, data))
            guard let link = c.links[handle] else { return }
            schedule(.acl(handle: link.peerHandle, boundary: boundary, broadcast: 0, data: data), to: link.peer, after: 0.0005)
            event(.numberOfCompletedPackets([HCICompletedPackets(handle: handle, count: 1)]), to: i,
                  after: completionDelay(&random))
        default:
            c.violations.append("host sent \(packet)")
        }
    }

    private func command(_ i: Int, _ opcode: UInt16, _ p: [UInt8]) {
        let c = controllers[i]
        let address = p.count >= 6 ? BDAddress(wire: p.prefix(6)) : nil
        switch opcode {
        case HCICommand.Opcode.reset:
            for (handle, link) in c.links {
                controllers[link.peer].links[link.peerHandle] = nil
                event(.disconnectionComplete(status: 0, handle: link.peerHandle, reason: 0x13), to: link.peer)
                c.links[handle] = nil
            }
            c.scan = 0; c.inquiryMode = 0; c.aclInFlight = [:]
            pending.removeAll { $0.controller == i }
            complete(i, opcode)
        case HCICommand.Opcode.readBDADDR: complete(i, opcode, [0] + c.address.wire)
        case HCICommand.Opcode.readBufferSize:
            var r: [UInt8] = [0]
            r.appendLE(UInt16(c.aclLength)); r.append(0x40); r.appendLE(UInt16(c.aclCount)); r.appendLE(UInt16(0))
            complete(i, opcode, r)
        case HCICommand.Opcode.readLocalVersionInformation: complete(i, opcode, [0, 0x0B, 0, 0, 0x0B, 0xFF, 0xFF, 0, 0])
        case HCICommand.Opcode.writeInquiryMode: c.inquiryMode = p.first ?? 0; complete(i, opcode)
        case HCICommand.Opcode.writeLocalName:
            c.localName = String(decoding: p.prefix { $0 != 0 }, as: UTF8.self); complete(i, opcode)
        case HCICommand.Opcode.writeClassOfDevice:
            var r = ByteReader(p); c.classOfDevice = (try? r.u24le()) ?? 0; complete(i, opcode)
        case HCICommand.Opcode.writeExtendedInquiryResponse: c.eir = Array(p.dropFirst()); complete(i, opcode)
        case HCICommand.Opcode.writeScanEnable: c.scan = p.first ?? 0; complete(i, opcode)
        case HCICommand.Opcode.setEventMask, HCICommand.Opcode.writeSimplePairingMode, HCICommand.Opcode.writePageTimeout:
            complete(i, opcode)
        case HCICommand.Opcode.inquiry:
            status(i, opcode)
            var delay = 0.05
            for (j, other) in controllers.enumerated() where j != i && other.scan & 0x01 != 0 {
                event(inquiryResult(for: i, address: other.address, classOfDevice: other.classOfDevice, eir: other.eir),
                      to: i, after: delay, key: "inquiry-\(i)")
                delay += 0.05
            }
            for b in bystanders {
                event(inquiryResult(for: i, address: b.address, classOfDevice: b.classOfDevice,
                                    eir: b.eir ? EIRData.build(name: b.name) : nil), to: i, after: delay, key: "inquiry-\(i)")
                delay += 0.05
            }
            let length = Double(p.count > 3 ? p[3] : 1) * 1.28
            event(.inquiryComplete(status: 0), to: i, after: length, key: "inquiry-\(i)")
        case HCICommand.Opcode.inquiryCancel:
            pending.removeAll { $0.key == "inquiry-\(i)" }
            complete(i, opcode)
        case HCICommand.Opcode.remoteNameRequest:
            status(i, opcode)
            guard let address else { return }
            if let j = controller(at: address), controllers[j].scan & 0x02 != 0 {
                event(.remoteNameRequestComplete(status: 0, address: address, name: controllers[j].localName), to: i, after: 0.02)
            } else if let b = bystanders.first(where: { $0.address == address && $0.answersName }) {
                event(.remoteNameRequestComplete(status: 0, address: address, name: b.name), to: i, after: 0.02)
            } else {
                event(.remoteNameRequestComplete(status: 0x04, address: address, name: ""), to: i, after: pageTimeout)
            }
        case HCICommand.Opcode.createConnection:
            status(i, opcode)
            guard let address else { return }
            if let j = controller(at: address), controllers[j].scan & 0x02 != 0 {
                pages.append((i, j))
                event(.connectionRequest(address: c.address, classOfDevice: c.classOfDevice, linkType: 1), to: j, after: 0.01)
            } else {
                event(.connectionComplete(status: 0x04, handle: 0, address: address, linkType: 1, encryption: 0), to: i,
                      after: pageTimeout, key: "page-\(i)-\(address)")
            }
        case HCICommand.Opcode.createConnectionCancel:
            complete(i, opcode, [0] + p.prefix(6))
            guard let address else { return }
            pending.removeAll { $0.key == "page-\(i)-\(address)" }
            if let k = pages.firstIndex(where: { $0.from == i && controllers[$0.to].address == address }) { pages.remove(at: k) }
            event(.connectionComplete(status: 0x02, handle: 0, address: address, linkType: 1, encryption: 0), to: i)
        case HCICommand.Opcode.acceptConnectionRequest, HCICommand.Opcode.rejectConnectionRequest:
            status(i, opcode)
            guard let address, let k = pages.firstIndex(where: { $0.to == i && controllers[$0.from].address == address })
            else { return }
            let from = pages.remove(at: k).from
            if opcode == HCICommand.Opcode.rejectConnectionRequest {
                event(.connectionComplete(status: p.count > 6 ? p[6] : 0x0F, handle: 0, address: c.address, linkType: 1,
                                          encryption: 0), to: from, after: 0.01)
                return
            }
            let pager = controllers[from]
            let hFrom = pager.nextHandle, hTo = c.nextHandle
            pager.nextHandle += 1; c.nextHandle += 1
            pager.links[hFrom] = (i, hTo)
            c.links[hTo] = (from, hFrom)
            event(.connectionComplete(status: 0, handle: hFrom, address: c.address, linkType: 1, encryption: 0), to: from, after: 0.01)
            event(.connectionComplete(status: 0, handle: hTo, address: pager.address, linkType: 1, encryption: 0), to: i, after: 0.01)
        case HCICommand.Opcode.disconnect:
            var r = ByteReader(p)
            guard let handle = try? r.u16le(), let reason = try? r.u8(), let link = c.links[handle] else {
                return status(i, opcode, 0x02)
            }
            status(i, opcode)
            dropLink(i, handle: handle, localReason: 0x16, remoteReason: reason, peer: link)
        case HCICommand.Opcode.linkKeyRequestNegativeReply, HCICommand.Opcode.pinCodeRequestNegativeReply,
             HCICommand.Opcode.ioCapabilityRequestReply, HCICommand.Opcode.userConfirmationRequestReply:
            complete(i, opcode, [0] + p.prefix(6))
        default:
            complete(i, opcode, [0x01])
        }
    }

    private func dropLink(_ i: Int, handle: UInt16, localReason: UInt8, remoteReason: UInt8, peer link: (peer: Int, peerHandle: UInt16)) {
        let c = controllers[i], other = controllers[link.peer]
        c.links[handle] = nil
        other.links[link.peerHandle] = nil
        c.aclInFlight[handle] = nil
        other.aclInFlight[link.peerHandle] = nil
        pending.removeAll {
            if case .acl(let h, _, _, _) = $0.packet { return ($0.controller == link.peer && h == link.peerHandle) || ($0.controller == i && h == handle) }
            if case let .event(code, _) = $0.packet, code == HCIEvent.Code.numberOfCompletedPackets {
                return $0.controller == i || $0.controller == link.peer  // flushed with the link (one link per test)
            }
            return false
        }
        event(.disconnectionComplete(status: 0, handle: handle, reason: localReason), to: i, after: 0.01)
        event(.disconnectionComplete(status: 0, handle: link.peerHandle, reason: remoteReason), to: link.peer, after: 0.01)
    }

    /// Link loss: both sides see `reason` (0x08 connection timeout).
    func loseLink(_ i: Int, handle: UInt16, reason: UInt8 = 0x08) {
        guard let link = controllers[i].links[handle] else { return }
        dropLink(i, handle: handle, localReason: reason, remoteReason: reason, peer: link)
    }

    /// Something only the controller can originate (a peer's SSP request, say).
    func inject(_ event: HCIEvent, to i: Int) { self.event(event, to: i) }

    /// Any packet for host `i`, due now (hostile ACL data, say).
    func deliver(_ packet: HCIPacket, to i: Int) { schedule(packet, to: i) }

    /// When the next packet falls due (nil: nothing pending).
    var nextDueTime: Double? { pending.map(\.at).min() }
}

/// Machines on a ``HCIFakeAir``, advanced in steps of simulated time.
struct GAPRig {
    var air = HCIFakeAir()
    var machines: [GAPMachine] = []
    /// Everything each machine reported, except `.send`.
    var reports: [[GAPAction]] = []

    mutating func add(_ address: String, _ configuration: GAPConfiguration, aclLength: Int = 1021, aclCount: Int = 8) -> Int {
        let i = air.addController(address, aclLength: aclLength, aclCount: aclCount)
        machines.append(GAPMachine(configuration: configuration))
        reports.append([])
        return i
    }

    mutating func perform(_ i: Int, _ actions: [GAPAction]) {
        for action in actions {
            if case let .send(packet) = action { air.fromHost(i, packet) } else { reports[i].append(action) }
        }
    }

    /// Runs until `time`, delivering packets as they fall due and ticking every `step`.
    mutating func run(until time: Double, step: Double = 0.01) {
        while air.now < time {
            air.now = min(time, air.now + step)
            while let (i, packet) = air.nextDue(by: air.now) {
                let actions = machines[i].received(packet, now: air.now)
                perform(i, actions)
            }
            for i in machines.indices {
                let actions = machines[i].tick(now: air.now)
                perform(i, actions)
            }
        }
    }

    mutating func start(_ i: Int) { perform(i, machines[i].start(now: air.now)) }
    mutating func inquire(_ i: Int, seconds: Double) { perform(i, machines[i].inquire(seconds: seconds, now: air.now)) }
    mutating func connect(_ i: Int, _ address: String) { perform(i, machines[i].connect(BDAddress(address)!, now: air.now)) }
    mutating func disconnect(_ i: Int, handle: UInt16, reason: UInt8 = 0x13) {
        perform(i, machines[i].disconnect(handle: handle, reason: reason, now: air.now))
    }
    mutating func send(_ i: Int, handle: UInt16, pdu: [UInt8]) { perform(i, machines[i].sendL2CAP(handle: handle, pdu: pdu)) }

    /// Reports of machine `i` since the last call.
    mutating func take(_ i: Int) -> [GAPAction] {
        defer { reports[i] = [] }
        return reports[i]
    }
}
