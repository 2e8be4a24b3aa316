import Testing
import ModemRuntime
@testable import ModemDSP

@Suite struct FSKBitDemodulatorTests {
    /// Sends a preamble of alternating bits then random bits; the demodulated stream of each slicer
    /// must contain the random part exactly (the PLL has locked during the preamble).
    @Test(arguments: [(1200.0, 1200.0, 2200.0, 44100.0), (1200, 1200, 2200, 48000), (300, 1600, 1800, 44100), (1200, 1200, 2200, 22050)])
    func recoversBitsAfterLock(baud: Double, mark: Double, space: Double, rate: Double) throws {
        let config = try FSKConfiguration(sampleRate: rate, baudRate: baud, markFrequency: mark, spaceFrequency: space)
        var rng = SplitMix64(seed: 21)
        let preamble = (0..<64).map { $0 % 2 == 0 }
        let payload = (0..<2000).map { _ in rng.next() & 1 == 1 }
        var m = FSKModulator(configuration: config, amplitude: 0.5)
        var samples: [Float] = []
        m.appendBits(preamble + payload + preamble, to: &samples)
        for windowBits in [1.0, 1.3] {
            var d = FSKBitDemodulator(configuration: config, slicers: [-3.0, 0, 3].map { .init(balanceDB: $0, windowBits: windowBits) })
            var bits: [SlicedBit] = []
            var i = 0
            while i < samples.count {   // fed in odd-sized blocks
                let n = min(1001, samples.count - i)
                samples[i..<(i + n)].withUnsafeBufferPointer { d.process($0, into: &bits) }
                i += n
            }
            for slicer in 0..<3 {
                let got = bits.filter { $0.slicer == slicer }.map(\.mark)
                let found = got.count >= payload.count
                    && (0...(got.count - payload.count)).contains { Array(got[$0..<($0 + payload.count)]) == payload }
                #expect(found, "slicer \(slicer), window \(windowBits): payload not recovered (\(got.count) bits)")
            }
        }
    }
}
