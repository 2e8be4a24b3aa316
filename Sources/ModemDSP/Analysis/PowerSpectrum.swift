#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An averaged one-sided power spectral density (Welch's method), in full-scale² per Hz.
///
/// A sine of amplitude `A` (full scale 1) contributes `A²/2` to ``power(from:to:)`` over the bins
/// around its frequency, whatever the FFT size.
public struct PowerSpectrum: Sendable, Equatable {
    /// Samples per second of the analysed signal, in Hz.
    public let sampleRate: Int
    /// Samples per transform; bins are `sampleRate/fftSize` Hz apart.
    public let fftSize: Int
    /// Density per bin, bins 0...fftSize/2 (DC to Nyquist), in full-scale²/Hz.
    public let density: [Double]
    /// How many windowed frames were averaged (0 for an empty input).
    public let frameCount: Int

    /// Creates a spectrum from densities.
    /// - Parameters:
    ///   - sampleRate: Hz, > 0.
    ///   - fftSize: samples per transform, even, >= 2.
    ///   - density: `fftSize/2 + 1` values in full-scale²/Hz.
    ///   - frameCount: frames averaged.
    public init(sampleRate: Int, fftSize: Int, density: [Double], frameCount: Int) {
        precondition(sampleRate > 0 && fftSize >= 2 && fftSize % 2 == 0, "bad spectrum geometry")
        precondition(density.count == fftSize / 2 + 1, "density needs fftSize/2+1 bins")
        self.sampleRate = sampleRate
        self.fftSize = fftSize
        self.density = density
        self.frameCount = frameCount
    }

    /// Spacing of the bins, in Hz.
    public var binWidth: Double { Double(sampleRate) / Double(fftSize) }

    /// Number of bins (`fftSize/2 + 1`).
    public var binCount: Int { density.count }

    /// Centre frequency of bin `k`, in Hz.
    public func frequency(ofBin k: Int) -> Double { Double(k) * binWidth }

    /// The bin whose centre is nearest `frequency` (Hz), clamped to the valid bins.
    public func bin(nearest frequency: Double) -> Int {
        guard frequency.isFinite else { return 0 }
        return min(max(Int((frequency / binWidth).rounded()), 0), binCount - 1)
    }

    /// Power between two frequencies (bins whose centres lie in `lower...upper`), in full-scale².
    public func power(from lower: Double, to upper: Double) -> Double {
        guard upper >= lower else { return 0 }
        let a = max(0, Int((lower / binWidth).rounded(.up)))
        let b = min(binCount - 1, Int((upper / binWidth).rounded(.down)))
        guard a <= b else { return 0 }
        var s = 0.0
        for k in a...b { s += density[k] }
        return s * binWidth
    }

    /// Mean power of the signal (the whole spectrum), in full-scale².
    public var totalPower: Double { density.reduce(0, +) * binWidth }

    /// The strongest bin between two frequencies, refined by parabolic interpolation of the
    /// log-density (exact to a few hundredths of a bin for a Hann-windowed sine).
    /// - Returns: the peak's frequency (Hz) and density at its nearest bin, or nil for an empty range.
    public func peak(from lower: Double, to upper: Double) -> (frequency: Double, density: Double)? {
        let a = max(0, Int((lower / binWidth).rounded(.up)))
        let b = min(binCount - 1, Int((upper / binWidth).rounded(.down)))
        guard a <= b else { return nil }
        var best = a
        for k in a...b where density[k] > density[best] { best = k }
        var offset = 0.0
        if best > 0, best < binCount - 1, density[best] > 0 {
            let l = log(max(density[best - 1], 1e-300)), c = log(density[best]), r = log(max(density[best + 1], 1e-300))
            let d = l - 2 * c + r
            if d < 0 { offset = min(max(0.5 * (l - r) / d, -0.5), 0.5) }
        }
        return ((Double(best) + offset) * binWidth, density[best])
    }
}
