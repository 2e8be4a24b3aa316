import Testing
import Foundation
@testable import ModemDSP
import ModemTestSupport

/// The tests' seeded generator.

/// Modulates 8N1 characters (start, 8 data, stop) with a mark leader and trailer.
func modulate8N1(_ bytes: [UInt8], config: FSKConfiguration, leaderBits: Double = 2, amplitude: Float = 0.7) -> [Float] {
    var m = FSKModulator(configuration: config, amplitude: amplitude)
    var out: [Float] = []
    m.appendTone(mark: true, bits: leaderBits, to: &out)
    for b in bytes {
        m.appendWord(UInt32(b) << 1 | 1 << 9, count: 10, to: &out)
    }
    m.appendTone(mark: true, bits: 2, to: &out)
    return out
}

func demodulate8N1(_ samples: [Float], config: FSKConfiguration, chunk: Int = 4096) -> [UInt8] {
    var d = FSKDemodulator(configuration: config, shape: AsyncCharacterShape(bitsBeforeStop: 9, stopBits: 1))
    var events: [FSKDemodulatorEvent] = []
    var i = 0
    while i < samples.count {
        let n = min(chunk, samples.count - i)
        samples[i..<(i + n)].withUnsafeBufferPointer { d.process($0, into: &events) }
        i += n
    }
    d.finish(into: &events)
    return events.compactMap { if case .character(let c) = $0 { return UInt8(c.bits & 0xFF) } else { return nil } }
}

@Suite struct FSKRoundTripTests {
    @Test(arguments: [(300.0, 48000.0), (1200, 48000), (1200, 44100), (4800, 48000), (1200, 8000), (300, 8000), (2400, 96000), (45.45, 48000), (1234, 22050)])
    func roundTrip(baud: Double, rate: Double) throws {
        let tones = FSKProfile.defaultTones(forBaudRate: baud)
        let config = try FSKConfiguration(sampleRate: rate, baudRate: baud, markFrequency: tones.mark, spaceFrequency: tones.space)
        var rng = TestRandom(seed: 7)
        let n = baud < 100 ? 20 : 200
        let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let s = modulate8N1(bytes, config: config)
        #expect(demodulate8N1(s, config: config) == bytes)
        #expect(demodulate8N1(s, config: config, chunk: 37) == bytes)
    }

    /// At 12,000 baud a quarter bit is one sample: a burst of noise that failed to confirm sent the
    /// search back to a start it had already tried, for ever (1 s of noise ran for hours). The time
    /// limit is a hang guard; the run takes a fraction of a second.
    @Test("white noise at 10,000 and 12,000 baud: the search always moves on", .timeLimit(.minutes(1)), arguments: [10000.0, 12000])
    func noiseAtHighBaud(baud: Double) throws {
        let tones = FSKProfile.defaultTones(forBaudRate: baud)
        let config = try FSKConfiguration(sampleRate: 48000, baudRate: baud, markFrequency: tones.mark, spaceFrequency: tones.space)
        var rng = TestRandom(seed: 11)
        let noise = (0..<96_000).map { _ in 0.1 * rng.gaussian() }
        _ = demodulate8N1(noise, config: config)
        let bytes = (0..<100).map { _ in UInt8.random(in: 0...255, using: &rng) }
        // And a signal after the noise (and a moment of silence) is still found.
        #expect(demodulate8N1(noise + [Float](repeating: 0, count: 4800) + modulate8N1(bytes, config: config), config: config).suffix(100) == bytes[...])
    }
}
