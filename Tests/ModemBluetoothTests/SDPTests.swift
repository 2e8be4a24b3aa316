import Testing
import ModemTestSupport
@testable import ModemBluetooth

@Suite struct SDPTests {
    // MARK: data elements

    @Test func testEachTypeAndSizeIndexRoundTrips() throws {
        let long = Array(repeating: UInt8(0x41), count: 300)
        let cases: [(DataElement, [UInt8])] = [
            (.null, [0x00]),
            (.uint8(0x12), [0x08, 0x12]),
            (.uint16(0x1234), [0x09, 0x12, 0x34]),
            (.uint32(0x0001_0000), [0x0A, 0x00, 0x01, 0x00, 0x00]),
            (.uint64(0x0102_0304_0506_0708), [0x0B, 1, 2, 3, 4, 5, 6, 7, 8]),
            (.uint128(1), [0x0C] + Array(repeating: 0, count: 15) + [1]),
            (.int8(-1), [0x10, 0xFF]),
            (.int16(-2), [0x11, 0xFF, 0xFE]),
            (.int32(-3), [0x12, 0xFF, 0xFF, 0xFF, 0xFD]),
            (.int64(5), [0x13, 0, 0, 0, 0, 0, 0, 0, 5]),
            (.int128(-1), [0x14] + Array(repeating: 0xFF, count: 16)),
            (.uuid16(0x1101), [0x19, 0x11, 0x01]),
            (.uuid32(0x0000_1101), [0x1A, 0x00, 0x00, 0x11, 0x01]),
            (.uuid128(DataElement.uuid(0x1101)), [0x1C, 0x00, 0x00, 0x11, 0x01, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]),
            (.string("en"), [0x25, 0x02, 0x65, 0x6E]),
            (.text(long), [0x26, 0x01, 0x2C] + long),
            (.bool(true), [0x28, 0x01]),
            (.bool(false), [0x28, 0x00]),
            (.sequence([.uuid16(0x0100)]), [0x35, 0x03, 0x19, 0x01, 0x00]),
            (.sequence(Array(repeating: .uint8(7), count: 150)), [0x36, 0x01, 0x2C] + Array(repeating: [0x08, 0x07], count: 150).flatMap { $0 }),
            (.alternative([.bool(false), .null]), [0x3D, 0x03, 0x28, 0x00, 0x00]),
            (.url(Array("http://x".utf8)), [0x45, 0x08] + Array("http://x".utf8)),
        ]
        for (element, bytes) in cases {
            #expect(element.bytes == bytes, "\(element)")
            #expect(try DataElement(decoding: bytes) == element, "\(element)")
        }
        // Size index 7 (4-byte length) and non-minimal 6 decode to the same values.
        #expect(try DataElement(decoding: [0x27, 0, 0, 0, 2, 0x65, 0x6E]) == .string("en"))
        #expect(try DataElement(decoding: [0x37, 0, 0, 0, 3, 0x19, 0x01, 0x00]) == .sequence([.uuid16(0x0100)]))
        #expect(try DataElement(decoding: [0x46, 0, 1, 0x61]) == .url([0x61]))
        #expect(try DataElement(decoding: [0x28, 0x05]) == .bool(true))
        // Nested, with a size-index-6 sequence inside a 5.
        let nested = DataElement.sequence([.sequence([.sequence([.uuid16(3), .uint8(4)]), .text(long)]), .null])
        #expect(try DataElement(decoding: nested.bytes) == nested)
    }

    @Test func testUUIDsCompareAfterBaseExpansion() {
        #expect(DataElement.uuid16(0x1101).uuid == DataElement.uuid32(0x1101).uuid)
        #expect(DataElement.uuid16(0x1101).uuid == DataElement.uuid128(0x0000_1101_0000_1000_8000_0080_5F9B_34FB).uuid)
        #expect(DataElement.uuid16(0x1101).uuid != DataElement.uuid16(0x1102).uuid)
        #expect(DataElement.uint16(0x1101).uuid == nil)
        #expect(DataElement.sequence([.sequence([.uuid128(DataElement.uuid(3))])]).contains(uuid: DataElement.uuid(3)))
    }

    @Test func testBadElementsThrowAndNeverCrash() throws {
        let element = DataElement.sequence([.uint32(0x10000), .sequence([.uuid16(3), .uint8(4)]), .string("Serial")]).bytes
        for length in 0..<element.count {
            #expect(throws: (any Error).self, "prefix \(length)") { _ = try DataElement(decoding: Array(element.prefix(length))) }
        }
        #expect(throws: (any Error).self) { _ = try DataElement(decoding: element + [0]) }  // junk after
        for bad: [UInt8] in [[0x01], [0x0D, 0], [0x18, 0], [0x1B, 0, 0, 0, 0, 0, 0, 0, 0], [0x20, 1], [0x29, 0, 0], [0x30], [0x48, 0], [0x50]] {
            #expect(throws: (any Error).self, "\(bad)") { _ = try DataElement(decoding: bad) }
        }
        // Depth is bounded.
        var deep = DataElement.null
        for _ in 0..<DataElement.maximumDepth { deep = .sequence([deep]) }
        #expect(throws: Never.self) { try DataElement(decoding: deep.bytes) }
        #expect(throws: (any Error).self) { _ = try DataElement(decoding: DataElement.sequence([deep]).bytes) }
        let hostile: [UInt8] = Array(Array(repeating: [UInt8]([0x37, 0xFF, 0xFF, 0xFF, 0xF0]), count: 100).joined())
        #expect(throws: (any Error).self) { _ = try DataElement(decoding: hostile) }
        var random = TestRandom(seed: 0x5D9)
        for _ in 0..<5000 {
            let bytes = random.bytes(Int.random(in: 0...24, using: &random))
            _ = try? DataElement(decoding: bytes)
            _ = try? SDPPDU(decoding: bytes)
            _ = SDPServer(records: [.serialPort(channel: 1, name: "x")]).respond(to: bytes)
        }
    }

    // MARK: PDUs

    @Test func testPDUsRoundTripAndRejectLyingLengths() throws {
        let pdus: [SDPPDU] = [
            .errorResponse(transactionID: 1, code: 3, info: []),
            .serviceSearchRequest(transactionID: 2, pattern: [.uuid16(0x1101), .uuid32(0x0100)], maximumCount: 10, continuation: []),
            .serviceSearchResponse(transactionID: 3, totalCount: 2, handles: [0x10000, 0x10001], continuation: [1, 2, 3]),
            .serviceAttributeRequest(transactionID: 4, handle: 0x10000, maximumByteCount: 100, attributes: [0...0xFFFF], continuation: []),
            .serviceAttributeResponse(transactionID: 5, attributeBytes: [0x35, 0], continuation: Array(repeating: 9, count: 16)),
            .serviceSearchAttributeRequest(transactionID: 6, pattern: [.uuid16(0x1101)], maximumByteCount: 0xFFFF, attributes: [4...4, 0x100...0x100], continuation: [7]),
            .serviceSearchAttributeResponse(transactionID: 7, attributeBytes: [0x35, 0], continuation: []),
        ]
        for pdu in pdus {
            let bytes = pdu.bytes
            #expect(try SDPPDU(decoding: bytes) == pdu)
            #expect((Int(bytes[3]) << 8 | Int(bytes[4])) == (bytes.count - 5))
            for length in 0..<bytes.count {
                #expect(throws: (any Error).self, "\(pdu) prefix \(length)") { _ = try SDPPDU(decoding: Array(bytes.prefix(length))) }
            }
            var lying = bytes
            lying[4] &+= 1
            #expect(throws: (any Error).self) { _ = try SDPPDU(decoding: lying) }
        }
        // The spec's layout of our usual request: 06, TID, length, DES{UUID 0x1101}, max, DES{0x0004, 0x0100}, no continuation.
        #expect(pdus[5].bytes.prefix(5) == [0x06, 0x00, 0x06, 0x00, 0x11])
        #expect(SDPPDU.serviceSearchAttributeRequest(transactionID: 1, pattern: [.uuid16(0x1101)], maximumByteCount: 0xFFFF,
                                                            attributes: [4...4, 0x100...0x100], continuation: []).bytes == [0x06, 0x00, 0x01, 0x00, 0x10, 0x35, 0x03, 0x19, 0x11, 0x01, 0xFF, 0xFF, 0x35, 0x06, 0x09, 0x00, 0x04, 0x09, 0x01, 0x00, 0x00])
        // Continuation state longer than 16, bytes after it, a pattern of 13 UUIDs: refused.
        var tooLong = SDPPDU.serviceSearchAttributeResponse(transactionID: 1, attributeBytes: [], continuation: []).bytes.dropLast()
        tooLong += [17] + Array(repeating: 0, count: 17)
        tooLong[4] = UInt8(tooLong.count - 5)
        #expect(throws: (any Error).self) { _ = try SDPPDU(decoding: Array(tooLong)) }
        var trailing = pdus[1].bytes + [0]
        trailing[4] += 1
        #expect(throws: (any Error).self) { _ = try SDPPDU(decoding: trailing) }
        #expect(throws: (any Error).self) { _ = try SDPPDU(decoding: SDPPDU.serviceSearchRequest(transactionID: 1, pattern: Array(repeating: .uuid16(1), count: 13), maximumCount: 1, continuation: []).bytes) }
    }

    // MARK: records

    @Test func testSerialPortRecordMatchesTheSpecLayout() throws {
        let record = ServiceRecord.serialPort(channel: 5, name: "Modem")
        let expected: [UInt8] = [
            0x35, 0x4E,
            0x09, 0x00, 0x00, 0x0A, 0x00, 0x01, 0x00, 0x00,
            0x09, 0x00, 0x01, 0x35, 0x03, 0x19, 0x11, 0x01,
            0x09, 0x00, 0x04, 0x35, 0x0C, 0x35, 0x03, 0x19, 0x01, 0x00, 0x35, 0x05, 0x19, 0x00, 0x03, 0x08, 0x05,
            0x09, 0x00, 0x05, 0x35, 0x03, 0x19, 0x10, 0x02,
            0x09, 0x00, 0x06, 0x35, 0x09, 0x09, 0x65, 0x6E, 0x09, 0x00, 0x6A, 0x09, 0x01, 0x00,
            0x09, 0x00, 0x09, 0x35, 0x08, 0x35, 0x06, 0x19, 0x11, 0x01, 0x09, 0x01, 0x02,
            0x09, 0x01, 0x00, 0x25, 0x05, 0x4D, 0x6F, 0x64, 0x65, 0x6D,
        ]
        #expect(record.attributeList([0...0xFFFF]).bytes == expected)
        #expect(record.handle == 0x0001_0000)
        #expect(record.rfcommChannel == 5)
        #expect(try ServiceRecord(attributeList: DataElement(decoding: expected)) == record)
        #expect(record.attributeList([4...4]) == .sequence([.uint16(4), record.attributes[4]!]))
        // Channels outside 1-30 and protocol lists without RFCOMM give no channel.
        #expect(ServiceRecord.serialPort(channel: 31, name: "x").rfcommChannel == nil)
        #expect(ServiceRecord.serialPort(channel: 0, name: "x").rfcommChannel == nil)
        let alternative = ServiceRecord(attributes: [4: .alternative([.sequence([.sequence([.uuid16(0x0100)])]),
                                                                     .sequence([.sequence([.uuid16(0x0100)]), .sequence([.uuid128(DataElement.uuid(3)), .uint8(9)])])])])
        #expect(alternative.rfcommChannel == 9)
    }

    // MARK: server and client

    private func run(_ client: inout SDPClient, against server: SDPServer) -> (SDPClientStep, rounds: Int) {
        var request = client.start()
        for round in 1...500 {
            let answer = server.respond(to: request)
            #expect(answer.count <= server.mtu)
            switch client.received(answer) {
            case .send(let next): request = next
            case let step: return (step, round)
            }
        }
        return (.failed("endless"), 500)
    }

    @Test func testOurClientAgainstOurServerWithSmallByteCounts() {
        let other = ServiceRecord(attributes: [0: .uint32(0x10001), 1: .sequence([.uuid16(0x110A)]), 0x100: .string("Audio")])
        let records = [other, .serialPort(channel: 7, name: "SwiftModem serial port")]
        for mtu in [48, 100, 672] {
            for maximum: UInt16 in [7, 8, 11, 33, 0xFFFF] {
                for attributes in [[4...4, 0x100...0x100], [0...0xFFFF]] as [[ClosedRange<UInt16>]] {
                    var client = SDPClient(attributes: attributes, maximumByteCount: maximum)
                    let (step, rounds) = run(&client, against: SDPServer(records: records, mtu: mtu))
                    #expect(step == .found(channel: 7), "mtu \(mtu) max \(maximum)")
                    #expect(client.serviceName == "SwiftModem serial port")
                    #expect(client.records.count == 1)
                    if maximum <= 11 { #expect(rounds > 3, "continuations expected") }
                    if maximum == 0xFFFF && mtu == 672 { #expect(rounds == 1) }
                }
            }
        }
    }

    @Test func testNotFoundWhenNoRecordHasAChannel() {
        var client = SDPClient()
        #expect(run(&client, against: SDPServer(records: [])).0 == .notFound)
        let noRFCOMM = ServiceRecord(attributes: [0: .uint32(0x10002), 1: .sequence([.uuid16(0x1101)]),
                                                  4: .sequence([.sequence([.uuid16(0x0100), .uint16(0x1001)])])])
        var again = SDPClient()
        #expect(run(&again, against: SDPServer(records: [noRFCOMM])).0 == .notFound)
        #expect(again.records.count == 1)
    }

    @Test func testServerAnswersServiceSearchAndServiceAttribute() throws {
        let records = (0..<30).map { ServiceRecord.serialPort(channel: UInt8($0 % 30 + 1), name: "p\($0)", handle: 0x10000 + UInt32($0)) }
        let server = SDPServer(records: records, mtu: 48)
        var handles: [UInt32] = []
        var state: [UInt8] = []
        var parts = 0
        repeat {
            let answer = try SDPPDU(decoding: server.respond(to: SDPPDU.serviceSearchRequest(transactionID: 9, pattern: [.uuid16(0x1101), .uuid16(0x0003)],
                                                                                           maximumCount: 25, continuation: state).bytes))
            guard case .serviceSearchResponse(9, 25, let part, let next) = answer else { Issue.record("\(answer)"); return }
            handles += part; state = next; parts += 1
        } while !state.isEmpty && parts < 100
        #expect(handles == (0..<25).map { 0x10000 + UInt32($0) })
        #expect(parts > 1)
        // Nothing matches a pattern needing a UUID no record has (all UUIDs must be present).
        let none = try SDPPDU(decoding: server.respond(to: SDPPDU.serviceSearchRequest(transactionID: 1, pattern: [.uuid16(0x1101), .uuid16(0x1105)], maximumCount: 5, continuation: []).bytes))
        #expect(none == .serviceSearchResponse(transactionID: 1, totalCount: 0, handles: [], continuation: []))
        // Service Attribute on one handle, split and joined.
        var bytes: [UInt8] = []
        state = []
        repeat {
            let answer = try SDPPDU(decoding: server.respond(to: SDPPDU.serviceAttributeRequest(transactionID: 2, handle: 0x10003, maximumByteCount: 9,
                                                                                              attributes: [0...0xFFFF], continuation: state).bytes))
            guard case .serviceAttributeResponse(2, let part, let next) = answer else { Issue.record("\(answer)"); return }
            #expect(part.count <= 9)
            bytes += part; state = next
        } while !state.isEmpty
        #expect(try ServiceRecord(attributeList: DataElement(decoding: bytes)) == records[3])
    }

    @Test func testServerErrors() throws {
        let server = SDPServer(records: [.serialPort(channel: 1, name: "x")])
        func code(_ request: [UInt8]) -> UInt16? {
            guard case .errorResponse(_, let code, _)? = try? SDPPDU(decoding: server.respond(to: request)) else { return nil }
            return code
        }
        let good = SDPPDU.serviceSearchAttributeRequest(transactionID: 0x0102, pattern: [.uuid16(0x1101)], maximumByteCount: 0xFFFF,
                                                        attributes: [0...0xFFFF], continuation: []).bytes
        #expect(code(good) == nil)
        #expect(Array(server.respond(to: good).prefix(3)) == [0x07, 0x01, 0x02])  // transaction ID echoed
        var lying = good; lying[4] += 1
        #expect(code(lying) == 4)
        #expect(code([0x06, 0x00]) == 4)
        var badSyntax = good; badSyntax[5] = 0x09  // pattern is not a sequence
        #expect(code(badSyntax) == 3)
        #expect(code([0x08, 0, 1, 0, 0]) == 3)  // unknown PDU ID
        #expect(code(SDPPDU.serviceSearchAttributeResponse(transactionID: 1, attributeBytes: [], continuation: []).bytes) == 3)
        #expect(code(SDPPDU.serviceSearchAttributeRequest(transactionID: 1, pattern: [.uuid16(0x1101)], maximumByteCount: 6,
                                                                 attributes: [0...0xFFFF], continuation: []).bytes) == 3)
        for state: [[UInt8]] in [[[1, 2, 3]], [[0, 0, 0, 5, 0, 0, 0, 0]], [[0, 0, 0, 0, 0, 0, 0, 0]]] {
            #expect(code(SDPPDU.serviceSearchAttributeRequest(transactionID: 1, pattern: [.uuid16(0x1101)], maximumByteCount: 20,
                                                                     attributes: [0...0xFFFF], continuation: state[0]).bytes) == 5, "\(state)")
        }
        #expect(code(SDPPDU.serviceAttributeRequest(transactionID: 1, handle: 0x20000, maximumByteCount: 100, attributes: [0...0xFFFF], continuation: []).bytes) == 2)
        // Our client reports an error response and refuses a wrong transaction.
        var client = SDPClient()
        _ = client.start()
        #expect(client.received(SDPPDU.errorResponse(transactionID: 1, code: 3, info: []).bytes) == .failed("SDP error response: invalid request syntax"))
        _ = client.start()
        guard case .failed(let why) = client.received(SDPPDU.serviceSearchAttributeResponse(transactionID: 77, attributeBytes: [0x35, 0], continuation: []).bytes) else { Issue.record(); return }
        #expect(why.contains("transaction"))
        _ = client.start()
        guard case .failed = client.received([0x07, 0, 3]) else { Issue.record(); return }
        guard case .failed = client.received(SDPPDU.serviceSearchAttributeResponse(transactionID: 3, attributeBytes: [0x35, 0], continuation: []).bytes) else { Issue.record(); return }
    }

    /// Bumble's SPP record (`make_service_sdp_records` in bumble/rfcomm.py) holds the handle (u32),
    /// BrowseGroupList, ProtocolDescriptorList and ServiceClassIDList; its server answers with the
    /// requested attributes sorted by ID, 16-bit UUIDs, one-byte DES lengths, and when the maximum byte
    /// count cuts the answer, the continuation state `01 43`. These bytes are written from the spec in
    /// that shape.
    @Test func testBumbleShapedAnswerIsUnderstood() throws {
        // Our default request: IDs 0x0004 and 0x0100; Bumble's record has no name, so only 0x0004 comes back.
        let lists: [UInt8] = [0x35, 0x13, 0x35, 0x11, 0x09, 0x00, 0x04, 0x35, 0x0C, 0x35, 0x03, 0x19, 0x01, 0x00, 0x35, 0x05, 0x19, 0x00, 0x03, 0x08, 0x04]
        var client = SDPClient()
        let request = client.start()
        #expect(Array(request.prefix(3)) == [0x06, 0x00, 0x01])
        #expect(client.received([0x07, 0x00, 0x01, 0x00, 0x18, 0x00, 0x15] + lists + [0x00]) == .found(channel: 4))
        #expect(client.serviceName == nil)

        // The same cut at 10 bytes, as Bumble does for a maximum byte count of 10.
        var small = SDPClient(maximumByteCount: 10)
        _ = small.start()
        var offset = 0, transaction: UInt16 = 1
        var step = SDPClientStep.notFound
        while offset < lists.count {
            let part = Array(lists[offset..<min(lists.count, offset + 10)])
            offset += part.count
            let state: [UInt8] = offset < lists.count ? [0x01, 0x43] : [0x00]
            var pdu: [UInt8] = [0x07]
            pdu.appendBE(transaction)
            pdu.appendBE(UInt16(2 + part.count + state.count))
            pdu.appendBE(UInt16(part.count))
            step = small.received(pdu + part + state)
            if case .send(let next) = step {
                #expect(Array(next.suffix(2)) == [0x01, 0x43], "our next request hands Bumble's state back")
                #expect((try? SDPPDU(decoding: next).transactionID) == transaction + 1)
                transaction += 1
            }
        }
        #expect(step == .found(channel: 4))
        #expect(transaction == 3)

        // All attributes (range 0x0000-0xFFFF): handle, class list, protocols, browse group, sorted by ID.
        var everything = SDPClient(attributes: [0...0xFFFF])
        let all = everything.start()
        #expect(Array(all[12...18]) == [0x35, 0x05, 0x0A, 0x00, 0x00, 0xFF, 0xFF])
        let record: [UInt8] = [0x09, 0x00, 0x00, 0x0A, 0x00, 0x01, 0x00, 0x01,
                               0x09, 0x00, 0x01, 0x35, 0x03, 0x19, 0x11, 0x01,
                               0x09, 0x00, 0x04, 0x35, 0x0C, 0x35, 0x03, 0x19, 0x01, 0x00, 0x35, 0x05, 0x19, 0x00, 0x03, 0x08, 0x02,
                               0x09, 0x00, 0x05, 0x35, 0x03, 0x19, 0x10, 0x02]
        let body: [UInt8] = [0x35, UInt8(record.count + 2), 0x35, UInt8(record.count)] + record
        var pdu: [UInt8] = [0x07, 0x00, 0x01]
        pdu.appendBE(UInt16(body.count + 3))
        pdu.appendBE(UInt16(body.count))
        #expect(everything.received(pdu + body + [0x00]) == .found(channel: 2))
        #expect(everything.records.first?.handle == 0x0001_0001)
    }
}
