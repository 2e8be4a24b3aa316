import Foundation
import Testing
import ModemAudio
import ModemCodecs
import ModemPipelines
import ModemTestSupport
@testable import ModemTNC
#if canImport(Glibc)
import Glibc
#endif

enum TNCFixtures {
    static let settings = PacketTestFixtures.settings
    static let lines = PacketTestFixtures.lines
    static var frames: [AX25Frame] { PacketTestFixtures.frames }

    /// A WAV file of `lines` made with ``PacketTransmitter``; returns its path (caller removes it).
    static func wav(lines: [String] = lines, sampleRate: Int = 44100, name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("swiftmodem-tnc-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav").path
        let writer = try AudioFileWriter(path: path, sampleRate: sampleRate)
        let tx = try PacketTransmitter(settings: settings, sink: writer, gapSeconds: 0.3)
        for line in lines { try tx.send(try AX25Frame(monitorLine: line)) }
        try tx.finish()
        return path
    }

    /// The audio of one transmission of `frame` (bytes without FCS) at half scale, as the TNC sends it.
    static func afsk(_ frame: [UInt8], sampleRate: Double, txDelayMilliseconds: Double, txTailMilliseconds: Double) throws -> [Float] {
        var modulator = try HDLCModulator(settings: settings, sampleRate: Int(sampleRate), amplitude: 0.5)
        var samples: [Float] = []
        modulator.append(frames: [frame], leadingFlags: modulator.flags(milliseconds: txDelayMilliseconds, minimum: 1),
                         trailingFlags: modulator.flags(milliseconds: txTailMilliseconds, minimum: 3), to: &samples)
        return samples
    }

    /// The frames (bytes without FCS) our receiver finds in `samples`.
    static func decodeFrames(_ samples: [Float], sampleRate: Int) throws -> [[UInt8]] {
        let receiver = try PacketReceiver(settings: settings, sampleRate: sampleRate)
        var frames = samples.withUnsafeBufferPointer { receiver.process($0) }.map(\.bytes)
        let tail = [Float](repeating: 0, count: sampleRate / 2)
        frames += tail.withUnsafeBufferPointer { receiver.process($0) }.map(\.bytes)
        _ = receiver.finish()
        return frames
    }

    /// The frames (monitor lines) our receiver finds in `samples`.
    static func decode(_ samples: [Float], sampleRate: Int) throws -> [String] {
        let receiver = try PacketReceiver(settings: settings, sampleRate: sampleRate)
        var lines = samples.withUnsafeBufferPointer { receiver.process($0) }.map(\.monitorLine)
        let tail = [Float](repeating: 0, count: sampleRate / 2)
        lines += tail.withUnsafeBufferPointer { receiver.process($0) }.map(\.monitorLine)
        _ = receiver.finish()
        return lines
    }
}

/// Steps `tnc` (and lets `clients` read) until `done` holds or `seconds` pass; returns whether it held.
@discardableResult
func tncPump(_ tnc: TNC, clients: [any ReceivingTestClient] = [], seconds: Double = 30, until done: () -> Bool) throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        try tnc.step(timeoutMilliseconds: 2)
        for c in clients { c.receive() }
        if done() { return true }
    }
    return done()
}

/// Polls `server` (and lets `clients` read) until `done` holds or `seconds` pass; returns the events.
func tncPump(_ server: KISSServer, clients: [KISSTestClient] = [], seconds: Double = 30,
          until done: ([KISSServerEvent]) -> Bool) throws -> [KISSServerEvent] {
    let deadline = Date().addingTimeInterval(seconds)
    var events: [KISSServerEvent] = []
    while Date() < deadline {
        events += server.poll(timeoutMilliseconds: 2)
        for c in clients { c.receive() }
        if done(events) { break }
    }
    return events
}
