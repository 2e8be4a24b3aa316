#if canImport(Glibc)
import Glibc
#endif

/// The channel estimate of a fading HF line (the robust grid's data): a Wiener (MMSE) filter in time
/// over each pilot's run of symbols, then one across the band from the pilots to the data carriers,
/// both from statistics the pilots themselves measure.
///
/// - The noise: from each pilot's second difference in time (`p[s−1] − 2p[s] + p[s+1]`: six times
///   the noise's variance, the channel's own change of a few Hz of Doppler over three symbols counting
///   some 40 dB less), so a fading channel's change is not taken for noise.
/// - In time: the pilots' correlation at lags of 1...8 symbols fits a Gaussian Doppler spectrum
///   (`ρ(k) = exp(−b·k²)`); each symbol's estimate is the MMSE combination of the pilot's values over
///   up to ±`halfWindow` symbols.
/// - Across the band: the delay profile is the periodogram of the time-filtered pilots over a 6.4 ms
///   span of delays (what pilots 156 Hz apart resolve), its noise floor removed; the frequency
///   correlation it implies gives each data carrier's MMSE weights over all the pilots.
///
/// The error each estimate is left with (the MMSE's own figure) is added to the noise each data cell's
/// soft bits are scaled by, so cells whose estimate is poor (the band's edges, the run's ends) count less.
struct HFWienerEstimator {
    /// The channel at each data cell (`symbol × data carrier`, real and imaginary parts).
    var hr: [Float]
    var hi: [Float]
    /// The complex noise variance plus the estimate's error for each data cell.
    var cellNoise: [Float]
    /// The noise variance on a carrier (from the pilots' second differences).
    var noise: Double
    /// The channel's mean power on a carrier.
    var channelPower: Double

    /// Estimates the channel over `symbols` symbols.
    /// - Parameters:
    ///   - pr, pim: the pilots' observations (the known signs and the common phase step removed),
    ///     `symbols × pilots.count`.
    ///   - pilots, data: the pilot and data carriers' positions (in carriers, any common origin).
    ///   - carrierSpacing: Hz between carriers; `halfWindow`: the time filter's reach in symbols.
    init(pr: [Float], pim: [Float], symbols S: Int, pilots: [Int], data: [Int], carrierSpacing: Double, halfWindow: Int) {
        let np = pilots.count, nd = data.count
        // The noise, from second differences in time.
        var d2 = 0.0, d2Count = 0.0, total = 0.0
        for s in 0..<S {
            for p in 0..<np {
                let i = s * np + p
                total += Double(pr[i] * pr[i] + pim[i] * pim[i])
                if s > 0 && s + 1 < S {
                    let a = i - np, c = i + np
                    let dr = Double(pr[a] - 2 * pr[i] + pr[c]), di = Double(pim[a] - 2 * pim[i] + pim[c])
                    d2 += dr * dr + di * di
                    d2Count += 1
                }
            }
        }
        let received = total / Double(max(1, S * np))
        let sigma2 = max(d2Count > 0 ? d2 / d2Count / 6 : received / 10, 1e-12)
        let power = max(received - sigma2, sigma2 * 0.01)
        noise = sigma2
        channelPower = power
        let noiseRatio = sigma2 / power

        // The time correlation at lags 1...K, fitted by exp(−b·k²).
        let K = min(8, S - 1)
        var num = 0.0, den = 0.0
        if K >= 1 {
            for k in 1...K {
                var c = 0.0, n = 0.0
                for s in 0..<(S - k) {
                    for p in 0..<np {
                        let i = s * np + p, j = i + k * np
                        c += Double(pr[i] * pr[j] + pim[i] * pim[j])
                        n += 1
                    }
                }
                let rho = min(max(c / n / power, 0.05), 1)
                let kk = Double(k * k)
                num += kk * -log(rho)
                den += kk * kk
            }
        }
        // At least a slight decay (a steady channel's window still ends), at most a fast fade's.
        let b = min(max(den > 0 ? num / den : 0.01, 1e-4), 0.5)
        func rho(_ k: Int) -> Double { exp(-b * Double(k * k)) }

        // Time filtering: one set of weights per (symbols before, symbols after) a position has.
        let W = max(0, min(halfWindow, S - 1))
        var weightsFor: [Int: [Double]] = [:]
        var timeError = [Double](repeating: 0, count: S)
        var tr = [Float](repeating: 0, count: S * np), ti = tr
        for s in 0..<S {
            let lo = max(0, s - W), up = min(S - 1, s + W)
            let key = (s - lo) * 1000 + (up - s)
            let n = up - lo + 1
            if weightsFor[key] == nil {
                var m = [Double](repeating: 0, count: n * n)
                var r = [Double](repeating: 0, count: n)
                for a in 0..<n {
                    for c in 0..<n { m[a * n + c] = rho(a - c) + (a == c ? noiseRatio : 0) }
                    r[a] = rho(lo + a - s)
                }
                weightsFor[key] = HFLinearSolve.real(m, r, n)
            }
            let w = weightsFor[key]!
            var explained = 0.0
            for a in 0..<n { explained += w[a] * rho(lo + a - s) }
            timeError[s] = max(1 - explained, 1e-6)
            for p in 0..<np {
                var sr = 0.0, si = 0.0
                for a in 0..<n {
                    let i = (lo + a) * np + p
                    sr += w[a] * Double(pr[i])
                    si += w[a] * Double(pim[i])
                }
                tr[s * np + p] = Float(sr)
                ti[s * np + p] = Float(si)
            }
        }
        let interiorError = timeError[S / 2]

        // The delay profile: the periodogram of the time-filtered pilots over 6.4 ms of delays.
        let fp = pilots.map { Double($0) * carrierSpacing }
        let span = 1 / (Double(pilots[1] - pilots[0]) * carrierSpacing)
        let taps = 32
        let delays = (0..<taps).map { -0.25 * span + span * Double($0) / Double(taps) }
        var profile = [Double](repeating: 0, count: taps)
        let stride = max(1, S / 200)
        for j in 0..<taps {
            let (acc, used) = Self.delayPower(re: tr, im: ti, symbols: S, pilotFrequencies: fp, delay: delays[j], stride: stride)
            profile[j] = acc / Double(used) / Double(np * np)
        }
        // The floor the time-filtered noise leaves, removed; a little of every delay kept.
        let floorLevel = interiorError * power / Double(np)
        let peak = profile.max() ?? 0
        for j in 0..<taps { profile[j] = max(profile[j] - floorLevel, 0) + 0.01 * peak }
        let profileSum = max(profile.reduce(0, +), 1e-30)
        // R(Δf) = Σ P(τ) e^{−j2πΔfτ}, R(0) = 1.
        func correlation(_ df: Double) -> (Double, Double) {
            var r = 0.0, i = 0.0
            for j in 0..<taps {
                let a = -2 * Double.pi * df * delays[j]
                r += profile[j] * cos(a)
                i += profile[j] * sin(a)
            }
            return (r / profileSum, i / profileSum)
        }
        // Each data carrier's weights over the pilots: (R_pp + ε·I)⁻¹ r_pc, ε the time filter's error.
        let epsilon = interiorError
        var mr = [Double](repeating: 0, count: np * np), mi = mr
        for a in 0..<np {
            for c in 0..<np {
                let (x, y) = correlation(fp[a] - fp[c])
                mr[a * np + c] = x + (a == c ? epsilon : 0)
                mi[a * np + c] = y
            }
        }
        var wr = [[Double]](), wi = [[Double]](), freqError = [Double](), gain = [Double]()
        for c in data {
            let f = Double(c) * carrierSpacing
            var rr = [Double](repeating: 0, count: np), ri = rr
            for a in 0..<np { (rr[a], ri[a]) = correlation(fp[a] - f) }
            let (xr, xi) = HFLinearSolve.complex(mr, mi, rr, ri, np)
            // mse = 1 − rᴴ w
            var e = 0.0, g = 0.0
            for a in 0..<np {
                e += rr[a] * xr[a] + ri[a] * xi[a]
                g += xr[a] * xr[a] + xi[a] * xi[a]
            }
            wr.append(xr)
            wi.append(xi)
            freqError.append(max(1 - e, 1e-6))
            gain.append(g)
        }
        hr = [Float](repeating: 0, count: S * nd)
        hi = hr
        cellNoise = hr
        for s in 0..<S {
            let extra = max(0, timeError[s] - interiorError)
            for j in 0..<nd {
                // ĥ = wᴴ h̃
                var er = 0.0, ei = 0.0
                let w0 = wr[j], w1 = wi[j]
                for a in 0..<np {
                    let x = Double(tr[s * np + a]), y = Double(ti[s * np + a])
                    er += w0[a] * x + w1[a] * y
                    ei += w0[a] * y - w1[a] * x
                }
                hr[s * nd + j] = Float(er)
                hi[s * nd + j] = Float(ei)
                cellNoise[s * nd + j] = Float(sigma2 + power * (freqError[j] + extra * gain[j]))
            }
        }
    }
}

extension HFWienerEstimator {
    /// Samples by which to start each symbol's transform earlier (0: none) so that the earliest path
    /// the pilots see lands where the preamble's timing puts the first one (half a millisecond into the
    /// window) and none reaches into the next symbol, as long as the latest stays inside the prefix.
    ///
    /// The pilots' power at `delay`: |Σ h·e^{+j2πfτ}|² over the pilots (`re`/`im`, `pilotFrequencies.count`
    /// per symbol), summed over every `stride`-th of `symbols`; with the number of symbols summed.
    static func delayPower(re: [Float], im: [Float], symbols S: Int, pilotFrequencies fp: [Double], delay: Double,
                           stride: Int) -> (sum: Double, count: Int) {
        let np = fp.count
        let cr = fp.map { cos(2 * Double.pi * $0 * delay) }, ci = fp.map { sin(2 * Double.pi * $0 * delay) }
        var acc = 0.0, used = 0
        var s = 0
        while s < S {
            var sr = 0.0, si = 0.0
            for p in 0..<np {
                let hr = Double(re[s * np + p]), hi = Double(im[s * np + p])
                sr += hr * cr[p] - hi * ci[p]
                si += hr * ci[p] + hi * cr[p]
            }
            acc += sr * sr + si * si
            used += 1
            s += stride
        }
        return (acc, used)
    }

    /// The preamble's timing takes the earliest arrival it sees; when the first path is in a fade
    /// during the preamble, a later one is taken, and the first, once back, reaches into the next
    /// symbol by the paths' distance. The delay profile here is the periodogram of the pilots over
    /// 6.4 ms of delays (−2.4...4 ms from the window's start), averaged over the whole run.
    static func earlyPath(pr: [Float], pim: [Float], symbols S: Int, pilots: [Int], carrierSpacing: Double, cyclicPrefix: Int) -> Int {
        let np = pilots.count
        guard np >= 4, S >= 1 else { return 0 }
        let fp = pilots.map { Double($0) * carrierSpacing }
        let span = 1 / (Double(pilots[1] - pilots[0]) * carrierSpacing)
        let taps = 64
        let delays = (0..<taps).map { -0.375 * span + span * Double($0) / Double(taps) }
        let stride = max(1, S / 300)
        let q = delays.map { delayPower(re: pr, im: pim, symbols: S, pilotFrequencies: fp, delay: $0, stride: stride).sum }
        let peak = q.max() ?? 0
        guard peak > 0 else { return 0 }
        let threshold = 0.3 * peak
        // The earliest and the latest delay above the threshold, each moved to its lobe's top.
        guard var first = q.firstIndex(where: { $0 > threshold }), var last = q.lastIndex(where: { $0 > threshold }) else { return 0 }
        while first + 1 < taps && q[first + 1] > q[first] { first += 1 }
        while last > 0 && q[last - 1] > q[last] { last -= 1 }
        let earliest = delays[first], latest = delays[last]
        guard earliest < -0.0001 else { return 0 }
        let prefix = Double(cyclicPrefix) / HFGrid.sampleRate
        let shift = min(0.0005 - earliest, prefix - 0.0001 - latest)
        return max(0, Int((shift * HFGrid.sampleRate).rounded()))
    }
}

/// Small dense solvers for the estimator's normal equations (Gaussian elimination, partial pivoting).
enum HFLinearSolve {
    /// Solves `m·x = r` (`m` n×n, row-major).
    static func real(_ m: [Double], _ r: [Double], _ n: Int) -> [Double] {
        var a = m, b = r
        for col in 0..<n {
            var pivot = col
            for row in (col + 1)..<max(col + 1, n) where abs(a[row * n + col]) > abs(a[pivot * n + col]) { pivot = row }
            if pivot != col {
                for k in 0..<n { a.swapAt(col * n + k, pivot * n + k) }
                b.swapAt(col, pivot)
            }
            let d = a[col * n + col]
            guard abs(d) > 1e-300 else { continue }
            for row in (col + 1)..<max(col + 1, n) {
                let f = a[row * n + col] / d
                if f == 0 { continue }
                for k in col..<n { a[row * n + k] -= f * a[col * n + k] }
                b[row] -= f * b[col]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for row in stride(from: n - 1, through: 0, by: -1) {
            var s = b[row]
            for k in (row + 1)..<max(row + 1, n) { s -= a[row * n + k] * x[k] }
            let d = a[row * n + row]
            x[row] = abs(d) > 1e-300 ? s / d : 0
        }
        return x
    }

    /// Solves the complex `m·x = r` (real and imaginary parts apart, `m` n×n, row-major).
    static func complex(_ mr: [Double], _ mi: [Double], _ rr: [Double], _ ri: [Double], _ n: Int) -> ([Double], [Double]) {
        var ar = mr, ai = mi, br = rr, bi = ri
        for col in 0..<n {
            var pivot = col
            func mag(_ row: Int) -> Double { ar[row * n + col] * ar[row * n + col] + ai[row * n + col] * ai[row * n + col] }
            for row in (col + 1)..<max(col + 1, n) where mag(row) > mag(pivot) { pivot = row }
            if pivot != col {
                for k in 0..<n {
                    ar.swapAt(col * n + k, pivot * n + k)
                    ai.swapAt(col * n + k, pivot * n + k)
                }
                br.swapAt(col, pivot)
                bi.swapAt(col, pivot)
            }
            let dr = ar[col * n + col], di = ai[col * n + col]
            let d2 = dr * dr + di * di
            guard d2 > 1e-300 else { continue }
            for row in (col + 1)..<max(col + 1, n) {
                // f = a[row][col] / d
                let xr = ar[row * n + col], xi = ai[row * n + col]
                let fr = (xr * dr + xi * di) / d2, fi = (xi * dr - xr * di) / d2
                if fr == 0 && fi == 0 { continue }
                for k in col..<n {
                    let cr = ar[col * n + k], ci = ai[col * n + k]
                    ar[row * n + k] -= fr * cr - fi * ci
                    ai[row * n + k] -= fr * ci + fi * cr
                }
                let cr = br[col], ci = bi[col]
                br[row] -= fr * cr - fi * ci
                bi[row] -= fr * ci + fi * cr
            }
        }
        var xr = [Double](repeating: 0, count: n), xi = xr
        for row in stride(from: n - 1, through: 0, by: -1) {
            var sr = br[row], si = bi[row]
            for k in (row + 1)..<max(row + 1, n) {
                let a = ar[row * n + k], b = ai[row * n + k]
                sr -= a * xr[k] - b * xi[k]
                si -= a * xi[k] + b * xr[k]
            }
            let dr = ar[row * n + row], di = ai[row * n + row]
            let d2 = dr * dr + di * di
            if d2 > 1e-300 {
                xr[row] = (sr * dr + si * di) / d2
                xi[row] = (si * dr - sr * di) / d2
            }
        }
        return (xr, xi)
    }
}
