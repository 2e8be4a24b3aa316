import Foundation
import Testing
import ModemTestSupport
import ModemAudio
import ModemDSP
import ModemPipelines
import ModemRuntime

@Suite("The OFDM room grid: long symbols through a reverberant room")
struct OFDMRoomTests {
    /// A room's impulse response made here: the direct path, then 3,000 reflections at seeded random
    /// delays over 0.5 s with seeded random signs, their energy decaying 60 dB in `rt60` seconds,
    /// all of them together as strong as the direct path (a microphone near the critical distance).
    static func room(rt60: Double, seed: UInt64) -> [(delay: Int, gain: Float)] {
        var rng = SplitMix64(seed: seed)
        func uniform() -> Double { Double(rng.next() >> 11) / Double(1 << 53) }
        var taps: [(delay: Int, gain: Float)] = [(0, 1)]
        var energy = 0.0
        for _ in 0..<3000 {
            // Reflections thicken with time like a room's (density growing with the square of the delay).
            let t = 0.002 + 0.498 * uniform().squareRoot()
            let amplitude = pow(10, -3 * t / rt60) * (uniform() < 0.5 ? -1 : 1)
            taps.append((Int(t * 48000), Float(amplitude)))
            energy += amplitude * amplitude
        }
        let scale = Float(1 / energy.squareRoot())
        for i in 1..<taps.count { taps[i].gain *= scale }
        return taps
    }

    /// `samples` through the room `taps`, 0.5 s of tail kept, white noise at `snr` dB below the
    /// result's power, a clock `ppm` off.
    static func through(_ samples: [Float], taps: [(delay: Int, gain: Float)], snr: Double, ppm: Double, seed: UInt64) -> [Float] {
        let longest = taps.map(\.delay).max()!
        var out = [Float](repeating: 0, count: samples.count + longest)
        samples.withUnsafeBufferPointer { x in
            out.withUnsafeMutableBufferPointer { y in
                for (delay, gain) in taps {
                    for i in 0..<x.count { y[i + delay] += gain * x[i] }
                }
            }
        }
        let power = out.reduce(0) { $0 + Double($1 * $1) } / Double(samples.count)
        let sigma = (power / pow(10, snr / 10)).squareRoot()
        var rng = SplitMix64(seed: seed)
        for i in out.indices {
            // Gaussian noise (Box-Muller) from the seeded stream.
            let u1 = max(1e-12, Double(rng.next() >> 11) / Double(1 << 53)), u2 = Double(rng.next() >> 11) / Double(1 << 53)
            out[i] += Float(sigma * (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2))
        }
        return [Float](repeating: 0, count: 2400) + TestResampler.drift(out, ppm: ppm)
    }

    @Test("the room grid: long symbols, its own training, the receiver learns it from the header; --bitrate picks it")
    func grid() {
        let g = OFDMProfile.roomGrid
        #expect(g.fftSize == 32768 && !g.fitsSounding && g.hasTraining)
        let t = OFDMNumerology.training(for: g)
        #expect(t.fftSize == g.fftSize && t.cyclicPrefix >= g.cyclicPrefix && t.firstCarrier == g.firstCarrier)
        #expect(OFDMNumerology.training(for: OFDMProfile.airGrid) == OFDMNumerology.sounding)
        #expect(OFDMNumerology.startLength(for: OFDMProfile.airGrid) == OFDMNumerology.startLength)
        for p in OFDMProfile.room {
            #expect(OFDMProfile.withID(p.id) == p)
            #expect(OFDMProfile.fastest(atMost: p.netBitRate) == p)
            #expect(!OFDMProfile.all.contains { $0.id == p.id })
        }
        let ids = OFDMProfile.everyConfiguration.map(\.id)
        #expect(Set(ids).count == ids.count)
    }

    @Test("64-QAM 3/4 on the room grid through a synthetic room (RT60 0.4 s, 0.5 s of reflections as strong as the direct path), 30 dB SNR, 200 ppm: byte-exact")
    func reverberantRoom() throws {
        let profile = try #require(OFDMProfile.room.first { $0.constellation == .qam64 && $0.rate == .r3_4 })
        var rng = SplitMix64(seed: 0x200A)
        let payload = (0..<12000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let sent = try OFDMPipelineTests.audio(payload, profile: profile)
        let heard = Self.through(sent, taps: Self.room(rt60: 0.4, seed: 0x200B), snr: 30, ppm: 200, seed: 0x200C)
        let (bytes, summary, events) = try OFDMPipelineTests.receive(heard)
        #expect(summary.failure == nil)
        #expect(bytes == payload)
        guard case .started(let p, _, _)? = events.first else { Issue.record("no transmission found"); return }
        #expect(p == profile)
        let statistics = try #require(summary.statistics)
        #expect(statistics.lateReverberation != nil)
        // The training's SNR on the sounding's carriers, over the room grid's band.
        #expect(statistics.carrierSNR.count == OFDMNumerology.sounding.carrierCount)
        #expect(statistics.meanCarrierSNR > 15 && statistics.meanCarrierSNR < 45, "\(statistics.meanCarrierSNR)")
        #expect(abs(statistics.driftPPM - 200) < 20)
    }
}
