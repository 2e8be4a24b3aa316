#if canImport(Glibc)
import Glibc
#endif

/// Where a preamble was found: its first sample (8 kHz, in the demodulator's samples), the
/// frequency offset of the signal (Hz; the receiver's audio is this much higher than sent) and how
/// clearly it stood out (the timing metric, 0...1).
public struct HFSync: Sendable, Equatable {
    /// The preamble's first sample.
    public var start: Int
    /// The signal's frequency offset in Hz.
    public var frequencyOffset: Double
    /// The preamble's correlation, 0...1 (the signal's share of the power in its band).
    public var quality: Double
}

/// What ``HFDemodulator/demodulate(grid:constellation:header:start:count:frequencyOffset:)`` read.
public struct HFSymbols: Sendable {
    /// Soft bits (positive for a likely 1), `count × grid's data carriers × bits per point` of them,
    /// fewer when the input ended first.
    public var soft: [Float]
    /// Whole symbols read (less than asked when the input ended first).
    public var symbolsRead: Int
    /// The mean SNR on the carriers (dB): the channel's power over the noise measured on the pilots.
    public var carrierSNR: Double
    /// The residual frequency offset the pilots measured (Hz), after the preamble's correction.
    public var residualFrequency: Double
}

/// The HF modem's receiver physics over a whole recording at 8 kHz: finding preambles (Schmidl-Cox
/// over the 64-sample period, then the period's correlation, the inverted end marker and the
/// frequency offset's whole multiples of 125 Hz, so offsets up to ±180 Hz are found), and reading a
/// run of symbols on a grid: the pilots' common phase drift removed, channel estimates smoothed in
/// time and interpolated across the band (on a grid with a ``HFGrid/wienerWindow``, the data's by
/// `HFWienerEstimator`, the windows moved earlier for a path the preamble's timing missed), the
/// noise measured on the pilots, max-log soft bits.
///
/// Holds the complex baseband of the recording (two floats per sample).
public final class HFDemodulator {
    /// Samples (8 kHz) held.
    public let count: Int
    private let re: [Float]
    private let im: [Float]
    private let reference: (re: [Float], im: [Float])

    /// The smallest preamble metric taken as a candidate (noise alone gives about 0.001).
    public static let detectionThreshold = 0.02

    /// Creates a demodulator over `samples` (8 kHz, real).
    public init(samples: [Float]) {
        count = samples.count
        (re, im) = HFFilters.baseband(samples)
        // The reference period: the middle of three, through the same baseband conversion.
        let p = HFModulator.preamblePeriod()
        let b = HFFilters.baseband(p + p + p)
        let L = HFGrid.preamblePeriod
        reference = (Array(b.re[L..<(2 * L)]), Array(b.im[L..<(2 * L)]))
    }

    /// The next preamble whose timing lies at or after `from`, or nil.
    public func findPreamble(from: Int) -> HFSync? {
        let L = HFGrid.preamblePeriod
        let W = (HFGrid.preambleRepeats - 2) * L
        var d = max(0, from)
        guard d + W + L < count else { return nil }
        var pr = 0.0, pi = 0.0, e1 = 0.0, e2 = 0.0
        func accumulate(_ m: Int, _ sign: Double) {
            let ar = Double(re[m]), ai = Double(im[m]), br = Double(re[m + L]), bi = Double(im[m + L])
            // conj(a)·b
            pr += sign * (ar * br + ai * bi)
            pi += sign * (ar * bi - ai * br)
            e1 += sign * (ar * ar + ai * ai)
            e2 += sign * (br * br + bi * bi)
        }
        for m in d..<(d + W) { accumulate(m, 1) }
        var best = -1.0, bestAt = -1, bestP = (0.0, 0.0)
        var sinceRefresh = 0
        while d + W + L < count {
            let denominator = e1 * e2
            let metric = denominator > 0 ? (pr * pr + pi * pi) / denominator : 0
            if metric > Self.detectionThreshold && metric > best {
                best = metric
                bestAt = d
                bestP = (pr, pi)
            }
            // A candidate is complete once the metric has been below its peak for a preamble's length.
            if bestAt >= 0 && d - bestAt > HFGrid.preambleLength {
                break
            }
            accumulate(d, -1)
            accumulate(d + W, 1)
            d += 1
            sinceRefresh += 1
            if sinceRefresh == 65536 {
                // Running sums drift: recompute them now and then.
                pr = 0; pi = 0; e1 = 0; e2 = 0
                for m in d..<(d + W) { accumulate(m, 1) }
                sinceRefresh = 0
            }
        }
        guard bestAt >= 0 else { return nil }
        // At baseband the preamble is anti-periodic (11.5 turns of the mixer per period): −P.
        let coarse = atan2(-bestP.1, -bestP.0) * HFGrid.sampleRate / (2 * .pi * Double(L))
        return refine(coarseStart: bestAt, coarseFrequency: coarse, quality: best.squareRoot())
            ?? HFSync(start: bestAt, frequencyOffset: coarse, quality: best.squareRoot())
    }

    /// Timing to the sample and the frequency's whole multiples of 125 Hz, from the correlation of
    /// each period with the reference and the inverted last period.
    private func refine(coarseStart: Int, coarseFrequency: Double, quality: Double) -> HFSync? {
        let L = HFGrid.preamblePeriod, R = HFGrid.preambleRepeats
        let span = 80
        var best = 0.0, bestT = -1, bestF = coarseFrequency
        var metrics: [(t: Int, f: Double, m: Double, phase: Double)] = []
        let lo = max(0, coarseStart - span), hi = min(coarseStart + span, count - R * L)
        guard hi >= lo else { return nil }
        let length = hi - lo + R * L
        var referenceEnergy = 0.0
        for m in 0..<L { referenceEnergy += Double(reference.re[m] * reference.re[m] + reference.im[m] * reference.im[m]) }
        // The received energy of each window (the metric's scale: a misaligned window correlates less).
        var energy = [Double](repeating: 0, count: hi - lo + 1)
        var e = 0.0
        for n in lo..<(lo + R * L) { e += Double(re[n] * re[n] + im[n] * im[n]) }
        for t in lo...hi {
            energy[t - lo] = e
            if t + R * L < count {
                e += Double(re[t + R * L] * re[t + R * L] + im[t + R * L] * im[t + R * L]) - Double(re[t] * re[t] + im[t] * im[t])
            }
        }
        var zr = [Double](repeating: 0, count: length), zi = zr
        var cr = [Double](repeating: 0, count: R), ci = cr
        for k in -1...1 {
            let f = coarseFrequency + Double(k) * HFGrid.sampleRate / Double(L)
            let w = -2 * Double.pi * f / HFGrid.sampleRate
            for j in 0..<length {
                let n = lo + j
                let c = cos(w * Double(n)), s = sin(w * Double(n))
                zr[j] = Double(re[n]) * c - Double(im[n]) * s
                zi[j] = Double(re[n]) * s + Double(im[n]) * c
            }
            for t in lo...hi {
                for i in 0..<R {
                    var sr = 0.0, si = 0.0
                    let base = t - lo + i * L
                    for m in 0..<L {
                        let ar = Double(reference.re[m]), ai = Double(reference.im[m])
                        // z·conj(ref)
                        sr += zr[base + m] * ar + zi[base + m] * ai
                        si += zi[base + m] * ar - zr[base + m] * ai
                    }
                    cr[i] = sr
                    ci[i] = si
                }
                var ar = 0.0, ai = 0.0
                for i in 0..<(R - 1) {
                    let sign: Double = i + 1 == R - 1 ? -1 : 1
                    // conj(c_i)·c_{i+1}
                    ar += sign * (cr[i] * cr[i + 1] + ci[i] * ci[i + 1])
                    ai += sign * (cr[i] * ci[i + 1] - ci[i] * cr[i + 1])
                }
                let m = (ar * ar + ai * ai).squareRoot() / max(energy[t - lo] * referenceEnergy, 1e-30)
                metrics.append((t, f, m, atan2(-ai, -ar)))
                if m > best {
                    best = m
                    bestT = t
                    bestF = f
                }
            }
        }
        guard bestT >= 0 else { return nil }
        // The earliest arrival: the first time within 24 samples before the best whose metric is at
        // least half of it (a stronger late echo must not push the window into the next symbol).
        var chosen = metrics.first { $0.t == bestT && $0.f == bestF }!
        for m in metrics where m.f == bestF && m.t < bestT && m.t >= bestT - 24 && m.m >= 0.5 * best {
            chosen = m
            break
        }
        // The residual frequency from the periods' phase steps (±62 Hz; the mixer's half turn removed).
        let fine = chosen.f + chosen.phase * HFGrid.sampleRate / (2 * .pi * Double(L))
        return HFSync(start: chosen.t, frequencyOffset: fine, quality: quality)
    }

    /// The symbols' carriers (`yr`, `yi`: `available × carriers`) and pilots (`pr`, `pim`, their known
    /// signs removed), each symbol's transform window starting `early` samples before its usual place
    /// (the prefix's end less a small backoff).
    private func read(grid g: HFGrid, header: Bool, start: Int, count symbols: Int, frequencyOffset: Double, early: Int)
        -> (yr: [Float], yi: [Float], pr: [Float], pim: [Float], available: Int) {
        let N = g.fftSize, L = g.symbolLength
        let backoff = min(4, g.cyclicPrefix / 4) + early
        let available = max(0, min(symbols, (count - start - backoff) / L))
        let nc = g.carrierCount
        let transform = HFComplexTransform(size: N)
        var yr = [Float](repeating: 0, count: available * nc), yi = yr
        var bufR = [Float](repeating: 0, count: N), bufI = bufR
        var outR = [Float](repeating: 0, count: N), outI = outR
        let bins = (g.firstCarrier...g.lastCarrier).map { g.basebandBin($0) }
        let w = -2 * Double.pi * frequencyOffset / HFGrid.sampleRate
        for s in 0..<available {
            let at = max(0, start + s * L + g.cyclicPrefix - backoff)
            for n in 0..<N {
                let ph = w * Double(at + n)
                let c = Float(cos(ph)), sn = Float(sin(ph))
                bufR[n] = re[at + n] * c - im[at + n] * sn
                bufI[n] = re[at + n] * sn + im[at + n] * c
            }
            bufR.withUnsafeBufferPointer { br in
                bufI.withUnsafeBufferPointer { bi in
                    outR.withUnsafeMutableBufferPointer { orr in
                        outI.withUnsafeMutableBufferPointer { oi in
                            transform.forward(re: br, im: bi, start: 0, outRe: orr, outIm: oi)
                        }
                    }
                }
            }
            // The mixer's phase at the window's start (e^{−jωc·at}) removed, so a steady carrier
            // keeps its phase from symbol to symbol.
            let mix = 2 * Double.pi * HFGrid.centreHz / HFGrid.sampleRate * Double(at)
            let mc = Float(cos(mix)), ms = Float(sin(mix))
            for c in 0..<nc {
                let r = outR[bins[c]], i = outI[bins[c]]
                yr[s * nc + c] = r * mc - i * ms
                yi[s * nc + c] = r * ms + i * mc
            }
        }
        let pilots = g.pilotCarriers.map { $0 - g.firstCarrier }
        let np = pilots.count
        // Raw pilot observations (the known sign removed).
        var pr = [Float](repeating: 0, count: available * np), pim = pr
        for s in 0..<available {
            let signs = HFSequences.pilotSigns(symbol: s, count: np, header: header)
            for (p, c) in pilots.enumerated() {
                pr[s * np + p] = yr[s * nc + c] * signs[p]
                pim[s * np + p] = yi[s * nc + c] * signs[p]
            }
        }
        return (yr, yi, pr, pim, available)
    }

    /// Reads `count` symbols of `grid` from sample `start` (the first symbol's prefix) at the
    /// frequency offset `frequencyOffset`.
    /// - Parameters:
    ///   - constellation: the data carriers' points (the header's: QPSK).
    ///   - header: whether these are the header's symbols (their own pilot sequence).
    public func demodulate(grid g: HFGrid, constellation: QAMConstellation, header: Bool, start: Int, count symbols: Int,
                           frequencyOffset: Double) -> HFSymbols {
        var (yr, yi, pr, pim, available) = read(grid: g, header: header, start: start, count: symbols,
                                                frequencyOffset: frequencyOffset, early: 0)
        guard available > 0 else { return HFSymbols(soft: [], symbolsRead: 0, carrierSNR: -.infinity, residualFrequency: 0) }
        let nc = g.carrierCount
        let pilots = g.pilotCarriers.map { $0 - g.firstCarrier }
        let np = pilots.count
        let wiener = g.wienerWindow > 0 && !header && available >= 16
        if wiener {
            // A path earlier than the one the preamble's timing found (it was in a fade then) would
            // reach into the next symbol: the windows are moved that much earlier.
            let early = HFWienerEstimator.earlyPath(pr: pr, pim: pim, symbols: available, pilots: pilots,
                                                    carrierSpacing: g.carrierSpacing, cyclicPrefix: g.cyclicPrefix)
            if early > 0 {
                (yr, yi, pr, pim, available) = read(grid: g, header: header, start: start, count: symbols,
                                                    frequencyOffset: frequencyOffset, early: early)
            }
        }
        // The common phase step per symbol (a residual frequency offset), removed from everything.
        var ar = 0.0, ai = 0.0
        for s in 0..<max(0, available - 1) {
            for p in 0..<np {
                let a = (Double(pr[s * np + p]), Double(pim[s * np + p])), b = (Double(pr[(s + 1) * np + p]), Double(pim[(s + 1) * np + p]))
                ar += a.0 * b.0 + a.1 * b.1
                ai += a.0 * b.1 - a.1 * b.0
            }
        }
        let step = available > 1 ? atan2(ai, ar) : 0
        for s in 0..<available {
            let c = Float(cos(-step * Double(s))), sn = Float(sin(-step * Double(s)))
            for i in (s * nc)..<((s + 1) * nc) {
                let r = yr[i] * c - yi[i] * sn
                yi[i] = yr[i] * sn + yi[i] * c
                yr[i] = r
            }
            for i in (s * np)..<((s + 1) * np) {
                let r = pr[i] * c - pim[i] * sn
                pim[i] = pr[i] * sn + pim[i] * c
                pr[i] = r
            }
        }
        let mapper = QAMMapper(constellation)
        let b = constellation.bitsPerPoint
        let data = g.dataCarriers.map { $0 - g.firstCarrier }
        if wiener {
            // A fading line's data: the Wiener estimate in time and across the band.
            let e = HFWienerEstimator(pr: pr, pim: pim, symbols: available, pilots: pilots, data: data,
                                      carrierSpacing: g.carrierSpacing, halfWindow: g.wienerWindow)
            let nd = data.count
            var soft = [Float](repeating: 0, count: available * nd * b)
            soft.withUnsafeMutableBufferPointer { out in
                for s in 0..<available {
                    for (j, c) in data.enumerated() {
                        let i = s * nd + j
                        let er = e.hr[i], ei = e.hi[i]
                        let h2 = max(er * er + ei * ei, 1e-20)
                        let y = (yr[s * nc + c], yi[s * nc + c])
                        let zr = (y.0 * er + y.1 * ei) / h2, zi = (y.1 * er - y.0 * ei) / h2
                        mapper.softBits(zr, zi, noiseVariance: e.cellNoise[i] / h2, into: out, at: i * b)
                    }
                }
            }
            return HFSymbols(soft: soft, symbolsRead: available, carrierSNR: 10 * log10(e.channelPower / e.noise),
                             residualFrequency: step / (2 * .pi * g.symbolSeconds))
        }
        // Smoothing in time over ±smoothing symbols.
        let half = min(g.smoothing, max(0, available - 1))
        var hr = [Float](repeating: 0, count: available * np), hi = hr
        var weight = [Float](repeating: 0, count: available)
        for s in 0..<available {
            let lo = max(0, s - half), up = min(available - 1, s + half)
            let n = Float(up - lo + 1)
            weight[s] = n
            for p in 0..<np {
                var sr: Float = 0, si: Float = 0
                for t in lo...up {
                    sr += pr[t * np + p]
                    si += pim[t * np + p]
                }
                hr[s * np + p] = sr / n
                hi[s * np + p] = si / n
            }
        }
        // The noise, from the pilots' scatter around their smoothed values.
        var noise = 0.0, noiseCount = 0.0, channelPower = 0.0
        for s in 0..<available where weight[s] > 1 {
            for p in 0..<np {
                let i = s * np + p
                let dr = Double(pr[i] - hr[i]), di = Double(pim[i] - hi[i])
                noise += (dr * dr + di * di) / (1 - 1 / Double(weight[s]))
                noiseCount += 1
                channelPower += Double(hr[i] * hr[i] + hi[i] * hi[i])
            }
        }
        let sigma2 = noiseCount > 0 ? max(noise / noiseCount, 1e-12) : 1e-3
        let snr = noiseCount > 0 ? 10 * log10(max(channelPower / noiseCount, 1e-30) / sigma2) : 0
        // Interpolation across the band and soft bits.
        var soft = [Float](repeating: 0, count: available * data.count * b)
        // For each data carrier: cubic (Catmull-Rom) weights over the four nearest pilots (two on
        // either side; at the band's edges the outer pilot repeated), which follows the ripple of two
        // paths a few milliseconds apart far better than a straight line between two pilots.
        var taps = [(Int, Int, Int, Int)](), weights = [(Float, Float, Float, Float)]()
        for c in data {
            var p = 0
            while p + 1 < np && pilots[p + 1] < c { p += 1 }
            let t = Float(c - pilots[p]) / Float(pilots[p + 1] - pilots[p])
            let t2 = t * t, t3 = t2 * t
            taps.append((max(0, p - 1), p, p + 1, min(np - 1, p + 2)))
            weights.append(((-t3 + 2 * t2 - t) / 2, (3 * t3 - 5 * t2 + 2) / 2, (-3 * t3 + 4 * t2 + t) / 2, (t3 - t2) / 2))
        }
        soft.withUnsafeMutableBufferPointer { out in
            for s in 0..<available {
                let estimateNoise = Float(sigma2) * (1 + 1 / weight[s])
                let base = s * np
                for (j, c) in data.enumerated() {
                    let (p0, p1, p2, p3) = taps[j], (wa, wb, wd, we) = weights[j]
                    let er = wa * hr[base + p0] + wb * hr[base + p1] + wd * hr[base + p2] + we * hr[base + p3]
                    let ei = wa * hi[base + p0] + wb * hi[base + p1] + wd * hi[base + p2] + we * hi[base + p3]
                    let h2 = max(er * er + ei * ei, 1e-20)
                    let y = (yr[s * nc + c], yi[s * nc + c])
                    // y / h
                    let zr = (y.0 * er + y.1 * ei) / h2, zi = (y.1 * er - y.0 * ei) / h2
                    mapper.softBits(zr, zi, noiseVariance: estimateNoise / h2, into: out, at: (s * data.count + j) * b)
                }
            }
        }
        return HFSymbols(soft: soft, symbolsRead: available, carrierSNR: snr,
                         residualFrequency: step / (2 * .pi * g.symbolSeconds))
    }
}
