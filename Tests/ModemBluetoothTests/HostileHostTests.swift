import Testing
@testable import ModemBluetooth

/// Hostile input through two whole host stacks (``HostPair`` on an ``HCIFakeAir``): lying lengths,
/// bad FCS, a peer that never grants credits. Fake clock, no I/O.
@Suite("The host stack under hostile input")
struct HostileHostTests {
    private let device = BDAddress("00:1B:DC:00:00:0B")!

    private func pair(deviceRFCOMM: RFCOMMConfiguration = RFCOMMConfiguration()) -> HostPair {
        HostPair(central: HostConfiguration(gap: GAPConfiguration(role: .central)),
                 device: HostConfiguration(gap: GAPConfiguration(role: .device(name: "Test Device", classOfDevice: 0x1F00)),
                                           serverChannel: 5, rfcomm: deviceRFCOMM))
    }

    /// Echo on the device side.
    private static func echo(_ side: Int, _ action: HostAction, _ stack: inout HostStack, _ now: Double) -> [HostAction] {
        if side == 1, case .received(let id, let bytes) = action { return stack.write(id, bytes, now: now) }
        return []
    }

    /// Opens channel 5 from the central; its id.
    private func open(_ p: inout HostPair) throws -> SerialChannelID {
        p.run(seconds: 0.2)
        p.apply(0, p.hosts[0].openSerialPort(to: device, channel: 5, now: p.now).actions)
        p.run(seconds: 1, react: Self.echo)
        return try #require(p.reported[0].compactMap { a -> SerialChannelID? in
            if case .opened(let id, _, false) = a { return id }; return nil }.first, "not opened: \(p.reported[0])")
    }

    private func payload(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    /// Writes `bytes` in 4000-byte pieces and lets the echo come back; what the central received.
    private func echo(_ p: inout HostPair, _ id: SerialChannelID, _ bytes: [UInt8]) -> [UInt8] {
        let start = p.reported[0].count
        var offset = 0
        while offset < bytes.count {
            let n = min(4000, bytes.count - offset)
            p.apply(0, p.hosts[0].write(id, Array(bytes[offset..<offset + n]), now: p.now))
            offset += n
            p.run(seconds: 0.05, react: Self.echo)
        }
        p.run(seconds: 1, react: Self.echo)
        return p.reported[0][start...].flatMap { a -> [UInt8] in if case .received(id, let b) = a { return b }; return [] }
    }

    @Test("lying lengths (ACL/L2CAP longer or shorter than the bytes, a signalling command overrunning its frame) are dropped and counted; the channel goes on")
    func lyingLengths() throws {
        var p = pair()
        let id = try open(&p)
        let damagedBefore = p.hosts[0].damaged
        func inject(_ boundary: UInt8, _ data: [UInt8]) {
            p.air.deliver(.acl(handle: id.handle, boundary: boundary, broadcast: 0, data: data), to: 0)
            p.run(seconds: 0.05, react: Self.echo)
        }
        // The L2CAP header says 1000 bytes on the RFCOMM channel (CID 0x0040 as both stacks number it); 10 come.
        inject(0b10, [0xE8, 0x03, 0x40, 0x00] + [UInt8](repeating: 0xAA, count: 10))
        // A new start follows: the incomplete frame is dropped. This one says 2 bytes and carries 20.
        inject(0b10, [0x02, 0x00, 0x40, 0x00] + [UInt8](repeating: 0xBB, count: 20))
        // A signalling frame (CID 1) whose command claims 100 bytes of data and has 4.
        inject(0b10, [0x08, 0x00, 0x01, 0x00, 0x02, 0x07, 0x64, 0x00, 0x01, 0x00, 0x40, 0x00])
        // The largest length there is, then continuations beyond it: dropped, memory bounded by the length.
        inject(0b10, [0xFF, 0xFF, 0x40, 0x00] + [UInt8](repeating: 0xCC, count: 1000))
        for _ in 0..<70 { inject(0b01, [UInt8](repeating: 0xDD, count: 1000)) }

        let damage = p.reported[0].compactMap { a -> String? in if case .damaged(let w) = a { return w }; return nil }
        #expect(p.hosts[0].damaged - damagedBefore >= 5, "\(damage)")
        #expect(damage.contains { $0.contains("incomplete L2CAP frame") }, "\(damage)")
        #expect(damage.contains { $0.contains("for an L2CAP frame of 6") }, "\(damage)")
        #expect(damage.contains { $0.contains("for an L2CAP frame of 65539") }, "\(damage)")
        #expect(damage.contains { $0.contains("L2CAP signalling") && $0.contains("100 bytes") }, "\(damage)")
        #expect(!p.reported[0].contains { if case .received = $0 { return true }; return false }, "a lie was delivered")
        #expect(!p.reported[0].contains { if case .closed = $0 { return true }; return false })
        // The channel still echoes byte-exact.
        let bytes = payload(20_000, seed: 1)
        #expect(echo(&p, id, bytes) == bytes)
    }

    @Test("RFCOMM frames with a bad FCS are counted (statistics, damaged) and not delivered; the rest arrive in order")
    func badFCS() throws {
        var p = pair()
        let id = try open(&p)
        // The device's data frames on DLCI 10: every fifth has its FCS flipped on the way.
        var frames: [(payload: [UInt8], corrupted: Bool)] = []
        p.tamper = { side, packet in
            guard side == 1, case .acl(let handle, let boundary, let broadcast, var data) = packet, data.count > 8,
                  data[4] >> 2 == id.dlci, let parsed = try? RFCOMMFrame.parse(Array(data[4...])),
                  parsed.frame.kind == .uih, !parsed.frame.information.isEmpty else { return packet }
            let corrupt = frames.count % 5 == 2
            frames.append((parsed.frame.information, corrupt))
            if corrupt { data[data.count - 1] ^= 0x5A }
            return .acl(handle: handle, boundary: boundary, broadcast: broadcast, data: data)
        }
        let bytes = payload(30_000, seed: 2)
        let back = echo(&p, id, bytes)
        let corrupted = frames.filter(\.corrupted).count
        #expect(corrupted >= 5, "only \(frames.count) frames seen")
        #expect(frames.flatMap(\.payload) == bytes, "the device echoed other bytes")
        #expect(back == frames.filter { !$0.corrupted }.flatMap(\.payload), "\(back.count) bytes delivered")
        #expect(p.hosts[0].rfcommStatistics(handle: id.handle)?.badFCS == corrupted)
        let damage = p.reported[0].compactMap { a -> String? in if case .damaged(let w) = a { return w }; return nil }
        #expect(damage.filter { $0.contains("bad FCS") }.count == corrupted, "\(damage)")
        #expect(p.hosts[0].damaged >= corrupted)
    }

    @Test("a device that never grants credits: the central gives up after the credit timeout with a reason naming it")
    func noCredits() throws {
        var p = pair(deviceRFCOMM: RFCOMMConfiguration(initialCredits: 0, creditTarget: 0))
        let id = try open(&p)
        p.apply(0, p.hosts[0].write(id, payload(5000, seed: 3), now: p.now))
        p.run(seconds: 9.5, react: Self.echo)
        #expect(!p.reported[0].contains { if case .closed = $0 { return true }; return false }, "closed before the 10 s timeout")
        #expect(p.hosts[0].queuedBytes(id) == 5000)
        p.run(seconds: 1.5, react: Self.echo)
        let closed = p.reported[0].compactMap { a -> String? in if case .closed(id, let why, _) = a { return why }; return nil }.first
        #expect(closed?.contains("granted no credits for 10 s") == true, "\(closed ?? "not closed")")
        // The device got nothing (no frame went without a credit).
        #expect(!p.reported[1].contains { if case .received = $0 { return true }; return false })
    }
}
