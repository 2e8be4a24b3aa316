#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Window functions for spectral analysis.
public enum SpectralWindow {
    /// A periodic Hann window (`0.5 − 0.5·cos(2πn/count)`), the right one for overlapped
    /// (Welch) averaging: at 50% overlap the windows sum to a constant.
    /// - Parameter count: window length in samples, >= 1.
    public static func hann(count: Int) -> [Float] {
        precondition(count >= 1, "a window needs at least one sample")
        if count == 1 { return [1] }
        let step = 2 * Double.pi / Double(count)
        return (0..<count).map { Float(0.5 - 0.5 * cos(step * Double($0))) }
    }

    /// Σw² of a window: the factor that turns a windowed periodogram into a density.
    public static func powerSum(_ window: [Float]) -> Double {
        window.reduce(0) { $0 + Double($1) * Double($1) }
    }
}
