#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the receiver measured of a transmission: the clock's drift, the SNR of the preamble and of
/// every carrier, the equalised points' error, and a sample of those points for a picture.
public struct OFDMStatistics: Sendable {
    /// Where the transmission began, in seconds of input.
    public var startSeconds = 0.0
    /// The sender's clock against ours, in parts per million (positive: the sender's is slower, its
    /// symbols arrive stretched).
    public var driftPPM = 0.0
    /// The preamble band's SNR in dB (signal over noise on its carriers).
    public var preambleSNR = 0.0
    /// The data grid and constellation, once the header was accepted.
    public var numerology: OFDMNumerology?
    public var constellation: QAMConstellation?
    /// SNR per carrier of the training (``OFDMNumerology/sounding``: the whole band, whatever the
    /// data grid), in dB, lowest carrier first.
    public var carrierSNR: [Double] = []
    /// Data symbols read.
    public var symbols = 0
    /// The mean squared error of the equalised points against their decisions, in dB below the
    /// points' power (an SNR as the decisions see it).
    public var decisionSNR: Double { errorCount > 0 ? -10 * log10(max(1e-15, errorSum / Double(errorCount))) : 0 }
    /// The drift followed at the end of the transmission, in parts per million.
    public var finalDriftPPM = 0.0
    /// How alike the last symbol's pilots were to what was sent (1: exactly; near 0: noise alone,
    /// the transmission has ended or the line was cut).
    public var pilotCoherence = 0.0
    /// For a grid trained on its own (the room grid): the share of the response's energy that
    /// arrives after the data grid's prefix, weighed by how much of a window it spoils, in dB (nil
    /// for the sounding's grids). Counted as noise on every carrier.
    public var lateReverberation: Double?
    /// Up to ``pointLimit`` equalised data points (re, im), for plotting the constellation.
    public var points: [(Float, Float)] = []
    /// The most points kept.
    public static let pointLimit = 20000

    var errorSum = 0.0
    var errorCount = 0

    /// Nothing measured yet.
    public init() {}

    /// The mean of ``carrierSNR`` (of the linear values) over the data grid's carriers, in dB.
    public var meanCarrierSNR: Double {
        guard let n = numerology else { return meanSNR(first: OFDMNumerology.sounding.firstCarrier, last: OFDMNumerology.sounding.lastCarrier) }
        return meanSNR(first: n.soundingCarriers.lowerBound, last: n.soundingCarriers.upperBound)
    }

    /// The mean of ``carrierSNR`` (of the linear values) over carriers `first...last`, in dB.
    public func meanSNR(first: Int, last: Int) -> Double {
        let t = OFDMNumerology.sounding
        let lo = max(0, first - t.firstCarrier), hi = min(carrierSNR.count - 1, last - t.firstCarrier)
        guard lo <= hi else { return 0 }
        let mean = carrierSNR[lo...hi].reduce(0) { $0 + pow(10, $1 / 10) } / Double(hi - lo + 1)
        return 10 * log10(mean)
    }

    /// The effective SNR over carriers `first...last` in dB: the SNR of a flat line with the same
    /// capacity (the mean of log2(1 + snr), turned back into an SNR), what a code across those carriers sees.
    public func effectiveSNR(first: Int, last: Int) -> Double {
        let t = OFDMNumerology.sounding
        let lo = max(0, first - t.firstCarrier), hi = min(carrierSNR.count - 1, last - t.firstCarrier)
        guard lo <= hi else { return -100 }
        let bits = carrierSNR[lo...hi].reduce(0) { $0 + log2(1 + pow(10, $1 / 10)) } / Double(hi - lo + 1)
        return 10 * log10(max(1e-10, pow(2, bits) - 1))
    }
}

extension OFDMDemodulator {
    /// The state of reading one transmission's data.
    struct DataState {
        let plan: OFDMDataPlan
        let transform: OFDMTransform
        let mapper: QAMMapper
        var trained = false
        /// Input position of the next window (training or data symbol).
        var position: Double
        /// The drift: input samples per 48 kHz sample are `nominal · (1 + drift)`.
        var drift: Double
        var index = 0
        var hre: [Float]
        var him: [Float]
        /// Noise variance per carrier after equalisation.
        var variance: [Float]
        let pilots: [Int]
        let data: [Int]
        var zre: [Float]
        var zim: [Float]

        init(plan: OFDMDataPlan, acquisition a: Acquisition, nominalStep: Double) {
            self.plan = plan
            let n = plan.numerology
            transform = OFDMTransform(size: n.fftSize)
            mapper = QAMMapper(plan.constellation)
            let p = OFDMNumerology.preamble, t = OFDMNumerology.training(for: n)
            let offset = OFDMDemodulator.backoff(p) + 2 * p.fftSize + p.cyclicPrefix + p.fftSize + t.cyclicPrefix - OFDMDemodulator.backoff(t)
            position = a.anchor + Double(offset) * a.step
            drift = a.step / nominalStep - 1
            let kc = n.carrierCount
            hre = [Float](repeating: 0, count: kc)
            him = hre
            variance = hre
            zre = hre
            zim = hre
            pilots = (0..<kc).filter { n.isPilot(n.firstCarrier + $0) }
            data = (0..<kc).filter { !n.isPilot(n.firstCarrier + $0) }
        }
    }

    enum SymbolOutcome {
        case needInput
        case symbol(Int)
        case end
    }

    /// Loop gains of the timing follower: the share of a symbol's timing error corrected at once,
    /// and the share fed into the drift.
    static let timingGain = 0.3
    static let driftGain = 0.03

    func readSymbol(_ d: inout DataState) -> SymbolOutcome {
        let n = d.plan.numerology
        if !d.trained {
            guard train(&d) else { return .needInput }
        }
        if let count = d.plan.symbolCount, d.index >= count { return .end }
        let step = nominalStep * (1 + d.drift)
        // A recording that stops before this window's end (the interpolator's reach included): the
        // transmission's last sample is the window's, so one a few samples short would be read with
        // silence. The window is read that much earlier in its prefix instead, up to half of it (the
        // rest stays for the line's echoes); a recording shorter still is truncated there.
        var early = 0
        if let end = inputEnd {
            while buffer.lastSample(from: d.position - Double(early) * step, step: step, count: n.fftSize) >= end {
                early += 1
                if early > n.cyclicPrefix / 2 { return .needInput }
            }
        }
        guard readCarriers(d.transform, at: d.position - Double(early) * step, step: step, first: n.firstCarrier, re: &d.zre, im: &d.zim) else {
            return .needInput
        }
        if early > 0 {
            // A window `early` samples before its place turns carrier k by −2πk·early/N: turned back,
            // so the pilots, the decisions and the timing see the symbol where it is.
            let turn = -2 * Double.pi * Double(early) / Double(n.fftSize)
            Self.rotate(&d.zre, &d.zim, first: n.firstCarrier, by: PhaseFit(offset: turn * Double(n.firstCarrier), slope: turn, centre: 0))
        }
        buffer.discard(before: Int64(d.position.rounded(.down)) - 64)
        let kc = n.carrierCount
        for i in 0..<kc { (d.zre[i], d.zim[i]) = Self.divide((d.zre[i], d.zim[i]), by: (d.hre[i], d.him[i])) }
        let signs = OFDMSequences.pilotSigns(symbol: d.index, count: d.pilots.count)
        let fit = Self.pilotPhase(d.zre, d.zim, pilots: d.pilots, signs: signs, first: n.firstCarrier, variance: d.variance)
        Self.rotate(&d.zre, &d.zim, first: n.firstCarrier, by: fit)
        // How alike the pilots are to what was sent: near 1 while the signal is there, small in noise alone.
        var along = 0.0, total = 0.0
        for (j, i) in d.pilots.enumerated() {
            let r = Double(d.zre[i] * signs[j]), m = Double((d.zre[i] * d.zre[i] + d.zim[i] * d.zim[i]).squareRoot())
            along += r
            total += m
        }
        statistics.pilotCoherence = total > 0 ? along / total : 0
        // Decisions refine the phase line: every carrier whose decision is safe counts.
        var known = [(Float, Float)](repeating: (0, 0), count: kc)
        for (j, i) in d.pilots.enumerated() { known[i] = (signs[j], 0) }
        for i in d.data { known[i] = d.mapper.decide(d.zre[i], d.zim[i]) }
        let safe = d.mapper.constellation.halfSpacing * 0.5
        var sw = 0.0, swx = 0.0, swy = 0.0, swxx = 0.0, swxy = 0.0
        let centre = Double(kc / 2)
        for i in 0..<kc {
            let (xr, xi) = known[i]
            let er = d.zre[i] - xr, ei = d.zim[i] - xi
            guard er * er + ei * ei < safe * safe else { continue }
            let mag = xr * xr + xi * xi
            guard mag > 0 else { continue }
            // The phase of z against its decision (small).
            let phi = Double((d.zim[i] * xr - d.zre[i] * xi) / mag)
            let w = Double(mag / max(d.variance[i], 1e-12))
            let x = Double(i) - centre
            sw += w; swx += w * x; swy += w * phi; swxx += w * x * x; swxy += w * x * phi
        }
        var refine = PhaseFit(offset: 0, slope: 0, centre: centre)
        let det = sw * swxx - swx * swx
        if sw > 0 && det > 1e-9 * sw * swxx {
            refine.slope = (sw * swxy - swx * swy) / det
            refine.offset = (swy - refine.slope * swx) / sw
            Self.rotate(&d.zre, &d.zim, first: n.firstCarrier, by: refine)
        }
        // Soft bits of the data carriers.
        let bits = d.mapper.constellation.bitsPerPoint
        if softBits.count != d.data.count * bits { softBits = [Float](repeating: 0, count: d.data.count * bits) }
        var errorSum = 0.0
        softBits.withUnsafeMutableBufferPointer { out in
            for (j, i) in d.data.enumerated() {
                d.mapper.softBits(d.zre[i], d.zim[i], noiseVariance: d.variance[i], into: out, at: j * bits)
            }
        }
        // Follow the channel and the noise where decisions are safe; keep some points to draw.
        // The noise follows every decision on 16,384-QAM: near the SNR it needs, four in five of its
        // points are further from their decision than the safe distance, and the noise of the fifth
        // that are not is a fifth of the real one, more so on the weaker carriers (the top of the
        // band): their soft bits were too sure against the others', which lost blocks of 5/6 at 40 dB.
        let everyDecision = d.mapper.constellation == .qam16384
        for i in 0..<kc {
            let (xr, xi) = known[i]
            let er = d.zre[i] - xr, ei = d.zim[i] - xi
            let e2 = er * er + ei * ei
            errorSum += Double(e2)
            if everyDecision { d.variance[i] = 0.98 * d.variance[i] + 0.02 * e2 }
            guard e2 < safe * safe else { continue }
            let mag = xr * xr + xi * xi
            guard mag > 0 else { continue }
            // r = z / x: the channel's change since the estimate.
            let rr = (d.zre[i] * xr + d.zim[i] * xi) / mag - 1, ri = (d.zim[i] * xr - d.zre[i] * xi) / mag
            let mu: Float = 0.05
            let hr = d.hre[i], hi = d.him[i]
            d.hre[i] = hr + mu * (hr * rr - hi * ri)
            d.him[i] = hi + mu * (hr * ri + hi * rr)
            if !everyDecision { d.variance[i] = 0.98 * d.variance[i] + 0.02 * e2 }
        }
        statistics.errorSum += errorSum
        statistics.errorCount += kc
        if statistics.points.count < OFDMStatistics.pointLimit {
            for i in d.data where statistics.points.count < OFDMStatistics.pointLimit { statistics.points.append((d.zre[i], d.zim[i])) }
        }
        // The timing error: the phase slope's delay, corrected in part now and fed into the drift.
        let slope = fit.slope + refine.slope
        let delay = -slope * Double(n.fftSize) / (2 * .pi)
        d.position += Double(n.symbolLength) * step + Self.timingGain * delay * nominalStep
        d.drift += Self.driftGain * delay / Double(n.symbolLength)
        d.index += 1
        statistics.symbols = d.index
        statistics.finalDriftPPM = d.drift * 1e6
        return .symbol(d.index - 1)
    }

    /// Carriers on either side that the training's channel estimate is fitted over for data grid `n`
    /// (see ``smoothChannel(_:halfWidth:)``): the grid's prefix bounds the echoes it expects, and a
    /// channel with echoes as long as the prefix turns once every fftSize/prefix carriers, so the fit
    /// spans an eighth of that: 8 carriers either side on the cable grids, 2 on the air grid.
    static func channelHalfWidth(_ n: OFDMNumerology) -> Int { max(1, n.fftSize / (8 * max(1, n.cyclicPrefix))) }

    /// The channel across the carriers, fitted: the line's delay (the mean phase step from a carrier
    /// to the next) is turned out, a straight line is fitted to the real and the imaginary parts over
    /// ±`halfWidth` carriers around each (fewer at the band's ends, where the line is extrapolated),
    /// and the delay turned back in. The line is smooth at this spacing (its echoes are shorter than
    /// the prefix), so this keeps the channel and averages the noise of 2·halfWidth + 1 carriers: a
    /// 3-carrier average (the estimate until 2026-12-06) left it at 0.19 of a symbol's noise, which cost
    /// the first symbols 0.75 dB while the decisions had not yet refined it.
    static func smoothChannel(_ h: [(Float, Float)], halfWidth: Int) -> [(Float, Float)] {
        let n = h.count
        guard n > 2 * halfWidth + 1 else { return h }
        var sr = 0.0, si = 0.0
        for i in 1..<n {
            sr += Double(h[i].0 * h[i - 1].0 + h[i].1 * h[i - 1].1)
            si += Double(h[i].1 * h[i - 1].0 - h[i].0 * h[i - 1].1)
        }
        let step = atan2(si, sr)
        var yr = [Double](repeating: 0, count: n), yi = yr
        for i in 0..<n {
            let a = -step * Double(i), c = cos(a), s = sin(a)
            yr[i] = Double(h[i].0) * c - Double(h[i].1) * s
            yi[i] = Double(h[i].0) * s + Double(h[i].1) * c
        }
        var out = h
        for i in 0..<n {
            let lo = max(0, i - halfWidth), hi = min(n - 1, i + halfWidth)
            var s0 = 0.0, s1 = 0.0, s2 = 0.0, r0 = 0.0, r1 = 0.0, q0 = 0.0, q1 = 0.0
            for j in lo...hi {
                let x = Double(j - i)
                s0 += 1; s1 += x; s2 += x * x
                r0 += yr[j]; r1 += x * yr[j]
                q0 += yi[j]; q1 += x * yi[j]
            }
            let det = s0 * s2 - s1 * s1
            guard det > 0 else { continue }
            // The fitted line's value at x = 0 (carrier i).
            let fr = (s2 * r0 - s1 * r1) / det, fi = (s2 * q0 - s1 * q1) / det
            let a = step * Double(i), c = cos(a), s = sin(a)
            out[i] = (Float(fr * c - fi * s), Float(fr * s + fi * c))
        }
        return out
    }

    /// Reads the training (on the sounding grid, the whole band): the timing, the drift again, the
    /// channel and the noise on every carrier, then the data grid's share of them. False when more
    /// input is needed.
    private func train(_ d: inout DataState) -> Bool {
        let n = d.plan.numerology
        let t = OFDMNumerology.training(for: n)
        let kc = t.carrierCount
        var step = nominalStep * (1 + d.drift)
        guard buffer.canRead(from: d.position, step: step, count: 2 * t.fftSize + 64) else { return false }
        let known = OFDMSequences.qpsk(count: kc, seed: OFDMSequences.trainingSeed)
        var are = [Float](repeating: 0, count: kc), aim = are, bre = are, bim = are
        _ = readCarriers(d.transform, at: d.position, step: step, first: t.firstCarrier, re: &are, im: &aim)
        for i in 0..<kc { (are[i], aim[i]) = Self.divide((are[i], aim[i]), by: known[i]) }
        if let peak = Self.impulsePeak(d.transform, first: t.firstCarrier, re: are, im: aim) {
            let shift = peak - Self.backoff(t)
            if abs(shift) <= t.cyclicPrefix / 2 { d.position += Double(shift) * step }
        }
        _ = readCarriers(d.transform, at: d.position, step: step, first: t.firstCarrier, re: &are, im: &aim)
        _ = readCarriers(d.transform, at: d.position + Double(t.fftSize) * step, step: step, first: t.firstCarrier, re: &bre, im: &bim)
        d.drift += Self.delaySlope(are, aim, bre, bim)
        step = nominalStep * (1 + d.drift)
        // Both read again on the corrected clock (a window read on the old one is stretched).
        _ = readCarriers(d.transform, at: d.position, step: step, first: t.firstCarrier, re: &are, im: &aim)
        _ = readCarriers(d.transform, at: d.position + Double(t.fftSize) * step, step: step, first: t.firstCarrier, re: &bre, im: &bim)
        var noise = [Float](repeating: 0, count: kc)
        var h = [(Float, Float)](repeating: (0, 0), count: kc)
        for i in 0..<kc {
            let a = Self.divide((are[i], aim[i]), by: known[i]), b = Self.divide((bre[i], bim[i]), by: known[i])
            h[i] = ((a.0 + b.0) / 2, (a.1 + b.1) / 2)
            let dr = a.0 - b.0, di = a.1 - b.1
            noise[i] = (dr * dr + di * di) / 2
        }
        let symbolNoise = Self.smooth(noise, halfWidth: 8)
        var snr = [Double](repeating: 0, count: kc)
        var light = [(Float, Float)](repeating: (0, 0), count: kc)
        for i in 0..<kc {
            // The SNR from a light smoothing across neighbouring carriers: a line whose echoes are
            // longer than the data grid's prefix must show its notches (rate adaptation reads them).
            // Not on a grid of longer symbols: a room's response changes from one 1.5 Hz carrier to the next.
            let l = h[max(0, i - 1)], c = h[i], r = h[min(kc - 1, i + 1)]
            light[i] = t != OFDMNumerology.sounding ? c : (0.25 * l.0 + 0.5 * c.0 + 0.25 * r.0, 0.25 * l.1 + 0.5 * c.1 + 0.25 * r.1)
            snr[i] = 10 * log10(Double(max(light[i].0 * light[i].0 + light[i].1 * light[i].1, 1e-20) / max(symbolNoise[i], 1e-20)))
        }
        // The equaliser's channel: on 16,384-QAM fitted over as many carriers as the data grid's
        // prefix allows; elsewhere the light smoothing. (Fitted on every grid, the link's speaker test
        // failed: the cable grid's fit over ±8 carriers filled in a 1.5 ms echo's notches, and the
        // link never fell back to the air grid. A guard that kept the light smoothing where the two
        // disagreed by more than the noise did not help; not found in the time.) On the near grid
        // too (``OFDMDataPlan/fitChannel``): its 128-sample prefix fits ±4 carriers, where a 1.5 ms
        // echo's phase turns by half a radian, and the speaker-like line's lowest SNR for 64 KiB
        // through it was 0.5 dB lower with the fit than with the light smoothing alone.
        var hs = light
        if d.plan.fitChannel {
            // Where the fit strays from the light estimate by more than that one's noise allows (0.19
            // of a symbol's; the bound is half of it), the line is not straight over ±8 carriers
            // there: the 20 Hz high-pass's phase at the band's bottom, the low-pass's slope at its
            // top. Those carriers keep the light estimate.
            let fit = Self.smoothChannel(h, halfWidth: Self.channelHalfWidth(n))
            for i in 0..<kc {
                let dr = fit[i].0 - light[i].0, di = fit[i].1 - light[i].1
                if dr * dr + di * di <= 0.5 * symbolNoise[i] { hs[i] = fit[i] }
            }
        }
        // The data grid's carriers are a run of the training's. Every symbol has the same power, so a
        // carrier of a grid with fewer carriers is louder: by the square root of the ratio.
        let offset = n.firstCarrier - t.firstCarrier
        let louder = (Float(t.carrierCount) / Float(n.carrierCount)).squareRoot()
        // A grid trained on its own (the room grid): the reverberation that outlasts the prefix is
        // noise the training's two equal symbols do not show. Its share of the response, weighed
        // by how much of a window each late path spoils, is added to every carrier's noise.
        let late = t == OFDMNumerology.sounding ? 0 : Self.lateShare(d.transform, training: t, h: h, prefix: n.cyclicPrefix - Self.backoff(n))
        var meanPower: Float = 0
        for i in 0..<kc { meanPower += hs[i].0 * hs[i].0 + hs[i].1 * hs[i].1 }
        meanPower /= Float(kc)
        for i in 0..<n.carrierCount {
            d.hre[i] = hs[offset + i].0 * louder
            d.him[i] = hs[offset + i].1 * louder
            let p = d.hre[i] * d.hre[i] + d.him[i] * d.him[i]
            let noise = max(symbolNoise[offset + i], 1e-20) + late * meanPower * louder * louder
            d.variance[i] = noise / max(p, 1e-20)
        }
        if t != OFDMNumerology.sounding {
            for i in 0..<kc { snr[i] -= 10 * log10(1 + Double(late * meanPower / max(symbolNoise[i], 1e-20))) }
        }
        statistics.lateReverberation = late > 0 ? 10 * log10(Double(late)) : nil
        statistics.carrierSNR = t == OFDMNumerology.sounding ? snr : Self.onSounding(snr, of: t)
        // The first data symbol's window: after both training symbols and its own prefix.
        d.position += Double(2 * t.fftSize + n.cyclicPrefix + Self.backoff(t) - Self.backoff(n)) * step
        d.trained = true
        return true
    }

    /// The share of the channel's energy (`h`, on the training's carriers) that arrives more than
    /// `prefix` samples after the first path, each path weighed by the share of a window it spoils (a
    /// path `e` samples past the prefix puts the neighbouring symbol into `e` samples of the window:
    /// about `2e/N` of its power is interference, all of it from `N/2` on), as a fraction of the
    /// whole response's.
    static func lateShare(_ transform: OFDMTransform, training t: OFDMNumerology, h: [(Float, Float)], prefix: Int) -> Float {
        let size = transform.size
        var env = [Float](repeating: 0, count: size)
        let re = h.map(\.0), im = h.map(\.1)
        re.withUnsafeBufferPointer { r in
            im.withUnsafeBufferPointer { i in env.withUnsafeMutableBufferPointer { transform.envelope(first: t.firstCarrier, re: r, im: i, into: $0) } }
        }
        // The response's start: the earliest sample within 64 before the strongest path that holds
        // a tenth of its energy.
        var best = 0
        for i in 0..<size where env[i] > env[best] { best = i }
        var start = best
        for j in 1...64 {
            let i = (best - j + size) % size
            if env[i] > 0.1 * env[best] { start = i }
        }
        // Paths from the start on; the circle's last eighth is taken as paths before the start
        // (the filters' pre-echo, noise) and left out.
        var total: Float = 0, late: Float = 0
        for j in 0..<(size - size / 8) {
            let e = env[(start + j) % size]
            total += e
            let excess = j - prefix
            if excess > 0 { late += e * min(1, 2 * Float(excess) / Float(size)) }
        }
        return total > 0 ? late / total : 0
    }

    /// Per-carrier SNRs of a training on a grid of longer symbols, put on the ``OFDMNumerology/sounding``
    /// grid's carriers (what ``OFDMStatistics/carrierSNR`` holds): the mean of the linear values of
    /// the carriers within each sounding carrier's spacing; −30 dB where the training had none.
    static func onSounding(_ snr: [Double], of t: OFDMNumerology) -> [Double] {
        let s = OFDMNumerology.sounding
        let ratio = t.fftSize / s.fftSize
        return (s.firstCarrier...s.lastCarrier).map { k in
            let lo = max(t.firstCarrier, k * ratio - ratio / 2), hi = min(t.lastCarrier, k * ratio + (ratio - 1) / 2)
            guard lo <= hi else { return -30 }
            let mean = (lo...hi).reduce(0.0) { $0 + pow(10, snr[$1 - t.firstCarrier] / 10) } / Double(hi - lo + 1)
            return 10 * log10(max(mean, 1e-3))
        }
    }
}
