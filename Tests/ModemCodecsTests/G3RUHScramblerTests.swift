import ModemCodecs
import Testing

/// A reference model of the x^17 + x^12 + 1 scrambler written from the polynomial, independent of
/// the library's shift-register layout: out[n] = in[n] ^ out[n-12] ^ out[n-17] (zero before start).
private func referenceScramble(_ bits: [Bool]) -> [Bool] {
    var out: [Bool] = []
    for (n, b) in bits.enumerated() {
        let a = n >= 12 ? out[n - 12] : false
        let c = n >= 17 ? out[n - 17] : false
        out.append((b != a) != c)
    }
    return out
}

private func randomBits(_ count: Int, seed: UInt64) -> [Bool] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return (state >> 33) & 1 == 1
    }
}

@Suite("G3RUH scrambler")
struct G3RUHScramblerTests {
    @Test("matches the polynomial x^17 + x^12 + 1 bit for bit")
    func knownAnswer() {
        for seed: UInt64 in [1, 2, 3] {
            let bits = randomBits(500, seed: seed)
            var s = G3RUHScrambler()
            #expect(s.scramble(bits) == referenceScramble(bits))
        }
    }

    @Test("impulse response: a single 1 after zeros repeats at the taps 12 and 17")
    func impulse() {
        var bits = [Bool](repeating: false, count: 40)
        bits[0] = true
        var s = G3RUHScrambler()
        let out = s.scramble(bits)
        let ones = out.indices.filter { out[$0] }
        // out[n] = out[n-12] ^ out[n-17]: 0, 12, 17, 24, 34, 36 below 40 (29 = 12+17 cancels: out[17] ^ out[12]).
        #expect(ones == [0, 12, 17, 24, 34, 36])
        // All zeros in, all zeros out (the register starts clear).
        var z = G3RUHScrambler()
        #expect(z.scramble([Bool](repeating: false, count: 100)).allSatisfy { !$0 })
    }

    @Test("round trip, and one call equals bit-by-bit and odd-sized chunks", arguments: [1, 5, 17, 64, 333])
    func roundTripChunks(chunk: Int) {
        let bits = randomBits(2000, seed: UInt64(chunk))
        var whole = G3RUHScrambler()
        let scrambled = whole.scramble(bits)
        var parts = G3RUHScrambler()
        var chunked: [Bool] = []
        var i = 0
        while i < bits.count {
            chunked += parts.scramble(bits[i..<min(bits.count, i + chunk)])
            i += chunk
        }
        #expect(chunked == scrambled)
        var d = G3RUHDescrambler()
        #expect(d.descramble(scrambled) == bits)
        var single = G3RUHDescrambler()
        #expect(scrambled.map { single.descramble($0) } == bits)
    }

    @Test("the descrambler synchronises itself after 17 bits when it starts late", arguments: [1, 17, 100, 999])
    func selfSynchronising(start: Int) {
        let bits = randomBits(1200, seed: 42)
        var s = G3RUHScrambler()
        let line = s.scramble(bits)
        var d = G3RUHDescrambler()
        let out = d.descramble(line[start...])
        #expect(Array(out.dropFirst(17)) == Array(bits[(start + 17)...]))
    }

    @Test("a line bit error spoils exactly three output bits (at 0, 12 and 17 after it)")
    func errorMultiplication() {
        let bits = randomBits(300, seed: 7)
        var s = G3RUHScrambler()
        var line = s.scramble(bits)
        line[100].toggle()
        var d = G3RUHDescrambler()
        let out = d.descramble(line)
        let wrong = out.indices.filter { out[$0] != bits[$0] }
        #expect(wrong == [100, 112, 117])
    }

    @Test("it whitens: a long run of ones on the input has about as many zeros as ones on the line")
    func whitening() {
        var s = G3RUHScrambler()
        let line = s.scramble([Bool](repeating: true, count: 20000))
        let ones = line.filter { $0 }.count
        #expect(abs(ones - 10000) < 500)
        // And its longest run is short (the sequence is not stuck).
        var longest = 0, run = 0
        for (i, b) in line.enumerated() { run = i > 0 && b == line[i - 1] ? run + 1 : 1; longest = max(longest, run) }
        #expect(longest < 40)
    }

    @Test("value semantics: a copy continues independently; equal states compare equal")
    func valueSemantics() {
        var a = G3RUHScrambler()
        _ = a.scramble(randomBits(50, seed: 9))
        var b = a
        #expect(a == b)
        let next = randomBits(30, seed: 10)
        #expect(a.scramble(next) == b.scramble(next))
        #expect(G3RUHScrambler() == G3RUHScrambler())
    }
}
