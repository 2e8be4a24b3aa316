import Testing
import ModemTestSupport
@testable import ModemBluetooth

@Suite struct RFCOMMMultiplexerMessageTests {
    @Test func testTypeBytesMatchTheTable() {
        let table: [(RFCOMMMultiplexerMessage.Code, UInt8, UInt8)] = [
            (.parameterNegotiation, 0x83, 0x81), (.test, 0x23, 0x21), (.flowControlOn, 0xA3, 0xA1),
            (.flowControlOff, 0x63, 0x61), (.modemStatus, 0xE3, 0xE1), (.remotePortNegotiation, 0x93, 0x91),
            (.remoteLineStatus, 0x53, 0x51),
        ]
        for (code, command, response) in table {
            #expect(code.typeByte(command: true) == command, "\(code)")
            #expect(code.typeByte(command: false) == response, "\(code)")
        }
        #expect(RFCOMMMultiplexerMessage.Code.notSupported.typeByte(command: false) == 0x11)
    }

    @Test func testParameterNegotiationBytes() throws {
        let pn = RFCOMMParameters(dlci: 2, convergenceLayer: 0xF, priority: 7, maximumFrameSize: 1000, window: 7)
        let message = RFCOMMMultiplexerMessage(isCommand: true, content: .parameterNegotiation(pn))
        #expect(message.encoded == [0x83, 0x11, 0x02, 0xF0, 0x07, 0x00, 0xE8, 0x03, 0x00, 0x07])
        #expect(try RFCOMMMultiplexerMessage.decodeAll(message.encoded) == [message])
        // Fields are masked to their widths.
        let wide = RFCOMMParameters(dlci: 0xFF, frameType: 0xFF, convergenceLayer: 0xFF, priority: 0xFF, maximumFrameSize: 0xFFFF, window: 0xFF)
        #expect(wide.encoded == [0x3F, 0xFF, 0x3F, 0x00, 0xFF, 0xFF, 0x00, 0x07])
        #expect(throws: (any Error).self) { _ = try RFCOMMParameters.decode([1, 2, 3]) }
    }

    @Test func testEveryMessageRoundTrips() throws {
        let messages: [RFCOMMMultiplexerMessage] = [
            .init(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)),
            .init(isCommand: false, content: .modemStatus(dlci: 61, signals: 0x8F, breakSignal: 0x31)),
            .init(isCommand: true, content: .remotePortNegotiation(dlci: 4, settings: nil)),
            .init(isCommand: false, content: .remotePortNegotiation(dlci: 4, settings: .standard)),
            .init(isCommand: true, content: .remoteLineStatus(dlci: 6, status: 0x03)),
            .init(isCommand: true, content: .test(Array(0..<200))),
            .init(isCommand: true, content: .test([])),
            .init(isCommand: true, content: .flowControlOn),
            .init(isCommand: false, content: .flowControlOff),
            .init(isCommand: false, content: .notSupported(type: [0x47])),
            .init(isCommand: true, content: .unknown(type: [0x47], value: [1, 2])),
            .init(isCommand: false, content: .unknown(type: [0x45], value: [])),
            .init(isCommand: true, content: .unknown(type: [0x42, 0x43], value: [9])),   // a two-byte type (EA = 0 first)
        ]
        for message in messages {
            #expect(try RFCOMMMultiplexerMessage.decodeAll(message.encoded) == [message], "\(message)")
        }
        let all = messages.flatMap(\.encoded)
        #expect(try RFCOMMMultiplexerMessage.decodeAll(all) == messages)
    }

    @Test func testExactBytesOfMSCRPNAndTheLongLength() {
        #expect(RFCOMMMultiplexerMessage(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: nil)).encoded == [0xE3, 0x05, 0x0B, 0x8D])
        #expect(RFCOMMMultiplexerMessage(isCommand: false, content: .remotePortNegotiation(dlci: 2, settings: .standard)).encoded == [0x91, 0x11, 0x0B, 0x03, 0x03, 0x00, 0x11, 0x13, 0xFF, 0x3F])
        let long = RFCOMMMultiplexerMessage(isCommand: true, content: .test(Array(repeating: 0, count: 200))).encoded
        #expect(Array(long[0..<3]) == [0x23, UInt8(200 & 0x7F) << 1, UInt8(200 >> 7) << 1 | 1])
    }

    @Test func testTruncatedAndBadLengthsThrow() throws {
        let messages: [[UInt8]] = [
            RFCOMMMultiplexerMessage(isCommand: true, content: .parameterNegotiation(
                RFCOMMParameters(dlci: 2, convergenceLayer: 0xF, maximumFrameSize: 127, window: 7))).encoded,
            RFCOMMMultiplexerMessage(isCommand: true, content: .modemStatus(dlci: 2, signals: 0x8D, breakSignal: 1)).encoded,
            RFCOMMMultiplexerMessage(isCommand: false, content: .remotePortNegotiation(dlci: 2, settings: .standard)).encoded,
            RFCOMMMultiplexerMessage(isCommand: true, content: .test(Array(repeating: 7, count: 150))).encoded,
        ]
        for bytes in messages {
            for cut in 0..<bytes.count {
                #expect(throws: (any Error).self, "cut \(cut) of \(bytes)") { _ = try RFCOMMMultiplexerMessage.decodeAll(Array(bytes[0..<cut])) }
            }
        }
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0x83, 0x05, 1, 2]) }             // PN of 2 bytes
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0xE3, 0x03, 0x0B]) }             // MSC of 1 byte
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0x93, 0x07, 0x0B, 1, 2]) }       // RPN of 3 bytes
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0x53, 0x03, 0x0B]) }             // RLS of 1 byte
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0x11, 0x01]) }                   // NSC naming nothing
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0x02, 0x02, 0x02, 0x02, 0x02]) } // type never ends
        #expect(throws: (any Error).self) { _ = try RFCOMMMultiplexerMessage.decodeAll([0x23, 0x00, 0x00, 0x00, 0x00]) } // length never ends
    }

    @Test func testJunkNeverCrashes() throws {
        var random = TestRandom(seed: 3)
        for _ in 0..<20_000 {
            _ = try? RFCOMMMultiplexerMessage.decodeAll(random.bytes(Int(random.next() % 24)))
        }
    }
}
