import Foundation
import ModemAudio
import Testing
import ModemTestSupport
import ProcessTestSupport

/// Records from an ALSA capture device on a thread of its own until told to stop, the way a
/// full-duplex modem reads while it plays.
final class CaptureThread: @unchecked Sendable {
    struct Result {
        var samples: [Float]
        var failure: (any Error)?
        var largestRead: Int
        var longestRead: Duration
        var xrunCount: Int
    }

    private let lock = NSLock()
    private var result = Result(samples: [], failure: nil, largestRead: 0, longestRead: .zero, xrunCount: 0)
    private var stopRequested = false
    private let finished = DispatchSemaphore(value: 0)
    /// Samples captured so far and whether capture failed: each read wakes ``waitForSamples(_:)``.
    private let progress = Observed((samples: 0, failed: false))

    init(device: String, sampleRate: Int) {
        Thread { [self] in self.run(device: device, sampleRate: sampleRate) }.start()
    }

    private func run(device: String, sampleRate: Int) {
        do {
            let input = try ALSACapture(device: device, sampleRate: sampleRate)
            // Larger than one read may return, to check that reads stay short.
            var block = [Float](repeating: 0, count: sampleRate)
            while !lock.withLock({ stopRequested }) {
                let start = ContinuousClock.now
                let n = try block.withUnsafeMutableBufferPointer { try input.read(into: $0) }
                let took = ContinuousClock.now - start
                let total = lock.withLock {
                    result.samples += block[0..<n]
                    result.largestRead = max(result.largestRead, n)
                    result.longestRead = max(result.longestRead, took)
                    return result.samples.count
                }
                progress.update { $0.samples = total }
            }
            input.close()
            lock.withLock { result.xrunCount = input.xrunCount }
        } catch {
            lock.withLock { result.failure = error }
            progress.update { $0.failed = true }
        }
        finished.signal()
    }

    var sampleCount: Int { lock.withLock { result.samples.count } }

    /// Waits until at least `count` samples have come (woken by each read); false when the thread
    /// failed, or after 60 s (a hang guard: the monitor delivers 48,000 samples a second).
    func waitForSamples(_ count: Int) async -> Bool {
        let seen = await progress.wait(timeout: 60) { $0.failed || $0.samples >= count }
        return seen.map { !$0.failed && $0.samples >= count } ?? false
    }

    func stop() -> Result {
        lock.withLock { stopRequested = true }
        finished.wait()
        return lock.withLock { result }
    }
}

/// The lag where `reference` best matches `signal` (normalised cross-correlation), and how well.
func bestMatch(of reference: [Float], in signal: [Float]) -> (lag: Int, score: Double)? {
    let m = reference.count
    guard m > 0, signal.count >= m else { return nil }
    return reference.withUnsafeBufferPointer { r -> (Int, Double) in
        signal.withUnsafeBufferPointer { s -> (Int, Double) in
            var refEnergy = 0.0
            for k in 0..<m { refEnergy += Double(r[k]) * Double(r[k]) }
            var windowEnergy = 0.0
            for k in 0..<m { windowEnergy += Double(s[k]) * Double(s[k]) }
            var best = (0, -1.0)
            for lag in 0...(s.count - m) {
                if lag > 0 {
                    let gone = Double(s[lag - 1]), came = Double(s[lag + m - 1])
                    windowEnergy += came * came - gone * gone
                }
                guard windowEnergy > 1e-12 else { continue }
                var dot: Float = 0
                for k in 0..<m { dot += r[k] * s[lag + k] }
                let score = Double(dot) / (refEnergy * max(windowEnergy, 1e-12)).squareRoot()
                if score > best.1 { best = (lag, score) }
            }
            return best
        }
    }
}

@Suite("ALSA through a loopback sound server (real time)", .serialized,
       .requires(SoundServer.pulseAudio, SoundServer.pactl), .loopbackServer)
struct ALSALoopbackRealTimeTests {
    @Test("a tone burst and a pseudo-random sequence played on default come back bit-exact")
    func roundTrip() async throws {
        _ = try LoopbackServer.require()
        let rate = 48000
        let recorder = CaptureThread(device: "default", sampleRate: rate)
        guard await recorder.waitForSamples(1) else {
            let result = recorder.stop()
            Issue.record("capture on default delivered nothing: \(result.failure.map { "\($0)" } ?? "timeout")")
            return
        }

        // 100 ms of 1 kHz, then 200 ms of noise; all values are k/32768, so S16 carries them exactly.
        let tone = (0..<4800).map { Int16((12000 * sin(2 * Double.pi * 1000 * Double($0) / Double(rate))).rounded()) }
        var random = TestRandom(seed: 2024)
        let noise = (0..<9600).map { _ in random.int16(in: -20000...20000) }
        let played = tone + noise
        let before = recorder.sampleCount

        let output = try ALSAPlayback(device: "default", sampleRate: rate)
        #expect(output.encoding == .s16LittleEndian && output.deviceChannelCount == 1)
        try played.map { Float($0) / 32768 }.withUnsafeBufferPointer { try output.write($0) }
        try output.finish()
        // Everything played has reached the monitor once it delivered that much more, give or take
        // half a second of its latency.
        #expect(await recorder.waitForSamples(before + played.count + rate / 2), "the capture stopped short")
        let result = recorder.stop()
        if let failure = result.failure { Issue.record("capture failed: \(failure)"); return }

        // Find the noise by correlating with its start; then everything must match within 1 LSB.
        let captured = result.samples
        let reference = noise.prefix(256).map { Float($0) / 32768 }
        let match = try #require(bestMatch(of: reference, in: captured))
        #expect(match.score > 0.999, "best correlation only \(match.score)")
        let start = match.lag - tone.count
        try #require(start >= 0 && start + played.count <= captured.count,
                     "signal at \(start) does not fit in \(captured.count) captured samples")
        var worst = 0
        for i in 0..<played.count {
            let back = Int((captured[start + i] * 32768).rounded())
            worst = max(worst, abs(back - Int(played[i])))
        }
        #expect(worst <= 1, "largest difference \(worst) LSB")
        #expect(result.largestRead <= rate / 20, "a read returned \(result.largestRead) samples")
        #expect(result.longestRead < .milliseconds(500), "a read blocked for \(result.longestRead)")
        if output.xrunCount + result.xrunCount > 0 {
            print("note: xruns during the loopback test: playback \(output.xrunCount), capture \(result.xrunCount)")
        }
    }

    @Test("the device list has default, for playback and capture, while the server runs")
    func listsDefault() throws {
        _ = try LoopbackServer.require()
        let devices = ALSADevices.list()
        let entry = try #require(devices.first { $0.name == "default" }, "listed: \(devices.map(\.name))")
        #expect(entry.playback && entry.capture)
        #expect(devices.first?.name == "default")
    }

    @Test("a capture can be stopped between reads and closed promptly")
    func stopsPromptly() throws {
        _ = try LoopbackServer.require()
        let input = try ALSACapture(device: "default", sampleRate: 48000, latencyMilliseconds: 50)
        var block = [Float](repeating: 0, count: 9600)
        var reads = 0
        let start = ContinuousClock.now
        // A caller's stop flag: here, 300 ms after the first read.
        while ContinuousClock.now - start < .milliseconds(300) {
            let n = try block.withUnsafeMutableBufferPointer { try input.read(into: $0) }
            #expect(n >= 1 && n <= 2400)
            reads += 1
        }
        let closing = ContinuousClock.now
        input.close()
        #expect(ContinuousClock.now - closing < .milliseconds(500))
        #expect(ContinuousClock.now - start < .seconds(3))
        #expect(reads >= 2)
        #expect(try block.withUnsafeMutableBufferPointer { try input.read(into: $0) } == 0)
    }

    @Test("playback survives a pause: the underrun is recovered and counted")
    func underrunRecovered() throws {
        _ = try LoopbackServer.require()
        let output = try ALSAPlayback(device: "default", sampleRate: 48000, latencyMilliseconds: 50)
        #expect(output.bufferFrameCount > 0)
        let block = [Float](repeating: 0.1, count: 2400)
        try block.withUnsafeBufferPointer { try output.write($0) }
        Thread.sleep(forTimeInterval: 0.3)   // far longer than the 50 ms buffer
        try block.withUnsafeBufferPointer { try output.write($0) }
        try output.finish()
        #expect(output.xrunCount >= 1)
    }

    @Test("a device that does not exist is unavailable, and the error names it", arguments: ["hw:99,0", "no-such-pcm"])
    func missingDevice(name: String) throws {
        let e1 = #expect(throws: AudioError.self) { try ALSAPlayback(device: name, sampleRate: 48000) }
        #expect(e1?.kind == .deviceUnavailable)
        #expect(e1?.subject == name)
        #expect(e1?.description.contains(name) == true)
        #expect((e1?.code ?? 0) < 0)
        let e2 = #expect(throws: AudioError.self) { try ALSACapture(device: name, sampleRate: 48000) }
        #expect(e2?.kind == .deviceUnavailable)
        #expect(e2?.description.contains(name) == true)
        #expect((e2?.code ?? 0) < 0)
    }

    @Test("the null device takes playback and gives silence, without a server")
    func nullDevice() throws {
        let output = try ALSAPlayback(device: "null", sampleRate: 8000)
        try [Float](repeating: 0.25, count: 4000).withUnsafeBufferPointer { try output.write($0) }
        try output.finish()

        let input = try ALSACapture(device: "null", sampleRate: 8000)
        var block = [Float](repeating: 1, count: 1000)
        let n = try block.withUnsafeMutableBufferPointer { try input.read(into: $0) }
        #expect(n >= 1 && n <= 400)
        #expect(block[0..<n].allSatisfy { $0 == 0 }, "\(block[0..<min(n, 8)]) n=\(n) \(input.encoding)")
        input.close()
    }
}
