import Foundation
import Testing
import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines
import ModemTestSupport

/// A recorded off-air fixture and the one frame in it, as Dire Wolf's `atest` decodes it
/// (`atest -h FILE`, checked by hand: one packet from each file, these bytes).
struct RecordedFixture: Sendable, CustomTestStringConvertible {
    var file: String
    var sampleRate: Int
    var line: String
    var hex: String

    var testDescription: String { file }
    var path: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/recorded/\(file)").path
    }
    var bytes: [UInt8] {
        hex.split(separator: " ").map { UInt8($0, radix: 16)! }
    }

    static let helloWorld = "82 a0 a4 a6 40 40 60 96 92 6a a8 9e 8c 61 03 f0 3e 68 65 6c 6c 6f 20 77 6f 72 6c 64 21"
    static let all: [RecordedFixture] = [
        RecordedFixture(file: "ISSpkt.wav", sampleRate: 44100, line: "RS0ISS>CQ:>ARISS - International Space Station",
                        hex: "86 a2 40 40 40 40 60 a4 a6 60 92 a6 a6 e1 03 f0 3e 41 52 49 53 53 20 2d 20 49 6e 74 65 72 6e 61 "
                            + "74 69 6f 6e 61 6c 20 53 70 61 63 65 20 53 74 61 74 69 6f 6e"),
        RecordedFixture(file: "ideal.wav", sampleRate: 22050, line: "KI5TOF>APRS:>hello world!", hex: helloWorld),
        RecordedFixture(file: "ttwr.wav", sampleRate: 22050, line: "KI5TOF>APRS:>hello world!", hex: helloWorld),
    ]
}

/// Decodes `samples` with a fresh receiver, fed in blocks of `chunk` samples (all at once when nil),
/// then half a second of silence; returns the packets and the counts.
private func receive(_ samples: [Float], sampleRate: Int, settings: ModemSettings = PacketTestFixtures.settings,
                     chunk: Int? = nil, repairs: Bool = true) throws -> ([ReceivedPacket], PacketStatistics) {
    let receiver = try PacketReceiver(settings: settings, source: MemorySource([], sampleRate: sampleRate), repairs: repairs)
    var packets: [ReceivedPacket] = []
    let all = samples + [Float](repeating: 0, count: sampleRate / 2)
    let step = chunk ?? all.count
    var i = 0
    while i < all.count {
        let end = min(all.count, i + step)
        packets += all[i..<end].withUnsafeBufferPointer { receiver.process($0) }
        i = end
    }
    packets += receiver.flush()
    return (packets, receiver.finish())
}

/// Audio of `lines` from our transmitter at `sampleRate`.
private func transmit(_ lines: [String], sampleRate: Int, settings: ModemSettings = PacketTestFixtures.settings,
                      gap: Double = 0.2) throws -> [Float] {
    let sink = MemorySink(sampleRate: sampleRate)
    let tx = try PacketTransmitter(settings: settings, sink: sink, preambleMilliseconds: 100, gapSeconds: gap)
    for line in lines { try tx.send(try AX25Frame(monitorLine: line)) }
    try tx.finish()
    return sink.samples
}

@Suite("PacketReceiver")
struct PacketReceiverTests {
    @Test("recorded off-air fixtures: exactly the one frame atest finds, byte for byte", arguments: RecordedFixture.all)
    func recorded(_ fixture: RecordedFixture) throws {
        let reader = try AudioFileReader(path: fixture.path)
        #expect(reader.sampleRate == fixture.sampleRate)
        let receiver = try PacketReceiver(settings: PacketTestFixtures.settings, source: reader)
        var packets: [ReceivedPacket] = []
        let stats = try receiver.run(onPacket: { packets.append($0) })
        try #require(packets.count == 1, "\(fixture.file): \(packets.map(\.monitorLine))")
        #expect(packets[0].bytes == fixture.bytes)
        #expect(packets[0].monitorLine == fixture.line)
        #expect(packets[0].frame?.isUI == true)
        #expect(packets[0].frame?.pid == 0xF0)
        #expect(stats.decoded == 1)
        #expect(stats.samples > 0)
    }

    @Test("round trip at several sample rates, odd ones included: every frame once, in order",
          arguments: [8000, 11025, 22050, 44100, 48000])
    func roundTrip(sampleRate: Int) throws {
        let lines = PacketTestFixtures.lines
        let (packets, stats) = try receive(try transmit(lines, sampleRate: sampleRate), sampleRate: sampleRate)
        #expect(packets.map(\.monitorLine) == lines)
        #expect(packets.allSatisfy { $0.repairedBits == 0 })
        #expect(stats.decoded == lines.count)
        // The end samples are increasing and inside the audio.
        let ends = packets.map(\.endSample)
        #expect(ends == ends.sorted())
        #expect((ends.last ?? .max) < stats.samples)
    }

    @Test("fed at once or in odd-sized chunks: the same frames at the same sample positions",
          arguments: [1, 7, 333, 4097])
    func chunking(chunk: Int) throws {
        let rate = 22050
        let audio = try transmit(Array(PacketTestFixtures.lines.prefix(3)), sampleRate: rate)
        let (whole, _) = try receive(audio, sampleRate: rate)
        let (parts, _) = try receive(audio, sampleRate: rate, chunk: chunk)
        #expect(whole.count == 3)
        #expect(parts.map(\.bytes) == whole.map(\.bytes))
        #expect(parts.map(\.endSample) == whole.map(\.endSample))
    }

    @Test("run() over a source gives what process() gives")
    func runMatchesProcess() throws {
        let rate = 44100
        let audio = try transmit(PacketTestFixtures.lines, sampleRate: rate)
        let (processed, _) = try receive(audio, sampleRate: rate)
        let receiver = try PacketReceiver(settings: PacketTestFixtures.settings,
                                          source: MemorySource(audio + [Float](repeating: 0, count: rate / 2), sampleRate: rate))
        var ran: [ReceivedPacket] = []
        let stats = try receiver.run(onPacket: { ran.append($0) })
        #expect(ran.map(\.bytes) == processed.map(\.bytes))
        #expect(stats.decoded == PacketTestFixtures.lines.count)
    }

    @Test("noise alone and silence alone decode to nothing")
    func noiseAlone() throws {
        var rng = SystemRandomNumberGenerator()
        let noise = (0..<(44100 * 3)).map { _ in Float.random(in: -0.5...0.5, using: &rng) }
        let (packets, stats) = try receive(noise, sampleRate: 44100)
        #expect(packets.isEmpty)
        #expect(stats.decoded == 0)
        let (quiet, _) = try receive([Float](repeating: 0, count: 44100), sampleRate: 44100)
        #expect(quiet.isEmpty)
    }

    @Test("a frame sent twice far apart is delivered twice; the slicers' copies of one frame once")
    func duplicates() throws {
        let rate = 22050
        let line = "N0CALL>APRS:same frame twice"
        let (packets, stats) = try receive(try transmit([line, line], sampleRate: rate, gap: 1.0), sampleRate: rate)
        #expect(packets.map(\.monitorLine) == [line, line])
        #expect(stats.decoded == 2)
        #expect(stats.duplicates >= 1)  // five slicers hear each clean frame
    }

    @Test("a cut frame is not delivered; the frames around it are")
    func cutFrame() throws {
        let rate = 22050
        let first = try transmit(["N0CALL>APRS:before"], sampleRate: rate)
        let cut = try transmit(["N0CALL>APRS:this frame is cut in the middle of its information field"], sampleRate: rate)
        let last = try transmit(["N0CALL>APRS:after"], sampleRate: rate)
        let audio = first + Array(cut.prefix(cut.count / 3)) + [Float](repeating: 0, count: rate / 4) + last
        let (packets, _) = try receive(audio, sampleRate: rate)
        #expect(packets.map(\.monitorLine) == ["N0CALL>APRS:before", "N0CALL>APRS:after"])
    }

    @Test("G3RUH 9600 baud baseband round trip", arguments: [48000, 44100])
    func baseband(sampleRate: Int) throws {
        let settings = try ModemSettings(profile: "g3ruh", framing: "ax25")
        #expect(settings.isBaseband)
        let lines = Array(PacketTestFixtures.lines.prefix(3))
        let audio = try transmit(lines, sampleRate: sampleRate, settings: settings)
        let (packets, _) = try receive(audio, sampleRate: sampleRate, settings: settings)
        #expect(packets.map(\.monitorLine) == lines)
        let (chunked, _) = try receive(audio, sampleRate: sampleRate, settings: settings, chunk: 1001)
        #expect(chunked.map(\.bytes) == packets.map(\.bytes))
    }

    @Test("settings that do not fit the sample rate throw")
    func badSettings() throws {
        let settings = try ModemSettings(profile: "g3ruh", framing: "ax25")
        #expect(throws: ModemSettingsError.self) {
            try PacketReceiver(settings: settings, source: MemorySource([], sampleRate: 22050))
        }
    }
}
