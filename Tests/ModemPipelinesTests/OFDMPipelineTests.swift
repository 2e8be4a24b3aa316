import Foundation
import Testing
import ModemTestSupport
import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines

@Suite("The OFDM modem: bytes through the transmitter, a line and the receiver")
struct OFDMPipelineTests {
    /// The audio of one transmission of `payload` with `profile` (the length announced unless `stream`).
    static func audio(_ payload: [UInt8], profile: OFDMProfile, stream: Bool = false, piece: Int = 50_000) throws -> [Float] {
        let sink = MemorySink(sampleRate: 48000)
        let tx = try OFDMTransmitter(profile: profile, sink: sink, peak: 0.7, payloadLength: stream ? nil : payload.count)
        var at = 0
        repeat {
            let end = min(payload.count, at + piece)
            try tx.send(payload[at..<end])
            at = end
        } while at < payload.count
        try tx.finish()
        #expect(sink.finished)
        #expect(sink.samples.allSatisfy { abs($0) <= 0.7 })
        return sink.samples
    }

    /// Through the simulated cable: noise at `snr` dB, `ppm` drift, 20-20,000 Hz, 3 dB down.
    static func line(_ samples: [Float], snr: Double = 38, ppm: Double = 100, seed: UInt64 = 1) -> [Float] {
        var i = ChannelImpairments()
        i.bandPass = 20...20000
        i.gainDB = -3
        let power = samples.reduce(0) { $0 + Double($1 * $1) } / Double(samples.count)
        i.noiseRMS = ChannelImpairments.noiseRMS(snrDB: snr, signalPower: power, gainDB: -3)
        i.seed = seed
        var c = ChannelSimulator(impairments: i, sampleRate: 48000)
        // The drift by windowed sinc (the simulator's cubic interpolation is too rough near 20 kHz).
        return [Float](repeating: 0, count: 4800) + c.process(TestResampler.drift(samples + [Float](repeating: 0, count: 4800), ppm: ppm))
    }

    /// `samples` through `modem impair`'s code (``FileImpairment``): written to a WAV file, impaired
    /// into another (32-bit float), read back.
    static func impairedFile(_ samples: [Float], _ impairments: ChannelImpairments, name: String) throws -> [Float] {
        let dir = FileManager.default.temporaryDirectory.path
        let input = "\(dir)/swiftmodem-ofdm-\(name)-\(getpid()).wav", output = "\(dir)/swiftmodem-ofdm-\(name)-\(getpid())-impaired.wav"
        defer { unlink(input); unlink(output) }
        let writer = try AudioFileWriter(path: input, sampleRate: 48000, format: .float32)
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        try FileImpairment.run(input: input, output: output, impairments: impairments, snrDB: nil, format: .float32)
        let reader = try AudioFileReader(path: output)
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: 65536)
        while true {
            let k = try buffer.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            if k == 0 { break }
            out += buffer[0..<k]
        }
        return out
    }

    static func receive(_ samples: [Float], rate: Int = 48000) throws -> (bytes: [UInt8], summary: OFDMReceiverSummary, events: [OFDMReceiverEvent]) {
        let rx = try OFDMReceiver(source: MemorySource(samples, sampleRate: rate))
        var bytes: [UInt8] = []
        var events: [OFDMReceiverEvent] = []
        let summary = try rx.run(onBytes: { bytes += $0 }, onEvent: { events.append($0) })
        return (bytes, summary, events)
    }

    @Test("the configurations: unique ids, rates rising with the constellation, the header's id found, the pick by bit rate")
    func profiles() {
        let all = OFDMProfile.all
        #expect(Set(all.map(\.id)).count == all.count)
        for p in all { #expect(OFDMProfile.withID(p.id) == p) }
        #expect(OFDMProfile.fastest(atMost: 1) == nil)
        #expect(OFDMProfile.fastest(atMost: 1e9)?.netBitRate == all.map(\.netBitRate).max())
        for p in all {
            #expect(OFDMProfile.fastest(atMost: p.netBitRate) == p)
            #expect(OFDMProfile.fastest(atMost: p.netBitRate - 1)?.netBitRate ?? 0 < p.netBitRate)
        }
        #expect(OFDMProfile.standard.netBitRate > 100_000)
    }

    @Test("the header: round trip with and without a length; a damaged one is refused")
    func header() {
        for h in [OFDMHeader(profileID: 23, payloadLength: 262_144), OFDMHeader(profileID: 1, payloadLength: nil), OFDMHeader(profileID: 255, payloadLength: 0)] {
            let soft = h.symbolBits.map { Float($0 == 1 ? 3 : -3) }
            #expect(OFDMHeader(soft: soft) == h)
            // A third of the soft bits lost: still read (the code and the repetition).
            var damaged = soft
            for i in stride(from: 0, to: damaged.count, by: 3) { damaged[i] = 0 }
            #expect(OFDMHeader(soft: damaged) == h)
            // Everything inverted: refused by its check.
            #expect(OFDMHeader(soft: soft.map { -$0 }) == nil)
        }
        #expect(OFDMHeader(soft: [Float](repeating: 1, count: 10)) == nil)
    }

    @Test("through the simulated cable: byte-exact at 1024-QAM, 4096-QAM and 16,384-QAM (the wide grid), announced and streamed", arguments: [21, 23, 25])
    func cable(id: Int) throws {
        var rng = TestRandom(seed: UInt64(id))
        let payload = rng.bytes(30_000)
        let p = OFDMProfile.withID(id)!
        for stream in [false, true] {
            let got = try Self.receive(Self.line(try Self.audio(payload, profile: p, stream: stream), snr: 40))
            #expect(got.summary.failure == nil && got.summary.transmissions == 1)
            #expect(got.bytes.elementsEqual(payload), "\(p.name) stream \(stream): \(got.bytes.count) bytes, \(String(describing: got.summary.failure))")
        }
    }

    @Test("modem impair's drift keeps the whole signal: ceil(samples · (1 + ppm · 1e-6)) samples out, the tone there to the end",
          arguments: [-300.0, -100, 100, 300])
    func impairKeepsTheEnd(ppm: Double) throws {
        let count = 48007
        let tone = (0..<count).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        var i = ChannelImpairments()
        i.clockDriftPPM = ppm
        let out = try Self.impairedFile(tone, i, name: "tone\(Int(ppm))")
        #expect(out.count == Int((Double(count) * (1 + ppm * 1e-6)).rounded(.up)), "\(out.count) samples from \(count) at \(ppm) ppm")
        // The last cycles before the interpolator's reach meets the end: the tone's RMS, not silence.
        let tail = out.dropLast(16).suffix(96)
        let rms = (tail.reduce(0) { $0 + Double($1 * $1) } / Double(tail.count)).squareRoot()
        #expect(abs(rms - 0.5 / 2.0.squareRoot()) < 0.01, "RMS \(rms) at the end")
    }

    @Test("4096-QAM 9/10 through modem impair's drift alone: byte-exact to the last block (the file ends at the last symbol's last sample)",
          arguments: [(-300.0, 7), (-100, 7), (-10, 7), (10, 7), (100, 7), (300, 7), (-100, 145), (100, 145)])
    func impairedDrift(ppm: Double, blocks: Int) throws {
        let p = OFDMProfile.withID(24)!
        var rng = TestRandom(seed: 24)
        // Seven blocks: the last lies wholly in the last symbol. 145: 256 KiB (its last block too).
        let payload = rng.bytes(blocks == 145 ? 262_144 : blocks * p.blockPayload)
        var i = ChannelImpairments()
        i.clockDriftPPM = ppm
        let got = try Self.receive(Self.impairedFile(try Self.audio(payload, profile: p), i, name: "drift\(Int(ppm))-\(blocks)"))
        #expect(got.summary.failure == nil && got.bytes.elementsEqual(payload),
                "\(ppm) ppm, \(payload.count) bytes: \(got.bytes.count) bytes, \(String(describing: got.summary.failure))")
    }

    @Test("a recording that stops up to half a prefix before the transmission's last sample: byte-exact (the last symbol read earlier in its prefix); shorter still: truncated",
          arguments: [24, 8])
    func endsShort(id: Int) throws {
        let p = OFDMProfile.withID(id)!
        var rng = TestRandom(seed: UInt64(id))
        // Seven blocks: on the cable grid the last one lies wholly in the last symbol.
        let payload = rng.bytes(7 * p.blockPayload)
        let audio = try Self.audio(payload, profile: p)
        let half = p.numerology.cyclicPrefix / 2
        for cut in [0, 12, 18, half * 3 / 4, half] {
            let got = try Self.receive(Array(audio.dropLast(cut)))
            #expect(got.summary.failure == nil && got.bytes == payload,
                    "\(p.name), \(cut) samples missing: \(got.bytes.count) bytes, \(String(describing: got.summary.failure))")
        }
        // More than half a prefix missing: the last symbol is not there; the bytes before it are.
        let got = try Self.receive(Array(audio.dropLast(half + 40)))
        guard case .truncated(let offset, let expected)? = got.summary.failure else {
            Issue.record("\(p.name): no truncation reported: \(String(describing: got.summary.failure))")
            return
        }
        #expect(expected == payload.count && offset == got.bytes.count && offset < payload.count)
        #expect(got.bytes.elementsEqual(payload[0..<offset]))
    }

    @Test("empty and one-byte payloads; two transmissions one after the other both arrive, in order")
    func sizes() throws {
        let p = OFDMProfile.withID(18)!
        let a = try Self.audio([], profile: p), b = try Self.audio([42], profile: p)
        let got = try Self.receive(Self.line(a + [Float](repeating: 0, count: 2000) + b))
        #expect(got.bytes == [42] && got.summary.transmissions == 2 && got.summary.failure == nil, "\(got.bytes.count) bytes, \(got.summary.transmissions) transmissions")
    }

    @Test("a recording cut short: the bytes before the cut, then 'truncated' at that offset")
    func truncated() throws {
        var rng = TestRandom(seed: 4)
        let payload = rng.bytes(20_000)
        let p = OFDMProfile.withID(20)!
        let audio = try Self.audio(payload, profile: p)
        let got = try Self.receive(Array(audio[0..<(audio.count * 2 / 3)]))
        guard case .truncated(let offset, let expected)? = got.summary.failure else {
            Issue.record("no truncation reported: \(String(describing: got.summary.failure))")
            return
        }
        #expect(expected == payload.count && offset == got.bytes.count && offset > 0)
        #expect(got.bytes.elementsEqual(payload[0..<offset]), "corrupt bytes before the cut")
    }

    @Test("a loud burst, a second transmission on top of the first, clipping: the output stops at a block boundary, nothing corrupt")
    func damage() throws {
        var rng = TestRandom(seed: 5)
        let payload = rng.bytes(20_000)
        let p = OFDMProfile.withID(21)!
        let audio = try Self.audio(payload, profile: p)
        var burst = audio
        for i in (audio.count / 2)..<(audio.count / 2 + 4000) { burst[i] += 0.5 * rng.gaussian() }
        var overlapped = audio
        let other = try Self.audio(rng.bytes(20_000), profile: p)
        for i in 0..<min(other.count, audio.count - audio.count / 2) { overlapped[audio.count / 2 + i] += other[i] }
        let clipped = audio.map { max(-0.12, min(0.12, $0)) }
        for (name, damaged) in [("burst", burst), ("overlap", overlapped), ("clipped", clipped)] {
            let got = try Self.receive(damaged)
            #expect(got.bytes.count <= payload.count && got.bytes.elementsEqual(payload[0..<got.bytes.count]), "\(name): corrupt bytes delivered")
            if got.bytes.count < payload.count {
                guard case .lostBlock(let offset, _)? = got.summary.failure else {
                    Issue.record("\(name): short output without a lost block: \(String(describing: got.summary.failure))")
                    continue
                }
                #expect(offset == got.bytes.count && offset % p.blockPayload == 0)
            }
        }
        #expect(try Self.receive(burst).summary.failure != nil)
    }

    @Test("pure noise and silence: no transmission, no failure")
    func noise() throws {
        var rng = TestRandom(seed: 6)
        for samples in [(0..<200_000).map { _ in 0.2 * rng.gaussian() }, [Float](repeating: 0, count: 100_000)] {
            let got = try Self.receive(samples)
            #expect(got.bytes.isEmpty && got.summary.transmissions == 0 && got.summary.failure == nil)
        }
    }

    @Test("a recording below the band's needs: the full-band grid at 32 kHz is refused by name; 16 kHz and up take the air grid")
    func sampleRates() throws {
        #expect(throws: OFDMError.self) { try OFDMReceiver(source: MemorySource([], sampleRate: 8000)) }
        let p = OFDMProfile.withID(20)!
        let audio = try Self.audio([1, 2, 3], profile: p)
        // Every other sample of a 48 kHz signal is not a 24 kHz recording of it, but the header's band check comes first.
        let decimated = Swift.stride(from: 0, to: audio.count, by: 3).map { audio[$0] }
        let got = try Self.receive(decimated, rate: 16000)
        if case .bandBeyondInput(let hz, let rate)? = got.summary.failure {
            #expect(hz > 19000 && rate == 16000)
        } else {
            #expect(got.bytes.isEmpty, "a 48 kHz full-band transmission read from 16 kHz")
        }
        #expect(throws: OFDMError.self) { try OFDMTransmitter(profile: p, sink: MemorySink(sampleRate: 44100), payloadLength: 0) }
    }

    @Test("the transmitter refuses input that does not match the length it announced")
    func lengthMismatch() throws {
        let p = OFDMProfile.withID(18)!
        let tx = try OFDMTransmitter(profile: p, sink: MemorySink(sampleRate: 48000), payloadLength: 10)
        #expect(throws: OFDMError.self) { try tx.send([UInt8](repeating: 0, count: 11)) }
        let short = try OFDMTransmitter(profile: p, sink: MemorySink(sampleRate: 48000), payloadLength: 10)
        try short.send([1, 2, 3])
        #expect(throws: OFDMError.self) { try short.finish() }
    }
}
