import Foundation
import Testing
import ModemTestSupport
@testable import ModemDSP

@Suite("OFDM: the training's channel fitted across carriers")
struct OFDMChannelFitTests {
    /// A line of a delay and a gentle tilt: `gain(k) · e^{−2πi k delay / 4096}`.
    static func line(count: Int, delay: Double) -> [(Float, Float)] {
        (0..<count).map { k in
            let g = 0.8 + 0.2 * Double(k) / Double(count)
            let a = -2 * Double.pi * Double(k) * delay / 4096
            return (Float(g * cos(a)), Float(g * sin(a)))
        }
    }

    @Test("a delay and a tilt come through the fit unchanged, the band's ends included")
    func keepsTheLine() {
        let h = Self.line(count: 400, delay: 16)
        let fit = OFDMDemodulator.smoothChannel(h, halfWidth: 8)
        for (a, b) in zip(h, fit) {
            #expect(abs(a.0 - b.0) < 2e-3 && abs(a.1 - b.1) < 2e-3, "\(a) against \(b)")
        }
    }

    @Test("the noise of each carrier's estimate falls to about 1/(2·halfWidth + 1)")
    func averagesTheNoise() {
        var rng = TestRandom(seed: 5)
        let clean = Self.line(count: 1000, delay: 16)
        let sigma: Float = 0.01
        func gauss() -> Float {
            let u = max(Float.leastNonzeroMagnitude, Float.random(in: 0..<1, using: &rng)), v = Float.random(in: 0..<1, using: &rng)
            return sigma * (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
        }
        let noisy = clean.map { ($0.0 + gauss(), $0.1 + gauss()) }
        let fit = OFDMDemodulator.smoothChannel(noisy, halfWidth: 8)
        func error(_ x: [(Float, Float)]) -> Double {
            // The interior (the ends extrapolate and are noisier).
            var sum = 0.0
            for k in 20..<980 {
                let dr = Double(x[k].0 - clean[k].0), di = Double(x[k].1 - clean[k].1)
                sum += dr * dr + di * di
            }
            return sum / 960
        }
        let ratio = error(fit) / error(noisy)
        #expect(ratio > 0.03 && ratio < 0.09, "noise kept: \(ratio) (1/17 = 0.059)")
    }

    @Test("the half-width follows the grid's prefix: 8 carriers on the cable grids, 2 on the air grid")
    func widthByPrefix() {
        #expect(OFDMDemodulator.channelHalfWidth(OFDMNumerology(fftSize: 4096, cyclicPrefix: 64, firstCarrier: 18, lastCarrier: 1689, pilotSpacing: 32)) == 8)
        #expect(OFDMDemodulator.channelHalfWidth(OFDMNumerology(fftSize: 4096, cyclicPrefix: 256, firstCarrier: 35, lastCarrier: 733, pilotSpacing: 16)) == 2)
    }
}
