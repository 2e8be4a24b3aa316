import Foundation
import Testing
import ModemTestSupport
import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines

@Suite("The HF modem: bytes through the transmitter, a simulated SSB channel and the receiver")
struct HFPipelineTests {
    /// What the receiver made of `samples` (at `rate`): the bytes, the summary and the events.
    static func receive(_ samples: [Float], rate: Int = 8000) throws -> (bytes: [UInt8], summary: HFReceiverSummary, events: [HFReceiverEvent]) {
        let rx = try HFReceiver(source: MemorySource(samples, sampleRate: rate))
        var bytes: [UInt8] = []
        var events: [HFReceiverEvent] = []
        let summary = try rx.run(onBytes: { bytes += $0 }, onEvent: { events.append($0) })
        return (bytes, summary, events)
    }

    static func profile(_ name: String) -> HFProfile { HFProfile.all.first { $0.name == name }! }

    /// White noise at `snr` dB over the signal's power (in the whole 0-4 kHz band at 8 kHz), seeded,
    /// and 0.3 s of noise before and after.
    static func noisy(_ samples: [Float], snr: Double, seed: UInt64) -> [Float] {
        let power = samples.reduce(0) { $0 + Double($1 * $1) } / Double(samples.count)
        let sigma = Float((power / pow(10, snr / 10)).squareRoot())
        var rng = TestRandom(seed: seed)
        let padded = [Float](repeating: 0, count: 2400) + samples + [Float](repeating: 0, count: 2400)
        return padded.map { $0 + sigma * rng.gaussian() }
    }

    /// The signal moved up by `hz` (through its complex baseband).
    static func shifted(_ samples: [Float], hz: Double) -> [Float] {
        let (re, im) = HFFilters.baseband(samples)
        let w = 2 * Double.pi * (HFGrid.centreHz + hz) / HFGrid.sampleRate
        return (0..<samples.count).map { n in
            let p = w * Double(n)
            return re[n] * Float(cos(p)) - im[n] * Float(sin(p))
        }
    }

    /// Two paths `delay` samples apart, each with its own complex gain wandering with a Doppler
    /// spread of about `doppler` Hz (a sum of eight seeded sinusoids per path), the average power kept.
    static func faded(_ samples: [Float], delay: Int, doppler: Double, seed: UInt64) -> [Float] {
        let (re, im) = HFFilters.baseband(samples)
        var rng = TestRandom(seed: seed)
        func path() -> [(f: Double, phase: Double, amp: Double)] {
            (0..<8).map { _ in (Double.random(in: -doppler...doppler, using: &rng), Double.random(in: 0..<(2 * .pi), using: &rng), 0.5 / (8.0).squareRoot()) }
        }
        let p1 = path(), p2 = path()
        func gain(_ p: [(f: Double, phase: Double, amp: Double)], _ n: Int) -> (Double, Double) {
            var r = 0.0, i = 0.0
            let t = Double(n) / HFGrid.sampleRate
            for c in p {
                r += c.amp * cos(2 * .pi * c.f * t + c.phase) * 2.squareRoot()
                i += c.amp * sin(2 * .pi * c.f * t + c.phase) * 2.squareRoot()
            }
            return (r, i)
        }
        let w = 2 * Double.pi * HFGrid.centreHz / HFGrid.sampleRate
        return (0..<samples.count).map { n in
            let g1 = gain(p1, n), g2 = gain(p2, n)
            var zr = Double(re[n]) * g1.0 - Double(im[n]) * g1.1, zi = Double(re[n]) * g1.1 + Double(im[n]) * g1.0
            if n >= delay {
                zr += Double(re[n - delay]) * g2.0 - Double(im[n - delay]) * g2.1
                zi += Double(re[n - delay]) * g2.1 + Double(im[n - delay]) * g2.0
            }
            let p = w * Double(n)
            return Float(zr * cos(p) - zi * sin(p))
        }
    }

    @Test("the configurations: rates from under 50 to over 8000 bit/s, slowest first, carriers inside 300-2600 Hz, ids unique")
    func table() {
        let all = HFProfile.all
        #expect(Set(all.map(\.id)).count == all.count)
        #expect(all.first!.netBitRate < 50)
        #expect(all.map(\.netBitRate).max()! > 8000)
        for g in [HFGrid.robust, HFGrid.wide] {
            #expect(Double(g.firstCarrier) * g.carrierSpacing >= 300)
            #expect(Double(g.lastCarrier) * g.carrierSpacing <= 2600)
        }
        #expect(HFProfile.fastest(atMost: 10) == nil)
        #expect(HFProfile.fastest(atMost: 1600)!.netBitRate <= 1600)
        // One configuration picked between two values of the benchmark's --bitrate list: 1600-2400 is QPSK 3/5 robust.
        #expect(HFProfile.fastest(atMost: 2400)!.name == "QPSK 3/5 robust")
        #expect(HFProfile.withID(9)!.name == "QPSK 2/3 robust" && !HFProfile.withID(9)!.pickedByBitRate)
        #expect(HFProfile.fastest(atMost: 1_000_000)!.netBitRate == all.map(\.netBitRate).max()!)
    }

    @Test("the transmission stays inside 300-2600 Hz (less than 1 % of its power outside 250-2650 Hz)", arguments: ["64-QAM 3/4 wide", "QPSK 1/2 robust"])
    func band(name: String) throws {
        var rng = TestRandom(seed: 11)
        let s = try HFTransmitter.samples(payload: rng.bytes(3000), profile: Self.profile(name))
        // A Hann-windowed 4096-point look at the data symbols (every 2nd bin, 3.9 Hz apart).
        let n = 4096, start = HFGrid.startLength
        #expect(s.count >= start + n)
        var inside = 0.0, total = 0.0
        for k in stride(from: 2, to: n / 2, by: 2) {
            var r = 0.0, i = 0.0
            for j in 0..<n {
                let w = 0.5 - 0.5 * cos(2 * Double.pi * Double(j) / Double(n))
                let p = 2 * Double.pi * Double(k * j) / Double(n)
                r += w * Double(s[start + j]) * cos(p)
                i -= w * Double(s[start + j]) * sin(p)
            }
            let power = r * r + i * i
            total += power
            if (250...2650).contains(Double(k) * HFGrid.sampleRate / Double(n)) { inside += power }
        }
        #expect(inside / total > 0.99)
    }

    @Test("round trips in white noise: wide 64-QAM 3/4 at 24 dB, robust QPSK 1/2 at 6 dB, robust QPSK 1/2 x4 at -2 dB (SNR over 0-4 kHz)",
          arguments: [("64-QAM 3/4 wide", 24.0), ("QPSK 1/2 robust", 6.0), ("QPSK 1/2 x4 robust", -2.0)])
    func whiteNoise(name: String, snr: Double) throws {
        var rng = TestRandom(seed: 21)
        let payload = rng.bytes(700)
        let tx = try HFTransmitter.samples(payload: payload, profile: Self.profile(name))
        let r = try Self.receive(Self.noisy(tx, snr: snr, seed: 22))
        #expect(r.summary.failure == nil)
        #expect(r.summary.transmissions == 1)
        #expect(r.bytes == payload)
    }

    @Test("a 48 kHz file: sent through the interpolator and back through the decimator")
    func soundCardRate() throws {
        var rng = TestRandom(seed: 31)
        let payload = rng.bytes(500)
        let sink = MemorySink(sampleRate: 48000)
        try HFTransmitter.send(payload: payload, profile: Self.profile("16-QAM 1/2 wide"), sink: sink)
        #expect(sink.finished)
        #expect(sink.samples.allSatisfy { abs($0) <= 1 })
        let r = try Self.receive(sink.samples, rate: 48000)
        #expect(r.bytes == payload)
    }

    @Test("frequency offsets of -150, -60, +45 and +170 Hz (SSB mistuning) are found and removed", arguments: [-150.0, -60.0, 45.0, 170.0])
    func frequencyOffset(hz: Double) throws {
        var rng = TestRandom(seed: 41)
        let payload = rng.bytes(400)
        let tx = try HFTransmitter.samples(payload: payload, profile: Self.profile("QPSK 2/3 robust"))
        let r = try Self.receive(Self.noisy(Self.shifted(tx, hz: hz), snr: 15, seed: 42))
        #expect(r.bytes == payload)
        guard case .started(_, _, _, let offset, _)? = r.events.first else {
            Issue.record("no transmission found")
            return
        }
        #expect(abs(offset - hz) < 1)
    }

    @Test("two paths 2 ms apart fading with a 1 Hz Doppler spread, at 15 dB: robust QPSK 1/2 and 3/5",
          arguments: ["QPSK 1/2 robust", "QPSK 3/5 robust"])
    func twoPathFading(name: String) throws {
        var rng = TestRandom(seed: 51)
        let payload = rng.bytes(1500)
        let tx = try HFTransmitter.samples(payload: payload, profile: Self.profile(name))
        let r = try Self.receive(Self.noisy(Self.faded(tx, delay: 16, doppler: 1, seed: 52), snr: 15, seed: 53))
        #expect(r.summary.failure == nil)
        #expect(r.bytes == payload)
    }

    @Test("a transmitter's ALC clipping the peaks to 1.6 times the RMS, at 20 dB: wide 16-QAM 1/2")
    func clipping() throws {
        var rng = TestRandom(seed: 61)
        let payload = rng.bytes(600)
        let tx = try HFTransmitter.samples(payload: payload, profile: Self.profile("16-QAM 1/2 wide"))
        let rms = (tx.reduce(0) { $0 + $1 * $1 } / Float(tx.count)).squareRoot()
        let clipped = tx.map { min(1.6 * rms, max(-1.6 * rms, $0)) }
        let r = try Self.receive(Self.noisy(clipped, snr: 20, seed: 62))
        #expect(r.bytes == payload)
    }

    @Test("two transmissions in one recording both come out, in order")
    func twoTransmissions() throws {
        var rng = TestRandom(seed: 71)
        let a = rng.bytes(300), b = rng.bytes(200)
        let s = try HFTransmitter.samples(payload: a, profile: Self.profile("16-QAM 1/2 robust"))
            + [Float](repeating: 0, count: 4000) + HFTransmitter.samples(payload: b, profile: Self.profile("QPSK 1/2 x2 wide"))
        let r = try Self.receive(Self.noisy(s, snr: 25, seed: 72))
        #expect(r.summary.transmissions == 2)
        #expect(r.bytes == a + b)
    }

    @Test("bad input: noise alone finds nothing, a cut transmission is reported as truncated, 44.1 kHz is refused")
    func badInput() throws {
        var rng = TestRandom(seed: 81)
        let noise = (0..<40000).map { _ in 0.1 * rng.gaussian() }
        let r = try Self.receive(noise)
        #expect(r.summary.transmissions == 0)
        #expect(r.summary.failure == nil)
        #expect(r.bytes.isEmpty)

        let tx = try HFTransmitter.samples(payload: rng.bytes(500), profile: Self.profile("QPSK 1/2 robust"))
        let cut = try Self.receive(Array(tx[0..<(tx.count / 2)]))
        #expect(cut.summary.failure == .truncated(offset: 0, expected: 500))
        #expect(cut.bytes.isEmpty)

        let silence = try Self.receive([Float](repeating: 0, count: 1000))
        #expect(silence.summary.transmissions == 0)
        #expect(throws: HFError.self) { try HFReceiver(source: MemorySource([], sampleRate: 44100)) }
        #expect(throws: HFError.self) { try HFTransmitter.send(payload: [1], profile: HFProfile.standard, sink: MemorySink(sampleRate: 44100)) }
    }

    @Test("the header: round trip, and a corrupted one is refused")
    func header() {
        let h = HFHeader(profileID: 17, payloadLength: 123_456)
        let soft = h.symbolBits.map { Float($0 == 1 ? 4 : -4) }
        #expect(HFHeader(soft: soft) == h)
        var bad = soft
        for i in 0..<(bad.count / 2) { bad[i] = -bad[i] }
        #expect(HFHeader(soft: bad) == nil)
        #expect(HFHeader(soft: [1, 2, 3]) == nil)
    }
}
