import Testing
import ModemTestSupport
@testable import ModemBluetooth

@Suite struct GAPMachineTests {
    private let centralAddress = "00:1B:DC:00:00:0A"
    private let deviceAddress = "00:1B:DC:00:00:0B"
    private var device: BDAddress { BDAddress(deviceAddress)! }
    private var central: BDAddress { BDAddress(centralAddress)! }

    private func commands(_ air: HCIFakeAir, _ i: Int) -> [UInt16] {
        air.controllers[i].commands.compactMap { if case let .command(op, _) = $0 { return op } else { return nil } }
    }

    /// A central and a device ("Bumble Echo"), both started and ready.
    private func pair(central configuration: GAPConfiguration = .init(), aclLength: Int = 1021, aclCount: Int = 8)
        -> (rig: GAPRig, a: Int, b: Int) {
        var rig = GAPRig()
        let a = rig.add(centralAddress, configuration, aclLength: aclLength, aclCount: aclCount)
        let b = rig.add(deviceAddress, .init(role: .device(name: "Bumble Echo", classOfDevice: 0x5A020C), serviceUUID16s: [0x1101]),
                        aclLength: aclLength, aclCount: aclCount)
        rig.start(a)
        rig.start(b)
        rig.run(until: 0.1)
        #expect(rig.take(a) == [.ready(address: central)])
        #expect(rig.take(b) == [.ready(address: device)])
        return (rig, a, b)
    }

    @Test func testInitRunsTheScriptForEachRole() {
        let (rig, a, b) = pair()
        #expect(commands(rig.air, a) == [0x0C03, 0x1009, 0x1005, 0x1001, 0x0C01, 0x0C56, 0x0C45, 0x0C18])
        #expect(commands(rig.air, b) == [0x0C03, 0x1009, 0x1005, 0x1001, 0x0C01, 0x0C56, 0x0C45, 0x0C18,
                                              0x0C13, 0x0C24, 0x0C52, 0x0C1A])
        let controller = rig.air.controllers[b]
        #expect(controller.localName == "Bumble Echo")
        #expect(controller.classOfDevice == 0x5A020C)
        #expect(controller.scan == 0x03)
        #expect(EIRData(parsing: controller.eir ?? []).name?.text == "Bumble Echo")
        #expect(EIRData(parsing: controller.eir ?? []).uuid16s == [0x1101])
        #expect(rig.air.controllers[a].scan == 0, "a central is not discoverable")
        #expect(rig.machines[b].hci.state == .ready)
    }

    @Test func testASilentControllerFailsInTwoSeconds() {
        var rig = GAPRig()
        let a = rig.add(centralAddress, .init())
        rig.air.controllers[a].silent = [HCICommand.Opcode.reset]
        rig.start(a)
        rig.run(until: 1.99)
        #expect(rig.take(a) == [])
        rig.run(until: 2.01)
        #expect(rig.take(a) == [.failed("no answer from the controller")])
        rig.inquire(a, seconds: 1)
        #expect(rig.take(a) == [.inquiryComplete(failure: "no answer from the controller")])
        rig.connect(a, deviceAddress)
        #expect(rig.take(a) == [.connectFailed(address: device, reason: "no answer from the controller")])
    }

    @Test func testInquiryFindsDevicesAndTheirNamesAfterwards() {
        var (rig, a, _) = pair()
        rig.air.bystanders = [
            .init(address: BDAddress("00:1B:DC:00:01:02")!, name: "Echo 2", eir: false),
            .init(address: BDAddress("00:1B:DC:00:01:03")!, name: "Echo 3", eir: true),
            .init(address: BDAddress("00:1B:DC:00:01:04")!, name: "Mute", eir: false, answersName: false),
        ]
        rig.air.pageTimeout = 7  // longer than our 5 s per name
        let start = rig.air.now
        rig.inquire(a, seconds: 3)
        guard case let .command(0x0401, parameters)? = rig.air.controllers[a].commands.last else { Issue.record(); return }
        #expect(parameters == [0x33, 0x8B, 0x9E, 3, 0], "GIAC, ceil(3 / 1.28) = 3")
        rig.run(until: start + 2.9)
        #expect(rig.take(a) == [
            .found(address: device, name: "Bumble Echo"),
            .found(address: BDAddress("00:1B:DC:00:01:02")!, name: nil),
            .found(address: BDAddress("00:1B:DC:00:01:03")!, name: "Echo 3"),
            .found(address: BDAddress("00:1B:DC:00:01:04")!, name: nil),
        ])
        #expect(!commands(rig.air, a).contains(0x0419), "no name requests during inquiry")
        rig.run(until: start + 3.005)
        #expect(commands(rig.air, a).last == 0x0402, "cancelled when the time is up")
        rig.run(until: start + 3.05)
        #expect(commands(rig.air, a).suffix(3).first == 0x0402, "then the names")
        rig.run(until: start + 4)
        #expect(rig.take(a) == [.found(address: BDAddress("00:1B:DC:00:01:02")!, name: "Echo 2")])
        rig.run(until: start + 3 + 4.9)
        #expect(rig.take(a) == [], "still waiting for the mute one's name")
        rig.run(until: start + 3 + 5.2)
        #expect(rig.take(a) == [.inquiryComplete(failure: nil)])
        // Only the two without a complete name were asked.
        let asked = rig.air.controllers[a].commands.compactMap { packet -> BDAddress? in
            guard case let .command(0x0419, p) = packet else { return nil }
            return BDAddress(wire: p.prefix(6))
        }
        #expect(asked == [BDAddress("00:1B:DC:00:01:02")!, BDAddress("00:1B:DC:00:01:04")!])
        // The late page timeout for the mute one changes nothing.
        rig.run(until: start + 12)
        #expect(rig.take(a) == [])
    }

    @Test func testInquiryInStandardModeAndRefusal() {
        var (rig, a, _) = pair()
        rig.air.controllers[a].inquiryMode = 0  // a controller that ignored Write_Inquiry_Mode: 0x02 results, no EIR
        rig.inquire(a, seconds: 1.28)
        rig.run(until: rig.air.now + 3)
        #expect(rig.take(a) == [.found(address: device, name: nil), .found(address: device, name: "Bumble Echo"),
                                     .inquiryComplete(failure: nil)])
        rig.air.controllers[a].unsupported = [0x0401]
        rig.inquire(a, seconds: 1)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.take(a) == [.inquiryComplete(failure: "the controller refused Inquiry: 0x01 unknown HCI command")])
        // Bumble's stock controller never answers Inquiry: our 2 s command timeout ends it.
        rig.air.controllers[a].unsupported = []
        rig.air.controllers[a].silent = [0x0401]
        let start = rig.air.now
        rig.inquire(a, seconds: 5)
        rig.run(until: start + 1.9)
        #expect(rig.take(a) == [])
        rig.run(until: start + 2.1)
        #expect(rig.take(a) == [.inquiryComplete(failure: "no answer from the controller to Inquiry (0x0401)")])
    }

    @Test func testALinkThatCompletesAfterWeGaveUpIsDroppedQuietly() {
        let (rig, a, _) = pair()
        let nobody = BDAddress("00:1B:DC:00:09:09")!
        var machine = rig.machines[a]
        let start = rig.air.now
        _ = machine.connect(nobody, now: start)
        #expect(machine.nextDeadline == (start + 2), "the Create_Connection command timeout comes first")
        _ = machine.received(HCIEvent.commandStatus(status: 0, numCommands: 1, opcode: 0x0405).packet, now: start)
        #expect(machine.nextDeadline == (start + 10))
        let gaveUp = machine.tick(now: start + 10)
        #expect(gaveUp.contains(.send(HCICommand.createConnectionCancel(nobody))))
        #expect(gaveUp.contains { if case .connectFailed(nobody, _) = $0 { return true } else { return false } })
        let cancelled = HCIEvent.commandComplete(numCommands: 1, opcode: 0x0408, returnParameters: [0] + nobody.wire)
        #expect(machine.received(cancelled.packet, now: start + 10.05) == [])
        let late = HCIEvent.connectionComplete(status: 0, handle: 9, address: nobody, linkType: 1, encryption: 0)
        #expect(machine.received(late.packet, now: start + 10.1) == [.send(HCICommand.disconnect(handle: 9, reason: 0x13))])
        #expect(machine.connections == [:])
        #expect(machine.received(.acl(handle: 9, boundary: 2, broadcast: 0, data: [0, 0, 1, 0]), now: start + 10.2) == [], "its data goes nowhere")
        #expect(machine.received(HCIEvent.disconnectionComplete(status: 0, handle: 9, reason: 0x16).packet, now: start + 10.3) == [])
    }

    @Test func testConnectExchangeDataAndDisconnectWithReasons() {
        var (rig, a, b) = pair(central: .init(aclMTUOverride: 27, aclCountOverride: 2))
        rig.air.completionDelay = { random in Double.random(in: 0...0.05, using: &random) }
        rig.connect(a, deviceAddress)
        guard case let .command(0x0405, p)? = rig.air.controllers[a].commands.last else { Issue.record(); return }
        #expect(Array(p[6...]) == [0x18, 0xCC, 0x01, 0x00, 0x00, 0x00, 0x01], "packet types 0xCC18, PSRM R1, reserved, no clock offset, role switch allowed")
        rig.run(until: rig.air.now + 0.1)
        guard case let .connected(ha, address, false)? = rig.take(a).first else { Issue.record(); return }
        #expect(address == device)
        guard case let .connected(hb, address2, true)? = rig.take(b).first else { Issue.record(); return }
        #expect(address2 == central)
        #expect(rig.machines[a].connections == [ha: device])

        // L2CAP frames both ways: a's 27-byte, 2-buffer override paces it; b's controller limits apply to b.
        var random = TestRandom(seed: 9)
        var frames: [[UInt8]] = []
        for size in [0, 1, 23, 24, 500, 5000] {
            var frame: [UInt8] = []
            frame.appendLE(UInt16(size)); frame.appendLE(UInt16(0x0040)); frame += random.bytes(size)
            frames.append(frame)
            rig.send(a, handle: ha, pdu: frame)
            rig.send(b, handle: hb, pdu: frame)
        }
        #expect(rig.machines[a].queuedACLBytes(handle: ha) > 4000)
        rig.run(until: rig.air.now + 30)
        #expect(rig.machines[a].queuedACLBytes(handle: ha) == 0)
        let atB = rig.take(b), atA = rig.take(a)
        #expect(atB.compactMap { if case let .l2cap(h, pdu) = $0, h == hb { return pdu } else { return nil } } == frames)
        #expect(atA.compactMap { if case let .l2cap(h, pdu) = $0, h == ha { return pdu } else { return nil } } == frames)
        #expect(atA.filter { $0 == .aclTransmitted(handle: ha) }.count == 6)
        #expect(rig.air.controllers[a].violations == [])
        #expect(rig.air.controllers[b].violations == [])
        #expect(rig.air.controllers[a].maxACLInFlight == 2)
        #expect(rig.air.controllers[a].aclFragmentsFromHost.allSatisfy { $0.data.count <= 27 })

        rig.disconnect(a, handle: ha, reason: 0x13)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.take(a) == [.disconnected(handle: ha, reason: 0x16, description: "connection terminated by local host")])
        #expect(rig.take(b) == [.disconnected(handle: hb, reason: 0x13, description: "remote user terminated connection")])
        #expect(rig.machines[a].connections == [:])
        rig.disconnect(a, handle: ha)
        #expect(rig.take(a) == [], "an unknown handle is ignored")
    }

    @Test func testLinkLossAndRemoteDisconnectNameTheReason() {
        var (rig, a, b) = pair()
        rig.connect(a, deviceAddress)
        rig.run(until: rig.air.now + 0.1)
        guard case let .connected(ha, _, _)? = rig.take(a).first, case let .connected(hb, _, _)? = rig.take(b).first else { Issue.record(); return }
        rig.air.loseLink(a, handle: ha)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.take(a) == [.disconnected(handle: ha, reason: 0x08, description: "connection timeout")])
        #expect(rig.take(b) == [.disconnected(handle: hb, reason: 0x08, description: "connection timeout")])
        // The device disconnects this time, with "power off".
        rig.connect(a, deviceAddress)
        rig.run(until: rig.air.now + 0.1)
        guard case let .connected(ha2, _, _)? = rig.take(a).first, case let .connected(hb2, _, _)? = rig.take(b).first else { Issue.record(); return }
        rig.disconnect(b, handle: hb2, reason: 0x15)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.take(a) == [.disconnected(handle: ha2, reason: 0x15, description: "remote device terminated connection due to power off")])
    }

    @Test func testPageTimeoutAndOurOwnGuard() {
        var (rig, a, _) = pair()
        let nobody = BDAddress("00:1B:DC:00:09:09")!
        let start = rig.air.now
        rig.connect(a, nobody.description)
        rig.connect(a, nobody.description)  // a second call while paging changes nothing
        rig.run(until: start + 5.1)
        #expect(rig.take(a) == [])
        rig.run(until: start + 5.2)
        #expect(rig.take(a) == [.connectFailed(address: nobody, reason: "no answer from 00:1B:DC:00:09:09 (page timeout)")])
        #expect(commands(rig.air, a).filter { $0 == 0x0405 }.count == 1)

        // A controller that never ends the page: our 10 s guard, then Create_Connection_Cancel.
        rig.air.pageTimeout = 60
        let again = rig.air.now
        rig.connect(a, nobody.description)
        rig.run(until: again + 9.9)
        #expect(rig.take(a) == [])
        rig.run(until: again + 10.2)
        #expect(rig.take(a) == [.connectFailed(address: nobody, reason: "no answer from 00:1B:DC:00:09:09 (no Connection Complete in 10 s)")])
        #expect(commands(rig.air, a).last == 0x0408)
        rig.run(until: again + 70)
        #expect(rig.take(a) == [], "the cancelled page's Connection Complete (0x02) is not reported twice")

        // Create_Connection refused outright.
        rig.air.controllers[a].unsupported = [0x0405]
        rig.connect(a, deviceAddress)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.take(a) == [.connectFailed(address: device, reason: "cannot connect to \(device): 0x01 unknown HCI command")])
    }

    @Test func testACentralRejectsUnlessToldToAccept() {
        var rig = GAPRig()
        let a = rig.add(centralAddress, .init())
        let b = rig.add(deviceAddress, .init())
        rig.start(a); rig.start(b)
        rig.run(until: 0.1)
        _ = rig.take(a); _ = rig.take(b)
        rig.air.controllers[b].scan = 0x02  // connectable, as if by another host's doing
        rig.connect(a, deviceAddress)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.take(a) == [.connectFailed(address: device, reason: "cannot connect to \(device): 0x0F connection rejected due to unacceptable BD_ADDR")])
        #expect(rig.take(b) == [])
        #expect(rig.air.controllers[b].commands.last == HCICommand.rejectConnectionRequest(central, reason: 0x0F))

        rig.machines[b].acceptIncoming = true
        rig.connect(a, deviceAddress)
        rig.run(until: rig.air.now + 0.1)
        #expect(rig.air.controllers[b].commands.last == HCICommand.acceptConnectionRequest(central, role: 0x01))
        guard case .connected(_, _, false)? = rig.take(a).first, case .connected(_, central, true)? = rig.take(b).first else {
            Issue.record(); return
        }
    }

    @Test func testSecureSimplePairingJustWorks() {
        var (rig, a, _) = pair()
        let peer = device
        for (event, answer) in [
            (HCIEvent.linkKeyRequest(address: peer), HCICommand.linkKeyRequestNegativeReply(peer)),
            (.ioCapabilityRequest(address: peer), HCICommand.ioCapabilityRequestReply(peer, ioCapability: 0x03, oobDataPresent: 0, authenticationRequirements: 0)),
            (.userConfirmationRequest(address: peer, value: 123_456), HCICommand.userConfirmationRequestReply(peer)),
            (.pinCodeRequest(address: peer), HCICommand.pinCodeRequestNegativeReply(peer)),
        ] {
            rig.air.inject(event, to: a)
            rig.run(until: rig.air.now + 0.02)
            #expect(rig.air.controllers[a].commands.last == answer)
        }
        #expect(rig.take(a) == [])
    }

    @Test func testMalformedEventsAreCountedAndHardwareErrorsAreFatal() {
        var (rig, a, _) = pair()
        #expect(rig.machines[a].received(.event(code: 0x03, parameters: [0, 1]), now: 1).count == 1)
        guard case .damaged? = rig.machines[a].received(.event(code: 0x03, parameters: [0, 1]), now: 1).first else { Issue.record(); return }
        #expect(rig.machines[a].received(HCIEvent.hardwareError(code: 7).packet, now: 1) == [.failed("the controller reports hardware error 0x07")])
    }
}
