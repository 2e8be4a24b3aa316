#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The first pass of the analysis: a streaming Welch power spectrum (Hann window, FFT size giving
/// about 10 Hz resolution) and a bounded spectrogram of the same frames.
///
/// Feed samples with ``process(_:)`` in blocks of any size, then read ``result()``. Memory is fixed
/// at creation (about `maxColumns × rows` floats for the spectrogram), whatever the input length.
/// A copy shares the FFT plan with the original: do not use copies from two threads at once.
public struct SpectrumSurvey {
    /// Samples per second, in Hz (>= 100).
    public let sampleRate: Int
    /// Samples per transform (a power of two near `sampleRate/10`).
    public let fftSize: Int
    /// Samples between frames (`fftSize/2`, smaller for short inputs so the spectrogram has columns).
    public let hopSize: Int
    /// Samples processed since creation or ``reset()``.
    public private(set) var sampleCount = 0

    private let fft: RealFFT
    private let window: [Float]
    private let windowPowerSum: Double
    private var frame: [Float]
    private var filled = 0
    private var power: [Float]
    private var densitySum: [Double]
    private var frameCount = 0
    private var spectrogram: Spectrogram
    private let initialFramesPerColumn: Int
    private var sumOfSquares = 0.0
    private var peakAmplitude: Float = 0

    /// The FFT size used for a sample rate: the power of two nearest (in octaves) to `sampleRate/10`,
    /// so that bins are about 10 Hz apart (8000 Hz → 1024, 44100 and 48000 Hz → 4096).
    public static func fftSize(forSampleRate sampleRate: Int) -> Int {
        let target = max(Double(sampleRate) / 10, 16)
        let e = Int(log2(target).rounded())
        return 1 << min(max(e, 4), 20)
    }

    /// Creates a survey.
    /// - Parameters:
    ///   - sampleRate: samples per second, in Hz (100...1_000_000).
    ///   - expectedSampleCount: the input length if known (e.g. from a file header): short inputs get
    ///     a smaller hop so the spectrogram has enough columns, long ones start with several frames per
    ///     column. A wrong value only costs resolution.
    ///   - maxColumns: the most spectrogram columns kept (even, >= 2).
    ///   - maxRows: the most spectrogram rows kept (>= 16).
    public init(sampleRate: Int, expectedSampleCount: Int? = nil, maxColumns: Int = 1024, maxRows: Int = 2049) {
        precondition((100...1_000_000).contains(sampleRate), "sample rate \(sampleRate) Hz is outside 100...1000000")
        self.sampleRate = sampleRate
        let n = SpectrumSurvey.fftSize(forSampleRate: sampleRate)
        fftSize = n
        var hop = n / 2
        var fpc = 1
        if let expected = expectedSampleCount, expected > 0 {
            // Aim for at least ~400 frames on short inputs (hop down to n/16).
            let wanted = expected / 400
            hop = min(max(wanted, n / 16), n / 2)
            let frames = max(1, (expected - n) / hop + 1)
            fpc = max(1, (frames + maxColumns - 1) / maxColumns)
        }
        hopSize = hop
        initialFramesPerColumn = fpc
        fft = RealFFT(size: n)
        window = SpectralWindow.hann(count: n)
        windowPowerSum = SpectralWindow.powerSum(window)
        frame = [Float](repeating: 0, count: n)
        power = [Float](repeating: 0, count: n / 2 + 1)
        densitySum = [Double](repeating: 0, count: n / 2 + 1)
        spectrogram = Spectrogram(sampleRate: sampleRate, fftSize: n, hopSize: hop, maxRows: maxRows,
                                  maxColumns: maxColumns, framesPerColumn: fpc)
    }

    /// Adds samples (full scale ±1).
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        var i = 0
        let count = samples.count
        while i < count {
            let take = min(fftSize - filled, count - i)
            for j in 0..<take {
                let v = samples[i + j]
                frame[filled + j] = v
                sumOfSquares += Double(v) * Double(v)
                peakAmplitude = max(peakAmplitude, abs(v))
            }
            filled += take
            i += take
            sampleCount += take
            if filled == fftSize {
                analyseFrame(length: fftSize, window: window, windowPowerSum: windowPowerSum)
                // Keep the overlap for the next frame.
                let keep = fftSize - hopSize
                frame.withUnsafeMutableBufferPointer { f in
                    let base = f.baseAddress!
                    base.update(from: base + hopSize, count: keep)
                }
                filled = keep
            }
        }
    }

    /// Adds samples from an array.
    public mutating func process(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { process($0) }
    }

    /// Forgets everything processed.
    public mutating func reset() {
        sampleCount = 0
        filled = 0
        frameCount = 0
        for k in densitySum.indices { densitySum[k] = 0 }
        spectrogram.reset(framesPerColumn: initialFramesPerColumn)
        sumOfSquares = 0
        peakAmplitude = 0
    }

    /// What the samples so far look like. An input shorter than one frame is analysed as one
    /// zero-padded frame with a window of its own length.
    public func result() -> SpectrumSurveyResult {
        var copy = self
        if copy.frameCount == 0 && copy.filled > 0 {
            let m = copy.filled
            let w = SpectralWindow.hann(count: m)
            copy.analyseFrame(length: m, window: w, windowPowerSum: SpectralWindow.powerSum(w))
        }
        copy.spectrogram.flush()
        let frames = copy.frameCount
        let density = frames == 0 ? copy.densitySum : copy.densitySum.map { $0 / Double(frames) }
        let spectrum = PowerSpectrum(sampleRate: sampleRate, fftSize: fftSize, density: density, frameCount: frames)
        return SpectrumSurveyResult(
            spectrum: spectrum, spectrogram: copy.spectrogram, sampleCount: sampleCount,
            meanSquare: sampleCount > 0 ? sumOfSquares / Double(sampleCount) : 0,
            peakAmplitude: peakAmplitude)
    }

    private mutating func analyseFrame(length: Int, window: [Float], windowPowerSum: Double) {
        guard windowPowerSum > 0 else { return }
        frame.withUnsafeBufferPointer { f in
            window.withUnsafeBufferPointer { w in
                power.withUnsafeMutableBufferPointer { p in
                    fft.powerSpectrum(UnsafeBufferPointer(rebasing: f[0..<length]), window: w, into: p)
                }
            }
        }
        // One-sided density: 2|X|²/(fs·Σw²), except DC and Nyquist.
        let scale = 1 / (Double(sampleRate) * windowPowerSum)
        let last = power.count - 1
        for k in 0...last {
            let d = Double(power[k]) * scale * ((k == 0 || k == last) ? 1 : 2)
            power[k] = Float(d)
            densitySum[k] += d
        }
        frameCount += 1
        power.withUnsafeBufferPointer { spectrogram.append(frameDensity: $0) }
    }
}

/// What ``SpectrumSurvey`` found.
public struct SpectrumSurveyResult: Sendable, Equatable {
    /// The averaged power spectral density.
    public let spectrum: PowerSpectrum
    /// The time-frequency picture (density per row and column).
    public let spectrogram: Spectrogram
    /// Samples analysed.
    public let sampleCount: Int
    /// Mean of the squared samples (full scale²).
    public let meanSquare: Double
    /// Largest absolute sample value.
    public let peakAmplitude: Float

    /// Length of the input, in seconds.
    public var duration: Double { Double(sampleCount) / Double(spectrum.sampleRate) }
}
