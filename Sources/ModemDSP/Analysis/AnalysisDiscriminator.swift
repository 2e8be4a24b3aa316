#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The front end of the analysis' demodulating passes: mixes a band down to 0 Hz around its
/// centre, low-pass filters it (4th-order Butterworth at its half-width) and measures the
/// instantaneous frequency, smoothed over about an eighth of the filter's inverse bandwidth.
struct AnalysisDiscriminator: Sendable {
    /// What one input sample gives.
    struct Output: Sendable {
        /// Smoothed instantaneous frequency, in Hz (absolute, not relative to the centre).
        var frequency: Double
        /// Smoothed power of the mixed-down signal, |z|² (a tone of power P gives P/2).
        var level: Double
        /// z[n]·conj(z[n − lag]): its angle is the offset from the centre times the lag.
        var lagRe: Double, lagIm: Double
    }

    let sampleRate: Double
    let centerFrequency: Double
    let halfWidth: Double
    /// Samples of the moving average.
    let smoothLength: Int
    /// The lag of the lag products, in samples: about 0.45/halfWidth seconds, where the filtered
    /// noise has lost most of its correlation and a tone within the band turns less than π.
    let lag: Int
    /// Samples ignored at the start while the filter settles.
    let warmUp: Int

    private let rotation: (re: Double, im: Double)
    private var phasor: (re: Double, im: Double) = (1, 0)
    private let sections: [Section]
    private var stateI: [Section.State]
    private var stateQ: [Section.State]
    private var previous: (re: Double, im: Double) = (0, 0)
    private var ringF: [Double]
    private var ringW: [Double]
    private var ringIndex = 0
    private var sumF = 0.0
    private var sumW = 0.0
    private var lagRe: [Double]
    private var lagIm: [Double]
    private var n = 0

    /// - Parameters:
    ///   - sampleRate: Hz, >= 100.
    ///   - centerFrequency: the band's centre, Hz.
    ///   - halfWidth: the low-pass cut-off, Hz (clamped to 15...0.45·sampleRate).
    init(sampleRate: Double, centerFrequency: Double, halfWidth: Double) {
        self.sampleRate = sampleRate
        self.centerFrequency = centerFrequency
        let hw = min(max(halfWidth, 15), 0.45 * sampleRate)
        self.halfWidth = hw
        let w = 2 * Double.pi * centerFrequency / sampleRate
        rotation = (cos(w), -sin(w))
        sections = Section.butterworth4(cutoff: hw, sampleRate: sampleRate)
        stateI = Array(repeating: Section.State(), count: sections.count)
        stateQ = stateI
        smoothLength = max(1, Int((sampleRate / (8 * hw)).rounded()))
        ringF = Array(repeating: 0, count: smoothLength)
        ringW = ringF
        lag = max(1, Int(0.45 * sampleRate / hw))
        lagRe = Array(repeating: 0, count: lag)     // slot n % lag holds z[n − lag]
        lagIm = lagRe
        warmUp = smoothLength + Int((2 * sampleRate / hw).rounded())
    }

    /// Takes one sample; nil while the filter warms up.
    mutating func step(_ x: Double) -> Output? {
        // Mix down: z = x·e^(−iωn).
        var i = x * phasor.re, q = x * phasor.im
        phasor = (phasor.re * rotation.re - phasor.im * rotation.im, phasor.re * rotation.im + phasor.im * rotation.re)
        if n & 1023 == 0 {
            let m = 1 / (phasor.re * phasor.re + phasor.im * phasor.im).squareRoot()
            phasor = (phasor.re * m, phasor.im * m)
        }
        for s in 0..<sections.count {
            i = sections[s].run(i, &stateI[s])
            q = sections[s].run(q, &stateQ[s])
        }
        // Discriminator: the angle between consecutive samples.
        let re = i * previous.re + q * previous.im
        let im = q * previous.re - i * previous.im
        previous = (i, q)
        let f = atan2(im, re) * sampleRate / (2 * Double.pi) + centerFrequency
        let power = i * i + q * q
        let slot = n % lag
        let oldRe = lagRe[slot], oldIm = lagIm[slot]
        lagRe[slot] = i
        lagIm[slot] = q
        sumF += f - ringF[ringIndex]
        sumW += power - ringW[ringIndex]
        ringF[ringIndex] = f
        ringW[ringIndex] = power
        ringIndex += 1
        if ringIndex == smoothLength {
            ringIndex = 0
            // Recompute now and then so rounding does not accumulate.
            sumF = ringF.reduce(0, +)
            sumW = ringW.reduce(0, +)
        }
        n += 1
        guard n > warmUp else { return nil }
        return Output(frequency: sumF / Double(smoothLength), level: sumW / Double(smoothLength),
                      lagRe: i * oldRe + q * oldIm, lagIm: q * oldRe - i * oldIm)
    }

    /// A biquad section (direct form II transposed).
    struct Section: Sendable {
        struct State: Sendable { var s1 = 0.0, s2 = 0.0 }
        var b0, b1, b2, a1, a2: Double

        @inline(__always)
        func run(_ x: Double, _ st: inout State) -> Double {
            let y = b0 * x + st.s1
            st.s1 = b1 * x - a1 * y + st.s2
            st.s2 = b2 * x - a2 * y
            return y
        }

        /// A 4th-order Butterworth low-pass (two sections), bilinear transform with prewarping.
        static func butterworth4(cutoff: Double, sampleRate: Double) -> [Section] {
            let k = tan(Double.pi * min(cutoff, 0.45 * sampleRate) / sampleRate)
            // Pole-pair quality factors 1/(2·cos(π/8)) and 1/(2·cos(3π/8)).
            return [0.541_196_100_146_197, 1.306_562_964_876_376_6].map { q in
                let norm = 1 / (1 + k / q + k * k)
                let b0 = k * k * norm
                return Section(b0: b0, b1: 2 * b0, b2: b0, a1: 2 * (k * k - 1) * norm, a2: (1 - k / q + k * k) * norm)
            }
        }
    }
}
