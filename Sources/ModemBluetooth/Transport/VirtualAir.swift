/// Two virtual BR/EDR controllers sharing a radio-less "air", in memory: enough of HCI to join two
/// ``HostStack`` values with no sockets, threads or clocks, for tests, benchmarks and demonstrations.
///
/// It answers the set-up commands (Reset, Read_BD_ADDR, Read_Buffer_Size, local name, scan enable;
/// any other command completes with status 0), inquiry with one Extended Inquiry Result carrying the
/// other side's name, Remote_Name_Request, paging (accept, reject, page timeout 0x04 for an address
/// nobody page-scans), ACL data both ways with Number Of Completed Packets, and disconnection with
/// reasons (the side that asked sees 0x16, the other the reason given). One link at a time, handle 1.
///
/// Use: pass each packet a host sends to ``send(_:_:)`` with the host's side (0 or 1), and hand each
/// side what ``take(_:)`` returns to that side's host. Time plays no part: everything is answered at once.
public struct VirtualAir: Sendable {
    /// One controller's state.
    public struct Controller: Sendable {
        /// Its BD_ADDR.
        public var address: BDAddress
        /// Its local name (Write_Local_Name).
        public var name = ""
        /// Write_Scan_Enable: bit 0 inquiry scan, bit 1 page scan.
        public var scan: UInt8 = 0
        /// ACL_Data_Packet_Length it reports.
        public var aclLength: Int
        /// Total_Num_ACL_Data_Packets it reports.
        public var aclCount: Int
        /// Packets for its host, not yet taken.
        public var outbox: [HCIPacket] = []
    }

    /// The two controllers (side 0 and side 1).
    public var sides: [Controller]
    /// ACL packets carried, both ways.
    public private(set) var aclCarried = 0
    /// The handle both controllers use for their one link (nil: no link).
    public private(set) var link: UInt16?

    /// Two controllers at `addresses` (the first two are used), each reporting `aclCount` ACL
    /// buffers of `aclLength` bytes.
    /// - Precondition: `addresses.count == 2`.
    public init(addresses: [BDAddress], aclLength: Int = 1021, aclCount: Int = 8) {
        precondition(addresses.count == 2, "a VirtualAir joins two controllers")
        sides = addresses.map { Controller(address: $0, aclLength: aclLength, aclCount: aclCount) }
    }

    /// What side `side`'s controller sent its host since the last call, in order.
    public mutating func take(_ side: Int) -> [HCIPacket] {
        defer { sides[side].outbox.removeAll(keepingCapacity: true) }
        return sides[side].outbox
    }

    /// Whether either controller has something for its host.
    public var isBusy: Bool { !sides[0].outbox.isEmpty || !sides[1].outbox.isEmpty }

    private mutating func event(_ side: Int, _ code: UInt8, _ parameters: [UInt8]) {
        sides[side].outbox.append(.event(code: code, parameters: parameters))
    }

    private mutating func complete(_ side: Int, _ opcode: UInt16, _ ret: [UInt8]) {
        event(side, 0x0E, [1, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + ret)
    }

    private mutating func status(_ side: Int, _ opcode: UInt16, _ status: UInt8 = 0) {
        event(side, 0x0F, [status, 1, UInt8(opcode & 0xFF), UInt8(opcode >> 8)])
    }

    private func nameBytes(_ name: String) -> [UInt8] {
        let utf8 = Array(name.utf8.prefix(247))
        return utf8 + [UInt8](repeating: 0, count: 248 - utf8.count)
    }

    /// A packet from side `side`'s host (0 or 1).
    public mutating func send(_ side: Int, _ packet: HCIPacket) {
        let other = 1 - side
        switch packet {
        case .command(let opcode, let p):
            let needsAddress: Set<UInt16> = [0x0419, 0x0405, 0x0409, 0x040A]
            if needsAddress.contains(opcode) && p.count < 6 {
                status(side, opcode, 0x12)                                                               // invalid parameters
                return
            }
            switch opcode {
            case 0x0C03: complete(side, opcode, [0])                                                     // Reset
            case 0x1009: complete(side, opcode, [0] + sides[side].address.wire)                          // Read_BD_ADDR
            case 0x1005:                                                                                 // Read_Buffer_Size
                var r: [UInt8] = [0]
                r.appendLE(UInt16(sides[side].aclLength)); r.append(0)
                r.appendLE(UInt16(sides[side].aclCount)); r.appendLE(UInt16(0))
                complete(side, opcode, r)
            case 0x0C13:                                                                                 // Write_Local_Name
                sides[side].name = String(decoding: p.prefix { $0 != 0 }, as: UTF8.self)
                complete(side, opcode, [0])
            case 0x0C1A:                                                                                 // Write_Scan_Enable
                sides[side].scan = p.first ?? 0
                complete(side, opcode, [0])
            case 0x0401:                                                                                 // Inquiry
                status(side, opcode)
                if sides[other].scan & 1 != 0 {
                    var eir: [UInt8] = []
                    let n = Array(sides[other].name.utf8.prefix(238))
                    eir.append(UInt8(n.count + 1)); eir.append(0x09); eir += n
                    eir += [UInt8](repeating: 0, count: 240 - eir.count)
                    event(side, 0x2F, [1] + sides[other].address.wire + [1, 0, 0x00, 0x1F, 0x00, 0, 0, 0xC0] + eir)
                }
                event(side, 0x01, [0])
            case 0x0419:                                                                                 // Remote_Name_Request
                status(side, opcode)
                let target = BDAddress(wire: p.prefix(6))
                if target == sides[other].address {
                    event(side, 0x07, [0] + target.wire + nameBytes(sides[other].name))
                } else {
                    event(side, 0x07, [0x04] + target.wire + nameBytes(""))
                }
            case 0x0405:                                                                                 // Create_Connection
                status(side, opcode)
                let target = BDAddress(wire: p.prefix(6))
                if target == sides[other].address && sides[other].scan & 2 != 0 && link == nil {
                    event(other, 0x04, sides[side].address.wire + [0x0C, 0x02, 0x5A, 0x01])
                } else {
                    event(side, 0x03, [0x04, 0, 0] + target.wire + [1, 0])
                }
            case 0x0409:                                                                                 // Accept_Connection_Request
                status(side, opcode)
                link = 0x0001
                event(side, 0x03, [0, 1, 0] + sides[other].address.wire + [1, 0])
                event(other, 0x03, [0, 1, 0] + sides[side].address.wire + [1, 0])
            case 0x040A:                                                                                 // Reject_Connection_Request
                status(side, opcode)
                event(other, 0x03, [p.count > 6 ? p[6] : 0x0F, 0, 0] + sides[side].address.wire + [1, 0])
            case 0x0406:                                                                                 // Disconnect
                status(side, opcode)
                if link != nil {
                    link = nil
                    event(side, 0x05, [0, 1, 0, 0x16])
                    event(other, 0x05, [0, 1, 0, p.count > 2 ? p[2] : 0x13])
                }
            default:
                complete(side, opcode, [0])
            }
        case .acl(let handle, let boundary, let broadcast, let data):
            aclCarried += 1
            var nocp: [UInt8] = [1]
            nocp.appendLE(handle); nocp.appendLE(UInt16(1))
            event(side, 0x13, nocp)
            if link != nil {
                sides[other].outbox.append(.acl(handle: handle, boundary: boundary, broadcast: broadcast, data: data))
            }
        default:
            break
        }
    }

    /// Both controllers report the link lost (reason 0x08, connection timeout); nothing else is sent.
    public mutating func loseLink() {
        guard link != nil else { return }
        link = nil
        event(0, 0x05, [0, 1, 0, 0x08])
        event(1, 0x05, [0, 1, 0, 0x08])
    }
}
