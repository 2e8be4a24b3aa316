// Throughput and allocation benchmarks of the FSK modulator and demodulator (package-benchmark).
//
// Each iteration handles 10 seconds of audio at 48 kHz (480,000 samples): 8N1 characters sent back
// to back. Besides package-benchmark's own metrics (wall clock, throughput = iterations per second,
// malloc counts, resident memory) two custom metrics are reported per iteration:
//   - "samples/s": samples made or consumed per wall second;
//   - "x real time": seconds of audio per wall second (samples/s divided by the sample rate).
// The modulation target is 10,000x real time (480 M samples/s at 48 kHz).
//
// Run: swift package --package-path Benchmarks --scratch-path Benchmarks/.build benchmark

import Benchmark
import ModemDSP

private let sampleRate = 48_000.0
private let seconds = 10.0

private enum ModemMetrics {
    static let samplesPerSecond = BenchmarkMetric.custom("samples/s", polarity: .prefersLarger, useScalingFactor: false)
    static let realTime = BenchmarkMetric.custom("x real time", polarity: .prefersLarger, useScalingFactor: false)
}

/// A line setting under test.
private struct Line: Sendable {
    var name: String
    var configuration: FSKConfiguration
    /// Characters that fill `seconds` of audio (8N1: 10 bit periods each).
    var characters: Int { Int(seconds * configuration.baudRate / 10) }
    var samples: Int { Int(seconds * sampleRate) }
}

private func line(_ profile: FSKProfile) -> Line {
    let c = try! FSKConfiguration(sampleRate: sampleRate, baudRate: profile.baudRate,
                                  markFrequency: profile.markFrequency, spaceFrequency: profile.spaceFrequency)
    return Line(name: "\(Int(profile.baudRate)) baud", configuration: c)
}

/// Deterministic pseudo-random bytes (xorshift), the same on every run.
private func payload(count: Int) -> [UInt8] {
    var s: UInt64 = 0x9E37_79B9_7F4A_7C15
    return (0..<count).map { _ in
        s ^= s << 13; s ^= s >> 7; s ^= s << 17
        return UInt8(truncatingIfNeeded: s >> 24)
    }
}

/// Appends 8N1 characters: start bit (space), 8 data bits LSB first, one stop bit (mark).
private func modulate(_ bytes: [UInt8], with modulator: inout FSKModulator, into output: inout [Float]) {
    for b in bytes {
        modulator.appendWord(UInt32(b) << 1, count: 9, to: &output)
        modulator.appendTone(mark: true, bits: 1, to: &output)
    }
}

private func report(_ benchmark: Benchmark, samples: Int, since start: ContinuousClock.Instant) {
    let elapsed = ContinuousClock.now - start
    let s = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    guard s > 0 else { return }
    let rate = Double(samples) / s
    benchmark.measurement(ModemMetrics.samplesPerSecond, Int(rate))
    benchmark.measurement(ModemMetrics.realTime, Int(rate / sampleRate))
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal, .mallocBytesCount, .peakMemoryResident,
                  ModemMetrics.samplesPerSecond, ModemMetrics.realTime],
        warmupIterations: 2,
        maxDuration: .seconds(3),
        maxIterations: 1000
    )

    bluetoothBenchmarks()

    for profile in [FSKProfile.bell202, FSKProfile.bell103] {
        let l = line(profile)
        let bytes = payload(count: l.characters)

        let words = bytes.map { UInt32($0) << 1 }   // start bit 0, then the data bits LSB first

        // Modulation with one call per character (appendWord for start + data bits, appendTone for the
        // stop bit) into an array whose capacity is kept between iterations. The modulator is made
        // outside the measurement.
        Benchmark("Modulator \(l.name) 8N1, 10 s at 48 kHz, per-character calls (reused buffer)") { benchmark in
            var modulator = FSKModulator(configuration: l.configuration, amplitude: 0.7)
            var output: [Float] = []
            output.reserveCapacity(l.samples + 64)
            for _ in benchmark.scaledIterations {
                modulator.reset()
                output.removeAll(keepingCapacity: true)
                benchmark.startMeasurement()
                let start = ContinuousClock.now
                modulate(bytes, with: &modulator, into: &output)
                report(benchmark, samples: output.count, since: start)
                benchmark.stopMeasurement()
                blackHole(output)
            }
        }

        // The batched API: all characters in one appendCharacters call, into a reused buffer.
        Benchmark("Modulator \(l.name) 8N1, 10 s at 48 kHz, appendCharacters (reused buffer)") { benchmark in
            var modulator = FSKModulator(configuration: l.configuration, amplitude: 0.7)
            var output: [Float] = []
            output.reserveCapacity(l.samples + 64)
            for _ in benchmark.scaledIterations {
                modulator.reset()
                output.removeAll(keepingCapacity: true)
                benchmark.startMeasurement()
                let start = ContinuousClock.now
                modulator.appendCharacters(words, bitsBeforeStop: 9, stopBits: 1, to: &output)
                report(benchmark, samples: output.count, since: start)
                benchmark.stopMeasurement()
                blackHole(output)
            }
        }

        // From scratch: a new modulator and a new, growing array every iteration.
        Benchmark("Modulator \(l.name) 8N1, 10 s at 48 kHz, appendCharacters (new modulator and array)") { benchmark in
            for _ in benchmark.scaledIterations {
                let start = ContinuousClock.now
                var modulator = FSKModulator(configuration: l.configuration, amplitude: 0.7)
                var output: [Float] = []
                modulator.appendCharacters(words, bitsBeforeStop: 9, stopBits: 1, to: &output)
                report(benchmark, samples: output.count, since: start)
                blackHole(output)
            }
        }

        // Demodulation of the same audio, streamed in blocks of 4096 samples as the CLI reads a file.
        Benchmark("Demodulator \(l.name) 8N1, 10 s at 48 kHz (4096-sample blocks)") { benchmark in
            var modulator = FSKModulator(configuration: l.configuration, amplitude: 0.7)
            var audio: [Float] = []
            modulator.appendTone(mark: true, bits: 2, to: &audio)   // leader, as the transmitter sends
            modulate(bytes, with: &modulator, into: &audio)
            var events: [FSKDemodulatorEvent] = []
            events.reserveCapacity(l.characters + 16)
            let shape = AsyncCharacterShape(bitsBeforeStop: 9, stopBits: 1)
            for _ in benchmark.scaledIterations {
                events.removeAll(keepingCapacity: true)
                benchmark.startMeasurement()
                let start = ContinuousClock.now
                var demodulator = FSKDemodulator(configuration: l.configuration, shape: shape)
                audio.withUnsafeBufferPointer { all in
                    var i = 0
                    while i < all.count {
                        let n = min(4096, all.count - i)
                        demodulator.process(UnsafeBufferPointer(rebasing: all[i..<(i + n)]), into: &events)
                        i += n
                    }
                }
                demodulator.finish(into: &events)
                report(benchmark, samples: audio.count, since: start)
                benchmark.stopMeasurement()
                // The benchmark is only meaningful if the audio was decoded: check every character.
                var k = 0
                for case .character(let ch) in events {
                    precondition(k < bytes.count && ch.bits == UInt32(bytes[k]) && ch.stopBitOK,
                                 "demodulator benchmark decoded character \(k) wrongly")
                    k += 1
                }
                precondition(k == bytes.count, "demodulator benchmark decoded \(k) of \(bytes.count) characters")
            }
        }
    }
}
