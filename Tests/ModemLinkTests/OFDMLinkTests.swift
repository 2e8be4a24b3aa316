import Foundation
import ModemCodecs
import ModemDSP
import ModemLink
import ModemMessagingHarness
import ModemPipelines
import Testing
import ModemRuntime

/// The channel protocol over the OFDM modem (``OFDMLinkModem``): frames in blocks of open
/// transmissions, the rate both ends agree from what the trainings measure.
@Suite struct OFDMLinkTests {
    static func frames(_ count: Int, seed: UInt64) -> [LinkFrame] {
        var rng = SplitMix64(seed: seed)
        var out: [LinkFrame] = []
        for i in 0..<count {
            let size = 100 + (i * 37) % 1900
            var payload = [UInt8](repeating: 0, count: size)
            for j in 0..<size { payload[j] = UInt8(truncatingIfNeeded: rng.next()) }
            out.append(LinkFrame(kind: .data, session: 7, message: 1, fragment: UInt16(i), fragmentCount: UInt16(count), payload: payload))
        }
        return out
    }

    /// Plays `from`'s output into `to` for `seconds`, 10 ms at a time; what `to` decoded.
    static func carry(from: OFDMLinkModem, to: OFDMLinkModem, seconds: Double) -> [LinkFrame] {
        var got: [LinkFrame] = []
        for _ in 0..<Int(seconds * 100) {
            let o = from.output(count: 480)
            got += o.samples.withUnsafeBufferPointer { to.receive($0).frames }
        }
        return got
    }

    @Test("frames of every size arrive in order, whole, at the configuration asked for; the transmission ends after its idle spell")
    func framesThrough() throws {
        let config = LinkConfiguration(mode: .duplex, framePayload: 2048, timing: OFDMLinkModem.timing(latencySeconds: 0))
        let a = try OFDMLinkModem(configuration: config, sampleRate: 48000, tag: 1)
        let b = try OFDMLinkModem(configuration: config, sampleRate: 48000, tag: 2)
        let sent = Self.frames(40, seed: 3)
        a.send(sent)
        #expect(a.isTransmitting)
        let got = Self.carry(from: a, to: b, seconds: 15)
        #expect(got == sent)
        #expect(b.framesDecoded == 40 && b.framesDamaged == 0)
        #expect(!a.isTransmitting, "the transmission did not end after its idle spell")
        // The receiver measured a clean line: it asks for the fastest configuration.
        #expect(b.request == OFDMProfile.all.max { $0.netBitRate < $1.netBitRate })
        #expect(throws: ModemSettingsError.self) { try OFDMLinkModem(configuration: config, sampleRate: 44100, tag: 3) }
    }

    @Test("an end that hears itself on a shared line ignores its own blocks")
    func ownBlocks() throws {
        let config = LinkConfiguration(mode: .duplex, timing: OFDMLinkModem.timing(latencySeconds: 0))
        let a = try OFDMLinkModem(configuration: config, sampleRate: 48000, tag: 9)
        a.useSharedMedium()
        a.send(Self.frames(3, seed: 1))
        #expect(Self.carry(from: a, to: a, seconds: 4).isEmpty)
        #expect(!a.isTransmitting)
    }

    @Test("transfer-test over the simulated cable: byte-exact, sent on the full band at a high rate")
    func transferCable() async throws {
        let options = TransferTestOptions(size: 200_000, seed: 2, keepalive: 30, ofdm: true, line: .cable)
        let report = try await TransferTest(options: options).run()
        #expect(report.completed && report.sha256Match, "\(report.json)")
        let profile = OFDMProfile.all.first { "OFDM \($0.name)" == report.senderLine }
        #expect(profile?.gridName == "cable" && (profile?.netBitRate ?? 0) > 150_000, "ended on \(report.senderLine)")
    }

    @Test("transfer-test over the cable with frames lost: the lost transmissions are started again, and it completes",
          arguments: [(seed: UInt64(1), loss: 0.02), (seed: UInt64(6), loss: 0.05)])
    func transferWithLoss(seed: UInt64, loss: Double) async throws {
        // A loss mutes a transmission's symbols from a frame on: the receiver cannot find that open
        // transmission again, so the sender must start anew (before, both stalled until giving up).
        let options = TransferTestOptions(size: 262_144, frameLoss: loss, seed: seed, keepalive: 30, ofdm: true,
                                          line: seed == 1 ? .cable : nil)
        let report = try await TransferTest(options: options).run()
        #expect(report.framesLost > 0, "\(report.json)")
        #expect(report.completed && report.sha256Match, "\(report.json)")
    }

    @Test("transfer-test over the simulated speaker and microphone: completes by falling back to the speaker's band")
    func transferSpeaker() async throws {
        let options = TransferTestOptions(size: 100_000, seed: 3, keepalive: 30, ofdm: true, line: .speaker)
        let report = try await TransferTest(options: options).run()
        #expect(report.completed && report.sha256Match, "\(report.json)")
        let profile = OFDMProfile.all.first { "OFDM \($0.name)" == report.senderLine }
        #expect(profile?.gridName == "air", "ended on \(report.senderLine)")
    }

    @Test("link-test over OFDM, master-slave and duplex: every exchange, nothing corrupt or duplicated", arguments: [CommunicationMode.masterSlave, .duplex])
    func linkTest(mode: CommunicationMode) throws {
        let config = LinkConfiguration(mode: mode, framePayload: 2048, windowFrames: 32, timing: OFDMLinkModem.timing(latencySeconds: 0))
        let medium = LoopbackMedium(impairments: .cable(seed: 4), signalAmplitude: OFDMLinkModem.signalAmplitude)
        let report = try LinkTest(options: LinkTestOptions(configuration: config, count: 8, size: 5000, seed: 4), medium: medium).run()
        #expect(report.opened && report.completed == 8)
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
    }
}
