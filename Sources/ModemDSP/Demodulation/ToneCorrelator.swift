#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Running quadrature correlation of a sample stream against the mark and space tones.
///
/// The stream is mixed with both tones and the products are summed in groups of `decimation`
/// samples; the running (prefix) sums of those groups are stored, so the correlation over any
/// window, at any fractional start and length, costs a few subtractions (positions between group
/// boundaries are interpolated linearly). A third-order high-pass (three one-pole stages, corner at
/// a sixth of the lower tone) runs at the group rate and is applied to the group sums, which removes offsets and most
/// mains hum at a fraction of the cost of filtering every sample.
///
/// The phase reference is global (ω times the absolute sample index), so the phases of
/// successive windows can be compared. Memory is bounded: ``discard(before:)`` drops history.
struct ToneCorrelator {
    /// Samples per stored group (1...8).
    let decimation: Int
    let markOmega: Double
    let spaceOmega: Double

    /// Absolute index of the first group stored; `record[0]` is the prefix sum before it.
    private(set) var baseGroup = 0
    /// Number of valid records (prefix sums), one more than the groups stored.
    private(set) var count = 1
    /// Prefix sums per group boundary: lanes 0-3 mark I/Q, space I/Q; 4 Σx; 5 Σx² (DC removed).
    private var record: [SIMD8<Float>]

    // Mixing tables: one whole period of both tones, so no phasor arithmetic per sample.
    private let period: Int
    private var table: [SIMD4<Float>]  // (cos m, sin m, cos s, sin s) at n mod period
    private var tablePos = 0           // absolute sample index mod period of the next sample
    private var group = PartialGroup()  // partial group being summed
    /// Sum of `decimation` consecutive table entries starting at each table position (periodic plans).
    private var groupRef: [SIMD4<Float>] = []
    private var groupFill = 0
    private var samplesSeen = 0
    private var fallback: PhasorFallback?
    private var dc: Float = 0          // first stage's low-pass (the DC estimate)
    private var dc2: Float = 0         // second stage's low-pass, of what the first stage leaves
    private var dc3: Float = 0         // third stage likewise
    private var dcPrimed = false
    private let dcAlpha: Float

    init(sampleRate: Double, markFrequency: Double, spaceFrequency: Double, samplesPerBit: Double) {
        markOmega = 2 * Double.pi * markFrequency / sampleRate
        spaceOmega = 2 * Double.pi * spaceFrequency / sampleRate
        decimation = max(1, min(8, Int(samplesPerBit / 10)))
        record = [SIMD8<Float>](repeating: .zero, count: 1 << 14)
        let corner = min(markFrequency, spaceFrequency) / 6
        dcAlpha = Float(1 - exp(-2 * Double.pi * corner * Double(decimation) / sampleRate))
        // The tones repeat exactly after `period` samples when both frequencies are rational
        // multiples of the sample rate with a small common period.
        let p = ToneCorrelator.commonPeriod(sampleRate: sampleRate, markFrequency: markFrequency, spaceFrequency: spaceFrequency)
        if let p {
            period = p
            let wm = markOmega, ws = spaceOmega
            table = (0..<p).map { n in
                let d = Double(n)
                return SIMD4(Float(cos(wm * d)), Float(sin(wm * d)), Float(cos(ws * d)), Float(sin(ws * d)))
            }
            let dec = decimation
            let tab = table
            groupRef = (0..<p).map { t in
                var r = SIMD4<Float>()
                for k in 0..<dec { r += tab[(t + k) % p] }
                return r
            }
        } else {
            period = 4096
            table = [SIMD4<Float>](repeating: .zero, count: 4096)
            fallback = PhasorFallback(markOmega: markOmega, spaceOmega: spaceOmega)
            fallback!.fill(&table, startingAt: 0)
        }
    }

    /// The smallest n <= 65536 with markFrequency·n/sampleRate and spaceFrequency·n/sampleRate both whole, if any.
    static func commonPeriod(sampleRate: Double, markFrequency: Double, spaceFrequency: Double) -> Int? {
        func period(_ f: Double) -> Int? {
            // Work in millihertz to accept frequencies like 45.45-baud tone plans given to 0.001 Hz.
            let fs = (sampleRate * 1000).rounded(), ff = (f * 1000).rounded()
            guard abs(fs - sampleRate * 1000) < 1e-6, abs(ff - f * 1000) < 1e-6, fs > 0, ff > 0 else { return nil }
            let g = gcd(Int(fs), Int(ff))
            return Int(fs) / g
        }
        guard let a = period(markFrequency), let b = period(spaceFrequency) else { return nil }
        let l = a / gcd(a, b) * b
        return l <= 65536 ? l : nil
    }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    mutating func reset() {
        baseGroup = 0; count = 1; record[0] = .zero; tablePos = 0; group = PartialGroup(); groupFill = 0; samplesSeen = 0
        dc = 0; dc2 = 0; dc3 = 0; dcPrimed = false
        if fallback != nil {
            fallback = PhasorFallback(markOmega: markOmega, spaceOmega: spaceOmega)
            fallback!.fill(&table, startingAt: 0)
        }
    }

    /// Absolute sample index one past the last complete group.
    var end: Int { (baseGroup + count - 1) * decimation }
    /// Absolute sample index of the first sample still available.
    var start: Int { baseGroup * decimation }

    /// Appends samples.
    mutating func append(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        let total = samples.count
        while offset < total {
            let n = min(period - tablePos, total - offset)
            appendSpan(samples.baseAddress! + offset, count: n)
            offset += n
            tablePos += n
            if tablePos == period {
                tablePos = 0
                if fallback != nil { fallback!.fill(&table, startingAt: samplesSeen) }
            }
        }
    }

    private mutating func ensureCapacity(extraGroups: Int) {
        if count + extraGroups > record.count {
            var newCount = record.count
            while count + extraGroups > newCount { newCount *= 2 }
            record.append(contentsOf: repeatElement(.zero, count: newCount - record.count))
        }
    }

    private mutating func appendSpan(_ x: UnsafePointer<Float>, count n: Int) {
        ensureCapacity(extraGroups: n / decimation + 2)
        let d = decimation
        var g = group
        var fill = groupFill
        var c = count
        let t0 = tablePos
        var dcv = dc
        if !dcPrimed, n > 0 {
            // Start the DC estimate at the first samples' mean so an offset does not ring.
            var m: Float = 0
            for i in 0..<min(n, 256) { m += x[i] }
            dcv = m / Float(min(n, 256))
            dcPrimed = true
        }
        let fd = Float(d)
        let alpha = dcAlpha
        var dcw = dc2, dcx = dc3
        // Removes the running low-frequency estimate (three cascaded one-pole stages: a third-order
        // high-pass at the group rate) from a finished group's sums, then updates the estimate.
        @inline(__always) func closed(_ p: SIMD4<Float>, _ sx: Float, _ sxx: Float, _ ref: SIMD4<Float>) -> SIMD8<Float> {
            let low = dcv + dcw + dcx
            let q = p - low * ref
            let e = max(0, sxx - 2 * low * sx + fd * low * low)
            let r = SIMD8<Float>(q.x, q.y, q.z, q.w, sx - fd * low, e, sxx, sx)
            let mean = sx / fd
            // Stage k low-passes what the stages before it leave: the sum is the low-frequency
            // part of a third-order high-pass, (1 - LP)^3.
            dcv += alpha * (mean - dcv)
            dcw += alpha * (mean - dcv - dcw)
            dcx += alpha * (mean - dcv - dcw - dcx)
            return r
        }
        let periodic = fallback == nil
        table.withUnsafeBufferPointer { tab in
            groupRef.withUnsafeBufferPointer { gref in
                record.withUnsafeMutableBufferPointer { rec in
                    var acc = rec[c - 1]
                    var i = 0
                    // Finish a partial group first.
                    while fill != 0 && i < n {
                        let v = x[i], t = tab[t0 + i]
                        g.p += t * v; g.sx += v; g.sxx += v * v; g.ref += t
                        fill += 1; i += 1
                        if fill == d {
                            acc += closed(g.p, g.sx, g.sxx, g.ref); rec[c] = acc; c += 1
                            g = PartialGroup(); fill = 0
                        }
                    }
                    // Whole groups: the reference sums come from a table when the tones are periodic.
                    while i + d <= n {
                        // Two interleaved accumulators halve the dependency chains.
                        var pa = SIMD4<Float>(), pb = SIMD4<Float>()
                        var sxa: Float = 0, sxb: Float = 0, sxxa: Float = 0, sxxb: Float = 0
                        var ref = SIMD4<Float>()
                        let base = t0 + i
                        // Pointers and wrapping index steps: k stays below d, so nothing can
                        // overflow, and the loop carries no overflow checks.
                        let xs = x + i, ts = tab.baseAddress! + base
                        var k = 0
                        while k &+ 1 < d {
                            let v0 = xs[k], v1 = xs[k &+ 1]
                            pa += ts[k] * v0
                            pb += ts[k &+ 1] * v1
                            sxa += v0; sxb += v1
                            sxxa += v0 * v0; sxxb += v1 * v1
                            k &+= 2
                        }
                        if k < d {
                            let v0 = xs[k]
                            pa += ts[k] * v0; sxa += v0; sxxa += v0 * v0
                        }
                        let p = pa + pb, sx = sxa + sxb, sxx = sxxa + sxxb
                        if periodic {
                            ref = gref[base]
                        } else {
                            for k in 0..<d { ref += tab[base + k] }
                        }
                        acc += closed(p, sx, sxx, ref)
                        rec[c] = acc
                        c += 1
                        i += d
                    }
                    while i < n {
                        let v = x[i], t = tab[t0 + i]
                        g.p += t * v; g.sx += v; g.sxx += v * v; g.ref += t
                        fill += 1; i += 1
                    }
                }
            }
        }
        dc = dcv
        dc2 = dcw
        dc3 = dcx
        group = g
        groupFill = fill
        count = c
        samplesSeen += n
    }

    /// The prefix record at a fractional absolute sample position (linear interpolation between groups).
    @inline(__always)
    func prefix(at position: Double) -> SIMD8<Float> {
        let g = position / Double(decimation) - Double(baseGroup)
        let clamped = max(0, min(g, Double(count - 1)))
        let i = Int(clamped)
        if i + 1 >= count { return record[i] }
        let f = Float(clamped - Double(i))
        let a = record[i]
        return a + (record[i + 1] - a) * f
    }

    /// Correlations over the window between two prefix records.
    @inline(__always)
    static func window(_ a: SIMD8<Float>, _ b: SIMD8<Float>, length: Float) -> ToneWindow {
        let d = b - a
        return ToneWindow(markI: d[0], markQ: d[1], spaceI: d[2], spaceQ: d[3], energy: max(0, d[5]),
                          variance: max(0, d[6] - d[7] * d[7] / max(1, length)), length: length)
    }

    /// Correlations over the window [start, stop) in absolute samples.
    @inline(__always)
    func window(from start: Double, to stop: Double) -> ToneWindow {
        ToneCorrelator.window(prefix(at: start), prefix(at: stop), length: Float(stop - start))
    }

    /// Drops everything before absolute sample `position` (rebasing the prefix sums there to zero).
    mutating func discard(before position: Int) {
        let drop = position / decimation - baseGroup
        guard drop > 0, drop < count else { return }
        let z = record[drop]
        let remaining = count - drop
        record.withUnsafeMutableBufferPointer { r in
            for i in 0..<remaining { r[i] = r[i + drop] - z }
        }
        count = remaining
        baseGroup += drop
    }
}

/// Sums of a group of samples not yet complete.
struct PartialGroup {
    var p = SIMD4<Float>()
    var sx: Float = 0
    var sxx: Float = 0
    var ref = SIMD4<Float>()
}

/// Phasor generation for tone plans with no short common period (rare: irrational-looking tones).
struct PhasorFallback {
    let markOmega: Double
    let spaceOmega: Double
    init(markOmega: Double, spaceOmega: Double) { self.markOmega = markOmega; self.spaceOmega = spaceOmega }

    /// Fills `table` with the phasors of samples `start ..< start + table.count`.
    func fill(_ table: inout [SIMD4<Float>], startingAt start: Int) {
        let twoPi = 2 * Double.pi
        let pm = (markOmega * Double(start)).truncatingRemainder(dividingBy: twoPi)
        let ps = (spaceOmega * Double(start)).truncatingRemainder(dividingBy: twoPi)
        for n in 0..<table.count {
            let d = Double(n)
            table[n] = SIMD4(Float(cos(pm + markOmega * d)), Float(sin(pm + markOmega * d)),
                             Float(cos(ps + spaceOmega * d)), Float(sin(ps + spaceOmega * d)))
        }
    }
}

/// The correlations of one window of samples with the two tones.
struct ToneWindow {
    var markI: Float, markQ: Float, spaceI: Float, spaceQ: Float
    /// Sum of squared samples (DC removed by the running high-pass: what the decisions use).
    var energy: Float
    /// Sum of squared deviations from the window's own mean: the signal's energy as a meter reads
    /// it (the running high-pass's estimate wanders with the tones and inflates ``energy`` by up to
    /// 1.5 dB, which the decisions do not mind but a level reading would).
    var variance: Float
    /// Window length in samples.
    var length: Float

    /// Squared magnitude of the mark correlation.
    @inline(__always) var mark: Float { markI * markI + markQ * markQ }
    /// Squared magnitude of the space correlation.
    @inline(__always) var space: Float { spaceI * spaceI + spaceQ * spaceQ }
    /// Soft bit in -1...1 (+1 pure mark, -1 pure space) with the space energy scaled by `balance` (mark energy / space energy of the
    /// signal), so unequal tone levels (de-emphasis, a tilted line) do not bias decisions.
    @inline(__always) func soft(balance: Float) -> Float {
        let m = mark, s = space * balance
        return (m - s) / (m + s + 1e-30)
    }
    /// Fraction of the window's energy that is in the two tones (about 1 for a clean tone).
    @inline(__always) var toneFraction: Float {
        (mark + space) * 2 / (length * energy + 1e-30)
    }
}
