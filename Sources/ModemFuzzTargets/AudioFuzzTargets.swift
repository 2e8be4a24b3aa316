import ModemAudio
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Targets for ModemAudio: audio files as `modem` reads them (libsndfile through our virtual I/O).
enum AudioFuzzTargets {
    static let all: [FuzzTarget] = [wav]

    /// Most samples read from one input: a compressed format could otherwise turn a few bytes into
    /// hours of audio, which is slow, not wrong.
    static let sampleLimit = 1 << 20

    private static let counter = Atomic<Int>(0)

    /// A fresh path in the temporary folder, unique in this process and across processes.
    static func temporaryPath(_ suffix: String) -> String {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return "\(dir)/modem-fuzz-\(getpid())-\(counter.add(1, ordering: .relaxed).newValue)\(suffix)"
    }

    /// Writes `bytes` to a new file at `path`; false when that failed.
    static func write(_ bytes: [UInt8], to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    /// Opens `path` as `modem` does and reads every channel to the end (or ``sampleLimit``).
    static func readAll(_ path: String) {
        guard let first = try? AudioFileReader(path: path) else { return }
        let channels = min(first.channelCount, 4)
        var buffer = [Float](repeating: 0, count: 4096)
        for channel in 0..<channels {
            guard let reader = channel == 0 ? first : try? AudioFileReader(path: path, channel: channel) else { continue }
            var total = 0
            while total < sampleLimit {
                guard let n = try? buffer.withUnsafeMutableBufferPointer({ try reader.read(into: $0) }), n > 0 else { break }
                precondition(n <= buffer.count, "WAV: read returned more samples than asked for")
                for i in 0..<n {
                    precondition(abs(buffer[i]) <= AudioFileReader.sampleLimit, "WAV: a sample beyond the limit got through")
                }
                total += n
            }
            if reader.isSeekable { _ = try? reader.seek(toFrame: 0) }
        }
    }

    /// The input is an audio file's bytes: read as a regular file, and (up to 64 KiB, what a pipe holds)
    /// as a stream through a pipe, the way `modem` reads standard input.
    static let wav = FuzzTarget(
        name: "wav",
        summary: "AudioFileReader: WAV (and whatever else libsndfile reads) as a file and as a stream",
        seeds: {
            var out: [(name: String, bytes: [UInt8])] = []
            let samples = (0..<96).map { Float(sin(Double($0) * 0.3)) * 0.8 }
            for format in AudioSampleFormat.allCases {
                let path = temporaryPath(".wav")
                defer { unlink(path) }
                guard let writer = try? AudioFileWriter(path: path, sampleRate: 8000, format: format) else { continue }
                _ = try? samples.withUnsafeBufferPointer { try writer.write($0) }
                guard (try? writer.finish()) != nil, let bytes = read(path) else { continue }
                out.append((name: "sine-\(format.rawValue).wav", bytes: bytes))
            }
            return out
        },
        run: { input in
            let path = temporaryPath(".wav")
            defer { unlink(path) }
            if write(input, to: path) { readAll(path) }
            guard input.count <= 65536 else { return }
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return }
            defer { close(fds[0]) }
            let written = input.withUnsafeBytes { Glibc.write(fds[1], $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, input.count) }
            close(fds[1])
            if written == input.count { readAll("/proc/self/fd/\(fds[0])") }
        }
    )

    /// The bytes of the file at `path`.
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 { return nil }
            if n == 0 { return out }
            out += chunk[0..<n]
        }
    }
}
