@testable import ModemBluetooth

/// Two virtual controllers sharing a radio-less "air", written for the host stack's tests: enough
/// of HCI for set-up, inquiry with extended inquiry results, remote names, paging (accept, reject,
/// page timeout), ACL data both ways with Number Of Completed Packets, and disconnection with
/// reasons. Each side's host gets what its controller sends through ``take(_:)``.
struct FakeAir {
    struct Controller {
        var address: BDAddress
        var name = ""
        var scan: UInt8 = 0
        var aclLength: Int
        var aclCount: Int
        var outbox: [HCIPacket] = []
        var pagingTo: BDAddress?
    }
    var sides: [Controller]
    /// ACL packets carried, both ways.
    var aclCarried = 0
    /// The handle both controllers use for their one link (nil: no link).
    var link: UInt16?
    /// When set, ACL packets from side 0 beyond this many are dropped silently (a dead link).
    var dropAfter: Int?

    init(addresses: [BDAddress], aclLength: Int = 1021, aclCount: Int = 8) {
        sides = addresses.map { Controller(address: $0, aclLength: aclLength, aclCount: aclCount) }
    }

    mutating func take(_ side: Int) -> [HCIPacket] {
        defer { sides[side].outbox.removeAll() }
        return sides[side].outbox
    }

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

    /// A packet from side `side`'s host.
    mutating func send(_ side: Int, _ packet: HCIPacket) {
        let other = 1 - side
        switch packet {
        case .command(let opcode, let p):
            switch opcode {
            case 0x0C03: complete(side, opcode, [0])                                                     // Reset
            case 0x1009: complete(side, opcode, [0] + sides[side].address.wire)                          // Read_BD_ADDR
            case 0x1005:                                                                                 // Read_Buffer_Size
                var r: [UInt8] = [0]
                r.appendLE(UInt16(sides[side].aclLength)); r.append(0); r.appendLE(UInt16(sides[side].aclCount)); r.appendLE(UInt16(0))
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
                    let n = Array(sides[other].name.utf8)
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
                    sides[side].pagingTo = target
                    event(other, 0x04, sides[side].address.wire + [0x0C, 0x02, 0x5A, 0x01])
                } else {
                    event(side, 0x03, [0x04, 0, 0] + target.wire + [1, 0])
                }
            case 0x0409:                                                                                 // Accept_Connection_Request
                status(side, opcode)
                link = 0x0001
                event(side, 0x03, [0, 1, 0] + sides[other].address.wire + [1, 0])
                event(other, 0x03, [0, 1, 0] + sides[side].address.wire + [1, 0])
                sides[other].pagingTo = nil
            case 0x040A:                                                                                 // Reject_Connection_Request
                status(side, opcode)
                event(other, 0x03, [p.count > 6 ? p[6] : 0x0F, 0, 0] + sides[side].address.wire + [1, 0])
                sides[other].pagingTo = nil
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
            if side == 0, let limit = dropAfter, aclCarried > limit { return }
            if link != nil {
                sides[other].outbox.append(.acl(handle: handle, boundary: boundary, broadcast: broadcast, data: data))
            }
        default:
            break
        }
    }

    /// Both controllers report the link lost (reason 0x08), nothing else is sent.
    mutating func loseLink() {
        guard link != nil else { return }
        link = nil
        event(0, 0x05, [0, 1, 0, 0x08])
        event(1, 0x05, [0, 1, 0, 0x08])
    }
}

/// Two host stacks on a ``FakeAir``, pumped in lockstep on a fake clock.
struct HostPair {
    var air: FakeAir
    var hosts: [HostStack]
    var now = 0.0
    /// Every non-send action each host reported, in order.
    var reported: [[HostAction]] = [[], []]

    init(central: HostConfiguration, device: HostConfiguration, aclLength: Int = 1021, aclCount: Int = 8) {
        air = FakeAir(addresses: [BDAddress("00:1B:DC:00:00:01")!, BDAddress("00:1B:DC:00:00:0B")!], aclLength: aclLength, aclCount: aclCount)
        hosts = [HostStack(configuration: central), HostStack(configuration: device)]
        for side in 0..<2 { apply(side, hosts[side].start(now: now)) }
    }

    mutating func apply(_ side: Int, _ actions: [HostAction]) {
        for action in actions {
            if case .send(let packet) = action { air.send(side, packet) } else { reported[side].append(action) }
        }
    }

    /// Delivers what the controllers sent and lets `seconds` of time pass in 10 ms steps,
    /// calling `react` with each side's new actions (its answers are applied).
    mutating func run(seconds: Double, react: (Int, HostAction, inout HostStack, Double) -> [HostAction] = { _, _, _, _ in [] }) {
        let end = now + seconds
        while now < end {
            var busy = true
            var rounds = 0
            while busy && rounds < 10_000 {
                busy = false
                rounds += 1
                for side in 0..<2 {
                    for packet in air.take(side) {
                        busy = true
                        let before = reported[side].count
                        apply(side, hosts[side].received(packet, now: now))
                        reactTo(side, from: before, react)
                    }
                }
            }
            now += 0.01
            for side in 0..<2 {
                let before = reported[side].count
                apply(side, hosts[side].tick(now: now))
                reactTo(side, from: before, react)
            }
        }
    }

    private mutating func reactTo(_ side: Int, from start: Int, _ react: (Int, HostAction, inout HostStack, Double) -> [HostAction]) {
        var i = start
        while i < reported[side].count {
            let more = react(side, reported[side][i], &hosts[side], now)
            apply(side, more)
            i += 1
        }
    }
}
