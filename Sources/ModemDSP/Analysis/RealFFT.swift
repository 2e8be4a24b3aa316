import CFFTW
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A forward real-to-complex discrete Fourier transform of one fixed size, planned once with FFTW
/// (single precision).
///
/// `X[k] = Σ x[n]·e^(−2πi·k·n/size)` for `k` in `0...size/2` (the other half is the complex
/// conjugate mirror of this one for a real input). No scaling is applied.
///
/// The transform owns its plan and its aligned work buffers, so one instance must not be used from
/// two threads at once; make one per thread (planning is serialised internally, so creating them
/// concurrently is safe).
public final class RealFFT {
    /// Samples per transform (even, 2...4_194_304).
    public let size: Int
    /// Complex bins produced: `size/2 + 1` (DC to Nyquist).
    public var binCount: Int { size / 2 + 1 }

    private let plan: OpaquePointer
    private let input: UnsafeMutablePointer<Float>
    private let output: UnsafeMutablePointer<fftwf_complex>

    /// Plans a transform.
    /// - Parameter size: samples per transform; even, 2...4_194_304 (powers of two are fastest).
    public init(size: Int) {
        precondition(size >= 2 && size <= 1 << 22 && size % 2 == 0,
                     "RealFFT size must be even and in 2...4194304, got \(size)")
        self.size = size
        fftwPlannerLock.lock()
        defer { fftwPlannerLock.unlock() }
        guard let i = fftwf_alloc_real(size), let o = fftwf_alloc_complex(size / 2 + 1) else {
            preconditionFailure("FFTW could not allocate buffers for a \(size)-point transform")
        }
        input = i
        output = o
        guard let p = fftwf_plan_dft_r2c_1d(Int32(size), i, o, FFTW_ESTIMATE | FFTW_DESTROY_INPUT) else {
            preconditionFailure("FFTW could not plan a \(size)-point real transform")
        }
        plan = p
    }

    deinit {
        fftwPlannerLock.lock()
        fftwf_destroy_plan(plan)
        fftwf_free(input)
        fftwf_free(output)
        fftwPlannerLock.unlock()
    }

    /// Transforms `samples` (at most `size` of them; the rest is zero-padded).
    /// - Parameters:
    ///   - samples: real input, `count <= size`.
    ///   - spectrum: receives `binCount` complex values interleaved as re, im (`2*binCount` floats).
    public func transform(_ samples: UnsafeBufferPointer<Float>, into spectrum: UnsafeMutableBufferPointer<Float>) {
        precondition(spectrum.count >= 2 * binCount, "spectrum needs 2*binCount = \(2 * binCount) floats")
        load(samples, window: nil)
        fftwf_execute(plan)
        let n = binCount
        output.withMemoryRebound(to: Float.self, capacity: 2 * n) { o in
            spectrum.baseAddress!.update(from: o, count: 2 * n)
        }
    }

    /// Squared magnitudes `|X[k]|²` of the transform of `samples`, optionally windowed first.
    /// - Parameters:
    ///   - samples: real input, `count <= size` (zero-padded to `size`).
    ///   - window: multiplied into the samples first; nil for none. Must hold `samples.count` values.
    ///   - power: receives `binCount` values.
    public func powerSpectrum(_ samples: UnsafeBufferPointer<Float>, window: UnsafeBufferPointer<Float>? = nil,
                              into power: UnsafeMutableBufferPointer<Float>) {
        precondition(power.count >= binCount, "power needs binCount = \(binCount) floats")
        load(samples, window: window)
        fftwf_execute(plan)
        for k in 0..<binCount {
            let re = output[k].0, im = output[k].1
            power[k] = re * re + im * im
        }
    }

    /// Convenience: the transform of an array, as separate real and imaginary parts of `binCount` values.
    public func transform(_ samples: [Float]) -> (real: [Float], imaginary: [Float]) {
        var interleaved = [Float](repeating: 0, count: 2 * binCount)
        samples.withUnsafeBufferPointer { s in
            interleaved.withUnsafeMutableBufferPointer { transform(s, into: $0) }
        }
        var re = [Float](repeating: 0, count: binCount), im = re
        for k in 0..<binCount {
            re[k] = interleaved[2 * k]
            im[k] = interleaved[2 * k + 1]
        }
        return (re, im)
    }

    private func load(_ samples: UnsafeBufferPointer<Float>, window: UnsafeBufferPointer<Float>?) {
        let n = samples.count
        precondition(n <= size, "RealFFT of size \(size) was given \(n) samples")
        if let w = window {
            precondition(w.count >= n, "window shorter than the samples")
            for i in 0..<n { input[i] = samples[i] * w[i] }
        } else if n > 0 {
            input.update(from: samples.baseAddress!, count: n)
        }
        if n < size { (input + n).update(repeating: 0, count: size - n) }
    }
}

/// FFTW's planner is not thread-safe: every plan creation and destruction goes through this lock.
final class FFTWPlannerLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}

let fftwPlannerLock = FFTWPlannerLock()
