import Foundation
import Testing
import ModemAudio
import ModemDSP
@testable import ModemPipelines

/// Writes `text` as an FSK WAV file with our transmitter and returns its path.
func makeWAV(_ bytes: [UInt8], settings: ModemSettings, sampleRate: Int = 48000, name: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmodem-\(name)-\(getpid()).wav").path
    let writer = try AudioFileWriter(path: path, sampleRate: sampleRate)
    let tx = try Transmitter(settings: settings, sink: writer)
    try tx.send(bytes)
    try tx.finish()
    return path
}

func decode(path: String, settings: ModemSettings, threads: Int) throws -> (bytes: [UInt8], summary: ReceiverSummary) {
    var out: [UInt8] = []
    let summary = try Receiver.decodeFile(path: path, settings: settings, threads: threads, onBytes: { out += $0 })
    return (out, summary)
}

/// Deterministic printable text.
func sampleText(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    let alphabet = Array("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?\n".utf8)
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return alphabet[Int(state >> 33) % alphabet.count]
    }
}

@Suite struct ReceiverTests {
    @Test(arguments: [300.0, 1200.0])
    func twoThreadDecodeOfALongFileIsExact(baud: Double) throws {
        let settings = try ModemSettings(baudRate: baud)
        // Long enough (> 20 s) for the file to be split in halves.
        let text = sampleText(count: Int(baud * 26 / 10), seed: 3)
        let path = try makeWAV(text, settings: settings, name: "split\(Int(baud))")
        defer { unlink(path) }
        let two = try decode(path: path, settings: settings, threads: 2)
        #expect(two.summary.threads == 2)
        #expect(two.bytes == text)
        let one = try decode(path: path, settings: settings, threads: 1)
        #expect(one.summary.threads == 1)
        #expect(one.bytes == text)
    }

    @Test func framingsRoundTripThroughFiles() throws {
        for framing in ["8N1", "7E1", "7O1", "8N2", "8M1", "8S1", "6N1.5"] {
            let settings = try ModemSettings(baudRate: 1200, framing: framing)
            let bits = Int(framing.prefix(1))!
            let text = sampleText(count: 300, seed: 9).map { $0 & UInt8((1 << bits) - 1) }
            let path = try makeWAV(text, settings: settings, name: "framing")
            defer { unlink(path) }
            let got = try decode(path: path, settings: settings, threads: 1)
            #expect(got.bytes == text, "framing \(framing)")
            #expect(got.summary.parityErrors == 0 && got.summary.framingErrors == 0, "framing \(framing)")
        }
    }

    @Test func baudotRoundTrip() throws {
        let settings = try ModemSettings(profile: "rtty")
        let text = Array("RYRY CQ CQ DE SWIFTMODEM 73 1234567890\n".utf8)
        let path = try makeWAV(text, settings: settings, name: "rtty")
        defer { unlink(path) }
        #expect(try decode(path: path, settings: settings, threads: 1).bytes == text)
    }

    @Test func settingsRejectNonsense() {
        #expect(throws: ModemSettingsError.self) { try ModemSettings(profile: "nope") }
        #expect(throws: ModemSettingsError.self) { try ModemSettings(baudRate: 0) }
        #expect(throws: ModemSettingsError.self) { try ModemSettings(baudRate: 1200, framing: "9X1") }
        #expect(throws: ModemSettingsError.self) { try ModemSettings(baudRate: 1200, mark: 30000).configuration(sampleRate: 48000) }
    }

    @Test func profilesMatchMinimodemDefaults() throws {
        #expect(FSKProfile.defaultTones(forBaudRate: 1200) == (1200, 2200))
        #expect(FSKProfile.defaultTones(forBaudRate: 4800) == (3000, 7000))
        #expect(FSKProfile.defaultTones(forBaudRate: 300) == (1270, 1070))
        #expect(FSKProfile.defaultTones(forBaudRate: 45.45) == (1585, 1415))
        let s = try ModemSettings(profile: "v23-back")
        #expect(s.baudRate == 75 && s.markFrequency == 390 && s.spaceFrequency == 450)
    }
}
