#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The last pass of the analysis: a crude FSK demodulator over the band found by the first pass,
/// measuring the two tones and the rhythm of the keying.
///
/// The band goes through an ``AnalysisDiscriminator`` (mixed down around the slicing frequency,
/// low-pass filtered, instantaneous frequency). Sliced at the centre with a little hysteresis, it
/// gives the transitions and the runs between them:
/// - the baud rate is the rate at which the intervals between transitions are most nearly whole
///   multiples of one bit (`IntervalHistogram`);
/// - each tone is the slope of a least-squares line of the runs' phase advance against their
///   length (`RunPhaseRegression`), which the filter's transients at the runs' ends do not bias;
///   when the runs are all alike, the phase advance over a short lag of the samples furthest from
///   any transition (`SettledBuffer`) is used instead;
/// - long runs on each tone tell which one is held when idle.
///
/// Memory is fixed: a few histograms and a buffer of three guard lengths.
public struct KeyingSurvey: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The centre of the band (the slicing frequency), in Hz.
    public let centerFrequency: Double
    /// Half the band's width (the low-pass cut-off), in Hz.
    public let halfWidth: Double
    /// Typical in-band power the squelch was set from (full scale²).
    public let signalPower: Double

    private let fs: Double
    private var front: AnalysisDiscriminator
    // Slicer.
    private let hysteresis: Double
    private let gateLevel: Double
    private var n = 0
    private var active = false
    private var upper = false
    private var previousDeviation = 0.0
    private var lastCrossing = 0.0
    private var runStart = 0.0
    private var runStartIndex = 0
    private var lastTransition: Double?
    /// Transitions seen.
    public private(set) var transitionCount = 0
    private let lag: Int
    // Samples of the current run, until their distance from its end is known.
    private var settled: SettledBuffer
    private var intervals: IntervalHistogram
    private var runs: [RunHistogram]        // [lower, upper]
    // Phase advance of each run against its length, for the tones.
    private var phase: RunPhaseRegression
    private var runSamples = 0
    private var runFrequencySum = 0.0

    /// Creates the survey for a band.
    /// - Parameters:
    ///   - sampleRate: samples per second, in Hz (>= 100).
    ///   - centerFrequency: where to slice, in Hz, between the two tones (0 < f < sampleRate/2).
    ///   - halfWidth: half the band's width, in Hz; clamped to 15...0.45·sampleRate.
    ///   - signalPower: typical power of the signal in the band (full scale²), for the squelch that
    ///     ignores gaps; 0 to never squelch.
    public init(sampleRate: Int, centerFrequency: Double, halfWidth: Double, signalPower: Double) {
        precondition(sampleRate >= 100, "sample rate must be >= 100 Hz")
        precondition(centerFrequency > 0 && centerFrequency < Double(sampleRate) / 2,
                     "centre frequency \(centerFrequency) Hz is outside 0 < f < sampleRate/2")
        self.sampleRate = sampleRate
        fs = Double(sampleRate)
        self.centerFrequency = centerFrequency
        let hw = min(max(halfWidth, 15), 0.45 * Double(sampleRate))
        self.halfWidth = hw
        self.signalPower = max(signalPower, 0)
        front = AnalysisDiscriminator(sampleRate: fs, centerFrequency: centerFrequency, halfWidth: hw)
        lag = front.lag
        hysteresis = 0.05 * hw
        // |z|² of a tone of power P after mixing is P/2; squelch 20 dB under the typical level.
        gateLevel = self.signalPower / 2 * 0.01
        let guardLength = max(1, Int((0.75 * fs / hw).rounded()))
        settled = SettledBuffer(guardLength: guardLength, toneLow: centerFrequency - 2 * hw, toneBinWidth: hw / 500)
        let minInterval = max(2, fs / (4 * hw))
        intervals = IntervalHistogram(minimum: minInterval, maximum: 0.5 * fs)
        runs = Array(repeating: RunHistogram(), count: 2)
        phase = RunPhaseRegression()
    }

    /// Adds samples (full scale ±1), in blocks of any size.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        for x in samples { step(Double(x)) }
    }

    /// Adds samples from an array.
    public mutating func process(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { process($0) }
    }

    /// Forgets everything processed.
    public mutating func reset() {
        self = KeyingSurvey(copyingSettingsOf: self)
    }

    private init(copyingSettingsOf o: KeyingSurvey) {
        self.init(sampleRate: o.sampleRate, centerFrequency: o.centerFrequency, halfWidth: o.halfWidth,
                  signalPower: o.signalPower)
    }

    private mutating func step(_ x: Double) {
        let index = n
        n += 1
        guard let o = front.step(x) else { return }
        let freq = o.frequency, level = o.level, lagRe = o.lagRe, lagIm = o.lagIm
        let deviation = freq - centerFrequency

        if level <= gateLevel {
            if active { endRun(at: Double(index)) }
            return
        }
        if !active {
            active = true
            upper = deviation > 0
            previousDeviation = deviation
            lastCrossing = Double(index)
            runStart = Double(index)
            runStartIndex = index
            lastTransition = nil
            runSamples = 0
            runFrequencySum = 0
            return
        }
        if (deviation > 0) != (previousDeviation > 0) {
            let d = previousDeviation - deviation
            lastCrossing = Double(index - 1) + (d != 0 ? previousDeviation / d : 0)
        }
        previousDeviation = deviation
        if upper ? deviation < -hysteresis : deviation > hysteresis {
            let t = lastCrossing
            // Only whole runs (from one transition to the next) go into the phase regression.
            if lastTransition != nil { phase.add(samples: runSamples, frequencySum: runFrequencySum, upper: upper) }
            runSamples = 0
            runFrequencySum = 0
            settled.flush(runEnd: Int(t.rounded(.down)), runStart: runStartIndex, upper: upper)
            runs[upper ? 1 : 0].add(t - runStart)
            if let last = lastTransition { intervals.add(t - last) }
            lastTransition = t
            transitionCount += 1
            upper.toggle()
            runStart = t
            runStartIndex = Int(t.rounded(.up))
        }
        settled.push(index: index, frequency: freq, weight: level, lagRe: lagRe, lagIm: lagIm,
                     runStart: runStartIndex, upper: upper)
        runSamples += 1
        runFrequencySum += freq
    }

    private mutating func endRun(at t: Double) {
        settled.flush(runEnd: Int(t), runStart: runStartIndex, upper: upper)
        runs[upper ? 1 : 0].add(t - runStart)
        active = false
        lastTransition = nil
    }

    /// What the keying looks like so far.
    public func result() -> KeyingMeasurement {
        // An open run (the signal lasts to the end) still counts for the idle statistics.
        var runs = self.runs
        if active { runs[upper ? 1 : 0].add(Double(n) - runStart) }

        var settled = self.settled
        if active { settled.flush(runEnd: n, runStart: runStartIndex, upper: upper) }
        func lagTone(_ side: Int) -> Double? {
            guard let p = settled.lagProduct(upper: side == 1) else { return nil }
            return centerFrequency + atan2(p.im, p.re) * fs / (2 * Double.pi * Double(lag))
        }
        let medians = (lower: settled.median(upper: false), upper: settled.median(upper: true))
        let lags = (lower: lagTone(0), upper: lagTone(1))
        let rate = intervals.estimateBaudRate(sampleRate: fs, maximumRate: min(fs / 2, 3 * halfWidth))
        // The slope of phase against run length is free of the filter's transients; it needs the
        // bit length (to leave glitches out) and runs of several lengths. Else the lag estimate.
        var slopes: (lower: Double?, upper: Double?) = (nil, nil)
        if let r = rate {
            let bit = fs / r.baudRate
            slopes = (phase.slope(upper: false, minimumSamples: 1.5 * bit, minimumSpread: 0.3 * bit),
                      phase.slope(upper: true, minimumSamples: 1.5 * bit, minimumSpread: 0.3 * bit))
        }
        let lower = slopes.lower ?? lags.lower, upperTone = slopes.upper ?? lags.upper

        var idle = (lower: 0.0, upper: 0.0)
        if let r = rate {
            let long = 12 * fs / r.baudRate
            idle = (runs[0].totalDuration(atLeast: long) / fs, runs[1].totalDuration(atLeast: long) / fs)
        }
        return KeyingMeasurement(
            lowerTone: lower, upperTone: upperTone,
            tonesFromRunSlopes: (slopes.lower != nil, slopes.upper != nil),
            lagTones: lags, medianTones: medians,
            settledSamples: (settled.total(upper: false), settled.total(upper: true)),
            transitionCount: transitionCount, intervalCount: intervals.count,
            baudRate: rate?.baudRate, regularity: rate?.score ?? 0,
            halfBitIntervals: rate?.halfBitIntervals ?? false,
            idleSeconds: idle)
    }
}

/// What ``KeyingSurvey`` measured.
public struct KeyingMeasurement: Sendable {
    /// The tone below the slicing frequency, in Hz: the slope of the runs' phase advance against
    /// their length when there are runs of several lengths (free of the filter's transients),
    /// else ``lagTones``.
    public var lowerTone: Double?
    /// The tone above the slicing frequency, in Hz.
    public var upperTone: Double?
    /// Whether each tone came from the run slopes (else from the lag products).
    public var tonesFromRunSlopes: (lower: Bool, upper: Bool)
    /// The tones from the phase advance over a short lag, averaged over the samples furthest from
    /// any transition (little biased by noise; a little pulled inwards when runs are short), in Hz.
    public var lagTones: (lower: Double?, upper: Double?)
    /// The weighted medians of the settled samples' instantaneous frequency (pulled towards the
    /// centre by noise), in Hz.
    public var medianTones: (lower: Double?, upper: Double?)
    /// Settled samples behind each tone estimate.
    public var settledSamples: (lower: Int, upper: Int)
    /// Transitions between the tones.
    public var transitionCount: Int
    /// Intervals between transitions used for the baud rate.
    public var intervalCount: Int
    /// The measured baud rate, in bits per second, or nil when the keying has no rhythm.
    public var baudRate: Double?
    /// How nearly the intervals are whole multiples of one bit: 1 perfect, about 0 for noise.
    public var regularity: Double
    /// Whether some runs last a whole number of bits and a half (1.5 stop bits, as RTTY).
    public var halfBitIntervals: Bool
    /// Seconds spent in runs of 12 bits or more on each tone (idle, leader, trailer).
    public var idleSeconds: (lower: Double, upper: Double)
}

extension KeyingSurvey {
    /// The samples of the current run wait here until their distance from the run's end is known,
    /// or is at least `3·guardLength`. Then those at least `guardLength` from both ends ("settled")
    /// are counted in distance classes [1, 1.5), [1.5, 2), [2, 3) and ≥ 3 guard lengths, so the
    /// tone can be taken from the samples furthest from any transition when there are enough.
    struct SettledBuffer: Sendable {
        let guardLength: Int
        let depth: Int
        private var index: [Int], freq: [Double], weight: [Double], re: [Double], im: [Double]
        private var start = 0, count = 0
        // [side][class]
        private var sumRe = [[Double]](repeating: [0, 0, 0, 0], count: 2)
        private var sumIm = [[Double]](repeating: [0, 0, 0, 0], count: 2)
        private var counts = [[Int]](repeating: [0, 0, 0, 0], count: 2)
        private var histogram = [[Double]](repeating: [Double](repeating: 0, count: 2000), count: 2)
        let toneLow: Double, toneBinWidth: Double

        init(guardLength: Int, toneLow: Double, toneBinWidth: Double) {
            self.guardLength = guardLength
            depth = 3 * guardLength
            index = [Int](repeating: 0, count: depth)
            freq = [Double](repeating: 0, count: depth)
            weight = freq
            re = freq
            im = freq
            self.toneLow = toneLow
            self.toneBinWidth = toneBinWidth
        }

        mutating func push(index k: Int, frequency: Double, weight w: Double, lagRe: Double, lagIm: Double,
                           runStart: Int, upper: Bool) {
            if count == depth {
                let o = start
                add(o, distance: min(index[o] - runStart, depth), upper: upper)
                start = (start + 1) % depth
                count -= 1
            }
            let slot = (start + count) % depth
            index[slot] = k
            freq[slot] = frequency
            weight[slot] = w
            re[slot] = lagRe
            im[slot] = lagIm
            count += 1
        }

        /// The run ended at sample `runEnd`: everything waiting learns its distance from the end.
        mutating func flush(runEnd: Int, runStart: Int, upper: Bool) {
            for j in 0..<count {
                let o = (start + j) % depth
                add(o, distance: min(index[o] - runStart, runEnd - index[o]), upper: upper)
            }
            count = 0
        }

        private mutating func add(_ o: Int, distance d: Int, upper: Bool) {
            let g = guardLength
            guard d >= g else { return }
            let c = 2 * d < 3 * g ? 0 : (d < 2 * g ? 1 : (d < 3 * g ? 2 : 3))
            let side = upper ? 1 : 0
            sumRe[side][c] += re[o]
            sumIm[side][c] += im[o]
            counts[side][c] += 1
            let b = min(max(Int((freq[o] - toneLow) / toneBinWidth), 0), 1999)
            histogram[side][b] += weight[o]
        }

        func total(upper: Bool) -> Int { counts[upper ? 1 : 0].reduce(0, +) }

        /// The summed lag products of the furthest classes holding at least 200 samples and a fifth
        /// of all (all classes when there are fewer); nil under 16 settled samples.
        func lagProduct(upper: Bool) -> (re: Double, im: Double)? {
            let side = upper ? 1 : 0
            let all = total(upper: upper)
            guard all >= 16 else { return nil }
            var r = 0.0, i = 0.0, n = 0
            for c in stride(from: 3, through: 0, by: -1) {
                r += sumRe[side][c]
                i += sumIm[side][c]
                n += counts[side][c]
                if n >= max(200, all / 5) { break }
            }
            return r == 0 && i == 0 ? nil : (r, i)
        }

        /// The weighted median of the settled samples' instantaneous frequency.
        func median(upper: Bool) -> Double? {
            let h = histogram[upper ? 1 : 0]
            guard total(upper: upper) >= 16 else { return nil }
            let sum = h.reduce(0, +)
            guard sum > 0 else { return nil }
            var acc = 0.0
            for (b, v) in h.enumerated() where v > 0 {
                if acc + v >= sum / 2 { return toneLow + (Double(b) + (sum / 2 - acc) / v) * toneBinWidth }
                acc += v
            }
            return nil
        }
    }

    /// Runs (transition to transition) by length, in log-spaced bins 5% wide, each bin keeping the
    /// sums for a least-squares line of the run's phase advance (Σ instantaneous frequency) against
    /// its length: the slope is the tone, the intercept absorbs the transients at the run's ends.
    struct RunPhaseRegression: Sendable {
        private static let ratio = log(1.05)
        // [side][bin]: n, Σx, Σy, Σx², Σxy with x = samples, y = Σ frequency over the run (Hz·samples).
        private var n = [[Double]](repeating: [Double](repeating: 0, count: 400), count: 2)
        private var sx = [[Double]](repeating: [Double](repeating: 0, count: 400), count: 2)
        private var sy = [[Double]](repeating: [Double](repeating: 0, count: 400), count: 2)
        private var sxx = [[Double]](repeating: [Double](repeating: 0, count: 400), count: 2)
        private var sxy = [[Double]](repeating: [Double](repeating: 0, count: 400), count: 2)

        mutating func add(samples: Int, frequencySum: Double, upper: Bool) {
            guard samples >= 2 else { return }
            let x = Double(samples)
            let b = min(Int(log(x) / RunPhaseRegression.ratio), 399)
            let side = upper ? 1 : 0
            n[side][b] += 1
            sx[side][b] += x
            sy[side][b] += frequencySum
            sxx[side][b] += x * x
            sxy[side][b] += x * frequencySum
        }

        /// The slope over runs of at least `minimumSamples`, when their lengths spread (standard
        /// deviation) over at least `minimumSpread` samples and there are 8 or more.
        func slope(upper: Bool, minimumSamples: Double, minimumSpread: Double) -> Double? {
            let side = upper ? 1 : 0
            let first = max(0, Int(log(max(minimumSamples, 1)) / RunPhaseRegression.ratio))
            guard first < 400 else { return nil }
            var N = 0.0, X = 0.0, Y = 0.0, XX = 0.0, XY = 0.0
            for b in first..<400 where n[side][b] > 0 {
                N += n[side][b]; X += sx[side][b]; Y += sy[side][b]; XX += sxx[side][b]; XY += sxy[side][b]
            }
            guard N >= 8 else { return nil }
            let mx = X / N, my = Y / N
            let cxx = XX / N - mx * mx, cxy = XY / N - mx * my
            guard cxx > 0, cxx.squareRoot() >= minimumSpread else { return nil }
            return cxy / cxx
        }
    }

    /// Run durations on one tone, in log-spaced bins (5% wide), for the idle statistics.
    struct RunHistogram: Sendable {
        private static let ratio = log(1.05)
        private var total = [Double](repeating: 0, count: 500)

        mutating func add(_ samples: Double) {
            guard samples >= 1 else { return }
            let b = min(Int(log(samples) / RunHistogram.ratio), total.count - 1)
            total[b] += samples
        }

        func totalDuration(atLeast samples: Double) -> Double {
            let first = max(0, Int(log(max(samples, 1)) / RunHistogram.ratio))
            guard first < total.count else { return 0 }
            return total[first...].reduce(0, +)
        }
    }

    /// Intervals between transitions, in log-spaced bins 0.2% wide, each keeping its count and sum.
    struct IntervalHistogram: Sendable {
        let minimum: Double
        let maximum: Double
        private static let step = log(1.002)
        private var counts: [Double]
        private var sums: [Double]
        private(set) var count = 0

        init(minimum: Double, maximum: Double) {
            self.minimum = minimum
            self.maximum = max(maximum, minimum * 2)
            let bins = Int(log(self.maximum / minimum) / IntervalHistogram.step) + 1
            counts = [Double](repeating: 0, count: bins)
            sums = counts
        }

        mutating func add(_ interval: Double) {
            guard interval >= minimum, interval <= maximum else { return }
            let b = min(Int(log(interval / minimum) / IntervalHistogram.step), counts.count - 1)
            counts[b] += 1
            sums[b] += interval
            count += 1
        }

        /// The baud rate that makes the intervals most nearly whole multiples of one bit.
        ///
        /// Scores `S(f) = mean cos(2π·f·interval)` on a grid of rates; S is 1 at the true rate and
        /// at its multiples, and lower (about −1/3 for random data) at its fractions. The lowest
        /// prominent maximum within 0.04 of the best is refined: each interval is rounded to a whole
        /// number of bits and the bit length is the total time over the total bits. When no interval
        /// lasts one bit and many last two, the keying has half-bit runs (1.5 stop bits) and the rate
        /// is halved.
        func estimateBaudRate(sampleRate fs: Double, maximumRate: Double)
            -> (baudRate: Double, score: Double, halfBitIntervals: Bool)? {
            guard count >= 8 else { return nil }
            var dur: [Double] = [], weight: [Double] = []
            for b in counts.indices where counts[b] > 0 {
                dur.append(sums[b] / counts[b] / fs)     // seconds
                weight.append(counts[b])
            }
            let totalWeight = weight.reduce(0, +)
            func score(_ f: Double) -> Double {
                var s = 0.0
                for j in dur.indices { s += weight[j] * cos(2 * Double.pi * f * dur[j]) }
                return s / totalWeight
            }
            let lowRate = 10.0
            let highRate = max(maximumRate, lowRate * 4)
            let gridStep = 0.0025
            let points = Int(log(highRate / lowRate) / gridStep) + 1
            var rates = [Double](repeating: 0, count: points)
            var scores = rates
            for p in 0..<points {
                rates[p] = lowRate * exp(Double(p) * gridStep)
                scores[p] = score(rates[p])
            }
            // Local maxima with their prominence over the dip to their left.
            var candidates: [(index: Int, score: Double)] = []
            for p in 1..<(points - 1) where scores[p] >= scores[p - 1] && scores[p] > scores[p + 1] {
                var low = scores[p]
                var j = p - 1
                while j >= 0 && scores[j] < scores[p] {
                    low = min(low, scores[j])
                    j -= 1
                }
                if scores[p] - low >= 0.2 && scores[p] > 0.1 { candidates.append((p, scores[p])) }
            }
            // The true rate scores highest, and its multiples almost as high (timing jitter lowers
            // them a little): take the lowest rate within 0.04 of the best.
            guard let best = candidates.map(\.score).max() else { return nil }
            guard let pick = candidates.first(where: { $0.score >= best - 0.04 }) else { return nil }
            // Fine search around the grid point.
            var f0 = rates[pick.index], s0 = pick.score
            let lo = f0 * (1 - gridStep), hi = f0 * (1 + gridStep)
            for k in 0...40 {
                let f = lo + (hi - lo) * Double(k) / 40
                let s = score(f)
                if s > s0 { s0 = s; f0 = f }
            }
            var bit = refine(bitLength: 1 / f0, sampleRate: fs)
            // Half-bit runs: nothing near one unit, plenty near two.
            let near1 = fraction(of: bit, from: 0.7, to: 1.3, sampleRate: fs)
            let near2 = fraction(of: bit, from: 1.7, to: 2.3, sampleRate: fs)
            var half = false
            if near1 < 0.03 && near2 > 0.1 {
                half = true
                bit *= 2
            }
            return (1 / bit, s0, half)
        }

        /// Bit length (seconds) as total time over total bits of the intervals near whole multiples.
        private func refine(bitLength: Double, sampleRate fs: Double) -> Double {
            var t = bitLength * fs      // samples
            for _ in 0..<3 {
                var time = 0.0, bits = 0.0
                for b in counts.indices where counts[b] > 0 {
                    let d = sums[b] / counts[b]
                    let m = (d / t).rounded()
                    guard m >= 1, m <= 24, abs(d / t - m) <= 0.25 else { continue }
                    time += sums[b]
                    bits += m * counts[b]
                }
                guard bits > 0 else { break }
                t = time / bits
            }
            return t / fs
        }

        private func fraction(of bit: Double, from a: Double, to b: Double, sampleRate fs: Double) -> Double {
            var inside = 0.0, all = 0.0
            for i in counts.indices where counts[i] > 0 {
                let u = sums[i] / counts[i] / (bit * fs)
                all += counts[i]
                if u >= a && u <= b { inside += counts[i] }
            }
            return all > 0 ? inside / all : 0
        }
    }
}
