import Foundation

/// A windowed-sinc resampler for tests (64 taps, Blackman window): what a sound card at another
/// rate, or with a drifting clock, records of a signal. Slow and exact enough for high-order QAM
/// (the channel simulator's cubic interpolation is not, near the top of the band).
public enum TestResampler {
    /// `samples` read `ratio` input samples apart (ratio > 1 reads faster: fewer output samples).
    public static func resample(_ samples: [Float], ratio: Double) -> [Float] {
        let count = Int(Double(samples.count) / ratio)
        let cutoff = min(1, 1 / ratio) * 0.92
        var out = [Float](repeating: 0, count: count)
        for m in 0..<count {
            let t = Double(m) * ratio
            let i0 = Int(t)
            var acc = 0.0
            for j in (i0 - 31)...(i0 + 32) where j >= 0 && j < samples.count {
                let x = Double(j) - t
                guard abs(x) < 32 else { continue }
                let w = 0.42 + 0.5 * cos(.pi * x / 32) + 0.08 * cos(2 * .pi * x / 32)
                let s = x == 0 ? cutoff : sin(.pi * cutoff * x) / (.pi * x)
                acc += Double(samples[j]) * s * w
            }
            out[m] = Float(acc)
        }
        return out
    }

    /// What a receiver whose clock is `ppm` parts per million faster than the sender's records.
    public static func drift(_ samples: [Float], ppm: Double) -> [Float] {
        resample(samples, ratio: 1 / (1 + ppm * 1e-6))
    }
}
