/// The host side of HCI as a pure value (Core Vol 4 Part E §4): the controller's init script, the
/// command FIFO paced by command credits with a timeout per command, ACL out (per-handle queues served
/// round robin, fragmented at the controller's ACL_Data_Packet_Length, paced by
/// Total_Num_ACL_Data_Packets and Number Of Completed Packets) and ACL in (reassembly of L2CAP frames
/// by their length field). No clock, no I/O: inputs carry `now`, outputs say what to send and report.
public struct HCIMachine: Sendable {
    /// Where the controller is in its life.
    public enum State: Sendable, Hashable {
        /// Not started.
        case idle
        /// The init script (Reset first) is running.
        case initialising
        /// The script finished; commands and ACL data flow.
        case ready
        /// The controller is unusable (a fatal command failed or never answered).
        case failed(String)
    }

    /// How a command ended.
    public enum CommandResult: Sendable, Hashable {
        /// Command Complete with its return parameters (status first for most commands).
        case complete(returnParameters: [UInt8])
        /// Command Status (0 = started; the result follows as its own event).
        case status(UInt8)
        /// No answer within the command timeout.
        case timedOut
    }

    /// What the machine asks its owner to do or tells it.
    public enum Output: Sendable, Hashable {
        /// Send this packet to the controller.
        case send(HCIPacket)
        /// The init script finished; the controller's address.
        case ready(address: BDAddress)
        /// The controller is unusable.
        case failed(String)
        /// A command sent with ``command(_:now:)`` ended (the packet as it was sent).
        case commandFinished(command: HCIPacket, result: CommandResult)
        /// An event for the layers above (everything but Command Complete/Status and Number Of Completed Packets).
        case event(HCIEvent)
        /// One whole L2CAP frame received on `handle`.
        case acl(handle: UInt16, pdu: [UInt8])
        /// A PDU given to ``sendACL(handle:pdu:)`` has left for the controller entirely.
        case aclTransmitted(handle: UInt16)
        /// A packet was dropped (malformed event, orphan ACL fragment…); counted above.
        case damaged(String)
    }

    private struct Command: Sendable {
        var packet: HCIPacket
        var opcode: UInt16
        var script: Bool
        var fatal: Bool
        var sentAt: Double = 0
    }

    private struct OutboundPDU: Sendable {
        var data: [UInt8]
        var offset = 0
    }

    /// The largest L2CAP frame: a 65535-byte payload and its 4-byte header.
    public static let maximumL2CAPFrame = 65535 + 4

    /// The current state.
    public private(set) var state: State = .idle
    /// The controller's address once Read_BD_ADDR answered.
    public private(set) var address: BDAddress?
    /// ACL fragment size in use: min(override, the controller's ACL_Data_Packet_Length); 0 until known.
    public private(set) var aclDataPacketLength = 0
    /// ACL buffers in use: min(override, the controller's Total_Num_ACL_Data_Packets); 0 until known.
    public private(set) var totalACLDataPackets = 0
    /// ACL packets sent and not yet reported complete, all handles.
    public var aclPacketsInFlight: Int { inFlightACL.values.reduce(0, +) }
    /// Commands the controller will take now.
    public private(set) var commandCredits = 1
    /// Init commands that failed without being fatal, for logs ("Write_Inquiry_Mode (0x0C45): 0x01 unknown HCI command").
    public private(set) var warnings: [String] = []
    /// Seconds a command may go unanswered.
    public var commandTimeout: Double

    private let script: [Command]
    private let aclMTUOverride: Int?
    private let aclCountOverride: Int?
    private var queue: [Command] = []
    private var sent: [Command] = []
    private var scriptLeft = 0
    private var openHandles: Set<UInt16> = []
    private var outbound: [UInt16: [OutboundPDU]] = [:]
    private var inFlightACL: [UInt16: Int] = [:]
    private var lastServed: UInt16?
    private var partial: [UInt16: [UInt8]] = [:]

    /// A machine that will run `extraScript` after the common init (Reset, Read_BD_ADDR,
    /// Read_Buffer_Size, Read_Local_Version_Information, Set_Event_Mask, Write_Simple_Pairing_Mode,
    /// Write_Inquiry_Mode 2, Write_Page_Timeout). Only Reset, Read_BD_ADDR and Read_Buffer_Size are
    /// fatal when they fail. The overrides lower the ACL fragment size and buffer count (tests).
    public init(extraScript: [HCIPacket] = [], pageTimeoutSlots: UInt16 = 0x2000, aclMTUOverride: Int? = nil,
                aclCountOverride: Int? = nil, commandTimeout: Double = 2) {
        func command(_ packet: HCIPacket, fatal: Bool = false) -> Command {
            guard case let .command(opcode, _) = packet else { preconditionFailure("not a command: \(packet)") }
            return Command(packet: packet, opcode: opcode, script: true, fatal: fatal)
        }
        script = [
            command(HCICommand.reset(), fatal: true),
            command(HCICommand.readBDADDR(), fatal: true),
            command(HCICommand.readBufferSize(), fatal: true),
            command(HCICommand.readLocalVersionInformation()),
            command(HCICommand.setEventMask()),
            command(HCICommand.writeSimplePairingMode()),
            command(HCICommand.writeInquiryMode(2)),
            command(HCICommand.writePageTimeout(slots: pageTimeoutSlots)),
        ] + extraScript.map { command($0) }
        self.aclMTUOverride = aclMTUOverride
        self.aclCountOverride = aclCountOverride
        self.commandTimeout = commandTimeout
    }

    // MARK: - Inputs

    /// Starts (or restarts) the init script with Reset.
    public mutating func start(now: Double) -> [Output] {
        self = HCIMachine(copyingSettingsOf: self)
        state = .initialising
        queue = script
        scriptLeft = script.count
        return pump(now: now)
    }

    /// Queues a command; its end comes back as ``Output/commandFinished(command:result:)``. Commands
    /// given before the init script ends go after it; after a failure they are dropped.
    public mutating func command(_ packet: HCIPacket, now: Double) -> [Output] {
        guard case let .command(opcode, _) = packet else { return [] }
        if case .failed = state { return [] }
        queue.append(Command(packet: packet, opcode: opcode, script: false, fatal: false))
        return pump(now: now)
    }

    /// Queues a whole L2CAP frame for `handle`; it leaves in fragments as ACL credits allow.
    public mutating func sendACL(handle: UInt16, pdu: [UInt8]) -> [Output] {
        if case .failed = state { return [] }
        outbound[handle & 0x0FFF, default: []].append(OutboundPDU(data: pdu))
        return pumpACL()
    }

    /// Bytes queued for `handle` and not yet given to the controller.
    public func queuedACLBytes(handle: UInt16) -> Int {
        outbound[handle & 0x0FFF, default: []].reduce(0) { $0 + $1.data.count - $1.offset }
    }

    /// Declares a connection handle open (Connection Complete does this by itself); ACL data on a
    /// handle that is not open is dropped.
    public mutating func linkOpened(handle: UInt16) {
        openHandles.insert(handle & 0x0FFF)
    }

    /// Forgets a handle (Disconnection Complete does this by itself): its buffers in the controller
    /// count as free again, its queue and any partial frame are dropped.
    public mutating func linkClosed(handle: UInt16) -> [Output] {
        let h = handle & 0x0FFF
        openHandles.remove(h)
        outbound[h] = nil
        partial[h] = nil
        inFlightACL[h] = nil
        return pumpACL()
    }

    /// A packet from the controller.
    public mutating func received(_ packet: HCIPacket, now: Double) -> [Output] {
        if case .failed = state { return [] }
        switch packet {
        case let .event(code, parameters):
            let event: HCIEvent
            do {
                event = try HCIEvent(code: code, parameters: parameters)
            } catch {
                return [.damaged(error.reason)]
            }
            return handle(event, now: now)
        case let .acl(handle, boundary, _, data):
            return reassemble(handle: handle, boundary: boundary, data: data)
        case .sco:
            return [.damaged("SCO data dropped (no SCO links here)")]
        case .command:
            return [.damaged("a command packet from the controller dropped")]
        }
    }

    /// Checks command timeouts.
    public mutating func tick(now: Double) -> [Output] {
        guard state == .initialising || state == .ready else { return [] }
        var out: [Output] = []
        while let index = sent.firstIndex(where: { now - $0.sentAt >= commandTimeout }) {
            let command = sent.remove(at: index)
            commandCredits = max(commandCredits, 1)
            if command.script {
                if command.fatal {
                    let reason = command.opcode == HCICommand.Opcode.reset
                        ? "no answer from the controller"
                        : "no answer from the controller to \(HCICommand.name(of: command.opcode))"
                    return out + fail(reason)
                }
                warnings.append("\(HCICommand.name(of: command.opcode)): no answer")
                out += scriptStepDone()
            } else {
                out.append(.commandFinished(command: command.packet, result: .timedOut))
            }
        }
        return out + pump(now: now)
    }

    /// The earliest time ``tick(now:)`` has work to do, if any.
    public var nextDeadline: Double? {
        sent.map { $0.sentAt + commandTimeout }.min()
    }

    // MARK: - Commands

    private init(copyingSettingsOf other: HCIMachine) {
        script = other.script
        aclMTUOverride = other.aclMTUOverride
        aclCountOverride = other.aclCountOverride
        commandTimeout = other.commandTimeout
    }

    private mutating func pump(now: Double) -> [Output] {
        var out: [Output] = []
        while commandCredits > 0, !queue.isEmpty {
            // Nothing goes with Reset, nor after it until it is answered.
            if sent.contains(where: { $0.opcode == HCICommand.Opcode.reset }) { break }
            if queue[0].opcode == HCICommand.Opcode.reset, !sent.isEmpty { break }
            var command = queue.removeFirst()
            command.sentAt = now
            commandCredits -= 1
            sent.append(command)
            out.append(.send(command.packet))
        }
        return out
    }

    private mutating func fail(_ reason: String) -> [Output] {
        state = .failed(reason)
        queue = []
        sent = []
        outbound = [:]
        partial = [:]
        return [.failed(reason)]
    }

    private mutating func finished(opcode: UInt16, numCommands: UInt8, result: CommandResult, event: HCIEvent,
                                   now: Double) -> [Output] {
        commandCredits = Int(numCommands)
        var out: [Output] = []
        if let index = sent.firstIndex(where: { $0.opcode == opcode }) {
            let command = sent.remove(at: index)
            if command.script {
                out += scriptResult(command, result)
                if case .failed = state { return out }
            } else {
                out.append(.commandFinished(command: command.packet, result: result))
            }
        } else if opcode != 0 {
            out.append(.event(event))  // an answer to nothing we sent: let the layers above see it
        }
        return out + pump(now: now)
    }

    private mutating func scriptResult(_ command: Command, _ result: CommandResult) -> [Output] {
        let name = HCICommand.name(of: command.opcode)
        let status: UInt8
        var returned: [UInt8] = []
        switch result {
        case let .complete(parameters):
            status = parameters.first ?? 0xFF
            returned = parameters
        case let .status(s):
            status = s == 0 ? 0xFF : s  // a Command Status cannot carry the values these commands return
        case .timedOut:
            status = 0xFF
        }
        if status != 0 {
            let why = status == 0xFF ? "no usable answer" : HCIErrorCode.describe(status)
            if command.fatal { return fail("the controller failed \(name): \(why)") }
            warnings.append("\(name): \(why)")
            return scriptStepDone()
        }
        var r = ByteReader(returned, offset: 1, context: name)
        do {
            switch command.opcode {
            case HCICommand.Opcode.readBDADDR:
                address = try r.address()
            case HCICommand.Opcode.readBufferSize:
                let length = Int(try r.u16le("ACL_Data_Packet_Length"))
                _ = try r.u8("SCO length")
                let count = Int(try r.u16le("Total_Num_ACL_Data_Packets"))
                aclDataPacketLength = min(aclMTUOverride ?? length, length)
                totalACLDataPackets = min(aclCountOverride ?? count, count)
                if aclDataPacketLength < 1 || totalACLDataPackets < 1 {
                    return fail("the controller has no ACL buffers (length \(length), count \(count))")
                }
            default:
                break
            }
        } catch {
            if command.fatal { return fail("the controller's answer to \(name) is malformed: \(error.reason)") }
            warnings.append("\(name): \(error.reason)")
        }
        return scriptStepDone()
    }

    private mutating func scriptStepDone() -> [Output] {
        scriptLeft -= 1
        guard scriptLeft == 0, state == .initialising, let address else { return [] }
        state = .ready
        return [.ready(address: address)] + pumpACL()
    }

    // MARK: - Events

    private mutating func handle(_ event: HCIEvent, now: Double) -> [Output] {
        switch event {
        case let .commandComplete(numCommands, opcode, parameters):
            return finished(opcode: opcode, numCommands: numCommands, result: .complete(returnParameters: parameters),
                            event: event, now: now)
        case let .commandStatus(status, numCommands, opcode):
            return finished(opcode: opcode, numCommands: numCommands, result: .status(status), event: event, now: now)
        case let .numberOfCompletedPackets(entries):
            for entry in entries {
                let outstanding = inFlightACL[entry.handle] ?? 0
                inFlightACL[entry.handle] = outstanding - min(outstanding, Int(entry.count))
            }
            return pumpACL()
        case let .connectionComplete(status, handle, _, linkType, _):
            if status == 0, linkType == 0x01 { linkOpened(handle: handle) }
            return [.event(event)]
        case let .disconnectionComplete(status, handle, _):
            guard status == 0 else { return [.event(event)] }
            return [.event(event)] + linkClosed(handle: handle)
        default:
            return [.event(event)]
        }
    }

    // MARK: - ACL

    private mutating func pumpACL() -> [Output] {
        guard state == .ready, aclDataPacketLength > 0 else { return [] }
        var out: [Output] = []
        var free = totalACLDataPackets - aclPacketsInFlight
        while free > 0 {
            let waiting = outbound.keys.filter { !(outbound[$0]?.isEmpty ?? true) }.sorted()
            guard !waiting.isEmpty else { break }
            let handle = waiting.first(where: { $0 > (lastServed ?? 0) && lastServed != nil }) ?? waiting[0]
            lastServed = handle
            var pdu = outbound[handle]![0]
            let size = min(aclDataPacketLength, pdu.data.count - pdu.offset)
            let chunk = Array(pdu.data[pdu.offset..<(pdu.offset + size)])
            out.append(.send(.acl(handle: handle, boundary: pdu.offset == 0 ? 0b10 : 0b01, broadcast: 0, data: chunk)))
            pdu.offset += size
            free -= 1
            inFlightACL[handle, default: 0] += 1
            if pdu.offset >= pdu.data.count {
                outbound[handle]!.removeFirst()
                if outbound[handle]!.isEmpty { outbound[handle] = nil }
                out.append(.aclTransmitted(handle: handle))
            } else {
                outbound[handle]![0] = pdu
            }
        }
        return out
    }

    private mutating func reassemble(handle: UInt16, boundary: UInt8, data: [UInt8]) -> [Output] {
        let h = handle & 0x0FFF
        guard openHandles.contains(h) else {
            return [.damaged("ACL data for handle \(HCIFormat.hex16(h)), which is not connected, dropped")]
        }
        var out: [Output] = []
        var frame: [UInt8]
        // Taken out of the dictionary so that appending does not copy the frame so far.
        let started = partial.removeValue(forKey: h)
        if boundary == 0b01 {
            guard var started else {
                return [.damaged("ACL continuation without a start on handle \(HCIFormat.hex16(h)) dropped")]
            }
            started.append(contentsOf: data)
            frame = started
        } else {
            if let started {
                out.append(.damaged("an incomplete L2CAP frame (\(started.count) bytes) on handle \(HCIFormat.hex16(h)) dropped by a new start"))
            }
            frame = data
        }
        guard frame.count >= 2 else {
            partial[h] = frame
            return out
        }
        let expected = (Int(frame[0]) | Int(frame[1]) << 8) + 4
        if frame.count == expected {
            out.append(.acl(handle: h, pdu: frame))
        } else if frame.count > expected {
            out.append(.damaged("ACL data on handle \(HCIFormat.hex16(h)): \(frame.count) bytes for an L2CAP frame of \(expected), dropped"))
        } else {
            partial[h] = frame
        }
        return out
    }
}
