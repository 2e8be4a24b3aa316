import Foundation
import ModemCodecs
import ModemDSP
import ModemLink
import ModemMessagingHarness
import ModemPipelines
import Testing
import ModemRuntime
import ModemTestSupport

/// The channel protocol over the HF modem (``HFLinkModem``): frames in HF transmissions at 48 kHz,
/// the rate both ends agree from what the pilots measure, over the simulated SSB line.
@Suite struct HFLinkTests {
    /// Plays `from`'s output into `to` for `seconds`, 10 ms at a time, through `channel` if given; what `to` decoded.
    static func carry(from: HFLinkModem, to: HFLinkModem, seconds: Double, channel: HFChannelImpairments? = nil) -> [LinkFrame] {
        var sim = channel.map { HFChannelSimulator(impairments: $0, sampleRate: 48000, signalPower: pow(HFLinkModem.signalAmplitude, 2) / 2) }
        var got: [LinkFrame] = []
        for _ in 0..<Int(seconds * 100) {
            var samples = from.output(count: 480).samples
            if sim != nil { samples = sim!.process(samples) }
            got += samples.withUnsafeBufferPointer { to.receive($0).frames }
        }
        return got
    }

    static let config = HFLinkModem.linkConfiguration(mode: .duplex)

    @Test("frames arrive in order and whole; more than one transmission's worth goes in several; a clean line asks for the fastest")
    func framesThrough() throws {
        let a = try HFLinkModem(configuration: Self.config, sampleRate: 48000, tag: 1)
        let b = try HFLinkModem(configuration: Self.config, sampleRate: 48000, tag: 2)
        // 8 frames of 512 bytes: 4.2 KB, more than the 10 s one transmission carries at 1,580 bit/s.
        let sent = OFDMLinkTests.frames(8, seed: 5).map { LinkFrame(kind: .data, session: 7, message: 1, fragment: $0.fragment, fragmentCount: 8, payload: Array($0.payload.prefix(512))) }
        a.send(sent)
        #expect(a.isTransmitting)
        let got = Self.carry(from: a, to: b, seconds: 30)
        #expect(got == sent)
        #expect(b.framesDecoded == 8 && b.framesDamaged == 0)
        #expect(a.transmissionsSent >= 2 && b.transmissionsHeard == a.transmissionsSent)
        #expect(!a.isTransmitting)
        #expect(b.request == HFProfile.all.filter(\.pickedByBitRate).max { $0.netBitRate < $1.netBitRate })
        #expect(throws: ModemSettingsError.self) { try HFLinkModem(configuration: Self.config, sampleRate: 44100, tag: 3) }
    }

    @Test("a transmission the peer could not read is sent again as soon as the peer says so")
    func repeatOnRequest() throws {
        let a = try HFLinkModem(configuration: Self.config, sampleRate: 48000, tag: 1)
        let b = try HFLinkModem(configuration: Self.config, sampleRate: 48000, tag: 2)
        let sent = [LinkFrame(kind: .data, session: 7, message: 1, fragment: 0, fragmentCount: 1, payload: [UInt8](repeating: 0x5A, count: 400))]
        a.send(sent)
        // a's transmission (0.42 s of start, 2.2 s of data) with most of its data silenced: b reads
        // the header but not the blocks.
        var got: [LinkFrame] = []
        for step in 0..<400 {
            var samples = a.output(count: 480).samples
            if (50..<230).contains(step) { samples = [Float](repeating: 0, count: 480) }
            got += samples.withUnsafeBufferPointer { b.receive($0).frames }
        }
        #expect(got.isEmpty && b.framesDamaged == 1)
        // b says so at once (it has nothing else to send); a repeats the frames.
        #expect(Self.carry(from: b, to: a, seconds: 3).isEmpty)
        #expect(a.transmissionsRepeated == 1)
        got += Self.carry(from: a, to: b, seconds: 5)
        #expect(got == sent)
    }

    @Test("an end that hears itself on a shared line ignores its own transmissions")
    func ownTransmissions() throws {
        let a = try HFLinkModem(configuration: Self.config, sampleRate: 48000, tag: 9)
        a.useSharedMedium()
        a.send(Array(OFDMLinkTests.frames(3, seed: 1)))
        #expect(Self.carry(from: a, to: a, seconds: 12).isEmpty)
        #expect(!a.isTransmitting && a.transmissionsHeard == 0)
    }

    @Test("the simulated SSB line: a transmission through it at 48 kHz, 60 Hz mistuned, is found, read and the offset measured")
    func channel() throws {
        var rng = SplitMix64(seed: 3)
        let payload = (0..<600).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let sink = MemorySink(sampleRate: 48000)
        try HFTransmitter.send(payload: payload, profile: HFProfile.standard, sink: sink, peak: 0.5)
        var sim = HFChannelSimulator(impairments: HFChannelImpairments(snr3kDB: 12, frequencyOffset: 60, seed: 4), sampleRate: 48000,
                                     signalPower: pow(0.5 / 4, 2))
        let heard = sim.process(sink.samples + [Float](repeating: 0, count: 4800))
        #expect(heard.count == sink.samples.count + 4800)
        var got: [UInt8] = []
        var offset: Double?
        let summary = try HFReceiver(source: MemorySource(heard, sampleRate: 48000)).run(onBytes: { got += $0 }, onEvent: {
            if case .started(_, _, _, let f, _) = $0 { offset = f }
        })
        #expect(summary.failure == nil && got == payload)
        #expect(offset.map { abs($0 - 60) < 2 } ?? false, "offset \(String(describing: offset))")
    }

    @Test("link-test over the HF line, master-slave and duplex: every exchange, nothing corrupt or duplicated",
          arguments: [CommunicationMode.masterSlave, .duplex])
    func linkTest(mode: CommunicationMode) throws {
        let config = HFLinkModem.linkConfiguration(mode: mode)
        let medium = LoopbackMedium(impairments: .hf(snr3k: 15, seed: 4), signalAmplitude: HFLinkModem.signalAmplitude)
        let test = try LinkTest(options: LinkTestOptions(configuration: config, count: 3, size: 1500, seed: 4), medium: medium)
        let report = try test.run()
        #expect(report.opened && report.completed == 3, "\(report)")
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
    }

    /// The configuration the phone sends with after a few exchanges over the HF line at `snr3k`.
    static func adapted(snr3k: Double, fading: Bool = false) throws -> HFProfile {
        let config = HFLinkModem.linkConfiguration(mode: .masterSlave)
        let medium = LoopbackMedium(impairments: .hf(snr3k: snr3k, fading: fading, seed: 6), signalAmplitude: HFLinkModem.signalAmplitude)
        let test = try LinkTest(options: LinkTestOptions(configuration: config, count: 3, size: 600, seed: 6), medium: medium)
        let report = try test.run()
        #expect(report.opened && report.completed == 3, "at \(snr3k) dB: \(report)")
        return (test.phone.modem as! HFLinkModem).sendProfile
    }

    @Test("rate adaptation: a noisier line ends on a slower configuration, and each is one the line carries")
    func adaptation() throws {
        let clean = try Self.adapted(snr3k: 25)
        let noisy = try Self.adapted(snr3k: 4)
        #expect(noisy.netBitRate < clean.netBitRate, "\(noisy.name) at 4 dB, \(clean.name) at 25 dB")
        #expect(clean.netBitRate > 5000 && noisy.netBitRate < 2500, "\(noisy.name) at 4 dB, \(clean.name) at 25 dB")
    }

    @Test("transfer-test over the HF line: byte-exact, and the goodput a fair share of the line rate")
    func transfer() async throws {
        let options = TransferTestOptions(size: 24_000, seed: 2, keepalive: 30, plain: true, hf: true, line: .hf)
        let report = try await TransferTest(options: options).run()
        #expect(report.completed && report.sha256Match, "\(report.json)")
        #expect(report.senderLine.hasPrefix("HF "), "\(report.senderLine)")
        #expect(report.goodputBps > 0.3 * report.senderLineBitRate, "\(report.json), \(report.senderLine)")
    }
}
