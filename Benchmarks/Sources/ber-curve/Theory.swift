#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bit error probabilities of binary FSK with non-coherent (envelope, matched-filter) detection in
/// additive white Gaussian noise.
///
/// For two equal-energy tones whose complex correlation over a bit is ρ, the optimum
/// non-coherent detector errs with probability (Proakis, *Digital Communications*, binary
/// non-orthogonal signals with non-coherent detection; the same result as Stein 1964,
/// "Unified analysis of certain coherent and non-coherent binary communication systems")
///
///     Pb = Q1(a, b) − ½ · exp(−(a² + b²)/2) · I0(a·b)
///     a = sqrt(Eb/2N0 · (1 − sqrt(1 − |ρ|²))),  b = sqrt(Eb/2N0 · (1 + sqrt(1 − |ρ|²)))
///
/// where Q1 is Marcum's Q function and I0 the modified Bessel function of order 0. For tones
/// Δf apart and a bit of T seconds, |ρ| = |sin(π Δf T) / (π Δf T)|. For orthogonal tones (ρ = 0):
/// a = 0, b² = Eb/N0, Q1(0, b) = exp(−b²/2), and Pb = ½ exp(−Eb/2N0).
enum FSKTheory {
    /// |ρ| of two tones `deltaF` Hz apart over one bit at `baudRate`.
    static func correlation(deltaF: Double, baudRate: Double) -> Double {
        let x = Double.pi * abs(deltaF) / baudRate
        return x == 0 ? 1 : abs(sin(x) / x)
    }

    /// Pb for orthogonal tones: ½ exp(−Eb/2N0). `ebN0` is linear (not dB).
    static func orthogonal(ebN0: Double) -> Double {
        0.5 * exp(-ebN0 / 2)
    }

    /// Pb for tones with correlation magnitude `rho` (0...1). `ebN0` is linear (not dB).
    static func nonOrthogonal(ebN0: Double, rho: Double) -> Double {
        let s = (1 - rho * rho).squareRoot()
        let a = (ebN0 / 2 * (1 - s)).squareRoot()
        let b = (ebN0 / 2 * (1 + s)).squareRoot()
        let p = marcumQ1(a, b) - 0.5 * exp(-(a * a + b * b) / 2) * besselI0(a * b)
        return max(0, p)
    }

    /// Marcum's Q function of order 1, Q1(a, b) = ∫_b^∞ x·exp(−(x² + a²)/2)·I0(a·x) dx, for a, b ≥ 0.
    ///
    /// Computed as a Poisson mixture, all terms positive: with λ = a²/2 and μ = b²/2,
    /// Q1(a, b) = Σ_n Poisson(n; λ) · P(Poisson(μ) ≤ n).
    static func marcumQ1(_ a: Double, _ b: Double) -> Double {
        let lambda = a * a / 2, mu = b * b / 2
        var pl = exp(-lambda)          // Poisson(n; λ)
        var pm = exp(-mu)              // Poisson(n; μ)
        var cm = pm                    // P(Poisson(μ) ≤ n)
        var sum = pl * cm
        // Poisson(λ) has no mass worth counting beyond λ + 12·sqrt(λ) + 40.
        let last = Int(lambda + 12 * lambda.squareRoot() + 40)
        for n in stride(from: 1, through: last, by: 1) {
            pl *= lambda / Double(n)
            pm *= mu / Double(n)
            cm = min(1, cm + pm)
            sum += pl * cm
        }
        return min(1, sum)
    }

    /// The modified Bessel function of the first kind, order 0 (power series; fine for x up to ~100).
    static func besselI0(_ x: Double) -> Double {
        let q = x * x / 4
        var term = 1.0, sum = 1.0
        var k = 0.0
        while term > sum * 1e-17 {
            k += 1
            term *= q / (k * k)
            sum += term
        }
        return sum
    }

    /// The Eb/N0 in dB at which `pb(dB)` equals `target`, by bisection (pb falls with Eb/N0).
    static func ebN0dB(atBER target: Double, lower: Double = -5, upper: Double = 30, _ pb: (Double) -> Double) -> Double {
        var lo = lower, hi = upper
        for _ in 0..<100 {
            let mid = (lo + hi) / 2
            if pb(mid) > target { lo = mid } else { hi = mid }
        }
        return (lo + hi) / 2
    }

    /// Linear Eb/N0 from decibels.
    static func linear(dB: Double) -> Double { pow(10, dB / 10) }
}
