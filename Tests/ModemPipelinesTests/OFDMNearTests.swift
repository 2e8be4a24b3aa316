import Testing
import ModemDSP
import ModemPipelines
import ModemRuntime

@Suite("The OFDM near grid: a speaker and a microphone with a short echo")
struct OFDMNearTests {
    @Test("the near grid follows the sounding, its prefix outlasts a 1.5 ms echo, --bitrate 64000 picks its 256-QAM 3/4")
    func grid() throws {
        let g = OFDMProfile.nearGrid
        #expect(g.fitsSounding && OFDMNumerology.training(for: g) == OFDMNumerology.sounding)
        // A 1.5 ms echo is 72 samples; the data window begins 16 samples before the prefix ends.
        #expect(g.cyclicPrefix - 16 > 72)
        for p in OFDMProfile.near {
            #expect(OFDMProfile.withID(p.id) == p)
            #expect(OFDMProfile.fastest(atMost: p.netBitRate) == p)
            #expect(!OFDMProfile.all.contains { $0.id == p.id } && p.fitsChannel)
        }
        let ids = OFDMProfile.everyConfiguration.map(\.id)
        #expect(Set(ids).count == ids.count)
        let pick = try #require(OFDMProfile.fastest(atMost: 64000))
        #expect(pick.gridName == "near" && pick.constellation == .qam256 && pick.rate == .r3_4)
        #expect(!OFDMProfile.all.contains { $0.fitsChannel })
    }

    @Test("256-QAM 3/4 on the near grid through the speaker-like line (250-9000 Hz, a 1.5 ms echo at 0.5, 300 ppm) at 25 dB: byte-exact")
    func speakerLine() throws {
        let profile = try #require(OFDMProfile.near.first { $0.rate == .r3_4 })
        var rng = SplitMix64(seed: 0x5EA1)
        let payload = (0..<9000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let sent = try OFDMPipelineTests.audio(payload, profile: profile)
        var imp = ChannelImpairments()
        imp.bandPass = 250...9000
        imp.echo = (0.0015, 0.5)
        imp.clockDriftPPM = 300
        imp.seed = 0x5EA2
        let power = sent.reduce(0) { $0 + Double($1 * $1) } / Double(sent.count)
        imp.noiseRMS = ChannelImpairments.noiseRMS(snrDB: 25, signalPower: power)
        var line = ChannelSimulator(impairments: imp, sampleRate: 48000)
        let heard = [Float](repeating: 0, count: 2400) + line.process(sent + [Float](repeating: 0, count: 2400)) + line.finish()
        let (bytes, summary, _) = try OFDMPipelineTests.receive(heard)
        #expect(summary.failure == nil)
        #expect(bytes == payload)
    }
}
