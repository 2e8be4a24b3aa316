import Foundation
import ModemDSP
import ModemRuntime
import Testing

/// Random bits from a seed.
private func pskRandomBits(_ count: Int, seed: UInt64) -> [Bool] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { _ in rng.next() & 1 == 1 }
}

/// The index of `needle` in `haystack`, if it occurs there contiguously.
private func pskFind(_ needle: [Bool], in haystack: [Bool]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
        return start
    }
    return nil
}

/// A lead-in of symbols that change the phase (ones) for the clocks and carrier estimates, the data,
/// and a tail, modulated.
private func pskSignal(_ data: [Bool], mode: PSKMode, sampleRate: Double) -> [Float] {
    var m = PSKModulator(mode: mode, sampleRate: sampleRate)
    var out: [Float] = []
    m.appendSilence(seconds: 0.013, to: &out)
    m.appendBits(Array(repeating: true, count: 96 * mode.bitsPerSymbol) + data + Array(repeating: true, count: 24 * mode.bitsPerSymbol), to: &out)
    m.appendSilence(seconds: 0.01, to: &out)
    return out
}

/// Demodulates in blocks of `chunk` samples (all at once when nil): the bits per slicer.
private func pskDemodulate(_ samples: [Float], mode: PSKMode, sampleRate: Double, chunk: Int? = nil) -> [[SlicedBit]] {
    var d = PSKBitDemodulator(mode: mode, sampleRate: sampleRate)
    var bits: [SlicedBit] = []
    let step = chunk ?? max(1, samples.count)
    var i = 0
    while i < samples.count {
        let end = min(samples.count, i + step)
        samples[i..<end].withUnsafeBufferPointer { d.process($0, into: &bits) }
        i = end
    }
    return (0..<d.slicers.count).map { k in bits.filter { $0.slicer == k } }
}

@Suite("PSK modulator and demodulator")
struct PSKTests {
    @Test("Phase tables: Gray coded, each the other's inverse")
    func tables() {
        for mode in PSKMode.allCases {
            let m = mode.phaseCount
            #expect(Set((0..<m).map { mode.phaseSteps(forSymbol: $0) }).count == m)
            for s in 0..<m { #expect(mode.symbol(forPhaseSteps: mode.phaseSteps(forSymbol: s)) == s) }
            // Neighbouring phases differ in one bit.
            for p in 0..<m {
                let a = mode.symbol(forPhaseSteps: p), b = mode.symbol(forPhaseSteps: (p + 1) % m)
                #expect((a ^ b).nonzeroBitCount == 1, "\(mode) \(p)")
            }
        }
        // All-zero bits keep the phase (V.26 A), 001 keeps it for V.27.
        #expect(PSKMode.v26A.phaseSteps(forSymbol: 0) == 0)
        #expect(PSKMode.v27.phaseSteps(forSymbol: 1) == 0)
    }

    @Test("The carrier's phase moves by the symbol's change: V.26 A by 90° steps, B 45° more, V.27 by 45° steps")
    func phaseChanges() {
        // At 43200 Hz a symbol is a whole number of samples (36 or 27) and 24 samples per carrier cycle.
        for (mode, symbol, expected) in [(PSKMode.v26A, 3, 180.0), (.v26A, 1, 90), (.v26B, 0, 45), (.v26B, 2, 315), (.v27, 7, 180), (.v27, 0, 45)] {
            var m = PSKModulator(mode: mode, sampleRate: 43200, amplitude: 1)
            var out: [Float] = []
            let bits = (0..<mode.bitsPerSymbol).reversed().map { symbol >> $0 & 1 == 1 }
            let zero = (0..<mode.bitsPerSymbol).reversed().map { (mode == .v27 ? 1 : 0) >> $0 & 1 == 1 }
            m.appendBits(zero + bits, to: &out)
            let n = Int(43200 / mode.symbolRate)
            // The phase of each symbol against the carrier (correlate over whole carrier cycles: 24 samples).
            func phase(_ s: ArraySlice<Float>, start: Int) -> Double {
                var re = 0.0, im = 0.0
                for (i, x) in s.enumerated() {
                    let t = 2 * Double.pi * 1800 * Double(start + i) / 43200
                    re += Double(x) * sin(t); im += Double(x) * cos(t)
                }
                return atan2(im, re) * 180 / Double.pi
            }
            let p0 = phase(out[0..<24], start: 0), p1 = phase(out[n..<(n + 24)], start: n)
            var change = (p1 - p0).truncatingRemainder(dividingBy: 360)
            if change < 0 { change += 360 }
            #expect(abs(change - expected) < 1, "\(mode) symbol \(symbol): \(change)°")
        }
    }

    @Test("Clean round trip: every slicer returns the bits, at several sample rates, fed whole and in small blocks",
          arguments: [(PSKMode.v26A, 8000.0), (.v26A, 11025), (.v26A, 44100), (.v26B, 8000), (.v26B, 48000), (.v26B, 96000),
                      (.v27, 8000), (.v27, 11025), (.v27, 22050), (.v27, 44100), (.v27, 48000), (.v27, 96000)])
    func roundTrip(mode: PSKMode, sampleRate: Double) {
        let data = pskRandomBits(600, seed: 7)
        let signal = pskSignal(data, mode: mode, sampleRate: sampleRate)
        for chunk in [nil, 97] as [Int?] {
            let slicers = pskDemodulate(signal, mode: mode, sampleRate: sampleRate, chunk: chunk)
            for (k, bits) in slicers.enumerated() {
                let levels = bits.map(\.mark)
                #expect(pskFind(data, in: levels) != nil, "\(mode) at \(sampleRate) Hz, slicer \(k), chunk \(String(describing: chunk))")
                #expect(bits.allSatisfy { (0...1).contains($0.confidence) })
            }
        }
    }

    @Test("Under white noise the coherent slicer makes fewer bit errors than the differential one, and both are less sure of their wrong bits",
          arguments: [PSKMode.v26A, .v27])
    func noise(mode: PSKMode) {
        let data = pskRandomBits(6000, seed: 11)
        var signal = pskSignal(data, mode: mode, sampleRate: 48000)
        var rng = SplitMix64(seed: 3)
        // Gaussian noise (Box-Muller) at a level that leaves a few per cent of bits wrong.
        let sigma: Float = mode == .v27 ? 0.36 : 0.7
        for i in signal.indices {
            let u1 = max(Double(rng.next() >> 11) / Double(1 << 53), 1e-300), u2 = Double(rng.next() >> 11) / Double(1 << 53)
            signal[i] += sigma * Float((-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2))
        }
        let slicers = pskDemodulate(signal, mode: mode, sampleRate: 48000)
        // Align on the clean lead-in's end: the first data bits follow 96 symbols of ones.
        func errors(_ bits: [SlicedBit]) -> (wrong: Int, wrongConfidence: Double, rightConfidence: Double) {
            let levels = bits.map(\.mark)
            // Find the best alignment near the expected start.
            var best = (Int.max, 0)
            for start in 0..<min(levels.count - data.count, 400) {
                var e = 0
                for i in stride(from: 0, to: data.count, by: 7) where levels[start + i] != data[i] { e += 1 }
                if e < best.0 { best = (e, start) }
            }
            var wrong = 0, wc = 0.0, rc = 0.0
            for i in data.indices {
                let b = bits[best.1 + i]
                if b.mark != data[i] { wrong += 1; wc += Double(b.confidence) } else { rc += Double(b.confidence) }
            }
            return (wrong, wc / Double(max(wrong, 1)), rc / Double(data.count - wrong))
        }
        let coherent = errors(slicers[0]), differential = errors(slicers[1])
        #expect(coherent.wrong > 0 && coherent.wrong < differential.wrong, "coherent \(coherent), differential \(differential)")
        #expect(coherent.wrongConfidence < coherent.rightConfidence * 0.8, "\(coherent)")
        #expect(differential.wrongConfidence < differential.rightConfidence / 2, "\(differential)")
    }
}
