import Foundation
import Testing
import ModemTestSupport
import ModemDSP

@Suite("OFDM: constellations, the modulator and the demodulator through impaired lines")
struct OFDMTests {
    @Test("every constellation: unit average energy, Gray neighbours, bits → point → soft bits give the bits back",
          arguments: QAMConstellation.allCases)
    func constellations(_ c: QAMConstellation) {
        let m = QAMMapper(c)
        let b = c.bitsPerPoint
        var energy: Float = 0
        var points: [[UInt8]: (Float, Float)] = [:]
        for value in 0..<c.pointCount {
            let bits = (0..<b).map { UInt8(value >> (b - 1 - $0) & 1) }
            let p = bits.withUnsafeBufferPointer { m.point($0, at: 0) }
            points[bits] = p
            energy += p.re * p.re + p.im * p.im
            #expect(m.decide(p.re + 0.1 * c.halfSpacing, p.im - 0.1 * c.halfSpacing) == p)
            var soft = [Float](repeating: 0, count: b)
            soft.withUnsafeMutableBufferPointer { m.softBits(p.re + 0.2 * c.halfSpacing, p.im, noiseVariance: 0.01, into: $0, at: 0) }
            #expect(zip(soft, bits).allSatisfy { ($0 > 0) == ($1 == 1) && abs($0) > 0 }, "\(c) \(bits) \(soft)")
        }
        #expect(abs(energy / Float(c.pointCount) - 1) < 1e-4)
        #expect(Set(points.values.map { "\($0.0),\($0.1)" }).count == c.pointCount)
        // Nearest neighbours along an axis differ in exactly one bit.
        // (Points are found by their level indices: a search over all pairs is too slow at 16,384 points.)
        let levels = c == .bpsk ? 2 : 1 << (b / 2)
        func level(_ x: Float) -> Int { Int(((x / c.halfSpacing + Float(levels - 1)) / 2).rounded()) }
        var byLevel: [Int: [UInt8]] = [:]
        for (bits, p) in points { byLevel[level(p.0) * levels + level(p.1)] = bits }
        for (bits, p) in points where level(p.0) + 1 < levels {
            let other = byLevel[(level(p.0) + 1) * levels + level(p.1)]
            #expect(other != nil)
            if let other { #expect(zip(bits, other).filter { $0 != $1 }.count == 1) }
        }
    }

    /// A transmission of `symbols` random data symbols: the samples and the bits sent.
    static func transmission(_ n: OFDMNumerology, _ c: QAMConstellation, symbols: Int, seed: UInt64) -> (samples: [Float], bits: [UInt8], header: [UInt8]) {
        var rng = TestRandom(seed: seed)
        let mod = OFDMModulator(numerology: n, constellation: c, rms: 0.15)
        let header = (0..<OFDMModulator.headerBitCount).map { _ in UInt8.random(in: 0...1, using: &rng) }
        var samples = [Float](repeating: 0, count: 7000)
        samples += mod.start(headerBits: header)
        let bits = (0..<(mod.bitsPerSymbol * symbols)).map { _ in UInt8.random(in: 0...1, using: &rng) }
        for s in 0..<symbols {
            bits.withUnsafeBufferPointer { samples += mod.dataSymbol(UnsafeBufferPointer(rebasing: $0[(s * mod.bitsPerSymbol)..<((s + 1) * mod.bitsPerSymbol)])) }
        }
        samples += [Float](repeating: 0, count: 5000)
        return (samples, bits, header)
    }

    /// Runs the demodulator over `samples` fed in `chunk`-sample pieces: the header's and each
    /// symbol's hard decisions, and the statistics.
    static func receive(_ samples: [Float], rate: Double = 48000, plan: OFDMDataPlan, chunk: Int = 10000) -> (header: [UInt8]?, bits: [UInt8], ended: Bool, stats: OFDMStatistics) {
        let demod = OFDMDemodulator(inputSampleRate: rate)
        var header: [UInt8]?
        var bits: [UInt8] = []
        var ended = false
        func drain() {
            while let e = demod.next() {
                switch e {
                case .header:
                    header = demod.softBits.map { $0 > 0 ? 1 : 0 }
                    demod.beginData(plan)
                case .symbol:
                    bits += demod.softBits.map { $0 > 0 ? 1 : 0 }
                case .transmissionEnd, .truncated:
                    ended = true
                }
            }
        }
        var at = 0
        while at < samples.count {
            let end = min(samples.count, at + chunk)
            samples.withUnsafeBufferPointer { demod.push(UnsafeBufferPointer(rebasing: $0[at..<end])) }
            at = end
            drain()
        }
        demod.finishInput()
        drain()
        return (header, bits, ended, demod.statistics)
    }

    static let cable = OFDMNumerology(fftSize: 4096, cyclicPrefix: 64, lowHz: 200, highHz: 19800, pilotSpacing: 32)
    static let air = OFDMNumerology(fftSize: 4096, cyclicPrefix: 256, lowHz: 400, highHz: 8600, pilotSpacing: 16)

    @Test("clock drift up to ±500 ppm, band limits and noise: every 64-QAM decision right, the drift measured",
          arguments: [-500.0, -100, 0, 250, 500])
    func drift(ppm: Double) {
        let (samples, bits, header) = Self.transmission(Self.cable, .qam64, symbols: 12, seed: UInt64(abs(ppm)) + 1)
        // The drift by windowed sinc (the simulator's cubic interpolation is too rough near 20 kHz).
        var impairments = ChannelImpairments()
        impairments.bandPass = 100...20000
        impairments.noiseRMS = ChannelImpairments.noiseRMS(snrDB: 36, signalPower: 0.15 * 0.15)
        impairments.seed = 9
        var channel = ChannelSimulator(impairments: impairments, sampleRate: 48000)
        let line = channel.process(TestResampler.drift(samples, ppm: ppm))
        let got = Self.receive(line, plan: OFDMDataPlan(numerology: Self.cable, constellation: .qam64, symbolCount: 12))
        #expect(got.header == header)
        #expect(got.ended)
        let errors = zip(got.bits, bits).filter { $0 != $1 }.count
        #expect(got.bits.count == bits.count && errors == 0, "\(errors) of \(bits.count) bits wrong at \(ppm) ppm")
        // A receiver clock `ppm` fast stretches the symbols: the drift is read with that sign.
        #expect(abs(got.stats.finalDriftPPM - ppm) < 3, "drift \(got.stats.finalDriftPPM) for \(ppm)")
        #expect(abs(got.stats.driftPPM - ppm) < 30, "the preamble's estimate \(got.stats.driftPPM) for \(ppm)")
        #expect(got.stats.decisionSNR > 28, "decision SNR \(got.stats.decisionSNR)")
    }

    @Test("an echo inside the prefix (1.5 ms at half amplitude) on the air grid: every 16-QAM decision right")
    func echo() {
        let (samples, bits, _) = Self.transmission(Self.air, .qam16, symbols: 8, seed: 4)
        let delay = 72
        var echoed = samples + [Float](repeating: 0, count: delay)
        for i in samples.indices { echoed[i + delay] += 0.5 * samples[i] }
        var impairments = ChannelImpairments()
        impairments.bandPass = 250...9000
        impairments.clockDriftPPM = 300
        impairments.noiseRMS = ChannelImpairments.noiseRMS(snrDB: 26, signalPower: 0.15 * 0.15)
        var channel = ChannelSimulator(impairments: impairments, sampleRate: 48000)
        let got = Self.receive(channel.process(echoed), plan: OFDMDataPlan(numerology: Self.air, constellation: .qam16, symbolCount: 8))
        #expect(got.bits.elementsEqual(bits), "\(zip(got.bits, bits).filter { $0 != $1 }.count) of \(bits.count) bits wrong")
    }

    @Test("fed one small piece at a time, the demodulator gives what it gives fed in large pieces")
    func streaming() {
        let (samples, bits, _) = Self.transmission(Self.cable, .qam256, symbols: 4, seed: 6)
        let plan = OFDMDataPlan(numerology: Self.cable, constellation: .qam256, symbolCount: 4)
        let big = Self.receive(samples, plan: plan, chunk: 1 << 20)
        let small = Self.receive(samples, plan: plan, chunk: 997)
        #expect(big.bits.elementsEqual(bits) && small.bits.elementsEqual(bits))
    }

    @Test("a recording at 96 kHz or 44.1 kHz of a 48 kHz transmission is read at its own rate", arguments: [96000.0, 44100])
    func otherRates(rate: Double) {
        let (samples, bits, _) = Self.transmission(Self.air, .qam16, symbols: 4, seed: 7)
        let out = TestResampler.resample(samples, ratio: 48000 / rate)
        let got = Self.receive(out, rate: rate, plan: OFDMDataPlan(numerology: Self.air, constellation: .qam16, symbolCount: 4))
        #expect(got.bits.elementsEqual(bits))
    }

    @Test("noise, silence and a steady tone: no header, and the input is consumed")
    func nothingThere() {
        var rng = TestRandom(seed: 2)
        let noise = (0..<96000).map { _ in 0.1 * rng.gaussian() }
        let tone = (0..<96000).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        for input in [noise, [Float](repeating: 0, count: 96000), tone] {
            let demod = OFDMDemodulator()
            demod.push(input)
            demod.finishInput()
            var events: [OFDMDemodulatorEvent] = []
            while let e = demod.next() {
                events.append(e)
                if case .header = e { demod.rejectHeader() }
            }
            #expect(!events.contains { if case .header = $0 { true } else { false } })
        }
    }

    @Test("the input ending inside the data: truncated after the symbols that were there")
    func truncated() {
        let (samples, _, _) = Self.transmission(Self.cable, .qpsk, symbols: 10, seed: 3)
        // Four and a half symbols missing: five whole ones remain.
        let cut = Array(samples[0..<(samples.count - 5000 - 4 * Self.cable.symbolLength - Self.cable.symbolLength / 2)])
        let demod = OFDMDemodulator()
        demod.push(cut)
        demod.finishInput()
        var symbols = 0
        var last: OFDMDemodulatorEvent?
        while let e = demod.next() {
            if case .header = e { demod.beginData(OFDMDataPlan(numerology: Self.cable, constellation: .qpsk, symbolCount: 10)) }
            if case .symbol = e { symbols += 1 }
            last = e
        }
        #expect(symbols == 5)
        #expect(last == .truncated(symbols: 5))
    }
}
