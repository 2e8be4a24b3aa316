import Foundation
import ModemRuntime
@testable import ModemDSP
import Testing

// ToneCorrelator is internal to ModemDSP (the demodulators' engine): tested through @testable import.

private func tone(_ frequency: Double, sampleRate: Double, count: Int, amplitude: Float = 0.5, start: Int = 0) -> [Float] {
    (0..<count).map { amplitude * Float(cos(2 * Double.pi * frequency * Double($0 + start) / sampleRate)) }
}

private func correlator(_ samples: [Float], sampleRate: Double = 48000, mark: Double = 1200, space: Double = 2200,
                        samplesPerBit: Double = 40, chunk: Int? = nil) -> ToneCorrelator {
    var c = ToneCorrelator(sampleRate: sampleRate, markFrequency: mark, spaceFrequency: space, samplesPerBit: samplesPerBit)
    let step = chunk ?? max(1, samples.count)
    var i = 0
    while i < samples.count {
        let end = min(samples.count, i + step)
        samples[i..<end].withUnsafeBufferPointer { c.append($0) }
        i = end
    }
    return c
}

@Suite("ToneCorrelator")
struct ToneCorrelatorTests {
    @Test("common period of a tone plan: known answers, nil when there is none")
    func commonPeriod() {
        #expect(ToneCorrelator.commonPeriod(sampleRate: 48000, markFrequency: 1200, spaceFrequency: 2200) == 240)
        #expect(ToneCorrelator.commonPeriod(sampleRate: 44100, markFrequency: 1200, spaceFrequency: 2200) == 441)
        #expect(ToneCorrelator.commonPeriod(sampleRate: 8000, markFrequency: 1585, spaceFrequency: 1415) == 1600)
        #expect(ToneCorrelator.commonPeriod(sampleRate: 48000, markFrequency: 1000.0001, spaceFrequency: 2000) == nil)
        // A period above 65536 samples is refused: 96001 Hz is prime-ish against these tones.
        #expect(ToneCorrelator.commonPeriod(sampleRate: 96001, markFrequency: 1200, spaceFrequency: 2200) == nil)
    }

    @Test("decimation follows samples per bit, clamped to 1...8", arguments: [(4.0, 1), (19.9, 1), (20.0, 2), (40.0, 4), (80.0, 8), (1000.0, 8)])
    func decimation(samplesPerBit: Double, expected: Int) {
        let c = ToneCorrelator(sampleRate: 48000, markFrequency: 1200, spaceFrequency: 2200, samplesPerBit: samplesPerBit)
        #expect(c.decimation == expected)
    }

    @Test("a mark tone correlates with mark, a space tone with space, in any tone plan",
          arguments: [(48000.0, 1200.0, 2200.0, 40.0), (44100.0, 1200.0, 2200.0, 36.75), (8000.0, 1270.0, 1070.0, 26.67),
                      (11025.0, 1585.0, 1415.0, 242.6), (48000.0, 1234.5678, 2345.6789, 40.0)])
    func toneDecisions(sampleRate: Double, mark: Double, space: Double, samplesPerBit: Double) {
        let n = Int(sampleRate)  // one second: crosses the fallback's 4096-sample table refills
        for (frequency, isMark) in [(mark, true), (space, false)] {
            let c = correlator(tone(frequency, sampleRate: sampleRate, count: n), sampleRate: sampleRate,
                               mark: mark, space: space, samplesPerBit: samplesPerBit)
            #expect(c.end > n - 8 * c.decimation && c.end <= n)
            // Windows of about one bit all through the signal (after the high-pass settled).
            var position = Double(n / 10)
            while position + samplesPerBit < Double(c.end) {
                let w = c.window(from: position, to: position + samplesPerBit)
                let soft = w.soft(balance: 1)
                #expect(isMark ? soft > 0.5 : soft < -0.5, "\(frequency) Hz at \(position): soft \(soft)")
                position += samplesPerBit * 7.3
            }
            // Over a long window the decision is clean and the energy is all in the tones.
            let long = c.window(from: Double(n / 4), to: Double(n / 4) + 20 * samplesPerBit)
            #expect(abs(long.soft(balance: 1)) > 0.97)
            #expect(abs(long.toneFraction - 1) < 0.15)
        }
    }

    @Test("known magnitudes: a cosine of amplitude A over N samples gives |corr| ≈ A·N/2 and energy ≈ A²·N/2")
    func magnitudes() {
        let rate = 48000.0, a: Float = 0.4
        let c = correlator(tone(1200, sampleRate: rate, count: 24000, amplitude: a))
        let n = 960.0   // 24 periods of 1200 Hz, 44 of 2200 Hz
        let w = c.window(from: 9600, to: 9600 + n)
        let expected = Float(a) * Float(n) / 2
        #expect(abs(w.mark.squareRoot() / expected - 1) < 0.1)
        #expect(w.space.squareRoot() / expected < 0.05)
        // The energy is measured after the running DC estimate is removed, which follows the tone a
        // little: a coarse check (a wrong formula is off by a factor).
        #expect(abs(w.energy / (a * a * Float(n) / 2) - 1) < 0.3)
        #expect(w.length == Float(n))
        // Silence: nothing.
        let z = correlator([Float](repeating: 0, count: 4800))
        let q = z.window(from: 100, to: 1000)
        #expect(q.mark == 0 && q.space == 0 && q.energy == 0)
    }

    @Test("a DC offset and slow hum are removed")
    func offsetRemoved() {
        let rate = 48000.0
        let clean = tone(2200, sampleRate: rate, count: 48000, amplitude: 0.2)
        let hum = tone(50, sampleRate: rate, count: 48000, amplitude: 0.3)
        let c0 = correlator(clean), c1 = correlator(zip(clean, hum).map { $0 + $1 + 0.25 })
        let w0 = c0.window(from: 24000, to: 24000 + 480), w1 = c1.window(from: 24000, to: 24000 + 480)
        #expect(w1.soft(balance: 1) < -0.9)
        #expect(abs(w1.space / w0.space - 1) < 0.1)
    }

    @Test("windows are additive: [a, c) = [a, b) + [b, c) (prefix sums)")
    func additive() {
        let c = correlator(tone(1200, sampleRate: 48000, count: 9600))
        for (a, b, e) in [(1000.0, 1520.0, 2400.0), (1003.5, 1777.25, 3001.75)] {
            let whole = c.window(from: a, to: e), p1 = c.window(from: a, to: b), p2 = c.window(from: b, to: e)
            #expect(abs(whole.markI - (p1.markI + p2.markI)) < 0.05)
            #expect(abs(whole.markQ - (p1.markQ + p2.markQ)) < 0.05)
            #expect(abs(whole.spaceI - (p1.spaceI + p2.spaceI)) < 0.05)
        }
    }

    @Test("the phase reference is global: windows whole periods apart see the same phase")
    func globalPhase() {
        let c = correlator(tone(1200, sampleRate: 48000, count: 48000))
        let w1 = c.window(from: 8000, to: 8400), w2 = c.window(from: 8000 + 40 * 300, to: 8400 + 40 * 300)
        #expect(abs(w1.markI - w2.markI) < 0.02 * w1.mark.squareRoot())
        #expect(abs(w1.markQ - w2.markQ) < 0.02 * w1.mark.squareRoot())
        // A window shifted by half a period sees the same phase (the reference is not the window's);
        // the same tone half a period later in time is opposite.
        let w3 = c.window(from: 8020, to: 8420)
        #expect(w1.markI * w3.markI + w1.markQ * w3.markQ > 0.9 * w1.mark)
        let late = correlator(tone(1200, sampleRate: 48000, count: 48000, start: 20))
        let w4 = late.window(from: 8000, to: 8400)
        #expect(w1.markI * w4.markI + w1.markQ * w4.markQ < -0.9 * w1.mark)
    }

    @Test("fed at once or in odd-sized chunks: the same windows", arguments: [1, 3, 7, 119, 4097])
    func chunking(chunk: Int) {
        var samples = tone(1200, sampleRate: 44100, count: 10000) + tone(2200, sampleRate: 44100, count: 10000, start: 10000)
        var rng = SplitMix64(seed: 5)
        for i in samples.indices { samples[i] += Float(Double.random(in: -0.05...0.05, using: &rng)) }
        let whole = correlator(samples, sampleRate: 44100, samplesPerBit: 36.75)
        let parts = correlator(samples, sampleRate: 44100, samplesPerBit: 36.75, chunk: chunk)
        #expect(parts.end == whole.end)
        for start in stride(from: 500.0, to: 19000, by: 913.7) {
            let a = whole.window(from: start, to: start + 36.75), b = parts.window(from: start, to: start + 36.75)
            let scale = max(1, a.mark.squareRoot() + a.space.squareRoot())
            #expect(abs(a.markI - b.markI) / scale < 1e-3)
            #expect(abs(a.spaceQ - b.spaceQ) / scale < 1e-3)
            #expect(abs(a.energy - b.energy) / max(1, a.energy) < 1e-3)
        }
    }

    @Test("reset() gives the state of a new correlator (periodic and fallback tone plans)",
          arguments: [1200.0, 1234.5678])
    func reset(mark: Double) {
        let a = tone(mark, sampleRate: 48000, count: 7001)
        let b = tone(2200, sampleRate: 48000, count: 9000)
        var c = correlator(a, mark: mark)
        c.reset()
        #expect(c.end == 0 && c.start == 0)
        b.withUnsafeBufferPointer { c.append($0) }
        let fresh = correlator(b, mark: mark)
        #expect(c.end == fresh.end)
        for s in stride(from: 100.0, to: 8000, by: 777) {
            let x = c.window(from: s, to: s + 40), y = fresh.window(from: s, to: s + 40)
            #expect(x.markI == y.markI && x.spaceQ == y.spaceQ && x.energy == y.energy)
        }
    }

    @Test("discard(before:) drops history, later windows stay the same")
    func discard() {
        var c = correlator(tone(2200, sampleRate: 48000, count: 48000))
        let before = c.window(from: 30000, to: 30040)
        c.discard(before: 20000)
        #expect(c.start == 20000)
        #expect(c.end == 48000)
        let after = c.window(from: 30000, to: 30040)
        let scale = before.space.squareRoot()
        #expect(abs(before.spaceI - after.spaceI) < 1e-3 * scale)
        #expect(abs(before.spaceQ - after.spaceQ) < 1e-3 * scale)
        // Discarding backwards or past the end changes nothing.
        c.discard(before: 100)
        c.discard(before: 1 << 30)
        #expect(c.start == 20000)
        // Memory stays bounded on a long stream when history is dropped as it goes.
        var long = ToneCorrelator(sampleRate: 48000, markFrequency: 1200, spaceFrequency: 2200, samplesPerBit: 40)
        let block = tone(1200, sampleRate: 48000, count: 4800)
        for _ in 0..<200 {
            block.withUnsafeBufferPointer { long.append($0) }
            long.discard(before: long.end - 4800)
        }
        #expect(long.count <= 4800 / long.decimation + 2)
        #expect(long.end == 200 * 4800)
    }
}
