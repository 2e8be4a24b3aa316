import CFFTW

/// A complex discrete Fourier transform of one size, planned once with FFTW (single precision),
/// forward only, unscaled. Owns its plan and buffers: one instance must not be used from two threads.
final class HFComplexTransform {
    let size: Int
    private let plan: OpaquePointer
    private let input: UnsafeMutablePointer<fftwf_complex>
    private let output: UnsafeMutablePointer<fftwf_complex>

    init(size: Int) {
        self.size = size
        fftwPlannerLock.lock()
        defer { fftwPlannerLock.unlock() }
        guard let i = fftwf_alloc_complex(size), let o = fftwf_alloc_complex(size),
              let p = fftwf_plan_dft_1d(Int32(size), i, o, FFTW_FORWARD, FFTW_ESTIMATE) else {
            preconditionFailure("FFTW could not plan a \(size)-point complex transform")
        }
        input = i
        output = o
        plan = p
    }

    deinit {
        fftwPlannerLock.lock()
        fftwf_destroy_plan(plan)
        fftwf_free(input)
        fftwf_free(output)
        fftwPlannerLock.unlock()
    }

    /// The transform of `size` complex samples from `re`/`im` at `start`, written to `outRe`/`outIm`.
    func forward(re: UnsafeBufferPointer<Float>, im: UnsafeBufferPointer<Float>, start: Int,
                 outRe: UnsafeMutableBufferPointer<Float>, outIm: UnsafeMutableBufferPointer<Float>) {
        input.withMemoryRebound(to: Float.self, capacity: 2 * size) { c in
            for n in 0..<size {
                c[2 * n] = re[start + n]
                c[2 * n + 1] = im[start + n]
            }
        }
        fftwf_execute(plan)
        output.withMemoryRebound(to: Float.self, capacity: 2 * size) { c in
            for n in 0..<size {
                outRe[n] = c[2 * n]
                outIm[n] = c[2 * n + 1]
            }
        }
    }
}
