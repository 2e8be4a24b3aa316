import CSndFile
#if canImport(Glibc)
import Glibc
#endif

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

    private var handle: OpaquePointer?
    private var descriptor: Int32 = -1
    private var interleaved: [Float] = []

    /// Opens `path` for reading.
    /// - Parameters:
    ///   - path: the file to read (a regular file, or a pipe such as `/dev/stdin`).
    ///   - channel: which channel to read, counted from 0; must exist in the file.
    /// - Throws: ``AudioError`` naming the file: ``AudioError/Kind/cannotOpen`` (with `errno`) when it
    ///   is missing, unreadable or a directory; ``AudioError/Kind/unsupportedFormat`` when it is empty
    ///   or not audio libsndfile can decode; ``AudioError/Kind/noSuchChannel`` when it lacks `channel`.
    public init(path: String, channel: Int = 0) throws {
        self.path = path
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw AudioError(.cannotOpen, subject: path.isEmpty ? "(empty path)" : path, message: "not a valid file path")
        }
        // Open the file ourselves, so errno says why it failed (missing, permission, ...).
        // libsndfile reads from this descriptor; we close it. (A FIFO waits here for its writer,
        // as with any reader of a pipe.)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let e = errno
            throw AudioError(.cannotOpen, subject: path, message: "cannot open: \(String(cString: strerror(e)))", code: e)
        }
        var st = stat()
        if fstat(fd, &st) != 0 {
            let e = errno
            Glibc.close(fd)
            throw AudioError(.cannotOpen, subject: path, message: "cannot examine: \(String(cString: strerror(e)))", code: e)
        }
        let type = st.st_mode & S_IFMT
        if type == S_IFDIR {
            Glibc.close(fd)
            throw AudioError(.cannotOpen, subject: path, message: "is a directory, not an audio file", code: EISDIR)
        }
        if type == S_IFREG && st.st_size == 0 {
            Glibc.close(fd)
            throw AudioError(.unsupportedFormat, subject: path, message: "the file is empty")
        }
        var info = SF_INFO()
        guard let h = sf_open_fd(fd, Int32(SFM_READ), &info, Int32(SF_FALSE)) else {
            let code = sf_error(nil)
            let msg = String(cString: sf_strerror(nil))
            Glibc.close(fd)
            throw AudioError(.unsupportedFormat, subject: path, message: "not a readable audio file: \(msg)", code: code)
        }
        guard info.samplerate > 0, info.channels > 0 else {
            sf_close(h)
            Glibc.close(fd)
            throw AudioError(.unsupportedFormat, subject: path, message: "the header gives no sample rate or channels")
        }
        guard channel >= 0, channel < Int(info.channels) else {
            sf_close(h)
            Glibc.close(fd)
            throw AudioError(.noSuchChannel, subject: path,
                             message: "channel \(channel) requested but the file has \(info.channels) channel(s) (counted from 0)")
        }
        self.handle = h
        self.descriptor = fd
        self.isSeekable = type == S_IFREG && info.seekable != 0
        self.sampleRate = Int(info.samplerate)
        self.channelCount = Int(info.channels)
        self.channel = channel
        self.declaredFrameCount = Int64(info.frames)
        self.formatDescription = AudioFileReader.describe(format: info.format)
        // Normalise integer formats to -1...1 even when the file has a peak chunk.
        sf_command(h, Int32(SFC_SET_NORM_FLOAT), nil, Int32(SF_TRUE))
    }

    deinit {
        if let handle { sf_close(handle) }
        if descriptor >= 0 { Glibc.close(descriptor) }
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
            if n < 0 { throw AudioError(.readFailed, subject: path, message: "read failed") }
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
        if n < 0 { throw AudioError(.readFailed, subject: path, message: "read failed") }
        interleaved.withUnsafeBufferPointer { ib in
            for i in 0..<n { base[i] = ib[i * cc + ch] }
        }
        return n
    }

    static func describe(format: Int32) -> String {
        let major: String
        switch format & Int32(SF_FORMAT_TYPEMASK) {
        case Int32(SF_FORMAT_WAV): major = "WAV"
        case Int32(SF_FORMAT_WAVEX): major = "WAVEX"
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
public final class AudioFileWriter: AudioSink {
    /// The path being written.
    public let path: String
    /// Samples per second, in Hz.
    public let sampleRate: Int
    /// The sample encoding being written.
    public let format: AudioSampleFormat
    private var shorts: [Int16] = []
    private var handle: OpaquePointer?

    /// Creates (or truncates) a mono WAV file.
    /// - Parameters:
    ///   - path: where to write.
    ///   - sampleRate: samples per second, in Hz (1000...384000).
    ///   - format: the sample encoding; 16-bit PCM by default.
    /// - Throws: ``AudioError`` naming the file when it cannot be created.
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
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = 1
        info.format = Int32(SF_FORMAT_WAV) | format.sndfileSubtype
        guard let h = sf_open(path, Int32(SFM_WRITE), &info) else {
            let msg = String(cString: sf_strerror(nil))
            throw AudioError(.cannotOpen, subject: path, message: "cannot create: \(msg)", code: sf_error(nil))
        }
        // Clip instead of wrapping when a float is slightly over full scale.
        sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        handle = h
    }

    deinit { if let handle { sf_close(handle) } }

    /// Appends samples to the file.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let h = handle else {
            throw AudioError(.writeFailed, subject: path, message: "write after finish")
        }
        guard let base = samples.baseAddress, samples.count > 0 else { return }
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
                    let v = min(max(base[i] * 32767, -32768), 32767) + 12_582_912
                    o[i] = Int16(truncatingIfNeeded: Int32(bitPattern: v.bitPattern) &- 0x4B40_0000)
                }
                return sf_writef_short(h, o, sf_count_t(samples.count))
            }
        } else {
            n = sf_writef_float(h, base, sf_count_t(samples.count))
        }
        if n != sf_count_t(samples.count) {
            throw AudioError(.writeFailed, subject: path, message: "write failed: \(String(cString: sf_strerror(h)))", code: sf_error(h))
        }
    }

    /// Finalises the header and closes the file.
    public func finish() throws {
        guard let h = handle else { return }
        handle = nil
        if sf_close(h) != 0 {
            throw AudioError(.writeFailed, subject: path, message: "closing the file failed")
        }
    }
}
