import Foundation
import ModemAudio
import Testing
import ModemTestSupport

@Suite("Audio files: broken and unusual input")
struct AudioFileBrokenInputTests {
    /// A valid mono 16-bit WAV of `count` samples at 48000 Hz.
    static func validWAV(count: Int) -> (bytes: [UInt8], samples: [Int16]) {
        var random = TestRandom(seed: 99)
        let samples = (0..<count).map { _ in random.int16(in: -20000...20000) }
        return (WAVBytes.pcm16(sampleRate: 48000, channels: [samples]), samples)
    }

    enum Broken: String, CaseIterable, Sendable {
        case empty, randomBytes, cutHeader, textFile, missing, directory
    }

    @Test("broken files throw AudioError naming the path", arguments: Broken.allCases)
    func brokenFileThrows(_ kind: Broken) throws {
        let folder = try TemporaryFolder()
        let path: String
        switch kind {
        case .empty: path = try folder.write("empty.wav", [])
        case .randomBytes:
            var random = TestRandom(seed: 1)
            path = try folder.write("random.wav", random.bytes(100_000))
        case .cutHeader: path = try folder.write("cut.wav", Array(Self.validWAV(count: 1000).bytes.prefix(30)))
        case .textFile:
            let text = String(repeating: "The quick brown fox jumps over the lazy dog.\n", count: 60)
            path = try folder.write("text.wav", Array(text.utf8))
        case .missing: path = folder.file("no-such-file.wav")
        case .directory: path = folder.path
        }
        let error = #expect(throws: AudioError.self) { try AudioFileReader(path: path) }
        #expect(error?.description.contains(path) == true, "message: \(String(describing: error))")
        switch kind {
        case .missing, .directory: #expect(error?.kind == .cannotOpen)
        default: #expect(error?.kind == .unsupportedFormat)
        }
        if kind == .missing { #expect(error?.code == ENOENT) }
    }

    /// The header of the bad-input check: RIFF and data sizes 0x7fffffff, and no data at all.
    static let liarHeader: [UInt8] = Array("RIFF".utf8) + [0xff, 0xff, 0xff, 0x7f] + Array("WAVEfmt ".utf8)
        + [0x10, 0, 0, 0, 0x01, 0, 0x01, 0, 0x80, 0xbb, 0, 0, 0, 0x77, 0x01, 0, 0x02, 0, 0x10, 0]
        + Array("data".utf8) + [0xff, 0xff, 0xff, 0x7f]

    @Test("a header that lies about its sizes reads nothing or throws, never crashes")
    func lyingHeader() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("liar.wav", Self.liarHeader)
        do {
            let reader = try AudioFileReader(path: path)
            #expect(try readAll(reader).isEmpty)
        } catch let error as AudioError {
            #expect(error.description.contains(path))
        }
    }

    @Test("a lying header followed by some data reads at most that data")
    func lyingHeaderWithData() throws {
        let folder = try TemporaryFolder()
        let (bytes, samples) = Self.validWAV(count: 1000)
        let path = try folder.write("liar2.wav", Self.liarHeader + bytes.dropFirst(44))
        do {
            let back = try readAll(AudioFileReader(path: path))
            #expect(back.count <= samples.count)
            #expect(back == samples.prefix(back.count).map { Float($0) / 32768 })
        } catch let error as AudioError {
            #expect(error.description.contains(path))
        }
    }

    @Test("a file cut inside its data reads what is there")
    func cutInsideData() throws {
        let folder = try TemporaryFolder()
        let (bytes, samples) = Self.validWAV(count: 10_000)
        let path = try folder.write("cutdata.wav", Array(bytes.prefix(5000)))
        let reader = try AudioFileReader(path: path)
        // The header announces 10000 frames; libsndfile trims that to what the file holds.
        #expect(reader.declaredFrameCount == Int64((5000 - 44) / 2))
        let back = try readAll(reader, blockSize: 1000)
        #expect(back.count == (5000 - 44) / 2)
        #expect(back == samples.prefix(back.count).map { Float($0) / 32768 })
        // At the end it keeps saying so.
        var one: [Float] = [0]
        #expect(try one.withUnsafeMutableBufferPointer { try reader.read(into: $0) } == 0)
    }

    @Test("a WAV arriving through a pipe (FIFO) is read as it comes")
    func fifo() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("pipe.wav")
        try #require(mkfifo(path, 0o600) == 0)
        let (bytes, samples) = Self.validWAV(count: 3000)
        let writer = Thread {
            guard let handle = FileHandle(forWritingAtPath: path) else { return }
            handle.write(Data(bytes))
            try? handle.close()
        }
        writer.start()
        let back = try readAll(AudioFileReader(path: path), blockSize: 500)
        #expect(back == samples.map { Float($0) / 32768 })
    }

    @Test("writer errors name the path")
    func writerErrors() throws {
        let folder = try TemporaryFolder()
        let missingDir = folder.file("no/such/dir/out.wav")
        let e1 = #expect(throws: AudioError.self) { try AudioFileWriter(path: missingDir, sampleRate: 48000) }
        #expect(e1?.kind == .cannotOpen)
        #expect(e1?.description.contains(missingDir) == true)

        for rate in [0, -8000, 999, 10_000_000] {
            let e = #expect(throws: AudioError.self) { try AudioFileWriter(path: folder.file("x.wav"), sampleRate: rate) }
            #expect(e?.kind == .invalidParameter)
        }

        let writer = try AudioFileWriter(path: folder.file("ok.wav"), sampleRate: 8000)
        try writer.finish()
        let e2 = #expect(throws: AudioError.self) {
            try [Float(0.5)].withUnsafeBufferPointer { try writer.write($0) }
        }
        #expect(e2?.kind == .writeFailed)
        // An empty write is a no-op, not an error, while the file is open.
        let writer2 = try AudioFileWriter(path: folder.file("ok2.wav"), sampleRate: 8000)
        try [Float]().withUnsafeBufferPointer { try writer2.write($0) }
        try writer2.finish()
        #expect(try AudioFileReader(path: folder.file("ok2.wav")).declaredFrameCount == 0)
    }

    @Test("out-of-range samples are clipped, not wrapped")
    func clipping() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("clip.wav")
        let writer = try AudioFileWriter(path: path, sampleRate: 8000, format: .pcm16)
        try [Float(3), -3, 1, -1, 0].withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let back = try readAll(AudioFileReader(path: path))
        #expect(back.count == 5)
        #expect(back[0] > 0.99 && back[1] < -0.99)
    }
}
