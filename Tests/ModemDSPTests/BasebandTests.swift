import Foundation
import ModemDSP
import Testing
import ModemRuntime

private func randomBits(_ count: Int, seed: UInt64) -> [Bool] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { _ in rng.next() & 1 == 1 }
}

/// Line levels with a lead-in of alternating bits for the PLL to lock on.
private func withPreamble(_ data: [Bool], bits: Int = 64) -> [Bool] {
    (0..<bits).map { $0 % 2 == 0 } + data
}

/// Index of `needle` inside `haystack`, if it occurs there contiguously.
private func find(_ needle: [Bool], in haystack: [Bool]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
        return start
    }
    return nil
}

/// Modulates `levels` (then flushes the filter with silence).
private func modulate(_ levels: [Bool], sampleRate: Double, baudRate: Double, amplitude: Float = 0.5) -> [Float] {
    var m = BasebandModulator(sampleRate: sampleRate, baudRate: baudRate, amplitude: amplitude)
    var out: [Float] = []
    m.appendBits(levels, to: &out)
    m.appendSilence(seconds: 0.01, to: &out)
    return out
}

/// Demodulates `samples` fed in blocks of `chunk` (all at once when nil); bits per slicer.
private func demodulate(_ samples: [Float], sampleRate: Double, baudRate: Double,
                        slicers: [(windowBits: Double, threshold: Double)] = [(1, 0)], chunk: Int? = nil) -> [[SlicedBit]] {
    var d = BasebandBitDemodulator(sampleRate: sampleRate, baudRate: baudRate, slicers: slicers)
    var out = Array(repeating: [SlicedBit](), count: slicers.count)
    let step = chunk ?? max(1, samples.count)
    var i = 0
    while i < samples.count {
        let end = min(samples.count, i + step)
        samples[i..<end].withUnsafeBufferPointer { d.process($0, perSlicer: &out) }
        i = end
    }
    return out
}

@Suite("Baseband modulator")
struct BasebandModulatorTests {
    @Test("sample count: bit boundaries exact on average for any ratio", arguments: [
        (48000.0, 9600.0), (44100.0, 9600.0), (38400.0, 9600.0), (96000.0, 9600.0), (22050.0, 4800.0), (8000.0, 1200.0), (44100.0, 1234.5),
    ])
    func sampleCount(sampleRate: Double, baudRate: Double) {
        let bits = randomBits(1001, seed: 1)
        var m = BasebandModulator(sampleRate: sampleRate, baudRate: baudRate)
        var out: [Float] = []
        // In uneven pieces: the count still follows the total time.
        var total = 0
        for piece in [1, 2, 97, 400, 501] {
            m.appendBits(bits[total..<(total + piece)], to: &out)
            total += piece
            #expect(out.count == Int((Double(total) * sampleRate / baudRate).rounded()))
        }
        m.appendSilence(seconds: 0.0123, to: &out)
        #expect(out.count == Int(((Double(total) / baudRate + 0.0123) * sampleRate).rounded()))
    }

    @Test("steady levels settle at ±amplitude (unit DC gain), and the output never overshoots much", arguments: [0.1, 0.5, 1.0] as [Float])
    func levels(amplitude: Float) {
        let out = modulate([Bool](repeating: true, count: 50) + [Bool](repeating: false, count: 50),
                           sampleRate: 48000, baudRate: 9600, amplitude: amplitude)
        // Middle of each run: the filter (two bits each side) sees one level only.
        #expect(abs(out[5 * 25] - amplitude) < 1e-4 * max(1, amplitude))
        #expect(abs(out[5 * 75] + amplitude) < 1e-4 * max(1, amplitude))
        #expect(out.allSatisfy { abs($0) <= amplitude * 1.2 })
    }

    @Test("chunked appends produce exactly the samples of one append")
    func chunkedEqualsWhole() {
        let bits = randomBits(3000, seed: 3)
        let whole = modulate(bits, sampleRate: 44100, baudRate: 9600)
        var m = BasebandModulator(sampleRate: 44100, baudRate: 9600)
        var parts: [Float] = []
        var i = 0, k = 0
        let pieces = [1, 3, 7, 64, 129]
        while i < bits.count {
            let n = min(bits.count - i, pieces[k % pieces.count])
            m.appendBits(bits[i..<(i + n)], to: &parts)
            i += n; k += 1
        }
        m.appendSilence(seconds: 0.01, to: &parts)
        #expect(parts == whole)
    }

    @Test("band limited: alternating bits (half the baud rate) pass, the square wave's harmonics do not")
    func bandLimit() {
        let out = modulate((0..<1000).map { $0 % 2 == 0 }, sampleRate: 96000, baudRate: 9600)
        // Fundamental at 4800 Hz passes; the harmonics (14400 Hz and up) are gone, so the peaks are
        // rounded, below the square wave's level (an unfiltered or mis-filtered output reaches 0.5).
        let middle = out[2000..<8000]
        let peak = middle.map { abs($0) }.max() ?? 0
        #expect(peak > 0.15 && peak < 0.45, "peak \(peak)")
        // Still a wave at the bit rate: a sign change every bit (10 samples).
        let changes = zip(middle.dropFirst(), middle).filter { ($0 >= 0) != ($1 >= 0) }.count
        #expect(abs(changes - 600) <= 2)
    }
}

@Suite("Baseband bit demodulator")
struct BasebandBitDemodulatorTests {
    @Test("round trip over a grid of sample and baud rates, odd ratios included", arguments: [
        (48000.0, 9600.0), (44100.0, 9600.0), (38400.0, 9600.0), (96000.0, 9600.0), (22050.0, 4800.0), (8000.0, 1200.0), (44100.0, 2400.0), (48000.0, 1234.5),
    ])
    func roundTrip(sampleRate: Double, baudRate: Double) {
        let data = randomBits(1500, seed: UInt64(sampleRate + baudRate))
        let bits = demodulate(modulate(withPreamble(data), sampleRate: sampleRate, baudRate: baudRate),
                              sampleRate: sampleRate, baudRate: baudRate)[0]
        #expect(find(data, in: bits.map(\.mark)) != nil, "\(sampleRate) Hz, \(baudRate) baud: data not found")
        // One bit per bit period (give or take the start).
        let expected = Double(withPreamble(data).count) + 0.01 * baudRate
        #expect(abs(Double(bits.count) - expected) < 8)
        // Decisions come at increasing sample positions about one bit apart.
        let gaps = zip(bits.dropFirst(), bits).map { Double($0.sample - $1.sample) }
        let spb = sampleRate / baudRate
        #expect(gaps.dropFirst(64).allSatisfy { abs($0 - spb) <= spb * 0.5 + 1 })
    }

    @Test("inverted polarity gives inverted bits; a DC offset does not matter once the high-pass settled")
    func polarityAndOffset() {
        let data = randomBits(1000, seed: 11)
        // A long lead-in: the DC high-pass (corner at baud/500, about 80 bits' time constant) settles.
        let audio = modulate(withPreamble(data, bits: 1000), sampleRate: 48000, baudRate: 9600)
        let inverted = demodulate(audio.map { -$0 }, sampleRate: 48000, baudRate: 9600)[0]
        #expect(find(data.map { !$0 }, in: inverted.map(\.mark)) != nil)
        let shifted = demodulate(audio.map { $0 + 0.3 }, sampleRate: 48000, baudRate: 9600)[0]
        #expect(find(data, in: shifted.map(\.mark)) != nil)
    }

    @Test("fed at once or in odd-sized chunks: the same bits at the same samples", arguments: [1, 5, 333, 4099])
    func chunking(chunk: Int) {
        // Long enough (over 65536 samples) for the history to be trimmed on the way.
        let data = randomBits(20000, seed: 21)
        let audio = modulate(withPreamble(data), sampleRate: 44100, baudRate: 9600)
        let slicers: [(windowBits: Double, threshold: Double)] = [(1, 0), (0.65, 0.1), (0.55, -0.1)]
        let whole = demodulate(audio, sampleRate: 44100, baudRate: 9600, slicers: slicers)
        let parts = demodulate(audio, sampleRate: 44100, baudRate: 9600, slicers: slicers, chunk: chunk)
        for k in slicers.indices {
            #expect(parts[k].map(\.mark) == whole[k].map(\.mark))
            #expect(parts[k].map(\.sample) == whole[k].map(\.sample))
        }
        #expect(find(data, in: whole[0].map(\.mark)) != nil)
    }

    @Test("several slicers: each decodes, numbered from firstSlicer; the merged list is in sample order")
    func slicers() {
        let data = randomBits(800, seed: 31)
        let audio = modulate(withPreamble(data), sampleRate: 48000, baudRate: 9600)
        var d = BasebandBitDemodulator(sampleRate: 48000, baudRate: 9600, windowBits: [0.55, 1], thresholds: [-0.1, 0, 0.1])
        #expect(d.windowBits == [0.55, 0.55, 0.55, 1, 1, 1])
        #expect(d.thresholds == [-0.1, 0, 0.1, -0.1, 0, 0.1])
        var merged: [SlicedBit] = []
        d.process(audio, into: &merged)
        #expect(Set(merged.map(\.slicer)) == Set(0..<6))
        #expect(merged.map { [$0.sample, $0.slicer] }.elementsEqual(merged.map { [$0.sample, $0.slicer] }.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }))
        for k in 0..<6 {
            #expect(find(data, in: merged.filter { $0.slicer == k }.map(\.mark)) != nil, "slicer \(k)")
        }
        var offset = BasebandBitDemodulator(sampleRate: 48000, baudRate: 9600, slicers: [(1, 0), (0.65, 0)], firstSlicer: 7)
        var bits: [SlicedBit] = []
        offset.process(audio, into: &bits)
        #expect(Set(bits.map(\.slicer)) == [7, 8])
        #expect(offset.firstSlicer == 7)
    }

    @Test("confidence: in 0...1, near 1 for clean bits; under noise the wrong bits are among the least confident")
    func confidence() {
        let data = randomBits(4000, seed: 51)
        let audio = modulate(withPreamble(data), sampleRate: 44100, baudRate: 9600)
        let clean = demodulate(audio, sampleRate: 44100, baudRate: 9600, slicers: [(0.65, 0)])[0]
        guard let at = find(data, in: clean.map(\.mark)) else { Issue.record("clean data not found"); return }
        let cleanConfidence = clean[at..<(at + data.count)].map(\.confidence)
        #expect(clean.allSatisfy { (0...1).contains($0.confidence) })
        let sortedClean = cleanConfidence.sorted()
        #expect(sortedClean[sortedClean.count / 2] > 0.8, "median \(sortedClean[sortedClean.count / 2])")
        #expect(sortedClean[sortedClean.count / 100] > 0.3, "1st percentile \(sortedClean[sortedClean.count / 100])")

        // White noise at about 3 dB SNR: some bits wrong.
        let power = audio.reduce(0) { $0 + $1 * $1 } / Float(audio.count)
        let sigma = (power / 2).squareRoot()
        var rng = SplitMix64(seed: 52)
        let noisy = audio.map { x -> Float in
            // Box-Muller
            let u = Float.random(in: Float.ulpOfOne..<1, using: &rng), v = Float.random(in: 0..<1, using: &rng)
            return x + sigma * (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
        }
        let bits = demodulate(noisy, sampleRate: 44100, baudRate: 9600, slicers: [(0.65, 0)])[0]
        #expect(bits.allSatisfy { (0...1).contains($0.confidence) })
        // Each noisy decision against the clean decision nearest in time (the clean decode is right: the
        // data was found in it); this holds across a slip of the noisy PLL.
        let spb = 44100.0 / 9600
        var j = 0
        var received: [(bit: SlicedBit, sent: Bool)] = []
        for b in bits {
            while j + 1 < clean.count && abs(clean[j + 1].sample - b.sample) <= abs(clean[j].sample - b.sample) { j += 1 }
            guard (at..<(at + data.count)).contains(j), Double(abs(clean[j].sample - b.sample)) < spb / 2 else { continue }
            received.append((b, clean[j].mark))
        }
        #expect(received.count > data.count * 9 / 10)
        let mean = { (a: [Float]) in a.reduce(0, +) / Float(max(1, a.count)) }
        let wrong = received.filter { $0.bit.mark != $0.sent }.map(\.bit.confidence)
        let right = received.filter { $0.bit.mark == $0.sent }.map(\.bit.confidence)
        #expect(wrong.count > 10 && wrong.count < received.count / 10, "\(wrong.count) wrong of \(received.count)")
        print("baseband confidence, 3 dB SNR: \(wrong.count) wrong of \(received.count), mean confidence wrong \(mean(wrong)), right \(mean(right))")
        #expect(mean(wrong) < 0.35, "wrong bits: mean confidence \(mean(wrong))")
        #expect(mean(right) > 2 * mean(wrong), "right \(mean(right)), wrong \(mean(wrong))")
        // Most wrong bits lie in the least confident tenth.
        let tenth = received.map(\.bit.confidence).sorted()[received.count / 10]
        #expect(wrong.filter { $0 <= tenth }.count * 10 >= wrong.count * 8, "\(wrong.filter { $0 <= tenth }.count) of \(wrong.count) below \(tenth)")
        // Silence: no signal, no confidence.
        let silence = demodulate([Float](repeating: 0, count: 4800), sampleRate: 48000, baudRate: 9600)[0]
        #expect(silence.allSatisfy { $0.confidence == 0 })
    }

    @Test("silence and noise alone: no crash; noise gives bits at the bit rate, silence at most a steady level")
    func noiseAndSilence() {
        var rng = SplitMix64(seed: 41)
        let noise = (0..<48000).map { _ in Float.random(in: -0.3...0.3, using: &rng) }
        let fromNoise = demodulate(noise, sampleRate: 48000, baudRate: 9600)[0]
        #expect(abs(fromNoise.count - 9600) < 200)
        let fromSilence = demodulate([Float](repeating: 0, count: 48000), sampleRate: 48000, baudRate: 9600)[0]
        #expect(Set(fromSilence.map(\.mark)).count <= 1)
    }
}
