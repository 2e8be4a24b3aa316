import Foundation
import Testing
@testable import ModemDSP
import ModemTestSupport

func printableText(_ n: Int, seed: UInt64) -> [UInt8] {
    var rng = TestRandom(seed: seed)
    return (0..<n).map { _ in UInt8.random(in: 32...126, using: &rng) }
}

/// Noise RMS for a given Eb/N0 (dB) on a sine of amplitude `amplitude`: σ² = P·fs / (2·R·Eb/N0).
func noiseRMS(ebN0 dB: Double, amplitude: Double, config: FSKConfiguration) -> Double {
    let p = amplitude * amplitude / 2
    return (p * config.sampleRate / (2 * config.baudRate * pow(10, dB / 10))).squareRoot()
}

@Suite struct FSKImpairmentTests {
    let bell202 = try! FSKConfiguration(sampleRate: 48000, baudRate: 1200, markFrequency: 1200, spaceFrequency: 2200)

    func run(_ text: [UInt8], config: FSKConfiguration, impairments: ChannelImpairments, amplitude: Float = 0.5) -> [UInt8] {
        let clean = modulate8N1(text, config: config, amplitude: amplitude)
        var sim = ChannelSimulator(impairments: impairments, sampleRate: config.sampleRate)
        return demodulate8N1(sim.process(clean), config: config)
    }

    @Test(arguments: [1 as UInt64, 2])
    func whiteNoiseAtTenDBEbN0(seed: UInt64) {
        // Full-band SNR -3 dB at 48 kHz and 1200 baud is Eb/N0 = 10 dB. Measured: about 3 % CER
        // (minimodem about 21-25 % on the same kind of signal); theory for the bits alone, 4.5e-3 BER.
        let text = printableText(2000, seed: seed)
        var imp = ChannelImpairments()
        imp.noiseRMS = noiseRMS(ebN0: 10, amplitude: 0.5, config: bell202)
        imp.seed = seed
        let cer = characterErrorRate(expected: text, got: run(text, config: bell202, impairments: imp))
        #expect(cer < 0.05, "CER \(cer)")
    }

    @Test func moderateNoiseIsNearlyClean() {
        let text = printableText(1000, seed: 5)
        var imp = ChannelImpairments()
        imp.noiseRMS = noiseRMS(ebN0: 14, amplitude: 0.5, config: bell202)
        let cer = characterErrorRate(expected: text, got: run(text, config: bell202, impairments: imp))
        #expect(cer < 0.005, "CER \(cer)")
    }

    @Test(arguments: [-1000.0, 1000.0, -30000.0, 30000.0])
    func clockDriftAndBaudError(ppm: Double) {
        // ±1000 ppm is sound-card drift; ±3 % (30000 ppm) is a baud-rate error.
        let text = printableText(600, seed: 11)
        var imp = ChannelImpairments()
        imp.clockDriftPPM = ppm
        #expect(run(text, config: bell202, impairments: imp) == text)
    }

    @Test func telephoneBandHumDCAndLowLevel() {
        let text = printableText(400, seed: 12)
        var imp = ChannelImpairments()
        imp.bandPass = 300...3400
        imp.gainDB = -40
        imp.hum = (50, 0.005)
        imp.dcOffset = 0.003
        #expect(run(text, config: bell202, impairments: imp) == text)
    }

    @Test func strongHumAboveTheSignal() {
        let text = printableText(400, seed: 13)
        var imp = ChannelImpairments()
        imp.gainDB = -20
        imp.hum = (60, 0.2)
        #expect(run(text, config: bell202, impairments: imp) == text)
    }

    @Test func deEmphasis() {
        let text = printableText(400, seed: 14)
        var imp = ChannelImpairments()
        imp.deEmphasisCorner = 500
        imp.noiseRMS = noiseRMS(ebN0: 16, amplitude: 0.5, config: bell202) / 4
        #expect(characterErrorRate(expected: text, got: run(text, config: bell202, impairments: imp)) < 0.01)
    }

    @Test func silenceAndNoiseAloneDecodeNothing() {
        var sim = ChannelSimulator(impairments: ChannelImpairments(), sampleRate: 48000)
        let silence = [Float](repeating: 0, count: 48000)
        #expect(demodulate8N1(sim.process(silence), config: bell202).isEmpty)
    }

    @Test func whiteNoiseAloneDecodesAlmostNothing() {
        // Ten seconds of full-band white noise and no signal: a few stray characters at most
        // (measured: 0-2), not a stream of garbage.
        var imp = ChannelImpairments()
        imp.noiseRMS = 0.3
        var sim = ChannelSimulator(impairments: imp, sampleRate: 48000)
        let noise = sim.process([Float](repeating: 0, count: 480_000))
        #expect(demodulate8N1(noise, config: bell202).count <= 5)
    }

    @Test func leadingSilenceAndLateStart() {
        // A transmission that starts after a second of silence and ends before another.
        let text = printableText(100, seed: 15)
        let signal = [Float](repeating: 0, count: 48000) + modulate8N1(text, config: bell202) + [Float](repeating: 0, count: 48000)
        #expect(demodulate8N1(signal, config: bell202) == text)
    }

    @Test func burstsWithIdleGaps() {
        // Characters separated by idle mark of arbitrary (non-whole-bit) length, as typed text.
        var m = FSKModulator(configuration: bell202, amplitude: 0.5)
        var s: [Float] = []
        let text = printableText(60, seed: 16)
        m.appendTone(mark: true, bits: 10, to: &s)
        for (i, b) in text.enumerated() {
            m.appendWord(UInt32(b) << 1 | 1 << 9, count: 10, to: &s)
            m.appendTone(mark: true, bits: Double(i % 7) * 1.37, to: &s)
        }
        m.appendTone(mark: true, bits: 4, to: &s)
        #expect(demodulate8N1(s, config: bell202) == text)
    }
}
