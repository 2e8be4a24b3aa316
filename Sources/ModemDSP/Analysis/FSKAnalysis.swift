#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an FSK signal looks like: its tones, which one is mark, its baud rate, its signal-to-noise
/// ratio and the standard profile it matches. Made by ``FSKAnalyzer``.
public struct FSKAnalysis: Sendable {
    /// The overall verdict.
    public enum Finding: Sendable, Equatable {
        /// The input has no samples.
        case empty
        /// Every sample is (nearly) zero.
        case silent
        /// Nothing stands out of the noise.
        case noTones
        /// One steady tone (a carrier) with no keying.
        case steadyTone(frequency: Double)
        /// Energy in a band but no two-tone keying with a rhythm.
        case unkeyed(peakFrequency: Double)
        /// Two keyed tones.
        case fsk
    }

    /// Where the mark/space assignment came from.
    public enum MarkSource: Sendable, Equatable {
        /// From the matched standard profile.
        case profile
        /// The tone held during idle, leader or trailer (long runs).
        case idleTone
        /// minimodem's convention for the baud rate: lower tone is mark from 400 baud up, upper below.
        case convention
    }

    /// Below this regularity the transitions are taken for noise, not keying.
    public static let minimumRegularity = 0.25

    /// The standard baud rates a measurement snaps to when within 3%.
    public static let standardBaudRates: [Double] = [45.45, 50, 75, 110, 150, 300, 600, 1200, 2400, 4800, 9600]

    /// The verdict.
    public var finding: Finding
    /// Samples per second of the input, in Hz.
    public var sampleRate: Int
    /// Samples analysed.
    public var sampleCount: Int
    /// Largest absolute sample (full scale 1).
    public var peakAmplitude: Float
    /// Mean power of the input, in dB relative to full scale (−∞ for silence).
    public var level: Double
    /// The occupied band, when one was found.
    public var band: OccupiedBand?
    /// The rough tone clusters, when the cluster pass ran (only beside a strong idle line).
    public var clusters: ToneClusters?
    /// The raw keying measurement, when the third pass ran.
    public var keying: KeyingMeasurement?
    /// Mark (binary 1) frequency, in Hz.
    public var markFrequency: Double?
    /// Space (binary 0) frequency, in Hz.
    public var spaceFrequency: Double?
    /// Where the mark/space assignment came from.
    public var markSource: MarkSource = .convention
    /// The baud rate as measured, in bits per second.
    public var measuredBaudRate: Double?
    /// The standard rate within 3% of the measurement, if any.
    public var standardBaudRate: Double?
    /// How regular the keying is (1 perfect, near 0 for noise).
    public var regularity: Double = 0
    /// Signal power in the two tone bands (± baud/2) over the noise in the whole band 0...fs/2, in dB.
    public var snr: Double?
    /// Energy per bit over noise density, in dB.
    public var ebN0: Double?
    /// The matched standard profile.
    public var profile: FSKProfile?
    /// Remarks for the reader (contradictions, limits, low confidence).
    public var notes: [String] = []
    /// The averaged power spectrum.
    public var spectrum: PowerSpectrum
    /// The bounded spectrogram.
    public var spectrogram: Spectrogram

    /// Length of the input, in seconds.
    public var duration: Double { Double(sampleCount) / Double(sampleRate) }

    /// The baud rate to use: the standard one when the measurement is within 3% of it, else the measurement.
    public var baudRate: Double? { standardBaudRate ?? measuredBaudRate }

    /// Whether the result is trustworthy: two tones and a regular rhythm (regularity >= 0.5).
    public var isConfident: Bool {
        finding == .fsk && regularity >= 0.5
    }

    /// The tone pair as (lower, upper), when found.
    public var tones: (lower: Double, upper: Double)? {
        guard let m = markFrequency, let s = spaceFrequency else { return nil }
        return (min(m, s), max(m, s))
    }

    /// Puts the passes' results together.
    /// - Parameters:
    ///   - survey: the first pass.
    ///   - band: the band found in it (nil: none).
    ///   - clusters: the cluster pass (nil when it did not run or found no two clusters).
    ///   - keying: the keying pass (nil when it did not run).
    public init(survey: SpectrumSurveyResult, band: OccupiedBand?, clusters: ToneClusters?, keying: KeyingMeasurement?) {
        sampleRate = survey.spectrum.sampleRate
        sampleCount = survey.sampleCount
        peakAmplitude = survey.peakAmplitude
        level = survey.meanSquare > 0 ? 10 * log10(survey.meanSquare) : -Double.infinity
        spectrum = survey.spectrum
        spectrogram = survey.spectrogram
        self.band = band
        self.clusters = clusters
        self.keying = keying
        finding = .noTones

        if sampleCount == 0 { finding = .empty; return }
        if survey.peakAmplitude < 1e-6 { finding = .silent; return }
        guard let band else { finding = .noTones; return }
        if band.isSingleLine || (band.isBesideLine && clusters == nil) {
            let f = survey.spectrum.peak(from: band.peakFrequency - band.coreHalfWidth - band.rowBandwidth,
                                         to: band.peakFrequency + band.coreHalfWidth + band.rowBandwidth)?.frequency
            finding = .steadyTone(frequency: f ?? band.peakFrequency)
            return
        }
        guard let k = keying, let lower = k.lowerTone, let upper = k.upperTone,
              upper - lower >= max(10, 2 * band.binWidth), k.transitionCount >= 4,
              k.baudRate != nil, k.regularity >= FSKAnalysis.minimumRegularity else {
            finding = .unkeyed(peakFrequency: band.peakFrequency)
            return
        }
        finding = .fsk
        regularity = k.regularity
        measuredBaudRate = k.baudRate
        if let b = k.baudRate {
            standardBaudRate = FSKAnalysis.standardBaudRates.first { abs(b / $0 - 1) <= 0.03 }
        }

        // Profile, then mark.
        profile = FSKAnalysis.matchProfile(lower: lower, upper: upper, baudRate: k.baudRate)
        let idleLower = k.idleSeconds.lower, idleUpper = k.idleSeconds.upper
        let bitTime = k.baudRate.map { 1 / $0 } ?? 0
        var idleSays: Bool?     // true: upper is mark
        if k.baudRate != nil, max(idleLower, idleUpper) >= 24 * bitTime {
            if idleUpper >= 3 * idleLower { idleSays = true } else if idleLower >= 3 * idleUpper { idleSays = false }
        }
        if let p = profile {
            markFrequency = abs(p.markFrequency - lower) < abs(p.markFrequency - upper) ? lower : upper
            spaceFrequency = markFrequency == lower ? upper : lower
            markSource = .profile
            if let says = idleSays, says != (markFrequency == upper) {
                notes.append("the idle tone is \(FSKAnalysis.hz(says ? upper : lower)), the \(p.name) space: the signal may be inverted")
            }
        } else if let says = idleSays {
            markFrequency = says ? upper : lower
            spaceFrequency = says ? lower : upper
            markSource = .idleTone
        } else {
            let d = FSKProfile.defaultTones(forBaudRate: baudRate ?? 1200)
            let upperIsMark = d.mark > d.space
            markFrequency = upperIsMark ? upper : lower
            spaceFrequency = upperIsMark ? lower : upper
            markSource = .convention
        }

        // Signal to noise from the active columns.
        let tonesHalfBand = (baudRate ?? (upper - lower)) / 2
        if let (s, n0) = FSKAnalysis.signalAndNoise(band: band, tones: [lower, upper], halfBand: tonesHalfBand,
                                                     sampleRate: Double(sampleRate)) {
            snr = 10 * log10(s / (n0 * Double(sampleRate) / 2))
            if let b = baudRate { ebN0 = 10 * log10(s / (n0 * b)) }
        }

        if regularity < 0.5 {
            notes.append("low confidence: the transitions are irregular (regularity \(FSKAnalysis.fixed(regularity, 2)))")
        }
        if let b = measuredBaudRate, let p = profile, abs(b / p.baudRate - 1) > 0.03 {
            notes.append("the measured rate is \(FSKAnalysis.fixed(abs(b / p.baudRate - 1) * 100, 1))% off \(p.name)'s \(FSKAnalysis.rate(p.baudRate)) baud")
        }
        if !(8000...192_000).contains(sampleRate) {
            notes.append("modem rx needs a sample rate in 8000...192000 Hz; resample the file first")
        }
    }

    /// The standard profile whose tones are both within 4% of the measured ones (and baud rate,
    /// when known, within 6%); the closest when several are.
    public static func matchProfile(lower: Double, upper: Double, baudRate: Double?) -> FSKProfile? {
        var best: (FSKProfile, Double)?
        for p in FSKProfile.all where p.psk == nil {
            let pl = min(p.markFrequency, p.spaceFrequency), pu = max(p.markFrequency, p.spaceFrequency)
            let el = abs(lower / pl - 1), eu = abs(upper / pu - 1)
            guard el <= 0.04, eu <= 0.04 else { continue }
            var err = el + eu
            if let b = baudRate {
                let eb = abs(b / p.baudRate - 1)
                guard eb <= 0.06 else { continue }
                err += eb
            }
            if best == nil || err < best!.1 { best = (p, err) }
        }
        return best?.0
    }

    /// Signal power in the tone bands and the noise density elsewhere, from the active columns.
    static func signalAndNoise(band: OccupiedBand, tones: [Double], halfBand: Double, sampleRate: Double)
        -> (signal: Double, noiseDensity: Double)? {
        let bw = band.rowBandwidth
        let lowEdge = min(band.lowFrequency, tones.min()! - 2 * halfBand) - 2 * bw
        let highEdge = max(band.highFrequency, tones.max()! + 2 * halfBand) + 2 * bw
        var noise: [Double] = [], all: [Double] = []
        for (r, f) in band.frequencies.enumerated() where f >= 100 && f <= sampleRate / 2 - 2 * bw {
            all.append(band.activeDensity[r])
            if f < lowEdge || f > highEdge { noise.append(band.activeDensity[r]) }
        }
        let n0: Double
        if noise.count >= 8 {
            n0 = OccupiedBand.percentile(noise, 0.5)
        } else if !all.isEmpty {
            n0 = OccupiedBand.percentile(all, 0.1)
        } else {
            return nil
        }
        var s = 0.0
        for (r, f) in band.frequencies.enumerated() where tones.contains(where: { abs(f - $0) <= halfBand }) {
            s += max(band.activeDensity[r] - n0, 0) * bw
        }
        guard s > 0 else { return nil }
        return (s, max(n0, s * 1e-12))
    }
}
