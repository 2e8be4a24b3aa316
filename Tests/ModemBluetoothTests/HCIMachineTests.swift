import Testing
import ModemTestSupport
@testable import ModemBluetooth

@Suite struct HCIMachineTests {
    private let controllerAddress = BDAddress("00:1B:DC:00:00:0A")!

    private func opcodes(_ outputs: [HCIMachine.Output]) -> [UInt16] {
        outputs.compactMap { if case let .send(.command(opcode, _)) = $0 { return opcode } else { return nil } }
    }

    private func complete(_ opcode: UInt16, _ parameters: [UInt8] = [0], credits: UInt8 = 1) -> HCIPacket {
        HCIEvent.commandComplete(numCommands: credits, opcode: opcode, returnParameters: parameters).packet
    }

    /// Answers every command like a controller with the given buffers; returns the opcodes it saw.
    private func answer(_ machine: inout HCIMachine, _ outputs: [HCIMachine.Output], aclLength: UInt16 = 1021,
                        aclCount: UInt16 = 8, failing: [UInt16: UInt8] = [:], now: Double = 0,
                        sink: inout [HCIMachine.Output]) -> [UInt16] {
        var seen: [UInt16] = []
        var queue = opcodes(outputs)
        sink += outputs
        while !queue.isEmpty {
            let opcode = queue.removeFirst()
            seen.append(opcode)
            var parameters: [UInt8] = [failing[opcode] ?? 0]
            if failing[opcode] == nil {
                if opcode == HCICommand.Opcode.readBDADDR { parameters += controllerAddress.wire }
                if opcode == HCICommand.Opcode.readBufferSize {
                    parameters.appendLE(aclLength); parameters.append(64); parameters.appendLE(aclCount); parameters.appendLE(UInt16(0))
                }
            }
            let more = machine.received(complete(opcode, parameters), now: now)
            sink += more
            queue += opcodes(more)
        }
        return seen
    }

    private func readyMachine(aclLength: UInt16 = 1021, aclCount: UInt16 = 8, mtuOverride: Int? = nil,
                              countOverride: Int? = nil) -> HCIMachine {
        var machine = HCIMachine(aclMTUOverride: mtuOverride, aclCountOverride: countOverride)
        var sink: [HCIMachine.Output] = []
        _ = answer(&machine, machine.start(now: 0), aclLength: aclLength, aclCount: aclCount, sink: &sink)
        #expect(machine.state == .ready)
        return machine
    }

    @Test func testInitScriptRunsInOrderAndReportsTheAddress() {
        var machine = HCIMachine()
        let first = machine.start(now: 0)
        #expect(opcodes(first) == [HCICommand.Opcode.reset], "one command at a time: one credit")
        var sink: [HCIMachine.Output] = []
        let seen = answer(&machine, first, sink: &sink)
        #expect(seen == [0x0C03, 0x1009, 0x1005, 0x1001, 0x0C01, 0x0C56, 0x0C45, 0x0C18])
        #expect(sink.contains(.send(HCICommand.writeInquiryMode(2))))
        #expect(sink.contains(.send(HCICommand.writePageTimeout(slots: 0x2000))))
        #expect(sink.last == .ready(address: controllerAddress))
        #expect(machine.aclDataPacketLength == 1021)
        #expect(machine.totalACLDataPackets == 8)
        #expect(machine.warnings == [])
    }

    @Test func testOverridesTakeTheSmallerValue() {
        #expect(readyMachine(mtuOverride: 27, countOverride: 2).aclDataPacketLength == 27)
        #expect(readyMachine(mtuOverride: 27, countOverride: 2).totalACLDataPackets == 2)
        let bigger = readyMachine(aclLength: 100, aclCount: 3, mtuOverride: 1021, countOverride: 8)
        #expect(bigger.aclDataPacketLength == 100)
        #expect(bigger.totalACLDataPackets == 3)
    }

    @Test func testOnlyResetBDADDRAndBufferSizeAreFatal() {
        var machine = HCIMachine()
        var sink: [HCIMachine.Output] = []
        _ = answer(&machine, machine.start(now: 0), failing: [0x0C45: 0x01, 0x1001: 0x01, 0x0C56: 0x12], sink: &sink)
        #expect(machine.state == .ready)
        #expect(machine.warnings.count == 3)
        #expect(machine.warnings.contains("Write_Inquiry_Mode (0x0C45): 0x01 unknown HCI command"), "\(machine.warnings)")

        for fatal: UInt16 in [0x0C03, 0x1009, 0x1005] {
            var m = HCIMachine()
            var out: [HCIMachine.Output] = []
            let seen = answer(&m, m.start(now: 0), failing: [fatal: 0x03], sink: &out)
            #expect(seen.last == fatal, "nothing sent after the fatal failure")
            guard case let .failed(reason) = m.state else { Issue.record("\(m.state)"); return }
            #expect(reason.contains("0x03 hardware failure"), "\(reason)")
            #expect(out.contains(.failed(reason)))
            #expect(m.command(HCICommand.inquiryCancel(), now: 1) == [], "a failed controller takes nothing")
        }
        // A buffer size of zero is unusable.
        var zero = HCIMachine()
        var out: [HCIMachine.Output] = []
        _ = answer(&zero, zero.start(now: 0), aclLength: 0, sink: &out)
        guard case .failed = zero.state else { Issue.record("\(zero.state)"); return }
    }

    @Test func testAnUnansweredResetFailsAfterTwoSeconds() {
        var machine = HCIMachine()
        #expect(opcodes(machine.start(now: 10)) == [0x0C03])
        #expect(machine.nextDeadline == 12)
        #expect(machine.tick(now: 11.9) == [])
        #expect(machine.tick(now: 12.0) == [.failed("no answer from the controller")])
        #expect(machine.state == .failed("no answer from the controller"))
        // A silent non-fatal command is skipped after its timeout; the script goes on.
        var skip = HCIMachine()
        var waiting = opcodes(skip.start(now: 0))
        var now = 0.0
        var skippedAt: Double?
        while skip.state == .initialising, now < 10 {
            if let opcode = waiting.first {
                waiting.removeFirst()
                if opcode == 0x0C56 { continue }  // this controller never answers it
                var p: [UInt8] = [0]
                if opcode == 0x1009 { p += controllerAddress.wire }
                if opcode == 0x1005 { p += [27, 0, 64, 2, 0, 0, 0] }
                waiting += opcodes(skip.received(complete(opcode, p), now: now))
            } else {
                now += 0.25
                waiting += opcodes(skip.tick(now: now))
                if skippedAt == nil, !skip.warnings.isEmpty { skippedAt = now }
            }
        }
        #expect(skip.state == .ready)
        #expect(skip.warnings == ["Write_Simple_Pairing_Mode (0x0C56): no answer"])
        #expect(skippedAt == 2.0, "skipped after exactly the timeout")
    }

    @Test func testCommandCreditsPaceTheFIFO() {
        var machine = readyMachine()
        // The last answer gave 1 credit: one command goes, the rest wait.
        var out = machine.command(HCICommand.inquiry(length: 4), now: 1)
        out += machine.command(HCICommand.writeScanEnable(3), now: 1)
        out += machine.command(HCICommand.writeScanEnable(0), now: 1)
        #expect(opcodes(out) == [0x0401])
        // Command Status with 0 credits: nothing more goes.
        out = machine.received(HCIEvent.commandStatus(status: 0, numCommands: 0, opcode: 0x0401).packet, now: 1.1)
        #expect(out == [.commandFinished(command: HCICommand.inquiry(length: 4), result: .status(0))])
        // A NOP Command Complete (opcode 0) with 2 credits releases two.
        out = machine.received(complete(0x0000, [], credits: 2), now: 1.2)
        #expect(out == [.send(HCICommand.writeScanEnable(3)), .send(HCICommand.writeScanEnable(0))])
        #expect(machine.commandCredits == 0)
        // One never answered times out after 2 s and gives its credit back.
        out = machine.received(complete(0x0C1A, [0], credits: 0), now: 1.3)
        #expect(out == [.commandFinished(command: HCICommand.writeScanEnable(3), result: .complete(returnParameters: [0]))])
        #expect(machine.tick(now: 3.19) == [])
        #expect(machine.tick(now: 3.2) == [.commandFinished(command: HCICommand.writeScanEnable(0), result: .timedOut)])
        #expect(machine.commandCredits == 1)
        // An answer to nothing we sent is passed up as an event.
        let stray = HCIEvent.commandComplete(numCommands: 1, opcode: 0x0C1A, returnParameters: [0])
        #expect(machine.received(stray.packet, now: 4) == [.event(stray)])
    }

    @Test func testMalformedAndOddPacketsAreCountedNotThrown() {
        var machine = readyMachine()
        let out = machine.received(.event(code: 0x05, parameters: [0, 1]), now: 1)
        guard case let .damaged(reason)? = out.first else { Issue.record("\(out)"); return }
        #expect(reason.contains("0x05"), "\(reason)")
        #expect(machine.received(.event(code: 0x3E, parameters: [1, 2]), now: 1) == [.event(.other(code: 0x3E, parameters: [1, 2]))])
        guard case .damaged = machine.received(.sco(handle: 1, data: [1]), now: 1).first,
              case .damaged = machine.received(HCICommand.reset(), now: 1).first else { Issue.record(); return }
        #expect(machine.state == .ready)
    }

    private func connect(_ machine: inout HCIMachine, handle: UInt16) {
        let event = HCIEvent.connectionComplete(status: 0, handle: handle, address: controllerAddress, linkType: 1, encryption: 0)
        #expect(machine.received(event.packet, now: 1) == [.event(event)])
    }

    /// Fragments as sent, joined back per handle by their boundary flags.
    private func join(_ outputs: [HCIMachine.Output], length: Int, into pdus: inout [UInt16: [[UInt8]]]) {
        for output in outputs {
            guard case let .send(.acl(handle, boundary, _, data)) = output else { continue }
            #expect(data.count <= length)
            if boundary == 0b10 { pdus[handle, default: []].append(data) } else {
                #expect(boundary == 0b01)
                pdus[handle]![pdus[handle]!.count - 1] += data
            }
        }
    }

    @Test func testFragmentationAndReassemblyAtEachACLLength() throws {
        var random = TestRandom(seed: 11)
        for length in [27, 339, 1021] {
            var sender = readyMachine(aclLength: UInt16(length), aclCount: 4)
            var receiver = readyMachine(aclLength: UInt16(length), aclCount: 4)
            connect(&sender, handle: 0x0040)
            connect(&receiver, handle: 0x0040)
            let sizes = [0, 1, 2, 3, 4, 5, length - 5, length - 4, length - 1, length, length + 1, 2 * length, 70_000]
                + (0..<6).map { _ in Int.random(in: 0...70_000, using: &random) }
            var joined: [UInt16: [[UInt8]]] = [:]
            var transmitted = 0
            for size in sizes {
                let pdu = random.bytes(size)
                var out = sender.sendACL(handle: 0x0040, pdu: pdu)
                // Drain: complete every packet at once until the queue is empty.
                while true {
                    join(out, length: length, into: &joined)
                    transmitted += out.filter { $0 == .aclTransmitted(handle: 0x0040) }.count
                    let sent = out.filter { if case .send(.acl) = $0 { return true } else { return false } }.count
                    if sent == 0 { break }
                    #expect(sender.aclPacketsInFlight <= 4)
                    out = sender.received(HCIEvent.numberOfCompletedPackets([.init(handle: 0x0040, count: UInt16(sent))]).packet, now: 2)
                }
                #expect(joined[0x0040]?.last == pdu, "size \(size) at \(length)")
                #expect(sender.queuedACLBytes(handle: 0x0040) == 0)
            }
            #expect(transmitted == sizes.count)

            // Reassembly: valid L2CAP frames (payload 0...65535) cut at the ACL length, one at a time.
            for payload in [0, 1, length - 4, length - 3, length, 5000, 65535] {
                var frame: [UInt8] = []
                frame.appendLE(UInt16(payload)); frame.appendLE(UInt16(0x0040)); frame += random.bytes(payload)
                var got: [HCIMachine.Output] = []
                for start in stride(from: 0, to: frame.count, by: length) {
                    let chunk = Array(frame[start..<min(frame.count, start + length)])
                    got += receiver.received(.acl(handle: 0x0040, boundary: start == 0 ? 0b10 : 0b01, broadcast: 0, data: chunk), now: 2)
                }
                #expect(got == [.acl(handle: 0x0040, pdu: frame)], "payload \(payload) at \(length)")
            }
        }
    }

    @Test func testReassemblyDropsBrokenFramesAndCountsThem() {
        var machine = readyMachine()
        connect(&machine, handle: 1)
        func acl(_ boundary: UInt8, _ data: [UInt8], handle: UInt16 = 1) -> [HCIMachine.Output] {
            machine.received(.acl(handle: handle, boundary: boundary, broadcast: 0, data: data), now: 1)
        }
        func isDamaged(_ out: [HCIMachine.Output]) -> Bool { out.contains { if case .damaged = $0 { return true } else { return false } } }
        #expect(isDamaged(acl(0b01, [1, 2, 3])), "continuation with no start")
        #expect(isDamaged(acl(0b10, [4, 0, 0x40, 0, 1, 2, 3, 4], handle: 2)), "handle not connected")
        #expect(acl(0b10, [4, 0, 0x40, 0, 1, 2]) == [])
        let restart = acl(0b10, [1, 0, 0x40, 0, 9])
        #expect(isDamaged(restart), "a new start drops the partial frame")
        #expect(restart.contains(.acl(handle: 1, pdu: [1, 0, 0x40, 0, 9])))
        #expect(isDamaged(acl(0b10, [1, 0, 0x40, 0, 9, 9])), "longer than its length")
        // A start of one byte waits for the second length byte.
        #expect(acl(0b10, [0]) == [])
        #expect(acl(0b01, [0, 0x40, 0]) == [.acl(handle: 1, pdu: [0, 0, 0x40, 0])])
        // Non-flushable start (0b00) is a start too.
        #expect(acl(0b00, [0, 0, 1, 0]) == [.acl(handle: 1, pdu: [0, 0, 1, 0])])
        // An absurd claimed length is bounded by the 16-bit field: 65535 + 4 bytes at most, then dropped.
        _ = acl(0b10, [0xFF, 0xFF, 0x40, 0])
        var out: [HCIMachine.Output] = []
        for _ in 0..<70 { out += acl(0b01, [UInt8](repeating: 0, count: 1000)) }
        #expect(isDamaged(out))
        // After a disconnection the handle's data is dropped.
        _ = machine.received(HCIEvent.disconnectionComplete(status: 0, handle: 1, reason: 0x13).packet, now: 2)
        #expect(isDamaged(acl(0b10, [0, 0, 1, 0])))
    }

    @Test func testCreditsAreNeverExceededWithRandomCompletionsRoundRobin() {
        var random = TestRandom(seed: 5)
        for count in [1, 2, 8] {
            var machine = readyMachine(aclLength: 1021, aclCount: 8, mtuOverride: 27, countOverride: count)
            let handles: [UInt16] = [1, 2, 3]
            for h in handles { connect(&machine, handle: h) }
            var expected: [UInt16: [[UInt8]]] = [:]
            var joined: [UInt16: [[UInt8]]] = [:]
            var inFlight: [UInt16: Int] = [:]
            var order: [UInt16] = []
            var transmitted = 0
            func take(_ out: [HCIMachine.Output]) {
                join(out, length: 27, into: &joined)
                for case let .send(.acl(h, _, _, _)) in out { inFlight[h, default: 0] += 1; order.append(h) }
                transmitted += out.filter { if case .aclTransmitted = $0 { return true } else { return false } }.count
                #expect(inFlight.values.reduce(0, +) <= count)
                #expect(machine.aclPacketsInFlight == inFlight.values.reduce(0, +))
            }
            for h in handles {
                for _ in 0..<5 {
                    let pdu = random.bytes(Int.random(in: 0...300, using: &random))
                    expected[h, default: []].append(pdu)
                    take(machine.sendACL(handle: h, pdu: pdu))
                }
            }
            order = []  // from here on every queue holds data
            var rounds = 0
            while inFlight.values.reduce(0, +) > 0, rounds < 100_000 {
                rounds += 1
                // Complete a random number of a random handle's packets, sometimes none.
                guard let h = inFlight.filter({ $0.value > 0 }).keys.randomElement(using: &random) else { break }
                let n = Int.random(in: 0...inFlight[h]!, using: &random)
                inFlight[h]! -= n
                take(machine.received(HCIEvent.numberOfCompletedPackets([.init(handle: h, count: UInt16(n))]).packet, now: 2))
            }
            #expect(joined == expected, "count \(count)")
            #expect(transmitted == 15)
            // Round robin: with all three queues full, no handle sends twice before the others once.
            let firstSix = Array(order.prefix(6))
            #expect(firstSix.count == 6)
            for window in 0..<4 { #expect(Set(firstSix[window..<window + 3]).count == 3, "\(firstSix)") }
        }
    }

    @Test func testDisconnectionReturnsCreditsAndDropsTheQueue() {
        var machine = readyMachine(aclLength: 27, aclCount: 2)
        connect(&machine, handle: 1)
        connect(&machine, handle: 2)
        let sent1 = machine.sendACL(handle: 1, pdu: [UInt8](repeating: 1, count: 100))
        #expect(sent1.count == 2, "two fragments fill the buffers")
        #expect(machine.sendACL(handle: 2, pdu: [2, 2, 2]) == [])
        #expect(machine.queuedACLBytes(handle: 1) == 46)
        let out = machine.received(HCIEvent.disconnectionComplete(status: 0, handle: 1, reason: 0x08).packet, now: 1)
        #expect(out == [.event(.disconnectionComplete(status: 0, handle: 1, reason: 0x08)),
                             .send(.acl(handle: 2, boundary: 0b10, broadcast: 0, data: [2, 2, 2])), .aclTransmitted(handle: 2)])
        #expect(machine.queuedACLBytes(handle: 1) == 0)
        #expect(machine.aclPacketsInFlight == 1)
        // A late completion for the gone handle gives nothing extra.
        #expect(machine.received(HCIEvent.numberOfCompletedPackets([.init(handle: 1, count: 2)]).packet, now: 1) == [])
        #expect(machine.aclPacketsInFlight == 1)
    }
}
