import Testing
import ModemTestSupport
import ModemCodecs

/// Soft values for `levels` sent as ±1 in white Gaussian noise of standard deviation `sigma`.
private func soft(_ levels: [Bool], sigma: Float, _ rng: inout TestRandom) -> [Float] {
    levels.map { ($0 ? 1 : -1) + sigma * rng.gaussian() }
}

/// Runs `values` through a decoder; returns what it delivered.
private func decodeAll(_ values: [Float], maximumLength: Int = 4096) -> (frames: [(bytes: [UInt8], tagStamp: Int, endStamp: Int, levelErrorRate: Double)],
                                                                      decoder: CodedFrameDecoder) {
    var d = CodedFrameDecoder(maximumLength: maximumLength)
    var out: [(bytes: [UInt8], tagStamp: Int, endStamp: Int, levelErrorRate: Double)] = []
    for (i, v) in values.enumerated() { if let f = d.decode(v, stamp: i) { out.append(f) } }
    return (out, d)
}

@Suite("The convolutional code and coded frames")
struct CodedFrameTests {
    @Test("rate 1/2, K = 7: 2(n + 6) code bits; a clean decode gives the bits back")
    func convolutionalRoundTrip() {
        var rng = TestRandom(seed: 1)
        for n in [0, 1, 7, 100, 2000] {
            let bits = rng.bits(n)
            let code = ConvolutionalCode.encode(bits)
            #expect(code.count == 2 * (n + 6))
            #expect(ConvolutionalCode.decode(code.map { $0 ? 1 : -1 }) == bits)
        }
        #expect(ConvolutionalCode.decode([1, -1, 1]) == nil)   // odd count
        #expect(ConvolutionalCode.decode([1, -1]) == nil)      // shorter than the tail
    }

    @Test("Viterbi: isolated hard errors, a quarter of the code bits erased, and noise at 6 % hard errors are corrected")
    func convolutionalCorrects() {
        var rng = TestRandom(seed: 2)
        let bits = rng.bits(3000)
        let code = ConvolutionalCode.encode(bits)
        // One wrong code bit in every 25 (4 %), spaced beyond the code's memory.
        var flipped = code.map { Float($0 ? 1 : -1) }
        for i in stride(from: 11, to: flipped.count, by: 25) { flipped[i] = -flipped[i] }
        #expect(ConvolutionalCode.decode(flipped) == bits)
        // Every fourth code bit unknown (zero: an erasure), the rest clean.
        var erased = code.map { Float($0 ? 1 : -1) }
        for i in stride(from: 0, to: erased.count, by: 4) { erased[i] = 0 }
        #expect(ConvolutionalCode.decode(erased) == bits)
        // Gaussian noise with σ = 0.64: about 6 % of the code bits have the wrong sign.
        let noisy = soft(code, sigma: 0.64, &rng)
        let wrong = zip(noisy, code).filter { ($0 > 0) != $1 }.count
        #expect(wrong > code.count * 4 / 100, "the test needs real errors: \(wrong)")
        let decoded = ConvolutionalCode.decode(noisy)!
        let residual = zip(decoded, bits).filter { $0 != $1 }.count
        #expect(residual <= 3, "\(residual) of 3000 bits wrong after decoding")
    }

    @Test("coded frames round-trip after noise levels, lengths 3...1200; the end stamp is the last level's")
    func roundTrip() {
        var rng = TestRandom(seed: 3)
        for length in [3, 17, 223, 224, 446, 1200] {
            let frame = rng.bytes(length)
            var levels = rng.bits(333)
            CodedFrame.append(frame, to: &levels)
            #expect(levels.count == 333 + CodedFrame.lineLevels(payloadLength: length + 2))
            let got = decodeAll(levels.map { $0 ? 1 : -1 } + [Float](repeating: 0.3, count: 50))
            #expect(got.frames.count == 1)
            #expect(got.frames.first?.bytes == frame)
            #expect(got.frames.first?.endStamp == levels.count - 1)
            #expect(got.frames.first?.levelErrorRate == 0)
        }
    }

    @Test("in noise with 8 % of the levels wrong, 20 of 20 frames decode and the error rate is reported")
    func noise() {
        var rng = TestRandom(seed: 4)
        var decoded = 0
        for _ in 0..<20 {
            let frame = rng.bytes(290)
            var levels: [Bool] = []
            CodedFrame.append(frame, to: &levels)
            let values = soft(levels, sigma: 0.71, &rng)
            let got = decodeAll(values)
            if got.frames.count == 1, got.frames[0].bytes == frame {
                decoded += 1
                #expect((0.05...0.11).contains(got.frames[0].levelErrorRate), "\(got.frames[0].levelErrorRate)")
            }
        }
        #expect(decoded == 20)
    }

    @Test("beyond the code's reach: frames are counted lost, nothing is delivered")
    func beyondReach() {
        var rng = TestRandom(seed: 5)
        var lost = 0
        for _ in 0..<10 {
            let frame = rng.bytes(200)
            var levels: [Bool] = []
            CodedFrame.append(frame, to: &levels)
            // A clean tag and header, then a body with a third of its levels wrong.
            var values = levels.map { Float($0 ? 1 : -1) }
            let bodyStart = 64 + 2 * 2 * (32 + 6)
            for i in bodyStart..<values.count where rng.next() % 3 == 0 { values[i] = -values[i] }
            let got = decodeAll(values)
            #expect(got.frames.isEmpty)
            lost += got.decoder.framesLost
            #expect(got.decoder.framesAnnounced == 1)
        }
        #expect(lost == 10)
    }

    @Test("a tag with nothing after it, a frame cut short, a header claiming too much: nothing delivered, no crash")
    func badInput() {
        var rng = TestRandom(seed: 6)
        // The tag, then noise.
        var tagOnly: [Bool] = []
        CodedFrame.append(rng.bytes(50), to: &tagOnly)
        let noiseAfterTag = Array(tagOnly[0..<64]) + rng.bits(20_000)
        let a = decodeAll(noiseAfterTag.map { $0 ? 1 : -1 })
        #expect(a.frames.isEmpty)
        #expect(a.decoder.oldestPendingStamp == nil, "a gathering that can never end must not be held")
        // Cut in the middle of the body: still pending (waiting for the rest), nothing delivered.
        var cut: [Bool] = []
        CodedFrame.append(rng.bytes(300), to: &cut)
        let b = decodeAll(cut[0..<(cut.count / 2)].map { $0 ? 1 : -1 })
        #expect(b.frames.isEmpty && b.decoder.oldestPendingStamp == 63)
        // A 1000-byte frame for a decoder that takes at most 500: dropped at the header.
        var long: [Bool] = []
        CodedFrame.append(rng.bytes(1000), to: &long)
        let c = decodeAll(long.map { $0 ? 1 : -1 }, maximumLength: 500)
        #expect(c.frames.isEmpty && c.decoder.framesAnnounced == 0 && c.decoder.oldestPendingStamp == nil)
        // Silence (all zero soft values) and endless noise find nothing.
        #expect(decodeAll([Float](repeating: 0, count: 5000)).frames.isEmpty)
        #expect(decodeAll(rng.bits(200_000).map { $0 ? 1 : -1 }).frames.isEmpty)
    }
}
