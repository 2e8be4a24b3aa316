import ModemMessaging
import Testing

@Suite("Session frame decoder")
struct SessionFrameTests {
    static let frames: [[UInt8]] = [[0x51] + [UInt8](repeating: 7, count: 32), [0x54] + Array(0..<200), [0x55, 3], [0x52],
                                    [UInt8](repeating: 0xEE, count: SessionWire.maximumFrameLength)]

    static func stream(preamble: Bool) -> [UInt8] {
        (preamble ? SessionWire.preamble : []) + frames.flatMap { SessionFrameDecoder.encode($0) }
    }

    @Test("whole stream at once")
    func whole() throws {
        var decoder = SessionFrameDecoder(expectPreamble: true)
        decoder.append(Self.stream(preamble: true))
        var got: [[UInt8]] = []
        while let frame = try decoder.next() { got.append(frame) }
        #expect(got == Self.frames)
        #expect(decoder.bufferedCount == 0)
    }

    @Test("decoding into a handed-back frame gives the same frames, whatever it held before")
    func reusedStorage() throws {
        var decoder = SessionFrameDecoder(expectPreamble: true)
        decoder.append(Self.stream(preamble: true))
        var spare: [UInt8]? = [UInt8](repeating: 0x99, count: 70_000)
        var got: [[UInt8]] = []
        while let frame = try decoder.next(reusing: &spare) {
            #expect(spare == nil)  // taken
            got.append(frame)
            spare = frame  // handed back (still shared with `got`: it must not be written over)
        }
        #expect(got == Self.frames)
    }

    @Test("byte by byte, and in odd chunks through withSpace")
    func byteByByte() throws {
        let bytes = Self.stream(preamble: true)
        var decoder = SessionFrameDecoder(expectPreamble: true)
        var got: [[UInt8]] = []
        for byte in bytes {
            decoder.append([byte])
            while let frame = try decoder.next() { got.append(frame) }
        }
        #expect(got == Self.frames)

        var chunked = SessionFrameDecoder(expectPreamble: false)
        var offset = 0
        got = []
        var size = 1
        let plain = Self.stream(preamble: false)
        while offset < plain.count {
            let n = min(size, plain.count - offset)
            let written = chunked.withSpace(size) { space in
                space.copyMemory(from: UnsafeRawBufferPointer(start: plain.withUnsafeBytes { $0.baseAddress! + offset }, count: n))
                return n
            }
            #expect(written == n)
            offset += n
            size = size * 3 % 70_001 + 1
            while let frame = try chunked.next() { got.append(frame) }
        }
        #expect(got == Self.frames)
    }

    @Test("junk: no preamble, an oversized length, a zero length are errors naming the problem")
    func junk() throws {
        var http = SessionFrameDecoder(expectPreamble: true)
        http.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(throws: SessionFrameError("not a SwiftModem session: the stream does not start with 'SMsg'")) { try http.next() }

        var early = SessionFrameDecoder(expectPreamble: true)
        early.append(Array("SM".utf8))
        #expect(try early.next() == nil)
        early.append(Array("x".utf8))
        #expect(throws: SessionFrameError.self) { try early.next() }

        var huge = SessionFrameDecoder(expectPreamble: false)
        huge.append(SessionFrameDecoder.lengthPrefix(SessionWire.maximumFrameLength + 1))
        #expect(throws: SessionFrameError("a frame of 65561 bytes (at most 65560)")) { try huge.next() }

        var zero = SessionFrameDecoder(expectPreamble: false)
        zero.append([0, 0, 0, 0, 0x51])
        #expect(throws: SessionFrameError("a frame of length 0")) { try zero.next() }

        var seed: UInt32 = 99
        for _ in 0..<500 {
            var d = SessionFrameDecoder(expectPreamble: false)
            for _ in 0..<64 {
                seed = seed &* 1_103_515_245 &+ 12345
                d.append([UInt8(truncatingIfNeeded: seed >> 16)])
            }
            while let f = try? d.next() { #expect(f.count <= SessionWire.maximumFrameLength) }
        }
    }

    @Test("frame types: the 0x5 nibble and the five types; anything else is unknown")
    func types() {
        #expect(SessionFrameType(byte: 0x51) == .handshake1)
        #expect(SessionFrameType(byte: 0x55) == .nope)
        #expect(SessionFrameType(byte: 0x56) == nil)
        #expect(SessionFrameType(byte: 0x41) == nil)
        #expect(SessionFrameType.allCases.map(\.byte) == [0x51, 0x52, 0x53, 0x54, 0x55])
    }

    @Test("TLV round trip and truncation")
    func tlv() throws {
        var tlv = SessionTLV()
        tlv.add(1, Array("alice".utf8))
        tlv.add(2, [0, 0, 7, 208])
        tlv.add(9, [])
        #expect(try SessionTLV.decode(tlv.encoded) == tlv)
        #expect(try SessionTLV.decode(tlv.encoded).value(1) == Array("alice".utf8))
        #expect(throws: SessionFrameError.self) { try SessionTLV.decode(Array(tlv.encoded.dropLast())) }
        #expect(throws: SessionFrameError.self) { try SessionTLV.decode([1, 0]) }
    }
}
