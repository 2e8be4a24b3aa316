/// Finds the FSK tones in a signal, which is mark, the baud rate and the signal-to-noise ratio.
///
/// The analysis reads the input up to four times, streaming each time (memory does not grow
/// with the input's length):
/// 1. the spectrum pass: a Welch power spectrum and a bounded spectrogram (``SpectrumSurvey``),
///    from which the occupied band is found (``OccupiedBand``);
/// 2. the cluster pass, only when the band is a weak keyed part beside a much stronger idle line:
///    where the instantaneous frequency spends its time in that band (``ToneClusterSurvey``), which
///    puts the slicing frequency between the two tones;
/// 3. the keying pass: a crude demodulator sliced there measures the two tones precisely and the
///    rhythm of the transitions (``KeyingSurvey``);
/// 4. the keying pass again, sliced halfway between the tones it measured, when the first slicing
///    frequency was more than ``resliceOffset`` of the shift away from there. The band's centre is
///    only a first guess at that point: the data's own spectrum can make the band lopsided (8E1 text
///    puts a strong line 200 Hz above a Bell 103 mark tone), and a slicer off the middle moves every
///    transition one way on rising edges and the other on falling ones, so the runs are no longer
///    whole bits and the baud rate comes out wrong.
///
/// Later passes are skipped when an earlier one found nothing to look at (no band, one tone).
///
/// ```swift
/// var analyzer = FSKAnalyzer(sampleRate: 48000)
/// repeat {
///     // feed every sample, from the start, with analyzer.process(...)
/// } while analyzer.finishPass()
/// let analysis = analyzer.result()
/// ```
public struct FSKAnalyzer {
    /// Which pass the analyzer is in.
    public enum Pass: Sendable, Equatable {
        /// Collecting the spectrum.
        case spectrum
        /// Finding the two clusters of instantaneous frequency.
        case tones
        /// Measuring the keying.
        case keying
        /// Done: ``result()`` is ready.
        case finished
    }

    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The pass that ``process(_:)`` feeds.
    public private(set) var pass: Pass = .spectrum

    private var survey: SpectrumSurvey
    private var surveyResult: SpectrumSurveyResult?
    private var band: OccupiedBand?
    private var bandPower = 0.0
    private var clusterSurvey: ToneClusterSurvey?
    private var clusters: ToneClusters?
    private var keying: KeyingSurvey?
    private var keyingResult: KeyingMeasurement?
    private var resliced = false

    /// How far (a fraction of the measured shift) the slicing frequency may be from halfway between
    /// the measured tones before the keying is measured again, sliced there.
    public static let resliceOffset = 0.05

    /// The sample rates the analysis accepts, in Hz.
    public static let sampleRates = 100...1_000_000

    /// Creates an analyzer.
    /// - Parameters:
    ///   - sampleRate: samples per second, in Hz (``sampleRates``).
    ///   - expectedSampleCount: the input's length if known (sizes the spectrogram's columns).
    ///   - maxColumns: the most spectrogram columns kept (even, >= 2).
    public init(sampleRate: Int, expectedSampleCount: Int? = nil, maxColumns: Int = 1024) {
        self.sampleRate = sampleRate
        survey = SpectrumSurvey(sampleRate: sampleRate, expectedSampleCount: expectedSampleCount, maxColumns: maxColumns)
    }

    /// Feeds samples (full scale ±1) to the current pass.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        switch pass {
        case .spectrum: survey.process(samples)
        case .tones: clusterSurvey?.process(samples)
        case .keying: keying?.process(samples)
        case .finished: break
        }
    }

    /// Feeds samples from an array.
    public mutating func process(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { process($0) }
    }

    /// Ends the current pass.
    /// - Returns: true when another pass is needed: feed the same samples again, from the start.
    public mutating func finishPass() -> Bool {
        switch pass {
        case .spectrum:
            let r = survey.result()
            surveyResult = r
            band = r.sampleCount > 0 && r.peakAmplitude >= 1e-6 ? OccupiedBand.find(in: r.spectrogram) : nil
            guard let b = band, !b.isSingleLine else {
                pass = .finished
                return false
            }
            bandPower = b.activePower(from: b.lowFrequency, to: b.highFrequency)
            let center = min(max(b.centerFrequency, 1), Double(sampleRate) / 2 - 1)
            if b.isBesideLine {
                // The band's centre says nothing about where the tones are: find them first.
                clusterSurvey = ToneClusterSurvey(sampleRate: sampleRate, centerFrequency: center,
                                                  halfWidth: b.halfWidth, signalPower: bandPower)
                pass = .tones
            } else {
                keying = KeyingSurvey(sampleRate: sampleRate, centerFrequency: center, halfWidth: b.halfWidth,
                                      signalPower: bandPower)
                pass = .keying
            }
            return true
        case .tones:
            clusters = clusterSurvey?.result()
            clusterSurvey = nil
            guard let c = clusters, let b = band else {
                pass = .finished
                return false
            }
            // Slice halfway between the clusters, with a filter still covering the whole band.
            let center = min(max(c.midpoint, 1), Double(sampleRate) / 2 - 1)
            let halfWidth = max(center - b.lowFrequency, b.highFrequency - center, (c.upper - c.lower) * 0.75)
            keying = KeyingSurvey(sampleRate: sampleRate, centerFrequency: center, halfWidth: halfWidth,
                                  signalPower: bandPower)
            pass = .keying
            return true
        case .keying:
            let measured = keying?.result()
            // The second measurement stands unless it lost what the first had (a rhythm, two tones).
            if !resliced || measured.map({ $0.baudRate != nil && $0.lowerTone != nil && $0.upperTone != nil }) == true {
                keyingResult = measured
            }
            if !resliced, let k = keying, let m = measured, let b = band, let lower = m.lowerTone, let upper = m.upperTone,
               upper > lower {
                let middle = (lower + upper) / 2
                if abs(middle - k.centerFrequency) > FSKAnalyzer.resliceOffset * (upper - lower),
                   middle > b.lowFrequency, middle < b.highFrequency {
                    // Sliced off the middle: measure again halfway between the tones, the filter still
                    // covering the whole band.
                    resliced = true
                    let halfWidth = max(middle - b.lowFrequency, b.highFrequency - middle, (upper - lower) * 0.75)
                    keying = KeyingSurvey(sampleRate: sampleRate, centerFrequency: middle, halfWidth: halfWidth,
                                          signalPower: bandPower)
                    return true
                }
            }
            keying = nil
            pass = .finished
            return false
        case .finished:
            return false
        }
    }

    /// The analysis. Call after ``finishPass()`` returned false.
    public func result() -> FSKAnalysis {
        precondition(pass == .finished, "FSKAnalyzer.result() before the last pass finished")
        return FSKAnalysis(survey: surveyResult!, band: band, clusters: clusters, keying: keyingResult)
    }

    /// Starts over (same sample rate and geometry).
    public mutating func reset() {
        survey.reset()
        surveyResult = nil
        band = nil
        bandPower = 0
        clusterSurvey = nil
        clusters = nil
        keying = nil
        keyingResult = nil
        resliced = false
        pass = .spectrum
    }

    /// Analyses samples held in memory (all passes).
    /// - Parameters:
    ///   - samples: the signal, full scale ±1.
    ///   - sampleRate: samples per second, in Hz (100...1_000_000).
    public static func analyze(_ samples: [Float], sampleRate: Int) -> FSKAnalysis {
        var a = FSKAnalyzer(sampleRate: sampleRate, expectedSampleCount: samples.count)
        repeat {
            var i = 0
            while i < samples.count {
                let end = min(i + 4096, samples.count)
                samples.withUnsafeBufferPointer { a.process(UnsafeBufferPointer(rebasing: $0[i..<end])) }
                i = end
            }
        } while a.finishPass()
        return a.result()
    }
}
