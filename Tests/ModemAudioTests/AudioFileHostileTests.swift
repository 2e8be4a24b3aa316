import Foundation
@testable import ModemAudio
import Synchronization
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Input and output a hostile user would try: streams, non-finite and huge samples, failures after
/// the output was opened, the 4 GiB limit of WAV, descriptors closed twice.
@Suite("Audio files: hostile input and output")
struct AudioFileHostileTests {
    /// A mono 32-bit float WAV of `samples`, by hand.
    static func floatWAV(_ samples: [Float], sampleRate: Int = 48000) -> [UInt8] {
        let dataBytes = samples.count * 4
        var out: [UInt8] = Array("RIFF".utf8) + WAVBytes.le32(UInt32(36 + dataBytes)) + Array("WAVE".utf8)
        out += Array("fmt ".utf8) + WAVBytes.le32(16) + WAVBytes.le16(3) + WAVBytes.le16(1)
        out += WAVBytes.le32(UInt32(sampleRate)) + WAVBytes.le32(UInt32(sampleRate * 4)) + WAVBytes.le16(4) + WAVBytes.le16(32)
        out += Array("data".utf8) + WAVBytes.le32(UInt32(dataBytes))
        for s in samples { out += WAVBytes.le32(s.bitPattern) }
        return out
    }

    /// Reads the whole of `reader`.
    static func readAll(_ reader: AudioFileReader) throws -> [Float] {
        var all: [Float] = []
        var block = [Float](repeating: 0, count: 1000)
        while true {
            let n = try block.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            if n == 0 { return all }
            all += block[0..<n]
        }
    }

    /// Opens `/dev/fd/N` of a pipe that a thread fills with `bytes` (in small pieces) and closes.
    static func readThroughPipe(_ bytes: [UInt8]) throws -> (samples: [Float], reader: AudioFileReader) {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writeFD = fds[1]
        let writer = Thread {
            var off = 0
            while off < bytes.count {
                let k = min(777, bytes.count - off)
                let n = bytes[off..<off + k].withUnsafeBytes { write(writeFD, $0.baseAddress, k) }
                if n <= 0 { break }
                off += n
            }
            close(writeFD)
        }
        writer.start()
        defer { close(fds[0]) }
        let reader = try AudioFileReader(path: "/dev/fd/\(fds[0])")
        return (try readAll(reader), reader)
    }

    @Test("A WAV from a pipe is read whole, front to back, and is not seekable")
    func pipeIsStreamed() throws {
        let samples = (0..<20000).map { Int16(truncatingIfNeeded: $0 &* 37) }
        let (got, reader) = try Self.readThroughPipe(WAVBytes.pcm16(sampleRate: 8000, channels: [samples]))
        #expect(!reader.isSeekable)
        #expect(reader.sampleRate == 8000)
        #expect(got.count == samples.count)
        #expect(got.enumerated().allSatisfy { abs($0.element - Float(samples[$0.offset]) / 32768) < 1e-6 })
    }

    @Test("A streamed WAV of unknown length (data size 0xFFFFFFFF or 0) is read to the end of the stream",
          arguments: [UInt32(0xFFFF_FFFF), 0])
    func unknownLength(_ placeholder: UInt32) throws {
        let samples = (0..<5000).map { Int16(truncatingIfNeeded: $0 &* 11) }
        var bytes = WAVBytes.pcm16(sampleRate: 8000, channels: [samples])
        bytes.replaceSubrange(40..<44, with: WAVBytes.le32(placeholder))
        bytes.replaceSubrange(4..<8, with: WAVBytes.le32(placeholder))
        let (got, reader) = try Self.readThroughPipe(bytes)
        #expect(got.count == samples.count)
        #expect(reader.declaredFrameCount == 0, "an unknown length is 0, not the placeholder")
    }

    @Test("A stream whose header claims a chunk over 1 MiB before the data is refused, not buffered")
    func hugeStreamHeader() throws {
        var bytes: [UInt8] = Array("RIFF".utf8) + WAVBytes.le32(0xFFFF_FFFF) + Array("WAVE".utf8)
        bytes += Array("LIST".utf8) + WAVBytes.le32(0x7000_0000) + [UInt8](repeating: 0, count: 1000)
        do {
            _ = try Self.readThroughPipe(bytes)
            Issue.record("a 1.8 GB header chunk in a stream was accepted")
        } catch let e as AudioError {
            #expect(e.kind == .unsupportedFormat)
            #expect(e.message.contains("header"), "\(e)")
        }
    }

    @Test("A WAV written to a pipe has sizes marked unknown and reads back whole", arguments: AudioSampleFormat.allCases)
    func writeToPipe(_ format: AudioSampleFormat) async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let collected = SharedBytes()
        let readFD = fds[0]
        let drain = Thread {
            var buf = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buf.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                collected.append(buf[0..<n])
            }
            close(readFD)
            collected.finish()
        }
        drain.start()
        let samples = (0..<3000).map { Float(sin(Double($0) * 0.05)) * 0.5 }
        do {
            // The writer is dropped at the end of this block: its descriptor closes, so the pipe ends
            // and the reading thread finishes.
            let w = try AudioFileWriter(path: "/dev/fd/\(fds[1])", sampleRate: 8000, format: format)
            close(fds[1])
            try samples.withUnsafeBufferPointer { try w.write($0) }
            try w.finish()
        }
        let bytes = try await collected.wait()
        #expect(bytes.count >= 44 + 3000 * format.bytesPerSample)
        #expect(Array(bytes[4..<8]) == [0xFF, 0xFF, 0xFF, 0xFF], "the RIFF size is not 'unknown'")
        let (got, _) = try Self.readThroughPipe(bytes)
        #expect(got.count == samples.count)
        let tolerance: Float = format == .pcm8 ? 0.01 : 1e-4
        #expect(zip(got, samples).allSatisfy { abs($0 - $1) < tolerance })
    }

    @Test("NaN and infinity read as silence, huge values clipped; the rest is untouched")
    func nonFiniteSamples() throws {
        let folder = try TemporaryFolder()
        var samples = (0..<1000).map { Float(sin(Double($0) * 0.1)) * 0.5 }
        samples[10] = .nan
        samples[11] = .infinity
        samples[12] = -.infinity
        samples[13] = .greatestFiniteMagnitude
        samples[14] = -3e38
        let path = try folder.write("nan.wav", Self.floatWAV(samples))
        let reader = try AudioFileReader(path: path)
        let got = try Self.readAll(reader)
        #expect(got.count == samples.count)
        #expect(got[10] == 0 && got[11] == 0 && got[12] == 0)
        #expect(got[13] == AudioFileReader.sampleLimit && got[14] == -AudioFileReader.sampleLimit)
        #expect(reader.nonFiniteSampleCount == 3 && reader.clippedSampleCount == 2)
        for i in 15..<1000 { #expect(got[i] == samples[i]) }
    }

    @Test("A writer that is not finished leaves an existing file as it was, and no temporary file")
    func unfinishedWriterKeepsTheOldFile() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("out.wav", Array("precious".utf8))
        do {
            let w = try AudioFileWriter(path: path, sampleRate: 8000)
            let block = [Float](repeating: 0.1, count: 1000)
            try block.withUnsafeBufferPointer { try w.write($0) }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("precious".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.wav"])
    }

    @Test("A finished writer replaces the file")
    func finishedWriterReplaces() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("out.wav", Array("old".utf8))
        let w = try AudioFileWriter(path: path, sampleRate: 8000)
        let block = [Float](repeating: 0.1, count: 1000)
        try block.withUnsafeBufferPointer { try w.write($0) }
        try w.finish()
        #expect(try AudioFileReader(path: path).declaredFrameCount == 1000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.wav"])
    }

    @Test("Writing past the WAV size limit fails instead of wrapping the header's sizes")
    func sizeLimit() throws {
        let folder = try TemporaryFolder()
        let w = try AudioFileWriter(path: folder.file("big.wav"), sampleRate: 8000)
        #expect(w.maximumSampleCount == (Int64(UInt32.max) - 4096) / 2)
        w.sizeLimitBytes = 3000
        let block = [Float](repeating: 0.1, count: 1000)
        try block.withUnsafeBufferPointer { try w.write($0) }
        #expect(throws: AudioError.self) { try block.withUnsafeBufferPointer { try w.write($0) } }
        #expect(w.samplesWritten == 1000)
    }

    @Test("Writing to a full device (/dev/full) fails with an error",
          .enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "no /dev/full here"))
    func fullDevice() throws {
        var failed = false
        do {
            let w = try AudioFileWriter(path: "/dev/full", sampleRate: 8000)
            let block = [Float](repeating: 0.1, count: 100_000)
            try block.withUnsafeBufferPointer { try w.write($0) }
            try w.finish()
        } catch is AudioError {
            failed = true
        }
        #expect(failed)
    }

    @Test("A failed open closes its descriptor once: another thread's descriptors survive")
    func failedOpenClosesOnce() async throws {
        let folder = try TemporaryFolder()
        let bad = try folder.write("bad.wav", Array(repeating: 0x41, count: 4096))
        let stop = SharedCounter()
        let failures = SharedCounter()
        let userDone = Observed(false)
        // Another thread keeps opening pipes and using them at once; a stray close of a number it
        // was just given shows up as a failed write or read.
        let user = Thread {
            while stop.value.load(ordering: .relaxed) == 0 {
                var fds: [Int32] = [0, 0]
                guard pipe(&fds) == 0 else { continue }
                var byte: UInt8 = 7
                if write(fds[1], &byte, 1) != 1 || read(fds[0], &byte, 1) != 1 { failures.value.add(1, ordering: .relaxed) }
                close(fds[0]); close(fds[1])
            }
            userDone.set(true)
        }
        user.start()
        for _ in 0..<3000 { _ = try? AudioFileReader(path: bad) }
        stop.value.store(1, ordering: .relaxed)
        // Its last round counted too: the thread has ended (an event, not a pause).
        try await userDone.wait(for: "the pipe thread's end") { $0 }
        #expect(failures.value.load(ordering: .relaxed) == 0)
    }
}

/// An atomic counter shared with a thread.
final class SharedCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// Bytes collected by a thread, handed over when it is done.
final class SharedBytes: Sendable {
    private let state = Observed<(bytes: [UInt8], done: Bool)>(([], false))
    func append(_ more: ArraySlice<UInt8>) { state.update { $0.bytes += more } }
    func finish() { state.update { $0.done = true } }
    /// Waits until ``finish()`` (woken by it; 120 s is a hang guard) and returns the bytes.
    func wait() async throws -> [UInt8] {
        try await state.wait(for: "the collecting thread's end", hangGuard: 120) { $0.done }.bytes
    }
}
