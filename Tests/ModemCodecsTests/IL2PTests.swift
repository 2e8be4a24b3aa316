import Testing
import ModemTestSupport
import ModemCodecs

/// IL2P: the specification's examples (IL2P 0.4, as Dire Wolf's own tests carry them), header types
/// 0 and 1, both FEC levels, Reed-Solomon correction up to its limit, the bit-stream decoder with
/// damaged sync words, both polarities and junk around frames.
@Suite("IL2P frames")
struct IL2PTests {
    static func hex(_ s: String) -> [UInt8] { s.split(separator: " ").map { UInt8($0, radix: 16)! } }

    // The specification's three examples: AX.25 bytes, the header before scrambling, what goes on the air.
    static let sFrame = hex("96 82 64 88 8a ae e4 96 96 68 90 8a 94 6f b1")
    static let sHeader = hex("2b a1 12 24 25 77 6b 2b 54 68 25 2a 27")
    static let sAir = hex("26 57 4d 57 f1 96 cc 85 42 e7 24 f7 2e 8a 97")
    static let uiFrame = hex("86 a2 40 40 40 40 60 96 96 68 90 8a 94 7f 03 f0")
    static let uiHeader = hex("63 f1 40 40 40 00 6b 2b 54 28 25 2a 0f")
    static let uiAir = hex("6a ea 9c c2 01 11 fc 14 1f da 6e f2 53 91 bd")
    static let iFrame = hex("96 82 64 88 8a ae e4 96 96 68 90 8a 94 65 b8 cf 30 31 32 33 34 35 36 37 38")
    static let iHeader = hex("2b e1 52 64 25 77 6b 2b d4 68 25 aa 22")
    static let iAir = hex("26 13 6d 02 8c fe fb e8 aa 94 2d 6a 34 43 35 3c 69 9f 0c 75 5a 38 a1 7f f3 fc")

    @Test("the specification's examples: headers, scrambling, check bytes, a whole I frame")
    func specificationExamples() throws {
        for (frame, header, air) in [(Self.sFrame, Self.sHeader, Self.sAir), (Self.uiFrame, Self.uiHeader, Self.uiAir),
                                     (Self.iFrame, Self.iHeader, Self.iAir)] {
            let (h, payload) = try #require(IL2PFrameMapping.encode(frame, maximumFEC: false))
            #expect(h.isType1)
            #expect(h.bytes == header)
            #expect(IL2PHeader(bytes: header) == h)
            #expect(IL2PScrambler.scramble(header) == Array(air[0..<13]))
            #expect(IL2PScrambler.descramble(air[0..<13]) == header)
            #expect(IL2PEncoder(maximumFEC: false).encode(frame) == air)
            #expect(payload.count == h.payloadCount)
        }
        // Back: the S and I frames come back byte for byte (their C bits are a command's); the UI frame,
        // sent with both C bits clear, comes back as a response (destination C 0, source C 1).
        #expect(IL2PFrameMapping.decode(header: IL2PHeader(bytes: Self.sHeader), payload: []) == Self.sFrame)
        #expect(IL2PFrameMapping.decode(header: IL2PHeader(bytes: Self.iHeader), payload: Array(Self.iFrame[16...])) == Self.iFrame)
        var ui = Self.uiFrame
        ui[13] |= 0x80
        #expect(IL2PFrameMapping.decode(header: IL2PHeader(bytes: Self.uiHeader), payload: []) == ui)
    }

    @Test("payload layouts: the specification's examples, every size at both FEC levels")
    func layouts() {
        let a = IL2PPayloadLayout(payloadCount: 100, maximumFEC: false)
        #expect(a.blockSizes == [100] && a.parityCount == 4)
        #expect(IL2PPayloadLayout(payloadCount: 236, maximumFEC: false).parityCount == 8)
        let c = IL2PPayloadLayout(payloadCount: 512, maximumFEC: false)
        #expect(c.blockSizes == [171, 171, 170] && c.parityCount == 6 && c.encodedCount == 530)
        let d = IL2PPayloadLayout(payloadCount: 1023, maximumFEC: false)
        #expect(d.blockSizes == [205, 205, 205, 204, 204] && d.parityCount == 8)
        for fec in [false, true] {
            for n in 1...1023 {
                let l = IL2PPayloadLayout(payloadCount: n, maximumFEC: fec)
                #expect(l.blockSizes.reduce(0, +) == n)
                #expect((1...5).contains(l.blockSizes.count))
                #expect(l.blockSizes.allSatisfy { $0 + l.parityCount <= 255 })
                #expect(fec ? l.parityCount == 16 : [2, 4, 6, 8].contains(l.parityCount))
            }
        }
        #expect(IL2PPayloadLayout(payloadCount: 0, maximumFEC: true).encodedCount == 0)
    }

    /// Frames of every kind a type 1 header codes, and the ones it does not.
    static func frames() throws -> [(frame: [UInt8], type1: Bool)] {
        let dst = try AX25Address(callsign: "APZ001", highBit: true)
        let src = try AX25Address(callsign: "N0CALL", ssid: 7)
        let digi = try AX25Address(callsign: "WIDE1", ssid: 1)
        func f(_ control: UInt8, _ pid: UInt8?, _ info: [UInt8] = [], digis: [AX25Address] = []) -> [UInt8] {
            AX25Frame(destination: dst, source: src, digipeaters: digis, control: control, pid: pid, info: info).encode()
        }
        let text = Array("the quick brown fox".utf8)
        return [
            (f(0x03, 0xF0, text), true),                 // UI, APRS
            (f(0x13, 0xF0, []), true),                   // UI with P, no information
            (f(0x03, 0xCF, text), true),                 // UI, TheNET
            (f(0x03, 0x20, text), true),                 // UI, layer 3
            (f(0x03, 0x10, text), false),                // a layer-3 PID the code would turn into 0x20
            (f(0x03, 0x42, text), false),                // a PID without a code
            (f(0x03, 0xF0, text, digis: [digi]), false), // three addresses
            (f(0xB8, 0xCF, text), true),                 // I frame N(R) 5 P N(S) 4
            (f(0x00, 0xF0, [0xF0, 1]), false),           // I frame that may be modulo 128
            (f(0x01, nil), true),                        // RR
            (f(0xB9, nil), true),                        // RR N(R) 5 P
            (f(0x0D, nil), true),                        // SREJ
            (f(0x01, nil, [0x22]), false),               // S frame with a second control byte
            (f(0x2F, nil), true), (f(0x3F, nil), true),  // SABM, with P
            (f(0x43, nil), true), (f(0x0F, nil), true), (f(0x73, nil), true),   // DISC, DM, UA with F
            (f(0x87, nil, [1, 2, 3]), true),             // FRMR with its three bytes
            (f(0xAF, nil, text), true), (f(0xE3, nil, text), true),             // XID, TEST
            (f(0x6F, nil), false),                       // SABME
            (f(0x2F, nil, [1]), false),                  // SABM with information
            (f(0x03, 0xF0, [UInt8](repeating: 0x41, count: 1023)), true),
            (f(0x03, 0xF0, [UInt8](repeating: 0x41, count: 1024)), false),  // too long for either type
        ]
    }

    @Test("round trips of header types 0 and 1 at both FEC levels: the frame comes back")
    func roundTrips() throws {
        for fec in [false, true] {
            for (i, item) in try Self.frames().enumerated() {
                var frame = item.frame
                guard let (header, payload) = IL2PFrameMapping.encode(frame, maximumFEC: fec) else {
                    #expect(frame.count > 1023, "frame \(i) not encoded")
                    continue
                }
                #expect(header.isType1 == item.type1, "frame \(i)")
                #expect(header.maximumFEC == fec)
                let bytes = try #require(IL2PEncoder(maximumFEC: fec).encode(frame))
                #expect(bytes.count == 15 + header.payloadLayout.encodedCount)
                var decoder = IL2PDecoder()
                var bits: [Bool] = []
                IL2PEncoder.appendPreamble(4, to: &bits)
                #expect(IL2PEncoder(maximumFEC: fec).append(frame, to: &bits))
                IL2PEncoder.appendPreamble(1, to: &bits)
                let r = bits.compactMap { decoder.decode($0) }
                try #require(r.count == 1, "frame \(i)")
                // A type 1 command's source C bit is 0; ours had both clear: the destination's C 1 makes it a command.
                if header.isType1 && frame[14] & 1 == 0 { frame[6] |= 0x80; frame[13] &= 0x7F }
                #expect(r[0].frame == frame, "frame \(i)")
                #expect(r[0].correctedSymbols == 0 && !r[0].inverted && r[0].syncErrors == 0)
                #expect(r[0].header == header)
                _ = payload
            }
        }
    }

    @Test("Reed-Solomon with first root α⁰ corrects up to parity/2 errors, shortened by leading zeros",
          arguments: IL2PPayloadLayout.parityCounts)
    func reedSolomon(parity: Int) {
        var rng = TestRandom(seed: UInt64(parity) * 31)
        let code = ReedSolomonCode(parityCount: parity, firstRoot: 0)
        for trial in 0..<40 {
            let length = [1, 13, 61, 239 - parity + 16][trial % 4]
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let sent = data + code.parity(of: data)
            var block = sent
            let errors = parity / 2
            let positions = Array(sent.indices).shuffled(using: &rng).prefix(errors).sorted()
            for p in positions { block[p] ^= UInt8.random(in: 1...255, using: &rng) }
            #expect(code.decode(&block) == .corrected(positions: positions), "trial \(trial)")
            #expect(block == sent)
        }
    }

    /// Encoded bits of `frame` with junk around, and the byte offsets (from the first frame bit) kept.
    static func line(_ frame: [UInt8], fec: Bool, junk: Int, seed: UInt64) -> [Bool] {
        var rng = TestRandom(seed: seed)
        var bits = (0..<junk).map { _ in Bool.random(using: &rng) }
        IL2PEncoder.appendPreamble(2, to: &bits)
        IL2PEncoder(maximumFEC: fec).append(frame, to: &bits)
        bits += (0..<junk).map { _ in Bool.random(using: &rng) }
        return bits
    }

    static let text = AX25Frame(destination: try! AX25Address(callsign: "APZ001", highBit: true),
                                source: try! AX25Address(callsign: "N0CALL", ssid: 1),
                                info: Array("IL2P frame 1 of 20, the quick brown fox jumps over the lazy dog".utf8)).encode()

    @Test("the decoder corrects payload blocks up to their limit (16 check bytes: 8 bytes) and not beyond")
    func correctsUpToLimit() throws {
        let frame = Self.text
        let sent = try #require(IL2PEncoder(maximumFEC: true).encode(frame))
        // Header 15 bytes, then one block of 63 bytes + 16 check bytes. Bytes of the payload block damaged:
        for (damaged, decodes) in [(0, true), (1, true), (8, true), (9, false), (12, false)] {
            var bytes = sent
            for k in 0..<damaged { bytes[15 + 3 + 5 * k] ^= 0x5A }
            var bits: [Bool] = []
            IL2PEncoder.appendPreamble(2, to: &bits)
            IL2PEncoder.appendBytes([0xF1, 0x5E, 0x48] + bytes + [0x55], to: &bits)
            var d = IL2PDecoder()
            let r = bits.compactMap { d.decode($0) }
            try #require(r.count == 1)
            if decodes {
                #expect(r[0].frame == frame && r[0].correctedSymbols == damaged, "\(damaged) bytes")
            } else {
                // Beyond reach the code says so (a 16-byte code miscorrects far less than once in a million).
                #expect(r[0].frame == nil && d.payloadsUncorrectable == 1, "\(damaged) bytes")
            }
        }
        // The header: one byte corrected, two not (the frame is then not even gathered).
        for (damaged, decodes) in [(1, true), (2, false)] {
            var bytes = sent
            for k in 0..<damaged { bytes[2 + 5 * k] ^= 0x81 }
            var bits: [Bool] = []
            IL2PEncoder.appendBytes([0x55, 0xF1, 0x5E, 0x48] + bytes + [0x55], to: &bits)
            var d = IL2PDecoder()
            let r = bits.compactMap { d.decode($0) }
            #expect(r.count == (decodes ? 1 : 0))
            if decodes { #expect(r.first?.frame == frame && r.first?.smallBlockCorrected == true) }
        }
    }

    @Test("erasures: the least confident bytes let 16 check bytes fix 12 bad bytes")
    func erasures() throws {
        let frame = Self.text
        let sent = try #require(IL2PEncoder(maximumFEC: true).encode(frame))
        var bytes = sent
        let bad = (0..<12).map { 15 + 2 + 6 * $0 }
        for p in bad { bytes[p] ^= 0x3C }
        var bits: [Bool] = []
        var confidence: [Float] = []
        for (i, b) in ([0x55, 0xF1, 0x5E, 0x48] + bytes + [0x55]).enumerated() {
            for k in (0..<8).reversed() {
                bits.append(b >> UInt8(k) & 1 != 0)
                confidence.append(bad.contains(i - 4) ? 0.1 : 0.9)
            }
        }
        var d = IL2PDecoder()
        let r = zip(bits, confidence).compactMap { d.decode($0, confidence: $1) }
        try #require(r.count == 1)
        #expect(r[0].frame == frame && r[0].usedErasures && r[0].correctedSymbols == 12)
    }

    @Test("a small code's correction is taken only at a byte the demodulator doubted")
    func smallCodeSuspects() throws {
        // Without max FEC, a 63-byte information field goes in one block with 4 check bytes.
        let frame = Self.text
        let sent = try #require(IL2PEncoder(maximumFEC: false).encode(frame))
        #expect(sent.count == 15 + 63 + 4)
        var bytes = sent
        bytes[15 + 20] ^= 0x44
        for doubted in [20, 40] {
            // The damaged byte is doubted, or sure while five others (right ones) are doubted.
            let low: Set<Int> = doubted == 20 ? [20] : [40, 41, 42, 43, 44]
            var bits: [Bool] = []
            var confidence: [Float] = []
            for (i, b) in ([0x55, 0xF1, 0x5E, 0x48] + bytes + [0x55]).enumerated() {
                for k in (0..<8).reversed() {
                    bits.append(b >> UInt8(k) & 1 != 0)
                    confidence.append(low.contains(i - 4 - 15) ? 0.2 : 0.9)
                }
            }
            var d = IL2PDecoder()
            let r = zip(bits, confidence).compactMap { d.decode($0, confidence: $1) }
            try #require(r.count == 1)
            if doubted == 20 {
                #expect(r[0].frame == frame && r[0].correctedSymbols == 1 && r[0].smallBlockCorrected)
            } else {
                #expect(r[0].frame == nil, "a correction at a byte nobody doubted was taken")
            }
        }
        // With no confidences given (all equal) every correction is taken.
        var bits: [Bool] = []
        IL2PEncoder.appendBytes([0x55, 0xF1, 0x5E, 0x48] + bytes + [0x55], to: &bits)
        var d = IL2PDecoder()
        #expect(bits.compactMap { d.decode($0) }.first?.frame == frame)
    }

    @Test("sync words: one wrong bit is matched, two are not; inverted polarity is found; junk around",
          arguments: [false, true])
    func syncAndPolarity(fec: Bool) throws {
        let frame = Self.text
        for inverted in [false, true] {
            for wrong in [0, 1, 2] {
                var bits = Self.line(frame, fec: fec, junk: 301, seed: 5)
                // The sync word's bits start after the junk, two preamble bytes and the frame's own preamble byte.
                let sync = 301 + 24
                for k in 0..<wrong { bits[sync + 5 + 9 * k].toggle() }
                if inverted { bits = bits.map { !$0 } }
                var d = IL2PDecoder()
                let r = bits.enumerated().compactMap { d.decode($1, stamp: $0) }
                if wrong <= 1 {
                    try #require(r.count == 1, "inverted \(inverted), \(wrong) wrong")
                    #expect(r[0].frame == frame && r[0].inverted == inverted && r[0].syncErrors == wrong)
                    #expect(r[0].syncStamp == sync + 23)
                    #expect(r[0].endStamp == bits.count - 301 - 1)
                } else {
                    #expect(r.allSatisfy { $0.frame != frame })
                }
            }
        }
    }

    @Test("fed one bit at a time or after a chance sync word in its header, the frame still comes")
    func chanceSyncInside() throws {
        // A sync word in the junk just before the real one: its "frame" is gathered beside the real one.
        var bits = Self.line(Self.text, fec: true, junk: 64, seed: 9)
        var fake: [Bool] = []
        IL2PEncoder.appendBytes([0xF1, 0x5E, 0x48, 0x12, 0x34], to: &fake)
        bits.replaceSubrange(10..<(10 + fake.count), with: fake)
        var d = IL2PDecoder()
        let r = bits.compactMap { d.decode($0) }
        #expect(r.filter { $0.frame == Self.text }.count == 1)
        #expect(d.syncsFound >= 2)
    }

    @Test("random bits give no frame")
    func noise() {
        var rng = TestRandom(seed: 77)
        var d = IL2PDecoder()
        var frames = 0
        for _ in 0..<400_000 where d.decode(Bool.random(using: &rng))?.frame != nil { frames += 1 }
        #expect(frames == 0)
    }
}
