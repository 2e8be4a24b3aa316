import Foundation
import Testing
import ModemCodecs
import ModemDSP
import ModemPipelines
import ModemTestSupport

/// IL2P through the packet pipelines in process: our transmitter to our receiver at 300, 1200 and 9600
/// baud, both FEC levels, fed in small blocks; an inverted baseband line; seeded white noise.
@Suite("IL2P through PacketTransmitter and PacketReceiver")
struct IL2PPipelineTests {
    static let profiles = ["bell202", "hf300", "g3ruh"]

    /// Audio of `frames` sent as IL2P (`maximumFEC`), or as plain AX.25 when nil.
    static func transmit(_ frames: [AX25Frame], profile: String, maximumFEC: Bool?, sampleRate: Int = 48000) throws -> [Float] {
        let settings = try ModemSettings(profile: profile, framing: "ax25")
        let sink = MemorySink(sampleRate: sampleRate)
        let tx = try PacketTransmitter(settings: settings, sink: sink, preambleMilliseconds: 100, gapSeconds: 0.2,
                                       il2p: maximumFEC.map { IL2PEncoder(maximumFEC: $0) })
        for f in frames { try tx.send(f) }
        try tx.finish()
        return sink.samples
    }

    /// Decodes `samples` in blocks of `chunk`, then half a second of silence.
    static func receive(_ samples: [Float], profile: String, sampleRate: Int = 48000, chunk: Int = 1000) throws -> ([ReceivedPacket], PacketStatistics) {
        let receiver = try PacketReceiver(settings: try ModemSettings(profile: profile, framing: "ax25"), sampleRate: sampleRate)
        let all = samples + [Float](repeating: 0, count: sampleRate / 2)
        var packets: [ReceivedPacket] = []
        var i = 0
        while i < all.count {
            let end = min(all.count, i + chunk)
            packets += all[i..<end].withUnsafeBufferPointer { receiver.process($0) }
            i = end
        }
        packets += receiver.flush()
        return (packets, receiver.finish())
    }

    @Test("our IL2P to our receiver: every frame once, in order, as IL2P, nothing corrected",
          arguments: profiles, [true, false])
    func roundTrip(profile: String, maximumFEC: Bool) throws {
        let frames = PacketTestFixtures.frames
        let (packets, stats) = try Self.receive(try Self.transmit(frames, profile: profile, maximumFEC: maximumFEC), profile: profile)
        #expect(packets.map(\.monitorLine) == PacketTestFixtures.lines)
        #expect(packets.allSatisfy { $0.cameAsIL2P && $0.il2pCorrectedSymbols == 0 })
        #expect(stats.il2pFrames == frames.count && stats.il2pCorrected == 0 && stats.il2pUncorrectable == 0)
        // The plain AX.25 decoder reads the same bits: neither a frame nor a CRC failure in them.
        #expect(stats.crcFailures == 0 && stats.repaired == 0, "\(stats)")
    }

    @Test("a frame too long for IL2P (over 1023 bytes) goes as plain HDLC, and the next frame as IL2P again",
          arguments: profiles)
    func tooLong(profile: String) throws {
        let settings = try ModemSettings(profile: profile, framing: "ax25")
        let sink = MemorySink(sampleRate: 48000)
        let tx = try PacketTransmitter(settings: settings, sink: sink, preambleMilliseconds: 100, gapSeconds: 0.2,
                                       il2p: IL2PEncoder(maximumFEC: true))
        let long = AX25Frame(destination: try AX25Address(callsign: "APRS"), source: try AX25Address(callsign: "N0CALL"),
                             info: [UInt8](repeating: 0x41, count: 1100))
        try tx.send(PacketTestFixtures.frames[0])
        try tx.send(long)
        try tx.send(PacketTestFixtures.frames[4])
        try tx.finish()
        #expect(tx.framesSent == 3 && tx.framesSentPlain == 1)
        let (packets, stats) = try Self.receive(sink.samples, profile: profile)
        #expect(packets.map(\.monitorLine) == [PacketTestFixtures.lines[0], long.monitorLine(), PacketTestFixtures.lines[4]])
        #expect(stats.il2pFrames == 2 && stats.decoded == 3)
    }

    @Test("an inverted baseband line (a radio that inverts) decodes the same")
    func invertedBaseband() throws {
        let samples = try Self.transmit(PacketTestFixtures.frames, profile: "g3ruh", maximumFEC: true).map { -$0 }
        let (packets, stats) = try Self.receive(samples, profile: "g3ruh")
        #expect(packets.map(\.monitorLine) == PacketTestFixtures.lines)
        #expect(stats.il2pFrames == PacketTestFixtures.lines.count)
    }

    @Test("white noise at 1200 baud (-5.5 dB): max FEC corrects what plain AX.25 loses, and only frames that were sent come out")
    func noise() throws {
        var random = TestRandom(seed: 41)
        let frames = (1...30).map { i in
            AX25Frame(destination: try! AX25Address(callsign: "APRS"), source: try! AX25Address(callsign: "N0CALL", ssid: i % 16),
                      info: Array("frame \(i): ".utf8) + (0..<60).map { _ in UInt8.random(in: 0x20...0x7E, using: &random) })
        }
        let sent = Set(frames.map { $0.monitorLine() })
        func run(_ fec: Bool?) throws -> (Set<String>, PacketStatistics) {
            var samples = try Self.transmit(frames, profile: "bell202", maximumFEC: fec)
            let power = samples.reduce(0) { $0 + $1 * $1 } / Float(samples.count)
            let sigma = (power / pow(10, -5.5 / 10)).squareRoot()
            var noise = TestRandom(seed: 9)
            for i in samples.indices { samples[i] += sigma * noise.gaussian() }
            let (packets, stats) = try Self.receive(samples, profile: "bell202", chunk: 4096)
            return (Set(packets.map(\.monitorLine)), stats)
        }
        let (plain, _) = try run(nil)
        let (il2p, stats) = try run(true)
        #expect(il2p.isSubset(of: sent), "never sent: \(il2p.subtracting(sent))")
        #expect(plain.isSubset(of: sent))
        // When written: IL2P 28, plain 3 of 30 (at -3.5 dB 30 and 29, at -6.5 dB 9 and 0).
        #expect(il2p.count >= 25 && il2p.count >= plain.count + 10, "IL2P \(il2p.count), plain \(plain.count) of 30; \(stats)")
        #expect(stats.il2pCorrected > 0 && stats.il2pSymbolsFixed >= stats.il2pCorrected, "\(stats)")
    }
}
