import Testing
import ModemTestSupport
import ModemCodecs

@Suite("AX.25 frames and the TNC2 monitor format")
struct AX25FrameTests {
    /// Frames made by Dire Wolf 1.6's `gen_packets` from `input` (a line of its messages file, with the
    /// `\n` that gen_packets keeps in the information), their bytes as `atest -h` dumped them, and the
    /// monitor line `atest` printed for them.
    static let direWolfVectors: [(input: String, bytes: String, atest: String)] = [
        (
            "N0CALL>APRS:hello world\n",
            "82 a0 a4 a6 40 40 e0 9c 60 86 82 98 98 e1 03 f0 68 65 6c 6c 6f 20 77 6f 72 6c 64 0a",
            "N0CALL>APRS:hello world<0x0a>"
        ),
        (
            "W1AW-5>APDW16,WIDE1-1,WIDE2-2:!4237.14N/07120.83W#PHG7140\n",
            "82 a0 88 ae 62 6c e0 ae 62 82 ae 40 40 ea ae 92 88 8a 62 40 62 ae 92 88 8a 64 40 65 03 f0 21 34 32 33 37 2e 31 34 4e 2f 30 37 31 32 30 2e 38 33 57 23 50 48 47 37 31 34 30 0a",
            "W1AW-5>APDW16,WIDE1-1,WIDE2-2:!4237.14N/07120.83W#PHG7140<0x0a>"
        ),
        (
            "K1ABC-15>CQ-0,RELAY*,WIDE2-1:test\u{01}bin\u{7f} end \n",
            "86 a2 40 40 40 40 e0 96 62 82 84 86 40 fe a4 8a 98 82 b2 40 e0 ae 92 88 8a 64 40 63 03 f0 74 65 73 74 01 62 69 6e 7f 20 65 6e 64 20 0a",
            "K1ABC-15>CQ,RELAY*,WIDE2-1:test<0x01>bin<0x7f> end <0x0a>"
        ),
        (
            "AB1CD>XY2Z,DIGI1-1*,DIGI2*,DIGI3:café x\n",
            "b0 b2 64 b4 40 40 e0 82 84 62 86 88 40 e0 88 92 8e 92 62 40 e2 88 92 8e 92 64 40 e0 88 92 8e 92 66 40 61 03 f0 63 61 66 c3 a9 20 78 0a",
            "AB1CD>XY2Z,DIGI1-1,DIGI2*,DIGI3:café x<0x0a>"
        ),
        (
            "AB1CD>XY2Z,D1,D2*,D3:x\n",
            "b0 b2 64 b4 40 40 e0 82 84 62 86 88 40 e0 88 62 40 40 40 40 e0 88 64 40 40 40 40 e0 88 66 40 40 40 40 61 03 f0 78 0a",
            "AB1CD>XY2Z,D1,D2*,D3:x<0x0a>"
        ),
        (
            "AB1CD>XY2Z,D1-0*:zero\n",
            "b0 b2 64 b4 40 40 e0 82 84 62 86 88 40 e0 88 62 40 40 40 40 e1 03 f0 7a 65 72 6f 0a",
            "AB1CD>XY2Z,D1*:zero<0x0a>"
        ),
        (
            "AB1CD>XY2Z:<0x0d>esc<0xff>\n",
            "b0 b2 64 b4 40 40 e0 82 84 62 86 88 40 e1 03 f0 0d 65 73 63 ff 0a",
            "AB1CD>XY2Z:<0x0d>esc<0xff><0x0a>"
        ),
        (
            "AB1CD>XY2Z:end ",
            "b0 b2 64 b4 40 40 e0 82 84 62 86 88 40 e1 03 f0 65 6e 64 20",
            "AB1CD>XY2Z:end<0x20>"
        ),
        (
            "AB1CD>XY2Z-05:lead0\n",
            "b0 b2 64 b4 40 40 ea 82 84 62 86 88 40 e1 03 f0 6c 65 61 64 30 0a",
            "AB1CD>XY2Z-5:lead0<0x0a>"
        ),
    ]

    @Test("Dire Wolf's bytes print as atest prints them")
    func printsLikeAtest() throws {
        for vector in Self.direWolfVectors {
            let frame = try AX25Frame(decoding: hdlcHex(vector.bytes))
            #expect(frame.monitorLine() == vector.atest)
            #expect(frame.description == vector.atest)
            #expect(frame.encode() == hdlcHex(vector.bytes))
        }
    }

    @Test("bytes that are not valid UTF-8: atest writes them raw, a String shows them as <0xNN>")
    func invalidUTF8() throws {
        // gen_packets input: AB1CD>XY2Z:a<0x00>b<0x3c>0x41>c<0x80><0xc3><0xa9> €<0x9b>
        let bytes = hdlcHex("b0 b2 64 b4 40 40 e0 82 84 62 86 88 40 e1 03 f0 61 00 62 3c 30 78 34 31 3e 63 80 c3 a9 20 e2 82 ac 9b 0a")
        #expect(try AX25Frame(monitorLine: "AB1CD>XY2Z:a<0x00>b<0x3c>0x41>c<0x80><0xc3><0xa9> €<0x9b>\n").encode() == bytes)
        // atest printed "AB1CD>XY2Z:a<0x00>b<0x41>c", raw 0x80, "é €", raw 0x9b, "<0x0a>".
        let frame = try AX25Frame(decoding: bytes)
        #expect(frame.monitorLine() == "AB1CD>XY2Z:a<0x00>b<0x41>c<0x80>é €<0x9b><0x0a>")
    }

    @Test("monitor lines read into the bytes gen_packets makes; atest's output reads back to the same bytes")
    func readsLikeGenPackets() throws {
        for vector in Self.direWolfVectors {
            #expect(try AX25Frame(monitorLine: vector.input).encode() == hdlcHex(vector.bytes), "\(vector.input)")
            #expect(try AX25Frame(monitorLine: vector.atest).encode() == hdlcHex(vector.bytes), "\(vector.atest)")
        }
    }

    @Test("frames that are not UI print like kissutil: addresses and information only")
    func otherFrameTypes() throws {
        // Sent to Dire Wolf's kissutil over KISS; it printed the lines below (response frames: the
        // destination's C bit clear, the source's set).
        let sabm = try AX25Frame(decoding: hdlcHex("b0 b2 64 b4 40 40 60 82 84 62 86 88 40 e1 3f"))
        #expect(sabm.control == 0x3F)
        #expect(sabm.pid == nil)
        #expect(sabm.isUI == false)
        #expect(sabm.monitorLine() == "AB1CD>XY2Z:")
        #expect(sabm.destination.highBit == false)
        #expect(sabm.source.highBit == true)
        let iFrame = try AX25Frame(decoding: hdlcHex("b0 b2 64 b4 40 40 60 82 84 62 86 88 40 e1 10 f0") + Array("I frame é".utf8))
        #expect(iFrame.pid == 0xF0)
        #expect(iFrame.monitorLine() == "AB1CD>XY2Z:I frame é")
        let uiOtherPID = try AX25Frame(decoding: hdlcHex("b0 b2 64 b4 40 40 60 82 84 62 86 88 40 e1 03 40") + Array("x".utf8))
        #expect(uiOtherPID.pid == 0x40)
        #expect(uiOtherPID.monitorLine() == "AB1CD>XY2Z:x")
        // A supervisory frame (RR) has no PID; any bytes after the control are information.
        let rr = try AX25Frame(decoding: hdlcHex("b0 b2 64 b4 40 40 60 82 84 62 86 88 40 e1 01"))
        #expect(rr.pid == nil)
        #expect(rr.info == [])
        for frame in [sabm, iFrame, uiOtherPID, rr] {
            #expect(try AX25Frame(decoding: frame.encode()) == frame)
        }
    }

    @Test("addresses: SSIDs, H bits, reserved bits survive encode and decode")
    func addresses() throws {
        let wide = try AX25Address(parsing: "WIDE2-1")
        #expect(wide.callsign == "WIDE2")
        #expect(wide.ssid == 1)
        #expect(wide.description == "WIDE2-1")
        #expect(wide.encode(isLast: true) == [0xAE, 0x92, 0x88, 0x8A, 0x64, 0x40, 0x63])
        #expect(try AX25Address(parsing: "CQ-0").description == "CQ")
        #expect(try AX25Address(parsing: "A-15").ssid == 15)

        var random = TestRandom(seed: 30)
        for _ in 0..<200 {
            let callsign = String((0..<Int.random(in: 1...6, using: &random)).map { _ in
                Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789").randomElement(using: &random)!
            })
            let address = try AX25Address(
                callsign: callsign, ssid: Int.random(in: 0...15, using: &random),
                highBit: Bool.random(using: &random), reservedBits: UInt8.random(in: 0...3, using: &random)
            )
            let isLast = Bool.random(using: &random)
            let decoded = try AX25Address.decode(address.encode(isLast: isLast))
            #expect(decoded.address == address)
            #expect(decoded.isLast == isLast)
            #expect(try AX25Address(parsing: address.description).description == address.description)
        }

        let frame = AX25Frame(
            destination: try AX25Address(callsign: "APRS", highBit: true),
            source: try AX25Address(callsign: "N0CALL", ssid: 7),
            digipeaters: [
                try AX25Address(callsign: "RELAY", highBit: true),
                try AX25Address(callsign: "WIDE1", ssid: 1, highBit: true),
                try AX25Address(callsign: "WIDE2", ssid: 2),
            ],
            info: Array("hi".utf8)
        )
        #expect(frame.monitorLine() == "N0CALL-7>APRS,RELAY,WIDE1-1*,WIDE2-2:hi")
        #expect(frame.lastRepeaterIndex == 1)
        let decoded = try AX25Frame(decoding: frame.encode())
        #expect(decoded == frame)
        #expect(decoded.digipeaters.map(\.hasBeenRepeated) == [true, true, false])
        // An H bit set on a later digipeater only: the star goes after the last one set.
        var odd = frame
        odd.digipeaters[0].hasBeenRepeated = false
        odd.digipeaters[1].hasBeenRepeated = false
        odd.digipeaters[2].hasBeenRepeated = true
        #expect(odd.monitorLine() == "N0CALL-7>APRS,RELAY,WIDE1-1,WIDE2-2*:hi")
        #expect(try AX25Frame(monitorLine: odd.monitorLine()).digipeaters.map(\.hasBeenRepeated) == [true, true, true])
    }

    @Test("eight digipeaters, each with an SSID and an H bit, round trip through bytes and text")
    func eightDigipeaters() throws {
        let line = "SRC-1>DST-2,D1-1,D2-2,D3-3,D4-4,D5-5*,D6-6,D7-7,D8-8:info"
        let frame = try AX25Frame(monitorLine: line)
        #expect(frame.digipeaters.count == 8)
        #expect(frame.digipeaters.map(\.hasBeenRepeated) == [true, true, true, true, true, false, false, false])
        #expect(frame.monitorLine() == line)
        #expect(try AX25Frame(decoding: frame.encode()) == frame)
        #expect(frame.encode().count == 70 + 2 + 4)
    }

    @Test("information escapes: every byte value round trips through the monitor line")
    func escapes() throws {
        let all = (0...255).map(UInt8.init)
        let frame = AX25Frame(destination: try AX25Address(callsign: "B"), source: try AX25Address(callsign: "A"), info: all)
        let line = frame.monitorLine()
        #expect(line.hasPrefix("A>B:<0x00><0x01>"))
        #expect(line.contains("<0x1f> !\"#"))
        #expect(line.contains("}~<0x7f><0x80>"))
        #expect(line.hasSuffix("<0xfd><0xfe><0xff>"))
        #expect(try AX25Frame(monitorLine: line).info == all)
        #expect(try AX25Frame(monitorLine: frame.monitorLine(asciiOnly: true)).info == all)

        #expect(AX25Frame.escapedInfo(Array("a b ".utf8)) == "a b<0x20>")
        #expect(AX25Frame.escapedInfo(Array(" ".utf8)) == "<0x20>")
        #expect(AX25Frame.escapedInfo(Array("café €😀".utf8)) == "café €😀")
        #expect(AX25Frame.escapedInfo(Array("café".utf8), asciiOnly: true) == "caf<0xc3><0xa9>")
        // Not valid UTF-8: a lone continuation byte, a truncated sequence, an overlong form, a surrogate.
        #expect(AX25Frame.escapedInfo([0x80, 0x41]) == "<0x80>A")
        #expect(AX25Frame.escapedInfo([0xE2, 0x82]) == "<0xe2><0x82>")
        #expect(AX25Frame.escapedInfo([0xC0, 0xAF]) == "<0xc0><0xaf>")
        #expect(AX25Frame.escapedInfo([0xED, 0xA0, 0x80]) == "<0xed><0xa0><0x80>")
        // Reading: only `<0x` + two hexadecimal digits + `>` is an escape.
        #expect(AX25Frame.unescapedInfo("<0xAB><0x20>lit<0x>x<0X41><0x4g><0x4") == [0xAB, 0x20] + Array("lit<0x>x<0X41><0x4g><0x4".utf8))
        #expect(AX25Frame.unescapedInfo("<0x3c>0x41>") == Array("<0x41>".utf8))
        #expect(AX25Frame.unescapedInfo("") == [])
        // Information that starts with a combining mark (one Character with the ":").
        #expect(try AX25Frame(monitorLine: "A>B:\u{301}x").info == Array("\u{301}x".utf8))
        // Colons and `>` in the information are just text.
        let colons = try AX25Frame(monitorLine: "A>B::x>y:z")
        #expect(colons.info == Array(":x>y:z".utf8))
    }

    @Test("a monitor line reads as a UI frame with both C bits set, as gen_packets makes it")
    func monitorDefaults() throws {
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS:x")
        #expect(frame.control == 0x03)
        #expect(frame.pid == 0xF0)
        #expect(frame.isUI)
        #expect(frame.destination.highBit)
        #expect(frame.source.highBit)
        #expect(frame.destination.reservedBits == 0b11)
        #expect(try AX25Frame(monitorLine: "A>B:").info == [])
        // A `*` after the source or destination is ignored, as Dire Wolf does.
        #expect(try AX25Frame(monitorLine: "A*>B*:x") == AX25Frame(monitorLine: "A>B:x"))
    }

    @Test("bad monitor lines: the error says what is wrong", arguments: [
        ("", AX25Error.Kind.malformedMonitorLine, "empty"),
        ("N0CALL APRS hello", .malformedMonitorLine, "no \":\""),
        ("N0CALL:hello", .malformedMonitorLine, "no \">\""),
        ("ab1cd>XY2Z:lower", .invalidCallsign, "source address \"ab1cd\": callsign has lower-case letters"),
        ("AB1CD>XY2Z,wide1-1:x", .invalidCallsign, "digipeater 1 address \"wide1-1\""),
        ("AB1CDEF>XY2Z:long", .invalidCallsign, "longer than 6 characters"),
        ("AB1CD-16>XY2Z:ssid", .invalidSSID, "source address \"AB1CD-16\": SSID must be a number 0...15"),
        ("AB1CD>XY2Z-1A:ssid", .invalidSSID, "destination address \"XY2Z-1A\""),
        ("AB1CD>XY2Z-:ssid", .invalidSSID, "destination address"),
        (">XY2Z:x", .invalidCallsign, "source address is empty"),
        ("AB1CD>:x", .invalidCallsign, "destination address is empty"),
        ("AB1CD>XY2Z,,D:empty", .invalidCallsign, "digipeater 1 address is empty"),
        ("AB1CD>XY2Z,D1**:x", .invalidCallsign, "\"*\""),
        ("AB1CD>XY2Z,D_1:x", .invalidCallsign, "\"_\""),
        (" AB1CD>XY2Z:sp", .invalidCallsign, "source address"),
        ("AB1CD>XY2Z,A,B,C,D,E,F,G,H,I:nine", .tooManyDigipeaters, "9 digipeaters; at most 8"),
    ])
    func badLines(line: String, kind: AX25Error.Kind, message: String) {
        #expect {
            try AX25Frame(monitorLine: line)
        } throws: { error in
            guard let error = error as? AX25Error else { return false }
            return error.kind == kind && error.description.contains(message)
        }
    }

    @Test("bad bytes: the error says what is wrong")
    func badBytes() throws {
        let good = try AX25Frame(monitorLine: "AB1CD>XY2Z,D1:x").encode()
        func kind(_ bytes: [UInt8], strict: Bool = true) -> AX25Error.Kind? {
            do {
                _ = try AX25Frame(decoding: bytes, strictCallsigns: strict)
                return nil
            } catch {
                return error.kind
            }
        }
        #expect(kind(Array(good.prefix(14))) == .frameTooShort)
        #expect(kind(Array(good.prefix(20))) == .addressFieldNotTerminated)
        #expect(kind(Array(good.prefix(21))) == .frameTooShort)  // addresses, no control
        #expect(kind(Array(good.prefix(21)) + [0x03]) == .missingPID)  // UI control, no PID
        #expect(kind(Array(good.prefix(21)) + [0x10]) == .missingPID)  // I frame, no PID
        #expect(kind(Array(good.prefix(21)) + [0x3F]) == nil)  // SABM: no PID needed
        #expect(kind(Array(good.prefix(23))) == nil)
        // No end-of-addresses bit in ten addresses.
        let digipeater = try AX25Address(callsign: "D").encode(isLast: false)
        let eleven: [UInt8] = (0..<11).flatMap { _ in digipeater } + [0x03, 0xF0]
        #expect(kind(eleven) == .tooManyDigipeaters)
        // The destination marked last: no source.
        let destinationOnly: [UInt8] = try AX25Address(callsign: "AB").encode(isLast: true) + [UInt8](repeating: 0x40, count: 10)
        #expect(kind(destinationOnly) == .addressFieldNotTerminated)
        // Lower case, a space inside, a leading space, a set extension bit inside a callsign.
        var lower = good
        lower[7] = UInt8(ascii: "a") << 1
        #expect(kind(lower) == .invalidCallsign)
        #expect(kind(lower, strict: false) == nil)
        #expect(try AX25Frame(decoding: lower, strictCallsigns: false).source.callsign == "aB1CD")
        var inner = good
        inner[8] = 0x40
        #expect(kind(inner) == .invalidCallsign)
        #expect(kind(inner, strict: false) == .invalidCallsign)
        var leading = good
        leading[0] = 0x40
        #expect(kind(leading) == .invalidCallsign)
        var control = good
        control[7] |= 1
        #expect(kind(control) == .invalidCallsign)
        do {
            _ = try AX25Frame(decoding: lower)
            Issue.record("lower case accepted")
        } catch {
            #expect(error.description.contains("source bytes c2 84 62 86 88 40: character 1 (byte 0xc2)"))
        }
    }

    @Test("address errors from the throwing initializer")
    func addressErrors() {
        #expect(throws: AX25Error.self) { try AX25Address(callsign: "N0CALL", ssid: 16) }
        #expect(throws: AX25Error.self) { try AX25Address(callsign: "") }
        #expect(throws: AX25Error.self) { try AX25Address(callsign: "n0call") }
        #expect(throws: AX25Error.self) { try AX25Address(callsign: "N0CALL7") }
        #expect(throws: AX25Error.self) { try AX25Address(callsign: "N0-CAL") }
        #expect(throws: AX25Error.self) { try AX25Address(callsign: "ÄB") }
    }

    @Test("AX.25 frames through HDLC with repair accepted only for well-formed frames")
    func throughHDLC() throws {
        let frame = try AX25Frame(monitorLine: "N0CALL-7>APRS,WIDE1-1*,WIDE2-1:!4237.14N/07120.83W#")
        let bits = HDLCEncoder(leadingFlags: 2).encode(frame.encode())
        var damaged = bits
        damaged[100].toggle()
        var decoder = HDLCDecoder()
        let candidate = try #require(decoder.decode(damaged).first?.candidate)
        let repaired = try #require(candidate.repair(maxBitFlips: 1) { (try? AX25Frame(decoding: $0)) != nil })
        #expect(try AX25Frame(decoding: repaired.bytes) == frame)
        #expect(repaired.flippedBitIndices == [100])
    }
}
