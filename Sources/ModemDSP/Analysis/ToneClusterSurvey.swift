/// The second pass of the analysis: where the instantaneous frequency spends its time within the
/// band, to put the slicing frequency of the third pass (``KeyingSurvey``) between the two tones
/// however unequal their shares (a long leader on one tone, short bursts of the other).
///
/// The band's discriminator output (``AnalysisDiscriminator``) is histogrammed, weighted by the
/// signal's power; Otsu's split separates two clusters and the peak of each is a rough tone.
/// Memory is one histogram.
public struct ToneClusterSurvey: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The band's centre, in Hz.
    public let centerFrequency: Double
    /// The band's half-width, in Hz.
    public let halfWidth: Double
    /// Typical in-band power (full scale²) for the squelch; 0 never squelches.
    public let signalPower: Double

    private var front: AnalysisDiscriminator
    private let gateLevel: Double
    private let low: Double
    private let binWidth: Double
    private var histogram = [Double](repeating: 0, count: ToneClusterSurvey.bins)
    private static let bins = 800

    /// Creates the survey for a band.
    /// - Parameters:
    ///   - sampleRate: samples per second, in Hz (>= 100).
    ///   - centerFrequency: the band's centre, in Hz (0 < f < sampleRate/2).
    ///   - halfWidth: half the band's width, in Hz (clamped to 15...0.45·sampleRate).
    ///   - signalPower: typical power of the signal in the band (full scale²), for the squelch.
    public init(sampleRate: Int, centerFrequency: Double, halfWidth: Double, signalPower: Double) {
        precondition(sampleRate >= 100, "sample rate must be >= 100 Hz")
        precondition(centerFrequency > 0 && centerFrequency < Double(sampleRate) / 2,
                     "centre frequency \(centerFrequency) Hz is outside 0 < f < sampleRate/2")
        self.sampleRate = sampleRate
        self.centerFrequency = centerFrequency
        front = AnalysisDiscriminator(sampleRate: Double(sampleRate), centerFrequency: centerFrequency, halfWidth: halfWidth)
        self.halfWidth = front.halfWidth
        self.signalPower = max(signalPower, 0)
        gateLevel = self.signalPower / 2 * 0.01
        low = centerFrequency - 1.5 * front.halfWidth
        binWidth = 3 * front.halfWidth / Double(ToneClusterSurvey.bins)
    }

    /// Adds samples (full scale ±1), in blocks of any size.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        for x in samples {
            guard let o = front.step(Double(x)), o.level > gateLevel else { continue }
            let b = Int((o.frequency - low) / binWidth)
            if b >= 0 && b < ToneClusterSurvey.bins { histogram[b] += o.level }
        }
    }

    /// Adds samples from an array.
    public mutating func process(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { process($0) }
    }

    /// Forgets everything processed.
    public mutating func reset() {
        self = ToneClusterSurvey(sampleRate: sampleRate, centerFrequency: centerFrequency,
                                 halfWidth: halfWidth, signalPower: signalPower)
    }

    /// The two clusters, or nil when the frequency does not split into two (one steady tone, noise).
    public func result() -> ToneClusters? {
        let n = ToneClusterSurvey.bins
        // Smooth over about 2% of the band.
        let half = max(2, n / 100)
        var h = [Double](repeating: 0, count: n)
        for i in 0..<n {
            var s = 0.0
            for j in max(0, i - half)...min(n - 1, i + half) { s += histogram[j] }
            h[i] = s
        }
        let total = h.reduce(0, +)
        guard total > 0 else { return nil }
        // Otsu: the split with the largest between-class variance.
        var sumAll = 0.0
        for i in 0..<n { sumAll += Double(i) * h[i] }
        var w0 = 0.0, sum0 = 0.0, best = -1.0, split = n / 2
        for t in 0..<(n - 1) {
            w0 += h[t]
            sum0 += Double(t) * h[t]
            let w1 = total - w0
            guard w0 > 0, w1 > 0 else { continue }
            let m0 = sum0 / w0, m1 = (sumAll - sum0) / w1
            let between = w0 * w1 * (m0 - m1) * (m0 - m1)
            if between > best { best = between; split = t + 1 }
        }
        func peak(_ range: Range<Int>) -> Int? {
            guard !range.isEmpty else { return nil }
            var p = range.lowerBound
            for i in range where h[i] > h[p] { p = i }
            return p
        }
        guard var a = peak(0..<split), var b = peak(split..<n) else { return nil }
        // Once more, split halfway between the peaks.
        let mid = (a + b + 1) / 2
        if let a2 = peak(0..<mid), let b2 = peak(mid..<n) { a = a2; b = b2 }
        // Two clusters: separated, each with a share of the time, and a clear dip between them.
        guard b - a >= 3 * half else { return nil }
        let wa = h[0..<((a + b) / 2)].reduce(0, +), wb = total - wa
        guard min(wa, wb) >= 0.01 * total else { return nil }
        let valley = h[a...b].min() ?? 0
        guard valley <= 0.6 * min(h[a], h[b]) else { return nil }
        func hz(_ i: Int) -> Double { low + (Double(i) + 0.5) * binWidth }
        return ToneClusters(lower: hz(a), upper: hz(b), lowerShare: wa / total, upperShare: wb / total)
    }
}

/// Two clusters of instantaneous frequency: rough tones (pulled towards each other by short bits
/// and noise) and the share of the signal's energy each holds.
public struct ToneClusters: Sendable, Equatable {
    /// The lower cluster's peak, in Hz.
    public var lower: Double
    /// The upper cluster's peak, in Hz.
    public var upper: Double
    /// Fraction of the energy in the lower cluster (0...1).
    public var lowerShare: Double
    /// Fraction of the energy in the upper cluster (0...1).
    public var upperShare: Double

    /// Halfway between the two, in Hz: where to slice.
    public var midpoint: Double { (lower + upper) / 2 }
}
