import Synchronization
import Testing
import Foundation
@testable import ModemDSP

/// The FFT wrapper, the window, the Welch spectrum and the bounded spectrogram.
@Suite struct AnalysisSpectrumTests {
    /// X[k] = Σ x[n]·e^(−2πi·k·n/N), in Double.
    static func naiveDFT(_ x: [Float], size: Int) -> (re: [Double], im: [Double]) {
        var re = [Double](repeating: 0, count: size / 2 + 1), im = re
        for k in 0...(size / 2) {
            for (n, v) in x.enumerated() {
                let a = -2 * Double.pi * Double(k) * Double(n) / Double(size)
                re[k] += Double(v) * cos(a)
                im[k] += Double(v) * sin(a)
            }
        }
        return (re, im)
    }

    @Test(arguments: [2, 8, 64, 100, 1000, 1024, 4096])
    func fftMatchesNaiveDFT(size: Int) {
        var r = AnalysisRandom(seed: UInt64(size))
        let x = (0..<size).map { _ in Float(r.gaussian()) }
        let fft = RealFFT(size: size)
        #expect(fft.binCount == size / 2 + 1)
        let got = fft.transform(x)
        let want = Self.naiveDFT(x, size: size)
        let scale = Double(size).squareRoot()
        for k in 0..<fft.binCount {
            #expect(abs(Double(got.real[k]) - want.re[k]) < 1e-4 * scale * 10, "bin \(k) real")
            #expect(abs(Double(got.imaginary[k]) - want.im[k]) < 1e-4 * scale * 10, "bin \(k) imaginary")
        }
    }

    @Test func fftZeroPadsShortInputAndPowerSpectrumIsMagnitudeSquared() {
        let fft = RealFFT(size: 32)
        let x: [Float] = (0..<20).map { Float(sin(Double($0) * 0.7)) }
        let got = fft.transform(x)
        let want = Self.naiveDFT(x, size: 32)
        for k in 0..<fft.binCount {
            #expect(abs(Double(got.real[k]) - want.re[k]) < 1e-4)
            #expect(abs(Double(got.imaginary[k]) - want.im[k]) < 1e-4)
        }
        var power = [Float](repeating: 0, count: fft.binCount)
        x.withUnsafeBufferPointer { xs in power.withUnsafeMutableBufferPointer { fft.powerSpectrum(xs, into: $0) } }
        for k in 0..<fft.binCount {
            #expect(abs(Double(power[k]) - (want.re[k] * want.re[k] + want.im[k] * want.im[k])) < 1e-3)
        }
    }

    @Test func fftImpulseAndConstant() {
        let fft = RealFFT(size: 16)
        var impulse = [Float](repeating: 0, count: 16)
        impulse[0] = 1
        let a = fft.transform(impulse)
        #expect(a.real.allSatisfy { abs($0 - 1) < 1e-6 } && a.imaginary.allSatisfy { abs($0) < 1e-6 })
        let b = fft.transform([Float](repeating: 0.5, count: 16))
        #expect(abs(b.real[0] - 8) < 1e-5)
        #expect(b.real.dropFirst().allSatisfy { abs($0) < 1e-5 })
    }

    /// FFTW's planner is not thread-safe: plans created on several threads at once without the
    /// library's lock corrupt its tables (wrong results, crashes). Eight threads each create and
    /// destroy hundreds of plans of many sizes (odd composite sizes plan slowest) and check every
    /// transform against a known answer.
    @Test func fftPlansConcurrently() async {
        let threads = 8, plansPerThread = 150
        let sizes = [6, 10, 16, 18, 30, 64, 90, 100, 126, 210, 256, 330, 462, 512, 1000, 1024, 2310, 4096]
        let failures = Mutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let remaining = Mutex(threads)
            for t in 0..<threads {
                Thread {
                    for k in 0..<plansPerThread {
                        let n = sizes[(t * 7 + k) % sizes.count]
                        let fft = RealFFT(size: n)
                        // A cosine in bin b: X[b] = n/2, every other bin 0.
                        let b = 1 + (t + k) % (n / 2 - 1)
                        let x = (0..<n).map { Float(cos(2 * Double.pi * Double(b * $0) / Double(n))) }
                        let spectrum = fft.transform(x)
                        let peak = spectrum.real[b]
                        let leak = (0..<fft.binCount).filter { $0 != b }.map { abs(spectrum.real[$0]) + abs(spectrum.imaginary[$0]) }.max() ?? 0
                        if abs(peak - Float(n) / 2) > 1e-2 * Float(n) || leak > 1e-2 * Float(n) {
                            failures.withLock { $0.append("thread \(t) plan \(k): size \(n) bin \(b): \(peak), leak \(leak)") }
                        }
                    }
                    if remaining.withLock({ $0 -= 1; return $0 }) == 0 { done.resume() }
                }.start()
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
    }

    @Test func hannWindowIsPeriodic() {
        let w = SpectralWindow.hann(count: 8)
        #expect(w[0] == 0)
        #expect(abs(w[4] - 1) < 1e-7)
        #expect(abs(w[1] - w[7]) < 1e-7)
        // Periodic Hann windows at 50% overlap sum to a constant.
        let n = 64
        let h = SpectralWindow.hann(count: n)
        for i in 0..<(n / 2) { #expect(abs(h[i] + h[i + n / 2] - 1) < 1e-6) }
        #expect(SpectralWindow.hann(count: 1) == [1])
        #expect(abs(SpectralWindow.powerSum(h) - 0.375 * Double(n)) < 1e-3)
    }

    @Test(arguments: [(8000, 1024), (11025, 1024), (22050, 2048), (44100, 4096), (48000, 4096), (96000, 8192)])
    func fftSizeGivesAboutTenHertzBins(sampleRate: Int, size: Int) {
        #expect(SpectrumSurvey.fftSize(forSampleRate: sampleRate) == size)
    }

    @Test(arguments: [8000, 44100, 48000])
    func sinePowerIsAmplitudeSquaredOverTwo(sampleRate: Int) {
        let amplitude = 0.3
        let x = AnalysisSignal.tone(frequency: 1234.5, sampleRate: sampleRate, seconds: 1, amplitude: amplitude)
        var s = SpectrumSurvey(sampleRate: sampleRate)
        s.process(x)
        let r = s.result()
        let p = r.spectrum.power(from: 1100, to: 1400)
        #expect(abs(p / (amplitude * amplitude / 2) - 1) < 0.02)
        #expect(abs(r.spectrum.totalPower / (amplitude * amplitude / 2) - 1) < 0.02)
        let peak = r.spectrum.peak(from: 100, to: Double(sampleRate) / 2)!
        #expect(abs(peak.frequency - 1234.5) < 0.1 * r.spectrum.binWidth)
        #expect(r.sampleCount == x.count)
        #expect(abs(r.meanSquare - amplitude * amplitude / 2) < 1e-3)
    }

    @Test func whiteNoiseDensityIsFlat() {
        let fs = 8000, sigma = 0.1
        let x = AnalysisSignal.noise(count: fs * 4, sigma: sigma, seed: 9)
        var s = SpectrumSurvey(sampleRate: fs)
        s.process(x)
        let spectrum = s.result().spectrum
        // One-sided density of white noise: 2σ²/fs.
        let expected = 2 * sigma * sigma / Double(fs)
        let mid = spectrum.density[10..<(spectrum.binCount - 10)]
        let mean = mid.reduce(0, +) / Double(mid.count)
        #expect(abs(mean / expected - 1) < 0.05)
    }

    @Test func blockSizeDoesNotChangeTheSpectrum() {
        let x = AnalysisSignal.noise(count: 20000, sigma: 0.2, seed: 4)
        var a = SpectrumSurvey(sampleRate: 8000)
        a.process(x)
        var b = SpectrumSurvey(sampleRate: 8000)
        for v in x { b.process([v]) }
        var c = SpectrumSurvey(sampleRate: 8000)
        var i = 0
        while i < x.count { let e = min(i + 777, x.count); c.process(Array(x[i..<e])); i = e }
        #expect(a.result() == b.result())
        #expect(a.result() == c.result())
        // reset() starts over.
        a.reset()
        #expect(a.result().sampleCount == 0)
        a.process(x)
        #expect(a.result() == c.result())
    }

    @Test func shortAndEmptyInputs() {
        var empty = SpectrumSurvey(sampleRate: 48000)
        let e = empty.result()
        #expect(e.sampleCount == 0 && e.spectrum.frameCount == 0 && e.spectrogram.columnCount == 0)
        empty.process([Float]())
        #expect(empty.result().sampleCount == 0)
        var short = SpectrumSurvey(sampleRate: 48000)
        short.process(AnalysisSignal.tone(frequency: 3000, sampleRate: 48000, seconds: 0.01))
        let r = short.result()
        #expect(r.spectrum.frameCount == 1)
        #expect(r.spectrogram.columnCount == 1)
        let peak = r.spectrum.peak(from: 100, to: 24000)!
        #expect(abs(peak.frequency - 3000) < 60)
    }

    @Test func spectrogramStaysBoundedAndAveragesInPairs() {
        var g = Spectrogram(sampleRate: 8000, fftSize: 16, hopSize: 8, maxRows: 16, maxColumns: 8)
        #expect(g.rowCount == 9 && g.binsPerRow == 1)
        for i in 0..<100 {
            let frame = [Float](repeating: Float(i), count: 9)
            frame.withUnsafeBufferPointer { g.append(frameDensity: $0) }
            #expect(g.columnCount <= 8)
        }
        g.flush()
        #expect(g.frameCount == 100)
        #expect(g.columnCount <= 8 && g.columnCount >= 4)
        // Every frame counted once: the column means, weighted by frames, average to the frame mean.
        #expect(g.framesPerColumn == 16)
        #expect(g.density(column: 0, row: 3) == 7.5)     // mean of 0...15
        let before = g.columnCount
        g.reset()
        #expect(g.columnCount == 0 && before > 0)
    }

    @Test func spectrogramGroupsBinsIntoRows() {
        let g = Spectrogram(sampleRate: 48000, fftSize: 8192, hopSize: 4096, maxRows: 2049, maxColumns: 16)
        #expect(g.binsPerRow == 2)
        #expect(g.rowCount == 2049)
        #expect(abs(g.rowBandwidth - 2 * 48000.0 / 8192) < 1e-9)
        #expect(g.row(for: 1200) == Int((1200 / (48000.0 / 8192)).rounded()) / 2)
    }

    @Test func longInputKeepsAtMostMaxColumns() {
        // Ten minutes at 8 kHz, without telling the survey how long it is.
        var s = SpectrumSurvey(sampleRate: 8000, maxColumns: 256)
        let block = AnalysisSignal.noise(count: 8000, sigma: 0.1, seed: 1)
        for _ in 0..<600 { s.process(block) }
        let g = s.result().spectrogram
        #expect(g.columnCount <= 256 && g.columnCount >= 128)
        #expect(g.values.count == g.columnCount * g.rowCount)
        #expect(abs(Double(g.columnCount) * g.secondsPerColumn - 600) < 2 * g.secondsPerColumn + 1)
    }
}
