import Testing
import ModemTestSupport
import ModemCodecs
import ModemRuntime

/// Replaces the last four bytes (the CRC-32) with the CRC-32 of everything before them, so a test can
/// damage a header field and still get past the CRC check.
private func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var b = Array(bytes.dropLast(4))
    let crc = CRC32.checksum(b)
    b += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
    return b
}

/// Decodes and returns the error thrown, or nil when the bytes decode.
private func decodeError(_ bytes: [UInt8]) -> LinkFrameError? {
    do {
        _ = try LinkFrame(decoding: bytes)
        return nil
    } catch {
        return error
    }
}

@Suite("LinkFrame codec")
struct LinkFrameTests {
    /// A frame of each kind with the given payload and non-trivial header fields.
    static func sample(_ kind: LinkFrame.Kind, payload: [UInt8]) -> LinkFrame {
        LinkFrame(kind: kind, flags: [.fromDevice, .poll, .reply, .complete], session: 0xA5, message: 0xBEEF,
                  fragment: 0x0102, fragmentCount: 0x0304, payload: payload)
    }

    @Test("round trip of every kind with empty, small and maximum payloads", arguments: LinkFrame.Kind.allCases)
    func roundTrip(kind: LinkFrame.Kind) throws {
        var random = TestRandom(seed: UInt64(kind.rawValue))
        for payload in [[], [0x7E], random.bytes(100), random.bytes(LinkFrame.maximumPayload)] {
            for frame in [Self.sample(kind, payload: payload),
                          LinkFrame(kind: kind, session: 0, payload: payload),
                          LinkFrame(kind: kind, flags: [.reply], session: 255, message: 65535, fragment: 65534,
                                    fragmentCount: 65535, payload: payload)] {
                let bytes = frame.encode()
                #expect(bytes.count == LinkFrame.overhead + payload.count)
                let decoded = try LinkFrame(decoding: bytes)
                #expect(decoded == frame)
                #expect(decoded.encode() == bytes)
            }
        }
    }

    @Test("the wire layout: sync word, version and kind, big-endian fields, CRC-32 over the rest")
    func wireLayout() throws {
        var random = TestRandom(seed: 7)
        let payload = random.bytes(37)
        for kind in LinkFrame.Kind.allCases {
            let f = LinkFrame(kind: kind, flags: [.poll, .reply], session: 0x3C, message: 0x1234, fragment: 0x0005,
                              fragmentCount: 0x0A0B, payload: payload)
            let b = f.encode()
            #expect(b[0] == 0x53 && b[1] == 0x4D)  // "SM"
            #expect(b[2] == LinkFrame.version << 4 | kind.rawValue)
            #expect(b[3] == LinkFrame.Flags([.poll, .reply]).rawValue)
            #expect(b[4] == 0x3C)
            #expect(Array(b[5..<13]) == [0x12, 0x34, 0x00, 0x05, 0x0A, 0x0B, 0x00, 37])
            #expect(Array(b[13..<50]) == payload)
            let crc = CRC32.checksum(b[0..<50])
            #expect(Array(b[50...]) == [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)])
        }
        #expect(LinkFrame.Kind.allCases.map(\.rawValue) == Array(1...9))
    }

    @Test("decodes from any collection of bytes (a slice not starting at 0)")
    func decodesSlices() throws {
        let frame = Self.sample(.data, payload: Array("hello".utf8))
        let padded = [0xFF, 0x00, 0x53] + frame.encode() + [0x4D]
        let slice = padded[3..<(padded.count - 1)]
        #expect(try LinkFrame(decoding: slice) == frame)
    }

    @Test("too short: anything below the header and CRC")
    func tooShort() {
        let bytes = Self.sample(.ack, payload: []).encode()
        #expect(bytes.count == LinkFrame.overhead)
        for n in 0..<LinkFrame.overhead {
            #expect(decodeError(Array(bytes.prefix(n))) == .tooShort(n))
        }
        #expect(decodeError(bytes) == nil)
    }

    @Test("bad sync word")
    func badSyncWord() {
        let bytes = Self.sample(.hello, payload: Array("phone".utf8)).encode()
        for (i, v) in [(0, UInt8(0x73)), (1, 0x6D), (0, 0x00), (1, 0xFF)] {
            var b = bytes
            b[i] = v
            #expect(decodeError(b) == .badSyncWord)
            #expect(decodeError(resealed(b)) == .badSyncWord)
        }
        var swapped = bytes
        swapped.swapAt(0, 1)  // "MS"
        #expect(decodeError(resealed(swapped)) == .badSyncWord)
    }

    @Test("bad length: field disagreeing with the bytes, or above the maximum payload")
    func badLength() {
        var random = TestRandom(seed: 11)
        let bytes = Self.sample(.data, payload: random.bytes(10)).encode()
        // One byte missing, one byte too many.
        #expect(decodeError(Array(bytes.dropLast())) == .badLength(declared: 10, actual: 9))
        #expect(decodeError(bytes + [0]) == .badLength(declared: 10, actual: 11))
        // The field says 9 or 11, the frame carries 10.
        var b = bytes
        b[12] = 9
        #expect(decodeError(resealed(b)) == .badLength(declared: 9, actual: 10))
        b[12] = 11
        #expect(decodeError(resealed(b)) == .badLength(declared: 11, actual: 10))
        // A consistent frame of maximumPayload + 1 bytes is still refused.
        let big = LinkFrame.maximumPayload + 1
        var header: [UInt8] = [0x53, 0x4D, LinkFrame.version << 4 | 1, 0, 1, 0, 1, 0, 0, 0, 1, UInt8(big >> 8), UInt8(big & 0xFF)]
        header += random.bytes(big) + [0, 0, 0, 0]
        #expect(decodeError(resealed(header)) == .badLength(declared: big, actual: big))
        // The same construction at exactly the maximum decodes (the test builds frames correctly).
        let max = LinkFrame.maximumPayload
        var ok: [UInt8] = [0x53, 0x4D, LinkFrame.version << 4 | 1, 0, 1, 0, 1, 0, 0, 0, 1, UInt8(max >> 8), UInt8(max & 0xFF)]
        ok += random.bytes(max) + [0, 0, 0, 0]
        #expect(decodeError(resealed(ok)) == nil)
    }

    @Test("flipping any single bit of an encoded frame makes decoding throw", arguments: LinkFrame.Kind.allCases)
    func singleBitFlips(kind: LinkFrame.Kind) {
        var random = TestRandom(seed: 100 + UInt64(kind.rawValue))
        for payload in [[], random.bytes(33)] {
            let bytes = Self.sample(kind, payload: payload).encode()
            #expect(decodeError(bytes) == nil)
            for bit in 0..<(bytes.count * 8) {
                var b = bytes
                b[bit / 8] ^= 1 << (bit % 8)
                let error = decodeError(b)
                switch bit / 8 {
                case 0, 1: #expect(error == .badSyncWord, "bit \(bit)")
                case 11, 12:
                    if case .badLength? = error {} else { Issue.record("bit \(bit): \(String(describing: error))") }
                default: #expect(error == .badCRC, "bit \(bit)")
                }
            }
        }
    }

    @Test("bit flips all over a maximum-size frame are caught")
    func bitFlipsInLargeFrame() {
        var random = TestRandom(seed: 5)
        let bytes = Self.sample(.data, payload: random.bytes(LinkFrame.maximumPayload)).encode()
        for bit in stride(from: 13 * 8, to: bytes.count * 8, by: 97) {
            var b = bytes
            b[bit / 8] ^= 1 << (bit % 8)
            #expect(decodeError(b) == .badCRC, "bit \(bit)")
        }
        // Two flipped bits (a burst) too.
        var b = bytes
        b[1000] ^= 0x81
        #expect(decodeError(b) == .badCRC)
    }

    @Test("unsupported version (with a valid CRC)")
    func unsupportedVersion() {
        let bytes = Self.sample(.data, payload: [1, 2, 3]).encode()
        for version: UInt8 in [0, 2, 3, 15] where version != LinkFrame.version {
            var b = bytes
            b[2] = version << 4 | (b[2] & 0x0F)
            #expect(decodeError(resealed(b)) == .unsupportedVersion(version))
        }
    }

    @Test("unknown kind (with a valid CRC)")
    func unknownKind() {
        let bytes = Self.sample(.data, payload: [1, 2, 3]).encode()
        let known = Set(LinkFrame.Kind.allCases.map(\.rawValue))
        for kind: UInt8 in 0...15 {
            var b = bytes
            b[2] = LinkFrame.version << 4 | kind
            let error = decodeError(resealed(b))
            if known.contains(kind) {
                #expect(error == nil, "kind \(kind)")
            } else {
                #expect(error == .unknownKind(kind))
            }
        }
    }

    @Test("bad fragment: a count of 0, an index at or above the count (with a valid CRC)")
    func badFragment() {
        let bytes = Self.sample(.data, payload: [9]).encode()
        func with(index: UInt16, count: UInt16) -> [UInt8] {
            var b = bytes
            b[7] = UInt8(index >> 8); b[8] = UInt8(index & 0xFF)
            b[9] = UInt8(count >> 8); b[10] = UInt8(count & 0xFF)
            return resealed(b)
        }
        #expect(decodeError(with(index: 0, count: 0)) == .badFragment(index: 0, count: 0))
        #expect(decodeError(with(index: 5, count: 5)) == .badFragment(index: 5, count: 5))
        #expect(decodeError(with(index: 0x0900, count: 2)) == .badFragment(index: 0x0900, count: 2))
        #expect(decodeError(with(index: 65535, count: 65535)) == .badFragment(index: 65535, count: 65535))
        #expect(decodeError(with(index: 4, count: 5)) == nil)
        #expect(decodeError(with(index: 65534, count: 65535)) == nil)
    }

    @Test("every error has a description naming the problem")
    func descriptions() {
        let errors: [LinkFrameError] = [.tooShort(3), .badSyncWord, .badLength(declared: 5, actual: 4), .badCRC,
                                        .unsupportedVersion(2), .unknownKind(12), .badFragment(index: 3, count: 2)]
        let texts = errors.map(\.description)
        #expect(Set(texts).count == errors.count)
        #expect(texts[0].contains("3"))
        #expect(texts[2].contains("5") && texts[2].contains("4"))
        #expect(texts[5].contains("12"))
    }
}
