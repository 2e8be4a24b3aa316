import Foundation
import Testing
import ModemTestSupport
import ModemCodecs

@Suite("LDPC codes: the staircase codes, belief-propagation decoding, CRC-checked blocks")
struct LDPCTests {
    /// BPSK soft values (positive for a 1) of `bits` through white noise of `sigma`, as LLRs.
    static func channel(_ bits: [UInt8], sigma: Double, rng: inout TestRandom) -> [Float] {
        bits.map { b in
            let y = (b == 1 ? 1.0 : -1.0) + sigma * Double(rng.gaussian())
            return Float(2 * y / (sigma * sigma))
        }
    }

    static func randomBits(_ n: Int, rng: inout TestRandom) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...1, using: &rng) } }

    @Test("every rate: k = n · rate, encoding gives code words, and the graph is the same each time it is built",
          arguments: LDPCRate.allCases)
    func codeWords(rate: LDPCRate) {
        let code = LDPCCode.standard(rate)
        let (num, den) = rate.fraction
        #expect(code.length == 16200 && code.informationLength == 16200 / den * num)
        var rng = TestRandom(seed: 11)
        for _ in 0..<3 {
            let info = Self.randomBits(code.informationLength, rng: &rng)
            let word = code.encode(info)
            #expect(word.count == code.length && Array(word[0..<info.count]) == info)
            #expect(code.isCodeword(word))
            var flipped = word
            flipped[Int.random(in: 0..<word.count, using: &rng)] ^= 1
            #expect(!code.isCodeword(flipped))
        }
        let again = LDPCCode(rate: rate, length: 16200)
        let info = Self.randomBits(code.informationLength, rng: &rng)
        #expect(again.encode(info) == code.encode(info))
        #expect(LDPCCode.standard(rate) === code)
    }

    @Test("the rates' names and order are those that were there before 3/5 was added (3/5 comes last)")
    func rateOrder() {
        #expect(LDPCRate.allCases.map(\.rawValue) == ["1/2", "2/3", "3/4", "5/6", "7/8", "9/10", "3/5"])
        #expect(LDPCRate(rawValue: "3/5") == .r3_5 && LDPCRate.r3_5.fraction == (3, 5))
    }

    @Test("decoding corrects a noisy word above the code's threshold and says when it could not",
          arguments: [(LDPCRate.r1_2, 1.6), (.r3_5, 2.2), (.r3_4, 2.8), (.r5_6, 3.5), (.r9_10, 4.4)])
    func decodesNoise(rate: LDPCRate, ebn0: Double) {
        let code = LDPCCode.standard(rate)
        var decoder = LDPCDecoder(code: code)
        var rng = TestRandom(seed: 5)
        let sigma = (1 / (2 * rate.value * pow(10, ebn0 / 10))).squareRoot()
        for _ in 0..<3 {
            let info = Self.randomBits(code.informationLength, rng: &rng)
            let soft = Self.channel(code.encode(info), sigma: sigma, rng: &rng)
            let hardErrors = zip(soft, code.encode(info)).filter { ($0 > 0) != ($1 == 1) }.count
            let result = decoder.decode(soft)
            #expect(result.converged)
            #expect(decoder.informationBits == info)
            #expect(hardErrors > 0 && result.correctedBits >= hardErrors - 2)
        }
        // Far below the threshold the decoder gives up instead of claiming a word.
        let info = Self.randomBits(code.informationLength, rng: &rng)
        let hopeless = Self.channel(code.encode(info), sigma: sigma * 3, rng: &rng)
        let result = decoder.decode(hopeless, maximumIterations: 20)
        #expect(!result.converged && result.iterations == 20)
    }

    @Test("erasures (zero soft values) are filled in from the checks")
    func erasures() {
        let code = LDPCCode.standard(.r1_2)
        var decoder = LDPCDecoder(code: code)
        var rng = TestRandom(seed: 8)
        let info = Self.randomBits(code.informationLength, rng: &rng)
        var soft = code.encode(info).map { Float($0 == 1 ? 4 : -4) }
        // A third of the bits unknown: a rate-1/2 code fills that in.
        for i in stride(from: 0, to: soft.count, by: 3) { soft[i] = 0 }
        soft[1] = .nan
        let result = decoder.decode(soft)
        #expect(result.converged && decoder.informationBits == info)
    }

    @Test("blocks: payloads of every size round-trip with their last-block mark; a block beyond correction is refused, never delivered")
    func blocks() {
        var codec = LDPCBlockCodec(code: .standard(.r3_4))
        #expect(codec.payloadCapacity == (12150 - 48) / 8)
        var rng = TestRandom(seed: 3)
        for (index, size) in [0, 1, 100, codec.payloadCapacity].enumerated() {
            let payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let bits = codec.encode(payload, index: index, last: index == 3)
            let soft = Self.channel(bits, sigma: 0.6, rng: &rng)
            guard case .block(let got, let last, _, _) = codec.decode(soft, index: index) else {
                Issue.record("block \(index) of \(size) bytes did not decode")
                continue
            }
            #expect(got == payload && last == (index == 3))
        }
        // Decoded under another index (another scrambler): the CRC refuses it.
        let bits = codec.encode([1, 2, 3], index: 7, last: false)
        let clean = bits.map { Float($0 == 1 ? 8 : -8) }
        if case .block = codec.decode(clean, index: 8) { Issue.record("a block decoded under another index") }
        // Pure noise: refused.
        let noise = (0..<codec.code.length).map { _ in Float(rng.gaussian()) }
        if case .block = codec.decode(noise, index: 0) { Issue.record("noise decoded as a block") }
        // Half the word wrong: beyond correction, refused.
        var damaged = clean
        for i in stride(from: 0, to: damaged.count, by: 2) { damaged[i] = -damaged[i] }
        if case .block = codec.decode(damaged, index: 7) { Issue.record("a ruined block was delivered") }
        // Only a few bits wrong: corrected.
        var few = clean
        for i in stride(from: 0, to: 600, by: 7) { few[i] = -few[i] }
        guard case .block(let p, _, let corrected, _) = codec.decode(few, index: 7) else {
            Issue.record("a block with 86 wrong bits was not corrected")
            return
        }
        #expect(p == [1, 2, 3] && corrected == 86)
    }
}

