import Testing
import ModemTestSupport
import ModemCodecs
import ModemDSP
import ModemPipelines

/// Coded frames (the channel protocol's coded mode) through the modulator, a noisy line and the packet
/// receiver's default slicers.
@Suite("Packet receiver: coded frames far below the plain-frame cliff")
struct CodedFrameReceiverTests {
    /// `count` transmissions of one frame each (a 12-flag preamble), coded or plain, at a full-band SNR.
    static func decode(count: Int, length: Int, snrDB: Double?, coded: Bool, seed: UInt64) throws -> (sent: [[UInt8]], got: [ReceivedPacket]) {
        let settings = try ModemSettings(profile: "bell202", framing: "ax25")
        var rng = TestRandom(seed: seed)
        var modulator = try HDLCModulator(settings: settings, sampleRate: 48000, amplitude: 0.5)
        modulator.codesFrames = coded
        var audio = [Float](repeating: 0, count: 4800)
        var sent: [[UInt8]] = []
        for _ in 0..<count {
            let frame = rng.bytes(length)
            sent.append(frame)
            modulator.append(frames: [frame], leadingFlags: 12, trailingFlags: 2, gapSeconds: 0.1, to: &audio)
        }
        audio += [Float](repeating: 0, count: 48000)
        var impairments = ChannelImpairments()
        if let snrDB { impairments.noiseRMS = ChannelImpairments.noiseRMS(snrDB: snrDB, signalPower: 0.125) }
        impairments.seed = seed
        var channel = ChannelSimulator(impairments: impairments, sampleRate: 48000)
        let received = channel.process(audio)
        let format = PacketFormat(minimumLength: 3, maximumLength: 400, accepts: { _ in true })
        let receiver = try PacketReceiver(settings: settings, sampleRate: 48000, format: format)
        var got = received.withUnsafeBufferPointer { receiver.process($0) }
        got += receiver.flush()
        return (sent, got)
    }

    @Test("at -7 dB full-band SNR, 10 of 10 coded 290-byte frames arrive intact; plain frames arrive not at all")
    func deepNoise() throws {
        let coded = try Self.decode(count: 10, length: 290, snrDB: -7, coded: true, seed: 7)
        #expect(coded.got.map(\.bytes) == coded.sent)
        #expect(coded.got.allSatisfy { $0.isCoded && $0.codedLevelErrorRate! > 0.01 })
        let plain = try Self.decode(count: 10, length: 290, snrDB: -7, coded: false, seed: 7)
        #expect(plain.got.isEmpty, "plain frames at -7 dB: \(plain.got.count)")
    }

    @Test("on a clean line coded and plain frames both decode, each once, the coded ones with no level wrong")
    func clean() throws {
        let coded = try Self.decode(count: 5, length: 100, snrDB: nil, coded: true, seed: 8)
        #expect(coded.got.map(\.bytes) == coded.sent)
        #expect(coded.got.allSatisfy { $0.codedLevelErrorRate == 0 })
        let plain = try Self.decode(count: 5, length: 100, snrDB: nil, coded: false, seed: 8)
        #expect(plain.got.map(\.bytes) == plain.sent)
        #expect(plain.got.allSatisfy { !$0.isCoded })
    }
}
