#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The band a keyed signal occupies, found in a spectrogram.
///
/// Each column where something stands clearly (10 dB) above the noise floor counts as active; the
/// active columns are normalised to their own peak and averaged, so a long steady carrier (a leader)
/// does not hide the wider spectrum of the keyed part. The band is the region of that average
/// within 20 dB of its peak (and 6 dB above its floor), joined with the other such regions within
/// 5 kHz whose own peak is within 10 dB of the main one (the two separate lines of a wide-shift
/// signal such as RTTY), and with regions within 35 dB of the peak that hold at least a tenth of
/// the band's power (a keyed part beside a much stronger idle tone).
public struct OccupiedBand: Sendable, Equatable {
    /// Lower edge, in Hz.
    public var lowFrequency: Double
    /// Upper edge, in Hz.
    public var highFrequency: Double
    /// Where the averaged, normalised spectrum peaks, in Hz.
    public var peakFrequency: Double
    /// Half the width of the region around the peak within 20 dB of it, in Hz (a steady tone's is
    /// 3 to 5 bins).
    public var coreHalfWidth: Double
    /// Whether the band was widened by a region peaking more than 20 dB down (a weak keyed part
    /// beside a much stronger idle tone): its centre is then no guide to the slicing frequency.
    public var isBesideLine: Bool
    /// Peak of the active columns over the noise floor, in dB.
    public var prominence: Double
    /// Columns with a signal (all of them when only the average showed one).
    public var activeColumns: Int
    /// Columns in the spectrogram.
    public var columnCount: Int
    /// Mean density per spectrogram row over the active columns only, in full-scale²/Hz.
    public var activeDensity: [Double]
    /// Width of each row of ``activeDensity``, in Hz.
    public var rowBandwidth: Double
    /// Spacing of the FFT bins behind the rows, in Hz.
    public var binWidth: Double
    /// Centre frequency of each row of ``activeDensity``, in Hz.
    public var frequencies: [Double]

    /// Whether the band is no wider than one windowed, smoothed line (a steady tone).
    public var isSingleLine: Bool {
        halfWidth <= OccupiedBand.lineHalfWidth(binWidth: binWidth, rowBandwidth: rowBandwidth)
    }

    /// Half the width of a Hann-windowed line after the 50 Hz smoothing, at −20 dB: 3 to 4.5 bins
    /// (or rows); anything up to 6 bins (3.5 rows) counts as one line.
    static func lineHalfWidth(binWidth: Double, rowBandwidth: Double) -> Double {
        max(6 * binWidth, 3.5 * rowBandwidth)
    }

    /// Middle of the band, in Hz.
    public var centerFrequency: Double { (lowFrequency + highFrequency) / 2 }
    /// Half the width of the band, in Hz.
    public var halfWidth: Double { (highFrequency - lowFrequency) / 2 }

    /// Power between two frequencies in the active columns, in full-scale².
    public func activePower(from lower: Double, to upper: Double) -> Double {
        var s = 0.0
        for (r, f) in frequencies.enumerated() where f >= lower && f <= upper { s += activeDensity[r] }
        return s * rowBandwidth
    }

    /// Looks for a band.
    /// - Parameters:
    ///   - spectrogram: the signal's spectrogram.
    ///   - minimumFrequency: ignore everything below this, in Hz (hum, DC); default 100.
    ///   - activityThreshold: how far (dB) a column's peak must stand over the noise floor for the
    ///     column to count as active; default 10 (white noise alone reaches about 9).
    ///   - weakSignalThreshold: when no column is active, how far (dB) the average of all columns
    ///     must stand over the floor (with at least 16 frames' worth of input); default 4.
    /// - Returns: the band, or nil when nothing stands that far over the noise floor.
    public static func find(in spectrogram: Spectrogram, minimumFrequency: Double = 100,
                            activityThreshold: Double = 10, weakSignalThreshold: Double = 4) -> OccupiedBand? {
        let rows = spectrogram.rowCount, cols = spectrogram.columnCount
        guard cols > 0, rows >= 8 else { return nil }
        let bw = spectrogram.rowBandwidth
        var rMin = 0
        while rMin < rows && spectrogram.frequency(ofRow: rMin) < minimumFrequency { rMin += 1 }
        let rMax = rows - 3     // leave the rows next to Nyquist out
        guard rMax - rMin >= 8 else { return nil }
        let half = max(1, Int((25 / bw).rounded()))

        // Columns smoothed over about 50 Hz, and their mean.
        var smoothed = [Double](repeating: 0, count: rows)
        func smooth(column c: Int) {
            let base = c * rows
            var run = 0.0
            // Moving sum over rows [r-half, r+half], clamped at the edges.
            for r in 0..<min(half, rows) { run += Double(spectrogram.values[base + r]) }
            for r in 0..<rows {
                let add = r + half, drop = r - half - 1
                if add < rows { run += Double(spectrogram.values[base + add]) }
                if drop >= 0 { run -= Double(spectrogram.values[base + drop]) }
                let n = min(r + half, rows - 1) - max(r - half, 0) + 1
                smoothed[r] = max(run, 0) / Double(n)
            }
        }
        var mean = [Double](repeating: 0, count: rows)
        var rawMean = [Double](repeating: 0, count: rows)
        for c in 0..<cols {
            smooth(column: c)
            for r in 0..<rows {
                mean[r] += smoothed[r] / Double(cols)
                rawMean[r] += Double(spectrogram.values[c * rows + r]) / Double(cols)
            }
        }
        let floor = percentile(Array(mean[rMin...rMax]), 0.25)
        let activeThreshold = max(floor * pow(10, activityThreshold / 10), 1e-14)

        var shape = [Double](repeating: 0, count: rows)
        var activeDensity = [Double](repeating: 0, count: rows)
        var active = 0
        // Regions must stand this far over the floor: 6 dB, or half the weak threshold when only
        // the (smooth) average showed a signal.
        var floorFactor = 4.0
        var bestPeak = 0.0
        for c in 0..<cols {
            smooth(column: c)
            let base = c * rows
            var peak = 0.0
            for r in rMin...rMax { peak = max(peak, smoothed[r]) }
            guard peak >= activeThreshold else { continue }
            active += 1
            bestPeak = max(bestPeak, peak)
            for r in 0..<rows {
                shape[r] += smoothed[r] / peak
                activeDensity[r] += Double(spectrogram.values[base + r])
            }
        }
        if active == 0 {
            // A weak but steady signal may never stand out of one column's noise, yet show in the
            // average of many (independent) frames, where the noise is smooth.
            var meanPeak = 0.0
            for r in rMin...rMax { meanPeak = max(meanPeak, mean[r]) }
            let independentFrames = spectrogram.frameCount * spectrogram.hopSize / spectrogram.fftSize
            guard independentFrames >= 16, meanPeak > 0,
                  meanPeak >= floor * pow(10, weakSignalThreshold / 10) else { return nil }
            active = cols
            floorFactor = pow(10, weakSignalThreshold / 20)
            bestPeak = meanPeak
            for r in 0..<rows { shape[r] = mean[r] / meanPeak }
            activeDensity = rawMean
        } else {
            for r in 0..<rows { activeDensity[r] /= Double(active) }
        }

        var pk = rMin
        for r in rMin...rMax where shape[r] > shape[pk] { pk = r }
        let shapeFloor = percentile(Array(shape[rMin...rMax]), 0.25)
        let reach = Int((5000 / bw).rounded())

        /// The span of the regions above `threshold` joined to the one holding the peak: those
        /// within `reach` rows whose own peak is at least `joinLevel`.
        func span(threshold: Double, joinLevel: Double) -> (Int, Int) {
            var regions: [(Int, Int, Double)] = []     // first row, last row, peak
            var r = rMin
            while r <= rMax {
                if shape[r] > threshold {
                    var e = r, top = shape[r]
                    while e + 1 <= rMax && shape[e + 1] > threshold { e += 1; top = max(top, shape[e]) }
                    regions.append((r, e, top))
                    r = e + 1
                } else {
                    r += 1
                }
            }
            guard let main = regions.first(where: { $0.0 <= pk && pk <= $0.1 }) else { return (pk, pk) }
            var lo = main.0, hi = main.1
            var grew = true
            while grew {
                grew = false
                for reg in regions where reg.2 >= joinLevel && (reg.0 > hi || reg.1 < lo) {
                    if reg.0 > hi && reg.0 - hi <= reach || reg.1 < lo && lo - reg.1 <= reach {
                        lo = min(lo, reg.0)
                        hi = max(hi, reg.1)
                        grew = true
                    }
                }
            }
            return (lo, hi)
        }
        // The core: the contiguous region around the peak within 20 dB of it.
        let coreThreshold = max(shape[pk] / 100, shapeFloor * floorFactor)
        var coreLo = pk, coreHi = pk
        while coreLo > rMin && shape[coreLo - 1] > coreThreshold { coreLo -= 1 }
        while coreHi < rMax && shape[coreHi + 1] > coreThreshold { coreHi += 1 }
        // The band: the region within 20 dB of the peak, joined with others within 5 kHz whose own
        // peak is within 10 dB.
        var (lo, hi) = span(threshold: coreThreshold, joinLevel: shape[pk] / 10)
        let binWidth = Double(spectrogram.sampleRate) / Double(spectrogram.fftSize)
        // A keyed part much weaker than an idle line (or than the other tone) may peak more than
        // 20 dB down yet hold a good share of the power: join regions within 35 dB of the peak
        // and 5 kHz of the band that hold at least a tenth of the band's (smoothed, normalised) power.
        var besideLine = false
        let deepThreshold = max(shape[pk] * pow(10, -3.5), shapeFloor * floorFactor)
        var grew = true
        while grew {
            grew = false
            let bandPower = shape[lo...hi].reduce(0, +)
            var r = rMin
            while r <= rMax {
                guard shape[r] > deepThreshold else { r += 1; continue }
                var e = r
                while e + 1 <= rMax && shape[e + 1] > deepThreshold { e += 1 }
                let outside = e < lo || r > hi
                let near = (e < lo && lo - e <= reach) || (r > hi && r - hi <= reach)
                if outside && near && shape[r...e].reduce(0, +) >= 0.1 * bandPower {
                    lo = min(lo, r)
                    hi = max(hi, e)
                    besideLine = true
                    grew = true
                    break
                }
                r = e + 1
            }
        }
        let freqs = (0..<rows).map { spectrogram.frequency(ofRow: $0) }
        let prominence = floor > 0 ? 10 * log10(bestPeak / floor) : 200
        return OccupiedBand(lowFrequency: freqs[lo], highFrequency: freqs[hi], peakFrequency: freqs[pk],
                            coreHalfWidth: (freqs[coreHi] - freqs[coreLo]) / 2, isBesideLine: besideLine,
                            prominence: prominence, activeColumns: active, columnCount: cols,
                            activeDensity: activeDensity, rowBandwidth: bw,
                            binWidth: binWidth, frequencies: freqs)
    }

    /// The `p`-quantile (0...1) of some values (nearest rank).
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let s = values.sorted()
        let i = min(max(Int((p * Double(s.count - 1)).rounded()), 0), s.count - 1)
        return s[i]
    }
}
