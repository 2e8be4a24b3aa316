import Testing
import ModemTestSupport
@testable import ModemBluetooth

@Suite struct RFCOMMFrameTests {
    /// The FCS vectors of plan section 8 (computed by hand with the 07.10 Annex B algorithm).
    @Test func testFCSVectorsFromThePlan() {
        #expect(RFCOMMFrame(kind: .sabm, dlci: 0, commandResponse: true, pollFinal: true).encoded == [0x03, 0x3F, 0x01, 0x1C])
        #expect(RFCOMMFrame(kind: .ua, dlci: 0, commandResponse: true, pollFinal: true).encoded == [0x03, 0x73, 0x01, 0xD7])
        #expect(RFCOMMFrame(kind: .disc, dlci: 0, commandResponse: true, pollFinal: true).encoded == [0x03, 0x53, 0x01, 0xFD])
        #expect(RFCOMMFrame(kind: .sabm, dlci: 2, commandResponse: true, pollFinal: true).encoded == [0x0B, 0x3F, 0x01, 0x59])
        let message: [UInt8] = [0x23, 0x03, 0x41]   // a Test command carrying "A"
        let fromInitiator = RFCOMMFrame(kind: .uih, dlci: 0, commandResponse: true, information: message).encoded
        #expect(fromInitiator == ([0x03, 0xEF, 0x07] + message + [0x70]))
        let fromResponder = RFCOMMFrame(kind: .uih, dlci: 0, commandResponse: false, information: message).encoded
        #expect(fromResponder == ([0x01, 0xEF, 0x07] + message + [0xAA]))
        #expect(RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: true, information: [1, 2, 3]).encoded.last == 0x9A)
        #expect(RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: false, information: [1, 2, 3]).encoded.first == 0x09)
        #expect(RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: false, information: [1, 2, 3]).encoded.last == 0x40)
        // The receiver's check: the register over the covered bytes and the FCS ends at 0xCF.
        #expect(RFCOMMFCS.register([0x03, 0x3F, 0x01, 0x1C]) == 0xCF)
        #expect(RFCOMMFCS.register([0x09, 0xEF, 0x40]) == 0xCF)
        #expect(RFCOMMFCS.isValid([0x0B, 0x3F, 0x01], fcs: 0x59))
        #expect(!RFCOMMFCS.isValid([0x0B, 0x3F, 0x01], fcs: 0x58))
    }

    @Test func testUIHFCSCoversAddressAndControlOnlyAndOthersTheLengthToo() throws {
        // UIH: any information, any length, same FCS.
        let short = RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: true, information: [0xAA]).encoded
        let long = RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: true, information: Array(repeating: 0x55, count: 300)).encoded
        #expect(short.last == long.last)
        // DM with a (non-standard) information field: the length is covered, the information not.
        let dm1 = RFCOMMFrame(kind: .dm, dlci: 4, commandResponse: false, pollFinal: true, information: [1]).encoded
        let dm2 = RFCOMMFrame(kind: .dm, dlci: 4, commandResponse: false, pollFinal: true, information: [2]).encoded
        let dm0 = RFCOMMFrame(kind: .dm, dlci: 4, commandResponse: false, pollFinal: true).encoded
        #expect(dm1.last == dm2.last)
        #expect(dm1.last != dm0.last)
        // Changing information never breaks a UIH frame's FCS; changing the header always does.
        var damaged = long
        damaged[10] ^= 0xFF
        #expect(try RFCOMMFrame.parse(damaged).fcsValid)
        for index in [0, 1] {
            for bit in 0..<8 where !(index == 0 && bit == 0) {   // EA = 0 is a malformed address instead
                var flipped = short
                flipped[index] ^= 1 << bit
                if let parsed = try? RFCOMMFrame.parse(flipped) { #expect(!parsed.fcsValid, "byte \(index) bit \(bit)") }
            }
        }
    }

    @Test func testLengthFieldOneOrTwoBytes() throws {
        for length in [0, 1, 126, 127, 128, 129, 1000, 16383, 16384, 32767] {
            let info = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let frame = RFCOMMFrame(kind: .uih, dlci: 5, commandResponse: false, information: info)
            let bytes = frame.encoded
            #expect(bytes.count == (2 + (length <= 127 ? 1 : 2) + length + 1), "length \(length)")
            if length <= 127 {
                #expect(bytes[2] == (UInt8(length) << 1 | 1))
            } else {
                #expect((bytes[2] & 1) == 0)
                #expect((Int(bytes[2] >> 1) | Int(bytes[3]) << 7) == length)
            }
            #expect(try RFCOMMFrame.decode(bytes) == frame)
        }
    }

    @Test func testCreditByteFollowsTheLengthAndIsNotCounted() throws {
        let frame = RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: true, credits: 33, information: [0x41, 0x42])
        let bytes = frame.encoded
        #expect(bytes == [0x0B, 0xFF, 0x05, 33, 0x41, 0x42, RFCOMMFCS.compute([0x0B, 0xFF])])
        #expect(bytes.last == 0x86)
        let decoded = try RFCOMMFrame.decode(bytes)
        #expect(decoded.credits == 33)
        #expect(decoded.pollFinal)
        #expect(decoded.information == [0x41, 0x42])
        let creditOnly = RFCOMMFrame(kind: .uih, dlci: 9, commandResponse: false, credits: 255)
        #expect(try RFCOMMFrame.decode(creditOnly.encoded) == creditOnly)
        #expect(creditOnly.encoded.count == 5)
    }

    @Test func testRoundTripsEveryKindDLCIAndBit() throws {
        var random = TestRandom(seed: 7)
        for kind in RFCOMMFrame.Kind.allCases {
            for dlci in UInt8(0)..<64 {
                for commandResponse in [false, true] {
                    for pollFinal in [false, true] {
                        let length = Int(random.next() % 300)
                        let credits: UInt8? = kind == .uih && pollFinal && dlci != 0 ? UInt8(random.next() % 256) : nil
                        let frame = RFCOMMFrame(kind: kind, dlci: dlci, commandResponse: commandResponse, pollFinal: pollFinal,
                                                credits: credits, information: random.bytes(length))
                        let parsed = try RFCOMMFrame.parse(frame.encoded)
                        #expect(parsed.fcsValid)
                        #expect(parsed.frame == frame)
                    }
                }
            }
        }
    }

    @Test func testTruncatedAtEveryLengthAndExtraBytesThrow() throws {
        let frames = [
            RFCOMMFrame(kind: .sabm, dlci: 0, commandResponse: true, pollFinal: true).encoded,
            RFCOMMFrame(kind: .uih, dlci: 2, commandResponse: true, credits: 4, information: Array(repeating: 0x61, count: 200)).encoded,
            RFCOMMFrame(kind: .uih, dlci: 0, commandResponse: false, information: [0x81, 0x11, 1, 2, 3, 4, 5, 6, 7, 8]).encoded,
        ]
        for bytes in frames {
            for cut in 0..<bytes.count {
                do {
                    _ = try RFCOMMFrame.parse(Array(bytes[0..<cut]))
                    Issue.record("cut at \(cut)")
                } catch let caught {
                    let error: any Error = caught
                    #expect(error is MalformedPacket)
                }
            }
            #expect(throws: (any Error).self) { _ = try RFCOMMFrame.parse(bytes + [0x00]) }
            #expect(throws: (any Error).self) { _ = try RFCOMMFrame.parse(bytes + bytes) }
            #expect(throws: Never.self) { try RFCOMMFrame.decode(bytes) }
        }
        // Extended address (EA = 0) and unknown control bytes.
        #expect(throws: (any Error).self) { _ = try RFCOMMFrame.parse([0x02, 0x3F, 0x01, 0x00]) }
        #expect(throws: (any Error).self) { _ = try RFCOMMFrame.parse([0x03, 0x13, 0x01, 0x00]) }
        // A bad FCS parses but is flagged; decode refuses it.
        #expect(try RFCOMMFrame.parse([0x03, 0x3F, 0x01, 0x1D]).fcsValid == false)
        #expect(throws: (any Error).self) { _ = try RFCOMMFrame.decode([0x03, 0x3F, 0x01, 0x1D]) }
    }

    @Test func testJunkNeverCrashesAndJunkAroundAFrameIsRefused() throws {
        var random = TestRandom(seed: 42)
        var acceptedWithGoodFCS = 0
        for _ in 0..<20_000 {
            let junk = random.bytes(Int(random.next() % 40))
            if let parsed = try? RFCOMMFrame.parse(junk), parsed.fcsValid { acceptedWithGoodFCS += 1 }
        }
        #expect(acceptedWithGoodFCS < 200, "random bytes rarely make a frame")
        let frame = RFCOMMFrame(kind: .uih, dlci: 3, commandResponse: false, information: Array("hello".utf8)).encoded
        for _ in 0..<500 {
            let before = random.bytes(1 + Int(random.next() % 5))
            let after = random.bytes(1 + Int(random.next() % 5))
            #expect(throws: (any Error).self) { _ = try RFCOMMFrame.decode(before + frame + after) }
            #expect(throws: (any Error).self) { _ = try RFCOMMFrame.decode(frame + after) }
        }
    }
}
