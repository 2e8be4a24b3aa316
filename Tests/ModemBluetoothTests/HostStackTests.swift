import Testing
import ModemLinkProtocol
@testable import ModemBluetooth

/// The whole host stack (GAP, L2CAP, SDP, RFCOMM) as two values on a fake air (HCIFakeAir): our central against
/// our device, no threads, no Python.
@Suite(.serialized) struct HostStackTests {
    private func pair(aclLength: Int = 1021, aclCount: Int = 8) -> HostPair {
        HostPair(central: HostConfiguration(gap: GAPConfiguration(role: .central)),
                 device: HostConfiguration(gap: GAPConfiguration(role: .device(name: "Test Device", classOfDevice: 0x1F00)),
                                           serverChannel: 5, serviceName: "Test Serial"),
                 aclLength: aclLength, aclCount: aclCount)
    }

    private let device = BDAddress("00:1B:DC:00:00:0B")!

    @Test func testInquiryFindsTheDeviceWithItsName() {
        var p = pair()
        p.run(seconds: 0.2)
        #expect(p.reported[0].contains { if case .ready = $0 { return true }; return false })
        p.apply(0, p.hosts[0].inquire(seconds: 1.28, now: p.now))
        p.run(seconds: 2)
        #expect(p.reported[0].contains(.found(address: device, name: "Test Device")), "\(p.reported[0])")
        #expect(p.reported[0].contains(.inquiryComplete(failure: nil)))
    }

    /// Echo on the device side: whatever arrives is written back.
    private static func echo(_ side: Int, _ action: HostAction, _ stack: inout HostStack, _ now: Double) -> [HostAction] {
        if side == 1, case .received(let id, let bytes) = action { return stack.write(id, bytes, now: now) }
        return []
    }

    private func openAndEcho(_ p: inout HostPair, bytes: Int, channel: UInt8?) -> (sent: [UInt8], back: [UInt8], id: SerialChannelID?) {
        p.run(seconds: 0.2)
        let (_, actions) = p.hosts[0].openSerialPort(to: device, channel: channel, now: p.now)
        p.apply(0, actions)
        p.run(seconds: 1, react: Self.echo)
        guard let opened = p.reported[0].compactMap({ a -> SerialChannelID? in
            if case .opened(let id, _, false) = a { return id }; return nil }).first else {
            Issue.record("not opened: \(p.reported[0])")
            return ([], [], nil)
        }
        #expect(opened.serverChannel == 5)
        var rng = SystemRandomNumberGenerator()
        let payload = (0..<bytes).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var offset = 0
        while offset < payload.count {
            let n = min(7000, payload.count - offset)
            p.apply(0, p.hosts[0].write(opened, Array(payload[offset..<offset + n]), now: p.now))
            offset += n
            p.run(seconds: 0.05, react: Self.echo)
        }
        p.run(seconds: 2, react: Self.echo)
        let back = p.reported[0].flatMap { a -> [UInt8] in if case .received(_, let b) = a { return b }; return [] }
        return (payload, back, opened)
    }

    @Test func testSDPThenRFCOMMEchoes100KB() {
        var p = pair()
        let r = openAndEcho(&p, bytes: 100_000, channel: nil)
        #expect(r.back.count == r.sent.count)
        #expect(r.back == r.sent, "the echo differs")
        #expect(p.hosts[0].damaged == 0)
        #expect(p.hosts[1].damaged == 0)
        #expect(p.violations == [])
    }

    @Test func testEchoWithTinyACLPacketsAndTwoBuffers() {
        var p = pair(aclLength: 27, aclCount: 2)
        let r = openAndEcho(&p, bytes: 20_000, channel: 5)
        #expect(r.back == r.sent, "the echo differs: \(r.back.count) of \(r.sent.count) bytes")
        #expect(p.violations == [])
    }

    @Test func testNoServiceOnAnotherChannelIsRefused() {
        var p = pair()
        p.run(seconds: 0.2)
        let (request, actions) = p.hosts[0].openSerialPort(to: device, channel: 9, now: p.now)
        p.apply(0, actions)
        p.run(seconds: 1)
        #expect(p.reported[0].contains { if case .openFailed(request, _) = $0 { return true }; return false }, "\(p.reported[0])")
    }

    @Test func testUnknownAddressFailsWithPageTimeout() {
        var p = pair()
        p.run(seconds: 0.2)
        let (request, actions) = p.hosts[0].openSerialPort(to: BDAddress("00:11:22:33:44:55")!, channel: nil, now: p.now)
        p.apply(0, actions)
        p.run(seconds: 6)   // the fake controller pages for 5.12 s
        let failure = p.reported[0].compactMap { a -> String? in if case .openFailed(request, let r) = a { return r }; return nil }.first
        #expect(failure != nil)
        #expect(failure?.lowercased().contains("page timeout") ?? false, "\(failure ?? "")")
    }

    @Test func testDeviceDisconnectIsNamed() {
        var p = pair()
        let r = openAndEcho(&p, bytes: 100, channel: 5)
        guard let id = r.id else { return }
        p.apply(1, p.hosts[1].disconnect(handle: id.handle, now: p.now))
        p.run(seconds: 0.5)
        let closed = p.reported[0].compactMap { a -> (String, Bool)? in if case .closed(id, let why, let byPeer) = a { return (why, byPeer) }; return nil }.first
        #expect(closed?.1 == true)
        #expect(closed?.0.contains("0x13") ?? false, "\(closed?.0 ?? "not closed")")
    }

    @Test func testTheDeviceSideNamesThePhone() {
        var p = pair()
        let r = openAndEcho(&p, bytes: 100, channel: 5)
        guard let id = r.id else { return }
        p.apply(0, p.hosts[0].disconnect(handle: id.handle, now: p.now))
        p.run(seconds: 0.5)
        let closed = p.reported[1].compactMap { a -> String? in if case .closed(_, let why, true) = a { return why }; return nil }.first
        #expect(closed?.hasPrefix("the phone disconnected: HCI reason 0x13") ?? false, "\(closed ?? "not closed")")
    }

    @Test func testLinkLossIsNamed() {
        var p = pair()
        let r = openAndEcho(&p, bytes: 100, channel: 5)
        guard let id = r.id else { return }
        p.air.loseLink(0, handle: id.handle)
        p.run(seconds: 0.2)
        let closed = p.reported[0].compactMap { a -> String? in if case .closed(id, let why, true) = a { return why }; return nil }.first
        #expect(closed?.contains("link lost") ?? false, "\(closed ?? "not closed")")
    }

    @Test func testOurCloseIsNotThePeers() {
        var p = pair()
        let r = openAndEcho(&p, bytes: 100, channel: 5)
        guard let id = r.id else { return }
        p.apply(0, p.hosts[0].close(id, now: p.now))
        p.run(seconds: 0.5)
        #expect(p.reported[0].contains(.closed(id, reason: p.reported[0].compactMap { a -> String? in
            if case .closed(id, let why, _) = a { return why }; return nil }.first ?? "", byPeer: false)), "\(p.reported[0].suffix(4))")
        // The device saw the channel closed by the phone.
        #expect(p.reported[1].contains { if case .closed(_, _, true) = $0 { return true }; return false })
    }

    /// The channel protocol on both ends of the stack: a phone and a device machine, 50 exchanges each mode.
    @Test func testChannelProtocolOverTheStack() {
        for mode in [CommunicationMode.masterSlave, .duplex] {
            var p = pair()
            let r = openAndEcho(&p, bytes: 1, channel: 5)
            guard let id = r.id else { return }
            var phone = StreamLinkStation(machine: PhoneStateMachine(configuration: .byteStream(mode: mode)))
            var device = StreamLinkStation(machine: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), name: "dev", mode: .followPhone))
            device.machine.attach()
            var deviceChannel: SerialChannelID?
            for a in p.reported[1] { if case .opened(let d, _, true) = a { deviceChannel = d } }
            guard let dch = deviceChannel else { Issue.record("no device channel"); return }
            var delivered: [[UInt8]] = []
            var completed = 0
            var phoneEvents: [LinkEvent] = []
            var seen = [p.reported[0].count, p.reported[1].count]
            func carry(_ side: Int, _ actions: [StreamLinkAction]) {
                for a in actions {
                    switch a {
                    case .write(let b): p.apply(side, p.hosts[side].write(side == 0 ? id : dch, b, now: p.now))
                    case .event(let e):
                        if side == 0 { phoneEvents.append(e) } else if case .received(let m, let d) = e {
                            delivered.append(d)
                            if device.machine.mode == .masterSlave {
                                carry(1, device.perform(device.machine.reply(d, to: m, now: p.now).actions))
                            }
                        }
                    case .releaseResources: break
                    }
                }
            }
            func pump(_ seconds: Double) {
                let end = p.now + seconds
                while p.now < end {
                    p.run(seconds: 0.01)
                    for side in 0..<2 {
                        while seen[side] < p.reported[side].count {
                            let a = p.reported[side][seen[side]]
                            seen[side] += 1
                            if case .received(_, let b) = a {
                                carry(side, side == 0 ? phone.received(bytes: b, now: p.now) : device.received(bytes: b, now: p.now))
                            } else if case .sent = a {
                                carry(side, side == 0 ? phone.transmitted(now: p.now) : device.transmitted(now: p.now))
                            }
                        }
                    }
                    carry(0, phone.tick(now: p.now))
                    carry(1, device.tick(now: p.now))
                }
            }
            carry(0, phone.perform(phone.machine.open(session: 3, now: p.now)))
            pump(1)
            #expect(phoneEvents.contains { if case .opened(0, "dev") = $0 { return true }; return false }, "\(mode): \(phoneEvents)")
            for i in 0..<50 {
                let payload = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }
                phoneEvents.removeAll()
                let (code, actions) = phone.machine.exchange(payload, timeout: 5, now: p.now)
                #expect(code == 0)
                carry(0, phone.perform(actions))
                pump(0.3)
                let ok = mode == .masterSlave
                    ? phoneEvents.contains(.received(message: phoneEvents.compactMap { if case .received(let m, _) = $0 { return m }; return nil }.first ?? 0, data: payload))
                    : phoneEvents.contains { if case .sendOK = $0 { return true }; return false }
                if ok { completed += 1 }
            }
            #expect(completed == 50, "\(mode)")
            #expect(delivered.count == 50, "\(mode)")
        }
    }
}
