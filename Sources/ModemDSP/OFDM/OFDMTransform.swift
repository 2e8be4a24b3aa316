import CFFTW

/// The two transforms of one OFDM grid, planned once with FFTW (single precision): carriers to a
/// real symbol (the inverse transform, for sending) and a real symbol to carriers (for receiving).
///
/// Carrier values are complex numbers in separate arrays; bin k of an `n`-point transform. No
/// scaling either way: a symbol made from carrier values X comes back as `n · X`.
///
/// Owns its plans and buffers: one instance must not be used from two threads at once.
final class OFDMTransform {
    let size: Int
    private let forwardPlan: OpaquePointer
    private let inversePlan: OpaquePointer
    private let envelopePlan: OpaquePointer
    private let real: UnsafeMutablePointer<Float>
    private let complex: UnsafeMutablePointer<fftwf_complex>
    private let fullIn: UnsafeMutablePointer<fftwf_complex>
    private let fullOut: UnsafeMutablePointer<fftwf_complex>

    init(size: Int) {
        precondition(size >= 16 && size % 2 == 0, "OFDMTransform size must be even")
        self.size = size
        fftwPlannerLock.lock()
        defer { fftwPlannerLock.unlock() }
        guard let r = fftwf_alloc_real(size), let c = fftwf_alloc_complex(size / 2 + 1),
              let fi = fftwf_alloc_complex(size), let fo = fftwf_alloc_complex(size) else {
            preconditionFailure("FFTW could not allocate buffers for a \(size)-point transform")
        }
        real = r
        complex = c
        fullIn = fi
        fullOut = fo
        guard let f = fftwf_plan_dft_r2c_1d(Int32(size), r, c, FFTW_ESTIMATE | FFTW_DESTROY_INPUT),
              let i = fftwf_plan_dft_c2r_1d(Int32(size), c, r, FFTW_ESTIMATE | FFTW_DESTROY_INPUT),
              let e = fftwf_plan_dft_1d(Int32(size), fi, fo, FFTW_BACKWARD, FFTW_ESTIMATE) else {
            preconditionFailure("FFTW could not plan a \(size)-point transform")
        }
        forwardPlan = f
        inversePlan = i
        envelopePlan = e
    }

    deinit {
        fftwPlannerLock.lock()
        fftwf_destroy_plan(forwardPlan)
        fftwf_destroy_plan(inversePlan)
        fftwf_destroy_plan(envelopePlan)
        fftwf_free(real)
        fftwf_free(complex)
        fftwf_free(fullIn)
        fftwf_free(fullOut)
        fftwPlannerLock.unlock()
    }

    /// The real symbol (`size` samples) whose bins `first...last` are `re`/`im` (the rest zero).
    func symbol(first: Int, re: UnsafeBufferPointer<Float>, im: UnsafeBufferPointer<Float>, into out: UnsafeMutableBufferPointer<Float>) {
        precondition(out.count >= size && first >= 1 && first + re.count <= size / 2 && re.count == im.count)
        complex.withMemoryRebound(to: Float.self, capacity: size + 2) { c in
            c.update(repeating: 0, count: size + 2)
            for i in 0..<re.count {
                c[2 * (first + i)] = re[i]
                c[2 * (first + i) + 1] = im[i]
            }
        }
        fftwf_execute(inversePlan)
        out.baseAddress!.update(from: real, count: size)
    }

    /// The bins `first...last` of the real symbol `samples` (`size` of them).
    func carriers(_ samples: UnsafeBufferPointer<Float>, first: Int, count: Int,
                  re: UnsafeMutableBufferPointer<Float>, im: UnsafeMutableBufferPointer<Float>) {
        precondition(samples.count >= size && first >= 0 && first + count <= size / 2 + 1 && re.count >= count && im.count >= count)
        real.update(from: samples.baseAddress!, count: size)
        fftwf_execute(forwardPlan)
        complex.withMemoryRebound(to: Float.self, capacity: size + 2) { c in
            for i in 0..<count {
                re[i] = c[2 * (first + i)]
                im[i] = c[2 * (first + i) + 1]
            }
        }
    }

    /// The power envelope `|h[n]|²` of the complex inverse transform of `count` bins from `first`
    /// (the others zero): a line's impulse response, seen through the band, from its carriers.
    func envelope(first: Int, re: UnsafeBufferPointer<Float>, im: UnsafeBufferPointer<Float>, into out: UnsafeMutableBufferPointer<Float>) {
        precondition(out.count >= size && first >= 0 && first + re.count <= size && re.count == im.count)
        fullIn.withMemoryRebound(to: Float.self, capacity: 2 * size) { c in
            c.update(repeating: 0, count: 2 * size)
            for i in 0..<re.count {
                c[2 * (first + i)] = re[i]
                c[2 * (first + i) + 1] = im[i]
            }
        }
        fftwf_execute(envelopePlan)
        fullOut.withMemoryRebound(to: Float.self, capacity: 2 * size) { c in
            for n in 0..<size { out[n] = c[2 * n] * c[2 * n] + c[2 * n + 1] * c[2 * n + 1] }
        }
    }
}
