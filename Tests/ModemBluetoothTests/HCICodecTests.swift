import Testing
import ModemTestSupport
@testable import ModemBluetooth

@Suite struct HCICodecTests {
    private let peer = BDAddress("00:1B:DC:00:00:0B")!

    /// A mix of every packet kind, including empty and maximal payloads.
    private func samplePackets() -> [HCIPacket] {
        var random = TestRandom(seed: 7)
        return [
            HCICommand.reset(),
            HCICommand.createConnection(peer),
            .acl(handle: 0x0ABC, boundary: 0b10, broadcast: 0, data: random.bytes(27)),
            .acl(handle: 0x0001, boundary: 0b01, broadcast: 0, data: []),
            .acl(handle: 0x0FFF, boundary: 0b10, broadcast: 1, data: random.bytes(65535)),
            .sco(handle: 0x0003, data: random.bytes(60)),
            .event(code: 0x0E, parameters: [1, 0x03, 0x0C, 0x00]),
            .event(code: 0xFF, parameters: random.bytes(255)),
            .event(code: 0x05, parameters: []),
        ]
    }

    @Test func testPacketsEncodeToTheSpecifiedBytes() {
        #expect(HCICommand.reset().h4 == [0x01, 0x03, 0x0C, 0x00])
        #expect(HCIPacket.acl(handle: 0x0042, boundary: 0b10, broadcast: 0, data: [9, 8]).h4 == [0x02, 0x42, 0x20, 0x02, 0x00, 9, 8])
        #expect(HCIPacket.acl(handle: 0x0042, boundary: 0b01, broadcast: 0, data: [9]).h4 == [0x02, 0x42, 0x10, 0x01, 0x00, 9])
        #expect(HCIPacket.event(code: 0x0F, parameters: [0, 1, 0x01, 0x04]).h4 == [0x04, 0x0F, 0x04, 0, 1, 0x01, 0x04])
        #expect(HCIPacket.sco(handle: 0x0101, data: [1, 2, 3]).h4 == [0x03, 0x01, 0x01, 0x03, 1, 2, 3])
        // Inquiry with GIAC: 33 8B 9E, length, unlimited responses.
        #expect(HCICommand.inquiry(length: 4).h4 == [0x01, 0x01, 0x04, 0x05, 0x33, 0x8B, 0x9E, 0x04, 0x00])
        #expect(HCICommand.inquiry(length: 0).h4.suffix(2) == [0x01, 0x00], "length clamped to 1")
        #expect(HCICommand.inquiry(length: 200).h4.suffix(2) == [0x30, 0x00], "length clamped to 0x30")
        #expect(HCICommand.createConnection(peer).h4 == [0x01, 0x05, 0x04, 13, 0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00, 0x18, 0xCC, 0x01, 0x00, 0x00, 0x00, 0x01])
        #expect(HCICommand.disconnect(handle: 0x0001).h4 == [0x01, 0x06, 0x04, 3, 0x01, 0x00, 0x13])
        #expect(HCICommand.acceptConnectionRequest(peer).h4 == ([0x01, 0x09, 0x04, 7] + peer.wire + [0x01]))
        #expect(HCICommand.rejectConnectionRequest(peer).h4 == ([0x01, 0x0A, 0x04, 7] + peer.wire + [0x0F]))
        #expect(HCICommand.linkKeyRequestNegativeReply(peer).h4 == ([0x01, 0x0C, 0x04, 6] + peer.wire))
        #expect(HCICommand.pinCodeRequestNegativeReply(peer).h4 == ([0x01, 0x0E, 0x04, 6] + peer.wire))
        #expect(HCICommand.authenticationRequested(handle: 0x0102).h4 == [0x01, 0x11, 0x04, 2, 0x02, 0x01])
        #expect(HCICommand.remoteNameRequest(peer).h4 == ([0x01, 0x19, 0x04, 10] + peer.wire + [0x01, 0x00, 0x00, 0x00]))
        #expect(HCICommand.ioCapabilityRequestReply(peer).h4 == ([0x01, 0x2B, 0x04, 9] + peer.wire + [0x03, 0x00, 0x00]))
        #expect(HCICommand.userConfirmationRequestReply(peer).h4 == ([0x01, 0x2C, 0x04, 6] + peer.wire))
        #expect(HCICommand.writePageTimeout().h4 == [0x01, 0x18, 0x0C, 2, 0x00, 0x20])
        #expect(HCICommand.writeScanEnable(3).h4 == [0x01, 0x1A, 0x0C, 1, 3])
        #expect(HCICommand.writeClassOfDevice(0x5A020C).h4 == [0x01, 0x24, 0x0C, 3, 0x0C, 0x02, 0x5A])
        #expect(HCICommand.writeInquiryMode(2).h4 == [0x01, 0x45, 0x0C, 1, 2])
        #expect(HCICommand.writeSimplePairingMode().h4 == [0x01, 0x56, 0x0C, 1, 1])
        #expect(HCICommand.readBDADDR().h4 == [0x01, 0x09, 0x10, 0])
        #expect(HCICommand.readBufferSize().h4 == [0x01, 0x05, 0x10, 0])
        #expect(HCICommand.readLocalVersionInformation().h4 == [0x01, 0x01, 0x10, 0])
        #expect(HCICommand.inquiryCancel().h4 == [0x01, 0x02, 0x04, 0])
        let name = HCICommand.writeLocalName("Bars Device")
        guard case let .command(0x0C13, parameters) = name else { Issue.record("\(name)"); return }
        #expect(parameters.count == 248)
        #expect(Array(parameters.prefix(12)) == (Array("Bars Device".utf8) + [0]))
        // A long name is cut on a character boundary ("é" is 2 bytes: 124 fit in 248).
        guard case let .command(_, long) = HCICommand.writeLocalName(String(repeating: "é", count: 200)) else { Issue.record(); return }
        #expect(String(decoding: long, as: UTF8.self) == String(repeating: "é", count: 124))
        guard case let .command(0x0C52, eir) = HCICommand.writeExtendedInquiryResponse([3, 0x09, 0x41, 0x42]) else { Issue.record(); return }
        #expect(eir.count == 241)
        #expect(Array(eir.prefix(6)) == [1, 3, 0x09, 0x41, 0x42, 0])
        guard case let .command(0x0C01, mask) = HCICommand.setEventMask() else { Issue.record(); return }
        #expect(mask.count == 8)
        let bits = mask.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        for code: UInt64 in [0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x13, 0x17, 0x22, 0x2F, 0x31, 0x33, 0x36] {
            #expect((bits & (1 << (code - 1))) != 0, "event \(code) enabled")
        }
    }

    @Test func testDecoderTakesWholeStreamsByteByByteAndMerged() throws {
        let packets = samplePackets()
        let stream = packets.flatMap(\.h4)
        var whole = H4Decoder()
        #expect(try whole.push(stream) == packets)
        #expect(whole.bufferedByteCount == 0)

        var single = H4Decoder()
        var out: [HCIPacket] = []
        for byte in stream { out += try single.push([byte]) }
        #expect(out == packets)

        var random = TestRandom(seed: 3)
        var chopped = H4Decoder()
        out = []
        var index = 0
        while index < stream.count {
            let n = min(stream.count - index, Int.random(in: 1...3000, using: &random))
            out += try chopped.push(Array(stream[index..<index + n]))
            index += n
        }
        #expect(out == packets)
    }

    @Test func testDecoderKeepsTruncatedPacketsAndLosesFramingOnJunk() throws {
        for packet in samplePackets().prefix(4) {
            let bytes = packet.h4
            for cut in 0..<bytes.count {
                var decoder = H4Decoder()
                #expect(try decoder.push(Array(bytes.prefix(cut))) == [], "cut at \(cut)")
                #expect(decoder.bufferedByteCount == cut)
                #expect(try decoder.push(Array(bytes.dropFirst(cut))) == [packet])
            }
            #expect(throws: (any Error).self) { _ = try HCIPacket(h4: Array(bytes.dropLast())) }
            #expect(try HCIPacket(h4: bytes) == packet)
        }
        for junk: UInt8 in [0x00, 0x05, 0x06, 0x42, 0xFF] {
            var decoder = H4Decoder()
            do {
                _ = try decoder.push(HCICommand.reset().h4 + [junk, 1, 2, 3])
                Issue.record("expected an error")
            } catch let caught {
                let error: any Error = caught
                #expect("\(error)".hasPrefix("H4 framing lost"), "\(error)")
            }
        }
        // Junk only after a packet that is still incomplete is not seen yet: lengths come from headers.
        var decoder = H4Decoder()
        #expect(try decoder.push([0x04, 0x0E, 0x04, 0x01]) == [])
        #expect(try decoder.push([0x03, 0x0C, 0x00]) == [.event(code: 0x0E, parameters: [1, 3, 0x0C, 0])])
    }

    @Test func testEventsParseAndRoundTrip() throws {
        let response = HCIInquiryResponse(address: peer, pageScanRepetitionMode: 1, classOfDevice: 0x5A020C,
                                          clockOffset: 0x1234, rssi: -40, eir: nil)
        var eirResponse = response
        eirResponse.eir = EIRData.build(name: "Bumble Echo") + [UInt8](repeating: 0, count: 240 - 13)
        let events: [HCIEvent] = [
            .inquiryComplete(status: 0),
            .inquiryResult([HCIInquiryResponse(address: peer, classOfDevice: 0x1F00, clockOffset: 7), response.with(rssi: nil)]),
            .inquiryResultWithRSSI([response]),
            .extendedInquiryResult(eirResponse),
            .connectionComplete(status: 0, handle: 0x0001, address: peer, linkType: 1, encryption: 0),
            .connectionRequest(address: peer, classOfDevice: 0x5A020C, linkType: 1),
            .disconnectionComplete(status: 0, handle: 0x0001, reason: 0x13),
            .authenticationComplete(status: 0, handle: 2),
            .remoteNameRequestComplete(status: 0, address: peer, name: "Bumble Echo"),
            .commandComplete(numCommands: 1, opcode: 0x1009, returnParameters: [0] + peer.wire),
            .commandStatus(status: 0x0C, numCommands: 1, opcode: 0x0405),
            .hardwareError(code: 3),
            .numberOfCompletedPackets([HCICompletedPackets(handle: 1, count: 2), HCICompletedPackets(handle: 0x0FFF, count: 300)]),
            .pinCodeRequest(address: peer),
            .linkKeyRequest(address: peer),
            .linkKeyNotification(address: peer, key: Array(0..<16), keyType: 4),
            .ioCapabilityRequest(address: peer),
            .ioCapabilityResponse(address: peer, ioCapability: 3, oobDataPresent: 0, authenticationRequirements: 0),
            .userConfirmationRequest(address: peer, value: 123_456),
            .simplePairingComplete(status: 0, address: peer),
            .other(code: 0x3E, parameters: [1, 2, 3]),
        ]
        for event in events {
            let packet = event.packet
            #expect(try HCIEvent(packet) == event)
            guard case let .event(code, parameters) = packet else { Issue.record(); return }
            // Truncated at every length: an error, never a crash (unknown events keep any length).
            if case .other = event { continue }
            for cut in 0..<parameters.count {
                let short = Array(parameters.prefix(cut))
                if code == HCIEvent.Code.remoteNameRequestComplete, cut >= 7 { continue }  // the name may be short
                if code == HCIEvent.Code.extendedInquiryResult, cut >= 15 { continue }   // so may the EIR
                if code == HCIEvent.Code.commandComplete, cut >= 3 { continue }          // return parameters vary
                #expect(throws: (any Error).self, "event \(code) cut at \(cut)") { _ = try HCIEvent(code: code, parameters: short) }
            }
        }
        // Spec bytes: Disconnection Complete status 0, handle 0x0001, reason 0x13.
        #expect(try HCIEvent(code: 0x05, parameters: [0, 1, 0, 0x13]) == .disconnectionComplete(status: 0, handle: 1, reason: 0x13))
        // A name with no NUL and odd bytes still decodes.
        #expect(try HCIEvent(code: 0x07, parameters: [0] + peer.wire + Array("Echo".utf8)) == .remoteNameRequestComplete(status: 0, address: peer, name: "Echo"))
        #expect(try HCIEvent(HCICommand.reset()) == nil)
    }

    @Test func testErrorCodesHaveNames() {
        #expect(HCIErrorCode.describe(0x13) == "0x13 remote user terminated connection")
        #expect(HCIErrorCode.describe(0x04) == "0x04 page timeout")
        #expect(HCIErrorCode.name(0x08) == "connection timeout")
        #expect(HCIErrorCode.name(0x16) == "connection terminated by local host")
        #expect(HCIErrorCode.name(0x22) == "LMP response timeout")
        #expect(HCIErrorCode.describe(0xEE) == "0xEE unknown error")
        #expect(HCICommand.name(of: 0x0C03) == "Reset (0x0C03)")
        #expect(HCICommand.name(of: 0xFC01) == "0xFC01")
    }
}

extension HCIInquiryResponse {
    func with(rssi: Int8?) -> HCIInquiryResponse {
        var copy = self
        copy.rssi = rssi
        return copy
    }
}
