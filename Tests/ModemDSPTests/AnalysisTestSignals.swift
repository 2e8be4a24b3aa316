import Foundation
import ModemRuntime
@testable import ModemDSP

/// The analysis tests' seeded generator.
typealias AnalysisRandom = SplitMix64

/// Synthetic test signals for the analysis.
enum AnalysisSignal {
    /// Phase-continuous FSK: each bit holds the mark (1) or space (0) tone for 1/baud seconds.
    static func fsk(bits: [Bool], sampleRate: Int, baudRate: Double, mark: Double, space: Double,
                    amplitude: Double = 0.5) -> [Float] {
        let fs = Double(sampleRate)
        let total = Int((Double(bits.count) * fs / baudRate).rounded())
        var out = [Float](repeating: 0, count: total)
        var phase = 0.0
        for n in 0..<total {
            let bit = min(Int(Double(n) * baudRate / fs), bits.count - 1)
            out[n] = Float(amplitude * sin(phase))
            phase += 2 * .pi * (bits[bit] ? mark : space) / fs
            if phase > 2 * .pi { phase -= 2 * .pi }
        }
        return out
    }

    /// Pseudo-random bits.
    static func randomBits(_ count: Int, seed: UInt64) -> [Bool] {
        var r = AnalysisRandom(seed: seed)
        return (0..<count).map { _ in Bool.random(using: &r) }
    }

    /// Bits of asynchronous characters: start (0), data LSB first, stop bits (1), after a mark leader.
    /// `stopBits` may be 1.5 (encoded with `baudRate` doubled by repeating every bit).
    static func uartBits(_ bytes: [UInt8], dataBits: Int = 8, leaderBits: Int = 20) -> [Bool] {
        var bits = [Bool](repeating: true, count: leaderBits)
        for b in bytes {
            bits.append(false)
            for i in 0..<dataBits { bits.append((b >> i) & 1 == 1) }
            bits.append(true)
        }
        bits += [Bool](repeating: true, count: 10)
        return bits
    }

    /// Adds white Gaussian noise so that the signal-to-noise ratio over the whole band 0...fs/2 is `snr` dB.
    static func addNoise(_ x: [Float], snr: Double, seed: UInt64) -> [Float] {
        let p = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1))
        let sigma = (p / pow(10, snr / 10)).squareRoot()
        var r = AnalysisRandom(seed: seed)
        return x.map { $0 + Float(sigma * r.gaussian()) }
    }

    /// White Gaussian noise of standard deviation `sigma`.
    static func noise(count: Int, sigma: Double, seed: UInt64) -> [Float] {
        var r = AnalysisRandom(seed: seed)
        return (0..<count).map { _ in Float(sigma * r.gaussian()) }
    }

    /// A steady sine.
    static func tone(frequency: Double, sampleRate: Int, seconds: Double, amplitude: Double = 0.5) -> [Float] {
        let n = Int(seconds * Double(sampleRate))
        return (0..<n).map { Float(amplitude * sin(2 * .pi * frequency * Double($0) / Double(sampleRate))) }
    }
}
