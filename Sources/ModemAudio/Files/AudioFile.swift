import CSndFile
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Temporary files of open writers, for ``AudioFileWriter/removeTemporaryFiles()``.
private let openTemporaryFiles = Mutex<Set<String>>([])

/// Sample encodings for files written by ``AudioFileWriter``.
public enum AudioSampleFormat: String, Sendable, CaseIterable {
    /// 8-bit unsigned integer PCM.
    case pcm8 = "u8"
    /// 16-bit signed integer PCM (the default; what minimodem writes).
    case pcm16 = "s16"
    /// 24-bit signed integer PCM.
    case pcm24 = "s24"
    /// 32-bit signed integer PCM.
    case pcm32 = "s32"
    /// 32-bit IEEE float.
    case float32 = "f32"

    /// Bytes per sample in a file.
    public var bytesPerSample: Int {
        switch self {
        case .pcm8: return 1
        case .pcm16: return 2
        case .pcm24: return 3
        case .pcm32, .float32: return 4
        }
    }

    var sndfileSubtype: Int32 {
        switch self {
        case .pcm8: return Int32(SF_FORMAT_PCM_U8)
        case .pcm16: return Int32(SF_FORMAT_PCM_16)
        case .pcm24: return Int32(SF_FORMAT_PCM_24)
        case .pcm32: return Int32(SF_FORMAT_PCM_32)
        case .float32: return Int32(SF_FORMAT_FLOAT)
        }
    }
}

/// Reads one channel of an audio file (WAV and anything else libsndfile knows) as a stream of
/// `Float` samples.
///
/// Multi-channel files are de-interleaved on the fly; memory use is bounded by the caller's
/// buffer plus one internal block, whatever the length of the file.
public final class AudioFileReader: AudioSource {
    /// The path the reader was opened with.
    public let path: String
    /// Samples per second, in Hz, as the file's header states it.
    public let sampleRate: Int
    /// Channels in the file (1 for mono).
    public let channelCount: Int
    /// The channel read, counted from 0.
    public let channel: Int
    /// Frames the header announces (may exceed what is really there in a damaged file).
    public let declaredFrameCount: Int64
    /// A short description of the container and encoding, e.g. "WAV, 16-bit PCM".
    public let formatDescription: String
    /// Whether ``seek(toFrame:)`` works: a regular file in a seekable format (a pipe is not).
    public let isSeekable: Bool

    /// Samples that were not finite (NaN, infinity) and were read as silence (0), so far.
    public private(set) var nonFiniteSampleCount = 0
    /// Whether the file's encoding is floating point (only then can samples be non-finite or huge).
    private let storesFloats: Bool
    /// Samples beyond ±``sampleLimit`` that were clipped to it, so far.
    public private(set) var clippedSampleCount = 0
    /// The largest magnitude a sample is read with: 60 dB above full scale. Larger values (a float
    /// file may hold up to 3.4e38) are clipped, so no filter or power sum can overflow.
    public static let sampleLimit: Float = 1000

    /// Asked when a blocking read (a pipe, standard input) is interrupted by a signal whose handler
    /// does not restart calls: returning true makes ``read(into:)`` throw
    /// ``AudioError/Kind/readFailed`` at once, instead of waiting on. Nil (the default): reads go on.
    public var interruptionCheck: (() -> Bool)? {
        get { input?.interruptionCheck }
        set { input?.interruptionCheck = newValue }
    }

    private var handle: OpaquePointer?
    private var input: SndFileInput?
    private var interleaved: [Float] = []

    /// Opens `path` for reading.
    /// - Parameters:
    ///   - path: the file to read: a regular file, or a stream such as a pipe, `/dev/stdin` or `-`
    ///     (standard input). A stream is read once, front to back, as it arrives (WAV with an
    ///     unknown length included); its header may be at most 1 MiB.
    ///   - channel: which channel to read, counted from 0; must exist in the file.
    ///   - interruptionCheck: see ``interruptionCheck``; given here, it also covers reading the
    ///     header of a stream.
    /// - Throws: ``AudioError`` naming the file: ``AudioError/Kind/cannotOpen`` (with `errno`) when it
    ///   is missing, unreadable or a directory; ``AudioError/Kind/unsupportedFormat`` when it is empty
    ///   or not audio libsndfile can decode; ``AudioError/Kind/noSuchChannel`` when it lacks `channel`.
    public init(path: String, channel: Int = 0, interruptionCheck: (() -> Bool)? = nil) throws {
        self.path = path
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw AudioError(.cannotOpen, subject: path.isEmpty ? "(empty path)" : path, message: "not a valid file path")
        }
        let name = path == "-" ? "standard input" : path
        // Open the file ourselves, so errno says why it failed (missing, permission, ...).
        // (A FIFO waits here for its writer, as with any reader of a pipe.)
        let fd = path == "-" ? fcntl(0, F_DUPFD_CLOEXEC, 0) : open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let e = errno
            throw AudioError(.cannotOpen, subject: name, message: "cannot open: \(String(cString: strerror(e)))", code: e)
        }
        var st = stat()
        if fstat(fd, &st) != 0 {
            let e = errno
            Glibc.close(fd)
            throw AudioError(.cannotOpen, subject: name, message: "cannot examine: \(String(cString: strerror(e)))", code: e)
        }
        let type = st.st_mode & S_IFMT
        if type == S_IFDIR {
            Glibc.close(fd)
            throw AudioError(.cannotOpen, subject: name, message: "is a directory, not an audio file", code: EISDIR)
        }
        if type == S_IFREG && st.st_size == 0 {
            Glibc.close(fd)
            throw AudioError(.unsupportedFormat, subject: name, message: "the file is empty")
        }
        // From here `input` owns the descriptor and closes it once.
        let input: SndFileInput
        do {
            input = try SndFileInput(fd: fd, isStream: type != S_IFREG, fileSize: Int64(st.st_size),
                                     interruptionCheck: interruptionCheck)
        } catch {
            throw AudioError(.unsupportedFormat, subject: name, message: "not a readable audio stream: \(error.message)")
        }
        var info = SF_INFO()
        var vio = SndFileInput.virtualIO
        guard let h = sf_open_virtual(&vio, Int32(SFM_READ), &info, Unmanaged.passUnretained(input).toOpaque()) else {
            let code = sf_error(nil)
            let msg = input.readErrno != 0 ? "read failed: \(String(cString: strerror(input.readErrno)))"
                : "not a readable audio file: \(String(cString: sf_strerror(nil)))"
            throw AudioError(.unsupportedFormat, subject: name, message: msg, code: code)
        }
        guard info.samplerate > 0, info.channels > 0 else {
            sf_close(h)
            throw AudioError(.unsupportedFormat, subject: name, message: "the header gives no sample rate or channels")
        }
        guard channel >= 0, channel < Int(info.channels) else {
            sf_close(h)
            throw AudioError(.noSuchChannel, subject: name,
                             message: "channel \(channel) requested but the file has \(info.channels) channel(s) (counted from 0)")
        }
        input.stopRetaining()
        self.handle = h
        self.input = input
        self.isSeekable = !input.isStream && info.seekable != 0
        self.sampleRate = Int(info.samplerate)
        self.channelCount = Int(info.channels)
        self.channel = channel
        // A stream of unknown length: 0 (unknown), not the placeholder's 4 GiB.
        self.declaredFrameCount = input.isStream && input.length >= Int64(UInt32.max) ? 0 : Int64(info.frames)
        self.formatDescription = AudioFileReader.describe(format: info.format)
        // Only floating-point encodings can hold non-finite or out-of-range values: integer ones are
        // scaled to -1...1 by libsndfile, so their samples need no checking.
        let subtype = info.format & Int32(SF_FORMAT_SUBMASK)
        self.storesFloats = subtype == Int32(SF_FORMAT_FLOAT) || subtype == Int32(SF_FORMAT_DOUBLE)
        // Normalise integer formats to -1...1 even when the file has a peak chunk.
        sf_command(h, Int32(SFC_SET_NORM_FLOAT), nil, Int32(SF_TRUE))
    }

    deinit {
        if let handle { sf_close(handle) }
        // `input` closes the descriptor after the handle is gone.
    }

    /// Replaces non-finite samples by 0 and clips huge ones to ±``sampleLimit``, counting both.
    private func sanitize(_ p: UnsafeMutablePointer<Float>, _ n: Int) {
        guard storesFloats else { return }
        let limit = Self.sampleLimit
        // A branch-free scan first (the common case: nothing to mend), then the mending pass.
        var bad = false
        for i in 0..<n { bad = bad || !(abs(p[i]) <= limit) }
        guard bad else { return }
        for i in 0..<n where !(abs(p[i]) <= limit) {
            if p[i].isFinite {
                p[i] = p[i] > 0 ? limit : -limit
                clippedSampleCount += 1
            } else {
                p[i] = 0
                nonFiniteSampleCount += 1
            }
        }
    }

    /// Moves the read position to frame `frame` (0 is the first), so the next read starts there.
    /// - Throws: ``AudioError`` (``AudioError/Kind/readFailed``) when the file cannot seek there.
    public func seek(toFrame frame: Int64) throws {
        guard let h = handle, isSeekable, frame >= 0,
              sf_seek(h, sf_count_t(frame), SEEK_SET) == sf_count_t(frame) else {
            throw AudioError(.readFailed, subject: path, message: "cannot seek to frame \(frame)")
        }
    }

    /// Reads up to `buffer.count` samples of the chosen channel.
    /// - Returns: samples written, 0 at the end of the file (or where a damaged file stops).
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        guard let h = handle, let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        if channelCount == 1 {
            let n = sf_readf_float(h, base, sf_count_t(buffer.count))
            try checkReadError(n)
            sanitize(base, Int(n))
            return Int(n)
        }
        // Bound the interleaved block (at most 64 Ki samples) whatever the channel count.
        let frames = min(buffer.count, max(1, 65536 / channelCount))
        if interleaved.count < frames * channelCount {
            interleaved = [Float](repeating: 0, count: frames * channelCount)
        }
        let ch = channel, cc = channelCount
        let n = interleaved.withUnsafeMutableBufferPointer { ib -> Int in
            Int(sf_readf_float(h, ib.baseAddress!, sf_count_t(frames)))
        }
        try checkReadError(sf_count_t(n))
        interleaved.withUnsafeBufferPointer { ib in
            for i in 0..<n { base[i] = ib[i * cc + ch] }
        }
        sanitize(base, n)
        return n
    }

    /// A negative count, or a system error under a short one, is a failed read (not the end).
    private func checkReadError(_ n: sf_count_t) throws {
        if let e = input?.readErrno, e != 0 {
            throw AudioError(.readFailed, subject: path, message: "read failed: \(String(cString: strerror(e)))", code: e)
        }
        if n < 0 { throw AudioError(.readFailed, subject: path, message: "read failed") }
    }

    static func describe(format: Int32) -> String {
        let major: String
        switch format & Int32(SF_FORMAT_TYPEMASK) {
        case Int32(SF_FORMAT_WAV): major = "WAV"
        case Int32(SF_FORMAT_WAVEX): major = "WAVEX"
        case Int32(SF_FORMAT_RF64): major = "RF64"
        case Int32(SF_FORMAT_AIFF): major = "AIFF"
        case Int32(SF_FORMAT_AU): major = "AU"
        case Int32(SF_FORMAT_RAW): major = "raw"
        case Int32(SF_FORMAT_FLAC): major = "FLAC"
        case Int32(SF_FORMAT_OGG): major = "Ogg"
        default: major = "audio"
        }
        let minor: String
        switch format & Int32(SF_FORMAT_SUBMASK) {
        case Int32(SF_FORMAT_PCM_U8), Int32(SF_FORMAT_PCM_S8): minor = "8-bit PCM"
        case Int32(SF_FORMAT_PCM_16): minor = "16-bit PCM"
        case Int32(SF_FORMAT_PCM_24): minor = "24-bit PCM"
        case Int32(SF_FORMAT_PCM_32): minor = "32-bit PCM"
        case Int32(SF_FORMAT_FLOAT): minor = "32-bit float"
        case Int32(SF_FORMAT_DOUBLE): minor = "64-bit float"
        default: minor = "encoded"
        }
        return "\(major), \(minor)"
    }
}

/// Writes mono `Float` samples to a WAV file through libsndfile, streaming.
///
/// A regular file is written under a temporary name in the same folder and renamed over `path`
/// by ``finish()``: until then (and for ever, when writing fails or the writer is dropped without
/// ``finish()``) an existing file at `path` is untouched. Other targets (a pipe, a character device
/// such as `/dev/null`, or `-` for standard output) are written directly, in order, with the
/// header's sizes set to "unknown" (0xFFFFFFFF), as streaming writers do.
///
/// A WAV file's sizes are 32-bit: a write that would take the file past 4 GiB fails with an error
/// (instead of writing sizes that wrap, which readers would take for a sliver of the file).
public final class AudioFileWriter: AudioSink {
    /// The path being written.
    public let path: String
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The sample encoding being written.
    public let format: AudioSampleFormat
    private var shorts: [Int16] = []
    private var handle: OpaquePointer?
    /// The temporary file renamed to `path` on success (nil when writing directly).
    private var temporaryPath: String?
    /// The stream written when the target is not a regular file.
    private var output: SndFileOutput?
    /// Samples written so far.
    public private(set) var samplesWritten: Int64 = 0
    /// The most samples a WAV file of this format holds (its 32-bit sizes, less room for the header).
    public var maximumSampleCount: Int64 { sizeLimitBytes / Int64(format.bytesPerSample) }
    /// Bytes of samples allowed (lowered by tests, to reach the limit without writing 4 GiB).
    var sizeLimitBytes = Int64(UInt32.max) - 4096

    /// Creates a mono WAV file (replacing an existing one only when ``finish()`` succeeds).
    /// - Parameters:
    ///   - path: where to write; `-` is standard output.
    ///   - sampleRate: samples per second, in Hz (1000...384000).
    ///   - format: the sample encoding; 16-bit PCM by default.
    /// - Throws: ``AudioError`` naming the file when it cannot be created (a directory, a folder
    ///   that does not exist or cannot be written).
    public init(path: String, sampleRate: Int, format: AudioSampleFormat = .pcm16) throws {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw AudioError(.cannotOpen, subject: path.isEmpty ? "(empty path)" : path, message: "not a valid file path")
        }
        guard (1000...384_000).contains(sampleRate) else {
            throw AudioError(.invalidParameter, subject: path, message: "sample rate \(sampleRate) Hz is outside 1000...384000")
        }
        self.path = path
        self.sampleRate = sampleRate
        self.format = format
        let name = path == "-" ? "standard output" : path
        var fd: Int32
        var st = stat()
        if path == "-" {
            fd = fcntl(1, F_DUPFD_CLOEXEC, 0)
        } else if stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw AudioError(.cannotOpen, subject: name, message: "is a directory", code: EISDIR)
            }
            fd = open(path, O_WRONLY | O_CLOEXEC)
        } else {
            let (tfd, tpath) = try Self.createTemporary(near: path)
            fd = tfd
            temporaryPath = tpath
        }
        if fd < 0 {
            let e = errno
            throw AudioError(.cannotOpen, subject: name, message: "cannot create: \(String(cString: strerror(e)))", code: e)
        }
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = 1
        info.format = Int32(SF_FORMAT_WAV) | format.sndfileSubtype
        // Standard output redirected to a regular file can have its header rewritten.
        var fdStat = stat()
        let streaming = temporaryPath == nil && !(fstat(fd, &fdStat) == 0 && (fdStat.st_mode & S_IFMT) == S_IFREG)
        let opened: OpaquePointer?
        if streaming {
            // A stream: written in order, the header's sizes "unknown" (see SndFileOutput).
            let output = SndFileOutput(fd: fd)
            self.output = output
            var vio = SndFileOutput.virtualIO
            opened = sf_open_virtual(&vio, Int32(SFM_WRITE), &info, Unmanaged.passUnretained(output).toOpaque())
        } else {
            // libsndfile owns (and closes) the descriptor from here, whether or not the open succeeds.
            opened = sf_open_fd(fd, Int32(SFM_WRITE), &info, Int32(SF_TRUE))
        }
        guard let h = opened else {
            let e = output?.writeErrno ?? 0
            let msg = e != 0 ? String(cString: strerror(e)) : String(cString: sf_strerror(nil))
            if let temporaryPath { Self.discard(temporaryPath) }
            throw AudioError(.cannotOpen, subject: name, message: "cannot create: \(msg)", code: sf_error(nil))
        }
        // Clip instead of wrapping when a float is slightly over full scale.
        sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        handle = h
    }

    /// Removes the temporary files of every writer not yet finished: for a process about to end
    /// abruptly (e.g. after a signal), so no half-written file is left behind. Their writers must
    /// not be used afterwards.
    public static func removeTemporaryFiles() {
        openTemporaryFiles.withLock { paths in
            for p in paths { unlink(p) }
            paths.removeAll()
        }
    }

    /// Creates an empty file beside `path` (same folder, so a rename replaces `path` atomically).
    static func createTemporary(near path: String) throws -> (Int32, String) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = Array("\(folder).\(base).XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 {
            let e = errno
            let why = e == ENOENT ? "the folder does not exist" : String(cString: strerror(e))
            throw AudioError(.cannotOpen, subject: path, message: "cannot create: \(why)", code: e)
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let made = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        openTemporaryFiles.withLock { _ = $0.insert(made) }
        // mkstemp makes the file 0600; give it the usual mode (0666 less the umask).
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        return (fd, made)
    }

    deinit {
        if let handle { sf_close(handle) }
        if let temporaryPath { Self.discard(temporaryPath) }
    }

    /// Removes a temporary file and forgets it.
    static func discard(_ path: String) {
        openTemporaryFiles.withLock { _ = $0.remove(path) }
        unlink(path)
    }

    /// Appends samples to the file.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let h = handle else {
            throw AudioError(.writeFailed, subject: path, message: "write after finish")
        }
        guard let base = samples.baseAddress, samples.count > 0 else { return }
        guard samplesWritten + Int64(samples.count) <= maximumSampleCount else {
            throw AudioError(.writeFailed, subject: path == "-" ? "standard output" : path,
                             message: "the WAV file would exceed 4 GiB (\(maximumSampleCount) samples of \(format.rawValue)), the most its header can describe")
        }
        let n: sf_count_t
        if format == .pcm16 {
            // Converting here (a loop the compiler vectorises) is several times faster than
            // libsndfile's per-sample rounding with clipping.
            if shorts.count < samples.count { shorts = [Int16](repeating: 0, count: samples.count) }
            n = shorts.withUnsafeMutableBufferPointer { out -> sf_count_t in
                let o = out.baseAddress!
                for i in 0..<samples.count {
                    // Clip, then round to nearest by the 1.5·2^23 trick (no library call, no
                    // trapping conversion): the integer lands in the float's low mantissa bits.
                    // (A NaN fails both comparisons of the clip and becomes 0.)
                    let x = base[i] * 32767
                    let c = x >= -32768 ? (x <= 32767 ? x : 32767) : (x < -32768 ? -32768 : 0)
                    let v = c + 12_582_912
                    o[i] = Int16(truncatingIfNeeded: Int32(bitPattern: v.bitPattern) &- 0x4B40_0000)
                }
                return sf_writef_short(h, o, sf_count_t(samples.count))
            }
        } else {
            n = sf_writef_float(h, base, sf_count_t(samples.count))
        }
        samplesWritten += Int64(max(n, 0))
        if n != sf_count_t(samples.count) {
            let e = output?.writeErrno ?? 0
            throw AudioError(.writeFailed, subject: path == "-" ? "standard output" : path,
                             message: "write failed: \(e != 0 ? String(cString: strerror(e)) : String(cString: sf_strerror(h)))",
                             code: e != 0 ? e : sf_error(h))
        }
    }

    /// Finalises the header, closes the file and (for a regular file) renames it to `path`.
    /// - Throws: ``AudioError`` when the data cannot be written out (e.g. a full disk); `path` is
    ///   then left as it was.
    public func finish() throws {
        guard let h = handle else { return }
        handle = nil
        let name = path == "-" ? "standard output" : path
        // sf_write_sync flushes the header; its failure (and sf_close's) means lost data.
        sf_write_sync(h)
        let failed = sf_error(h) != 0
        let message = String(cString: sf_strerror(h))
        let closed = sf_close(h)
        if let e = output?.writeErrno, e != 0 {
            throw AudioError(.writeFailed, subject: name, message: "writing the file failed: \(String(cString: strerror(e)))", code: e)
        }
        if closed != 0 || failed {
            if let temporaryPath { Self.discard(temporaryPath) }
            self.temporaryPath = nil
            throw AudioError(.writeFailed, subject: name, message: "writing the file failed: \(message)")
        }
        if let temporaryPath {
            self.temporaryPath = nil
            openTemporaryFiles.withLock { _ = $0.remove(temporaryPath) }
            if rename(temporaryPath, path) != 0 {
                let e = errno
                unlink(temporaryPath)
                throw AudioError(.writeFailed, subject: name, message: "cannot replace the file: \(String(cString: strerror(e)))", code: e)
            }
        }
    }
}
