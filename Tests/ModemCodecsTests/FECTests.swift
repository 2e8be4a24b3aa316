import Testing
import ModemTestSupport
import ModemCodecs

@Suite("Reed-Solomon over GF(256) and FX.25 blocks")
struct FECTests {
    @Test("the field: α generates 255 elements; multiply and divide undo each other")
    func field() {
        let f = GaloisField256.fx25
        #expect(Set((0..<255).map { f.power($0) }).count == 255)
        for a in [UInt8(1), 2, 3, 0x53, 0xCA, 0xFF] {
            for b in [UInt8(1), 7, 0x8E, 0xFF] {
                #expect(f.divide(f.multiply(a, b), b) == a)
            }
        }
        // α · α⁷ = α⁸ = x⁴ + x³ + x² + 1.
        #expect(f.multiply(0x02, 0x80) == 0x1D)
    }

    @Test("a codeword has zero syndromes; every full and shortened length round-trips", arguments: [16, 32, 64])
    func codewords(parity: Int) {
        var rng = TestRandom(seed: UInt64(parity))
        let code = ReedSolomonCode(parityCount: parity)
        for length in [1, 32, 64, 128, 255 - parity] {
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var block = data + code.parity(of: data)
            #expect(code.syndromes(of: block).allSatisfy { $0 == 0 })
            #expect(code.decode(&block) == .corrected(positions: []))
            #expect(Array(block[0..<length]) == data)
        }
    }

    @Test("corrects up to parity/2 errors anywhere, and errors plus erasures with 2e + f ≤ parity", arguments: [16, 32, 64])
    func corrects(parity: Int) {
        var rng = TestRandom(seed: 99 + UInt64(parity))
        let code = ReedSolomonCode(parityCount: parity)
        for trial in 0..<40 {
            let length = [32, 64, 128, 255 - parity][trial % 4]
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let sent = data + code.parity(of: data)
            let erasures = trial % 2 == 0 ? 0 : Int.random(in: 0...parity, using: &rng)
            let errors = (parity - erasures) / 2
            var positions = Array(sent.indices).shuffled(using: &rng).prefix(errors + erasures).map { Int($0) }
            var block = sent
            for p in positions { block[p] ^= UInt8.random(in: 1...255, using: &rng) }
            let erased = Array(positions.prefix(erasures))
            let outcome = code.decode(&block, erasures: erased)
            positions.sort()
            #expect(outcome == .corrected(positions: positions), "trial \(trial): \(errors) errors, \(erasures) erasures")
            #expect(block == sent)
        }
    }

    @Test("beyond its reach the decoder says so (or finds another codeword) and never invents a short cut")
    func beyondReach() {
        var rng = TestRandom(seed: 7)
        let code = ReedSolomonCode(parityCount: 16)
        var uncorrectable = 0
        for _ in 0..<200 {
            let data = (0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let sent = data + code.parity(of: data)
            var block = sent
            for p in Array(sent.indices).shuffled(using: &rng).prefix(12) { block[p] ^= UInt8.random(in: 1...255, using: &rng) }
            let before = block
            switch code.decode(&block) {
            case .uncorrectable:
                uncorrectable += 1
                #expect(block == before, "an uncorrectable block is left as it was")
            case .corrected:
                // A miscorrection lands on another codeword, never on garbage.
                #expect(code.syndromes(of: block).allSatisfy { $0 == 0 })
                #expect(block != sent)
            }
        }
        #expect(uncorrectable >= 195)
    }

    @Test("FX.25 modes: the smallest block that holds the frame, falling back to the most check bytes that fit")
    func modes() {
        #expect(FX25Mode.fitting(byteCount: 30, parityCount: 16)?.number == 4)
        #expect(FX25Mode.fitting(byteCount: 33, parityCount: 16)?.number == 3)
        #expect(FX25Mode.fitting(byteCount: 100, parityCount: 32)?.number == 6)
        #expect(FX25Mode.fitting(byteCount: 190, parityCount: 64)?.number == 9)
        #expect(FX25Mode.fitting(byteCount: 200, parityCount: 64)?.number == 5)
        #expect(FX25Mode.fitting(byteCount: 230, parityCount: 64)?.number == 1)
        #expect(FX25Mode.fitting(byteCount: 240, parityCount: 16) == nil)
        // The tags are far apart, so a tolerance of 8 bits cannot confuse them.
        for a in FX25Mode.all { for b in FX25Mode.all where a != b { #expect((a.tag ^ b.tag).nonzeroBitCount >= 32) } }
    }

    @Test("shortened FX.25 blocks: check bytes over the data followed by the zeros not sent, as Dire Wolf makes them")
    func shortenedLayout() {
        var rng = TestRandom(seed: 21)
        for mode in FX25Mode.all {
            let data = rng.bytes(mode.dataCount)
            let parity = mode.parity(of: data)
            // The full codeword puts the unsent zeros between data and check bytes.
            let full = data + [UInt8](repeating: 0, count: mode.padding) + parity
            #expect(mode.code.syndromes(of: full).allSatisfy { $0 == 0 }, "\(mode)")
            var block = data + parity
            for p in Array(block.indices).shuffled(using: &rng).prefix(mode.parityCount / 2) { block[p] ^= 0xA5 }
            #expect(mode.correct(&block)?.count == mode.parityCount / 2, "\(mode)")
            #expect(block == data + parity)
        }
    }

    /// The bits of an FX.25 transmission: flags, the block, flags.
    static func transmission(_ frames: [[UInt8]], parity: Int) -> [Bool] {
        var bits: [Bool] = []
        HDLCEncoder.appendFlags(10, to: &bits)
        let encoder = FX25Encoder(parityCount: parity)
        for f in frames {
            #expect(encoder.append(f, to: &bits))
            HDLCEncoder.appendFlags(2, to: &bits)
        }
        HDLCEncoder.appendFlags(4, to: &bits)
        return bits
    }

    static func frame(_ n: Int) -> [UInt8] {
        AX25Frame(destination: try! AX25Address(callsign: "APZ001"), source: try! AX25Address(callsign: "N0CALL", ssid: n % 16),
                  info: Array("FX.25 test frame \(n), the quick brown fox".utf8)).encode()
    }

    @Test("FX.25 round trip, fed bit by bit, with junk around it; a plain HDLC decoder sees the frame too", arguments: [16, 32, 64])
    func roundTrip(parity: Int) {
        var rng = TestRandom(seed: 5)
        let frames = (0..<3).map { Self.frame($0) }
        let junk = (0..<300).map { _ in Bool.random(using: &rng) }
        let bits = junk + Self.transmission(frames, parity: parity) + junk
        var decoder = FX25Decoder()
        var found: [[UInt8]] = []
        for (i, b) in bits.enumerated() {
            if let block = decoder.decode(b, stamp: i) {
                #expect(block.correctedBytes == 0)
                #expect(block.mode.parityCount == parity)
                found += block.frames.map(\.frame.bytes)
            }
        }
        #expect(found == frames)
        var plain = HDLCDecoder()
        #expect(plain.decode(bits).compactMap { if case .frame(let f) = $0 { f.bytes } else { nil } } == frames)
    }

    @Test("FX.25 corrects damaged bytes, tags with a few wrong bits, and uses the doubtful bytes as erasures")
    func damage() {
        var rng = TestRandom(seed: 11)
        let f = Self.frame(4)
        let bits = Self.transmission([f], parity: 16)
        let tagStart = 80
        // 8 bytes hit (the most errors alone can fix), 3 tag bits wrong.
        var hit = bits
        for p in [0, 5, 9, 20, 33, 40, 41, 50] { let bit = tagStart + 64 + p * 8 + Int.random(in: 0..<8, using: &rng); hit[bit].toggle() }
        for t in [3, 17, 60] { hit[tagStart + t].toggle() }
        var d = FX25Decoder()
        let blocks: [FX25Block] = hit.enumerated().compactMap { d.decode($1, stamp: $0) }
        #expect(blocks.count == 1)
        #expect(blocks.first?.correctedBytes == 8)
        #expect(blocks.first?.tagErrors == 3)
        #expect(blocks.first?.frames.map(\.frame.bytes) == [f])
        // 12 bytes hit: beyond errors alone (8), but each is marked doubtful, so erasures recover it.
        var worse = bits
        var confidence = [Float](repeating: 1, count: bits.count)
        for p in [1, 4, 8, 15, 22, 30, 37, 44, 51, 58, 62, 70] {
            let bit = tagStart + 64 + p * 8 + Int.random(in: 0..<8, using: &rng)
            worse[bit].toggle()
            confidence[bit] = 0.1
        }
        var e = FX25Decoder()
        let rescued: [FX25Block] = worse.enumerated().compactMap { e.decode($1, confidence: confidence[$0], stamp: $0) }
        #expect(rescued.first?.usedErasures == true)
        #expect(rescued.first?.frames.map(\.frame.bytes) == [f])
        // The same damage with no hint is beyond correction: counted, no frame.
        var blind = FX25Decoder()
        let lost: [FX25Block] = worse.enumerated().compactMap { blind.decode($1, stamp: $0) }
        #expect(lost.first?.isCorrected == false)
        #expect(lost.first?.frames.isEmpty == true)
        #expect(blind.blocksUncorrectable == 1)
    }

    @Test("bad input: a tag with nothing after it, a block cut short, noise: no frame, no crash")
    func badInput() {
        var rng = TestRandom(seed: 3)
        var d = FX25Decoder()
        var bits: [Bool] = []
        for i in 0..<64 { bits.append(FX25Mode.all[0].tag >> UInt64(i) & 1 != 0) }
        bits += (0..<4000).map { _ in Bool.random(using: &rng) }
        let block = Self.transmission([Self.frame(1)], parity: 32)
        bits += block.prefix(block.count - 200)
        bits += (0..<200_000).map { _ in Bool.random(using: &rng) }
        var frames = 0
        for (i, b) in bits.enumerated() { if let blk = d.decode(b, stamp: i) { frames += blk.frames.count } }
        #expect(frames == 0)
    }
}
