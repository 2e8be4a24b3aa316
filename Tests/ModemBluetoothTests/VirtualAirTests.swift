import ModemBluetooth
import Testing

/// ``VirtualAir`` through the public API only: two host stacks joined in memory, as the benchmark
/// and any user without a controller would drive them.
@Suite("VirtualAir joins two host stacks")
struct VirtualAirTests {
    private let central = BDAddress("00:1B:DC:00:00:01")!
    private let device = BDAddress("00:1B:DC:00:00:0B")!

    /// The two hosts and what they reported (not `.send`), pumped until quiet.
    private struct Rig {
        var air: VirtualAir
        var hosts = [HostStack(configuration: HostConfiguration(gap: GAPConfiguration(role: .central))),
                     HostStack(configuration: HostConfiguration(gap: GAPConfiguration(role: .device(name: "Air Device", classOfDevice: 0x1F00)),
                                                                serverChannel: 3))]
        var reported: [[HostAction]] = [[], []]
        var now = 0.0
        var echo = true

        init(_ addresses: [BDAddress]) {
            air = VirtualAir(addresses: addresses, aclLength: 339, aclCount: 4)
            for side in 0..<2 { apply(side, hosts[side].start(now: now)) }
            pump()
        }

        mutating func apply(_ side: Int, _ actions: [HostAction]) {
            for action in actions {
                if case .send(let packet) = action { air.send(side, packet); continue }
                reported[side].append(action)
                if echo, side == 1, case .received(let id, let bytes) = action { apply(1, hosts[1].write(id, bytes, now: now)) }
            }
        }

        mutating func pump(rounds: Int = 10) {
            for _ in 0..<rounds {
                while air.isBusy {
                    for side in 0..<2 { for packet in air.take(side) { apply(side, hosts[side].received(packet, now: now)) } }
                }
                now += 0.01
                for side in 0..<2 { apply(side, hosts[side].tick(now: now)) }
            }
        }
    }

    @Test("inquiry, SDP, RFCOMM: 50 KB echoed byte-exact, then link loss closes the channel in words")
    func echoAndLinkLoss() throws {
        var rig = Rig([central, device])
        #expect(rig.reported[0].contains(.ready(address: central)))
        rig.apply(0, rig.hosts[0].inquire(seconds: 1.28, now: rig.now))
        rig.pump()
        #expect(rig.reported[0].contains(.found(address: device, name: "Air Device")), "\(rig.reported[0])")

        rig.apply(0, rig.hosts[0].openSerialPort(to: device, channel: nil, now: rig.now).actions)
        rig.pump()
        let id = try #require(rig.reported[0].compactMap { a -> SerialChannelID? in
            if case .opened(let id, _, false) = a { return id }; return nil }.first, "\(rig.reported[0])")
        #expect(id.serverChannel == 3, "found by SDP")
        let payload = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        rig.apply(0, rig.hosts[0].write(id, payload, now: rig.now))
        rig.pump(rounds: 50)
        let back = rig.reported[0].flatMap { a -> [UInt8] in if case .received(_, let b) = a { return b }; return [] }
        #expect(back == payload, "\(back.count) of \(payload.count) bytes")

        rig.air.loseLink()
        rig.pump(rounds: 1)
        let closed = rig.reported[0].compactMap { a -> String? in if case .closed(id, let why, true) = a { return why }; return nil }.first
        #expect(closed?.hasPrefix("link lost: HCI reason 0x08") == true, "\(closed ?? "not closed")")
        #expect(rig.air.link == nil)
    }

    @Test("an address nobody page-scans: the open fails with a page timeout; a short command is refused, not a crash")
    func pageTimeoutAndShortCommand() {
        var rig = Rig([central, device])
        let (request, actions) = rig.hosts[0].openSerialPort(to: BDAddress("00:11:22:33:44:55")!, channel: 1, now: rig.now)
        rig.apply(0, actions)
        rig.pump()
        let failure = rig.reported[0].compactMap { a -> String? in if case .openFailed(request, let r) = a { return r }; return nil }.first
        #expect(failure?.lowercased().contains("page timeout") == true, "\(failure ?? "no failure")")
        // Create_Connection with 2 parameter bytes: Command Status 0x12 (invalid parameters).
        rig.air.send(0, .command(opcode: 0x0405, parameters: [1, 2]))
        #expect(rig.air.take(0) == [.event(code: 0x0F, parameters: [0x12, 1, 0x05, 0x04])])
    }
}
