import Testing
import Foundation
import ModemTestSupport
@testable import ModemDSP

/// The robust grid's channel estimate on a synthetic two-path fading channel whose truth is known.
@Suite struct HFWienerEstimatorTests {
    /// Two paths (delays in seconds from the window's start), each gain a sum of four seeded
    /// sinusoids within ±1 Hz (average power 1/2 each), over `symbols` robust symbols: the channel at
    /// every carrier (`symbol × carrier`, carriers counted from the grid's first).
    static func channel(delays: (Double, Double), symbols: Int, seed: UInt64) -> (re: [Double], im: [Double]) {
        let g = HFGrid.robust
        var rng = TestRandom(seed: seed)
        let tones = (0..<2).map { _ in (0..<4).map { _ in (f: Double.random(in: -1...1, using: &rng), phase: Double.random(in: 0..<(2 * .pi), using: &rng)) } }
        var re = [Double](repeating: 0, count: symbols * g.carrierCount), im = re
        for s in 0..<symbols {
            let t = Double(s) * g.symbolSeconds
            for (k, path) in tones.enumerated() {
                var ar = 0.0, ai = 0.0
                for tone in path {
                    ar += cos(2 * .pi * tone.f * t + tone.phase) * (1.0 / 8).squareRoot()
                    ai += sin(2 * .pi * tone.f * t + tone.phase) * (1.0 / 8).squareRoot()
                }
                let tau = k == 0 ? delays.0 : delays.1
                for c in 0..<g.carrierCount {
                    let a = -2 * Double.pi * Double(c) * g.carrierSpacing * tau
                    re[s * g.carrierCount + c] += ar * cos(a) - ai * sin(a)
                    im[s * g.carrierCount + c] += ar * sin(a) + ai * cos(a)
                }
            }
        }
        return (re, im)
    }

    /// The pilots' observations of `h` with complex white noise of variance `noise`.
    static func pilots(_ h: (re: [Double], im: [Double]), symbols: Int, noise: Double, seed: UInt64) -> (re: [Float], im: [Float]) {
        let g = HFGrid.robust
        let pilots = g.pilotCarriers.map { $0 - g.firstCarrier }
        var rng = TestRandom(seed: seed)
        let sigma = Float((noise / 2).squareRoot())
        var pr = [Float](), pim = [Float]()
        for s in 0..<symbols {
            for c in pilots {
                pr.append(Float(h.re[s * g.carrierCount + c]) + sigma * rng.gaussian())
                pim.append(Float(h.im[s * g.carrierCount + c]) + sigma * rng.gaussian())
            }
        }
        return (pr, pim)
    }

    @Test("two paths 2 ms apart, 1 Hz fading, 5 dB: the noise measured within 15 %, the data cells' error under a tenth of the channel's power and about what the estimator says")
    func twoPaths() {
        let g = HFGrid.robust, symbols = 240, noise = 0.316
        let h = Self.channel(delays: (0.0005, 0.0025), symbols: symbols, seed: 61)
        let p = Self.pilots(h, symbols: symbols, noise: noise, seed: 62)
        let pilots = g.pilotCarriers.map { $0 - g.firstCarrier }, data = g.dataCarriers.map { $0 - g.firstCarrier }
        let e = HFWienerEstimator(pr: p.re, pim: p.im, symbols: symbols, pilots: pilots, data: data,
                                  carrierSpacing: g.carrierSpacing, halfWindow: g.wienerWindow)
        #expect(abs(e.noise / noise - 1) < 0.15)
        var error = 0.0, claimed = 0.0, power = 0.0
        for s in 0..<symbols {
            for (j, c) in data.enumerated() {
                let i = s * data.count + j, t = s * g.carrierCount + c
                let dr = Double(e.hr[i]) - h.re[t], di = Double(e.hi[i]) - h.im[t]
                error += dr * dr + di * di
                claimed += Double(e.cellNoise[i]) - e.noise
                power += h.re[t] * h.re[t] + h.im[t] * h.im[t]
            }
        }
        let n = Double(symbols * data.count)
        #expect(error / power < 0.1)
        #expect(claimed / n > 0.5 * error / n && claimed / n < 2 * error / n)
    }

    @Test("a path 1.5 ms before the window's first moves the windows about 2 ms earlier; paths at 0.5 and 2.5 ms move nothing")
    func earlyPath() {
        let g = HFGrid.robust, symbols = 60
        let pilots = g.pilotCarriers.map { $0 - g.firstCarrier }
        let early = Self.pilots(Self.channel(delays: (-0.0015, 0.0005), symbols: symbols, seed: 63), symbols: symbols, noise: 0.1, seed: 64)
        let shift = HFWienerEstimator.earlyPath(pr: early.re, pim: early.im, symbols: symbols, pilots: pilots,
                                                carrierSpacing: g.carrierSpacing, cyclicPrefix: g.cyclicPrefix)
        #expect((13...19).contains(shift))
        let usual = Self.pilots(Self.channel(delays: (0.0005, 0.0025), symbols: symbols, seed: 63), symbols: symbols, noise: 0.1, seed: 64)
        #expect(HFWienerEstimator.earlyPath(pr: usual.re, pim: usual.im, symbols: symbols, pilots: pilots,
                                            carrierSpacing: g.carrierSpacing, cyclicPrefix: g.cyclicPrefix) == 0)
    }
}
