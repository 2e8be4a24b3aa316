import CSndFile
#if canImport(Glibc)
import Glibc
#endif

/// The bytes libsndfile reads an input from, through its virtual I/O interface: a regular file
/// (seekable, read in place) or a stream (a pipe, standard input, a character device), read once
/// from front to back.
///
/// A stream cannot seek, but libsndfile seeks while it parses a header. So the stream's first bytes
/// (up to the start of a WAV file's `data` chunk, at most ``maximumHeaderBytes``) are kept, seeks are
/// lazy (only a read moves the stream), and reads at or beyond the declared length answer "end of
/// file" without touching the stream. A WAV `data` chunk of unknown size (0 or 0xFFFFFFFF, as
/// streaming writers emit) is read until the stream ends. Memory stays bounded: nothing beyond the
/// kept header is retained.
///
/// We own the descriptor and close it exactly once (libsndfile's `sf_open_fd` closes it itself when
/// the open fails, even when told not to, so it is not used).
final class SndFileInput {
    /// Header bytes a stream may have before its audio data.
    static let maximumHeaderBytes = 1 << 20

    let fd: Int32
    let isStream: Bool
    /// Length reported to libsndfile.
    private(set) var length: Int64
    /// The logical read position.
    private var position: Int64 = 0
    /// Stream only: bytes consumed from the descriptor so far.
    private var consumed: Int64 = 0
    /// Stream only: the first bytes of the stream (possibly patched), served for seeks back.
    private var prefix: [UInt8] = []
    /// Stream only: while libsndfile opens the stream, everything read is kept (it reads ahead and
    /// seeks back); ``stopRetaining()`` ends that.
    private var retaining = true
    /// Set when a read failed with a system error (errno), for the error message.
    private(set) var readErrno: Int32 = 0

    /// Takes ownership of `fd`. For a stream, reads (and keeps) its header.
    /// - Throws: a message when a stream's header cannot be read or is too large.
    init(fd: Int32, isStream: Bool, fileSize: Int64, interruptionCheck: (() -> Bool)?) throws(SndFileInputError) {
        self.fd = fd
        self.isStream = isStream
        self.length = fileSize
        self.interruptionCheck = interruptionCheck
        if isStream { try readStreamHeader() }
    }

    deinit { _ = close(fd) }

    /// Asked when a read is interrupted by a signal: true ends the read with an error (EINTR).
    var interruptionCheck: (() -> Bool)?

    /// Reads from the descriptor, retrying after EINTR unless ``interruptionCheck`` says stop;
    /// -1 on error.
    private func rawRead(_ p: UnsafeMutableRawPointer, _ count: Int) -> Int {
        while true {
            let n = Glibc.read(fd, p, count)
            if n < 0 && errno == EINTR && !(interruptionCheck?() ?? false) { continue }
            if n < 0 { readErrno = errno }
            return n
        }
    }

    /// Appends stream bytes to `prefix` until it holds `count` bytes or the stream ends.
    private func fill(to count: Int) throws(SndFileInputError) {
        if prefix.count >= count { return }
        if count > Self.maximumHeaderBytes {
            throw SndFileInputError("the header is larger than \(Self.maximumHeaderBytes) bytes, too large to read from a stream")
        }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while prefix.count < count {
            let want = min(chunk.count, count - prefix.count)
            let n = chunk.withUnsafeMutableBytes { rawRead($0.baseAddress!, want) }
            if n < 0 { throw SndFileInputError("read failed: \(String(cString: strerror(readErrno)))") }
            if n == 0 { break }
            prefix.append(contentsOf: chunk[0..<n])
        }
        consumed = Int64(prefix.count)
    }

    /// Keeps a stream's header; for WAV, finds the `data` chunk and makes an unknown size "to the end".
    private func readStreamHeader() throws(SndFileInputError) {
        // Unknown length: reads end when the stream does.
        length = Int64.max / 4
        try fill(to: 12)
        guard prefix.count >= 12 else {
            if prefix.isEmpty { throw SndFileInputError("the stream is empty") }
            throw SndFileInputError("the stream ends after \(prefix.count) bytes, inside the header")
        }
        func tag(_ at: Int) -> String { String(decoding: prefix[at..<at + 4], as: UTF8.self) }
        func le32(_ at: Int) -> UInt32 {
            UInt32(prefix[at]) | UInt32(prefix[at + 1]) << 8 | UInt32(prefix[at + 2]) << 16 | UInt32(prefix[at + 3]) << 24
        }
        guard tag(0) == "RIFF", tag(8) == "WAVE" else { return }
        var offset = 12
        while true {
            try fill(to: offset + 8)
            guard prefix.count >= offset + 8 else { return }   // ends in the header: libsndfile says why
            let size = le32(offset + 4)
            if tag(offset) == "data" {
                let start = Int64(offset + 8)
                if size == 0 || size == 0xFFFF_FFFF {
                    // A streaming writer's placeholder: read to the end of the stream.
                    for i in 0..<4 { prefix[offset + 4 + i] = 0xFF }
                    length = start + 0xFFFF_FFFF
                } else {
                    length = start + Int64(size)
                }
                return
            }
            offset += 8 + Int(size) + Int(size & 1)
            if offset > Self.maximumHeaderBytes {
                throw SndFileInputError("the header is larger than \(Self.maximumHeaderBytes) bytes, too large to read from a stream")
            }
        }
    }

    /// The open is done: from now on a stream is read without keeping what is read.
    func stopRetaining() { retaining = false }

    // MARK: Virtual I/O

    func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        guard let target = seekTarget(offset, whence, current: position, end: length) else { return -1 }
        if !isStream {
            let r = lseek(fd, off_t(target), SEEK_SET)
            if r < 0 { return -1 }
        }
        position = target
        return position
    }

    func read(_ p: UnsafeMutableRawPointer, _ count: Int64) -> Int64 {
        guard count > 0 else { return 0 }
        // libsndfile makes one call per request and drops a partial sample, so fill it whole.
        if !isStream {
            var done = 0
            let want = Int(clamping: count)
            while done < want {
                let n = rawRead(p + done, want - done)
                if n <= 0 { break }
                done += n
            }
            position += Int64(done)
            return Int64(done)
        }
        let want = Int(clamping: min(count, length - position))
        guard want > 0 else { return 0 }
        if retaining, position + Int64(want) <= Int64(Self.maximumHeaderBytes) {
            do { try fill(to: Int(position) + want) } catch { return 0 }
        }
        var done = 0
        // From the kept header.
        if position < Int64(prefix.count) {
            let k = min(want, prefix.count - Int(position))
            prefix.withUnsafeBytes { p.copyMemory(from: $0.baseAddress! + Int(position), byteCount: k) }
            done = k
            position += Int64(k)
            if done == want { return Int64(done) }
        }
        // A seek back behind the stream, outside the header, cannot be served.
        if position < consumed { return Int64(done) }
        // A seek ahead: skip forward.
        var skip = [UInt8](repeating: 0, count: 4096)
        while consumed < position {
            let n = skip.withUnsafeMutableBytes { rawRead($0.baseAddress!, Int(min(Int64($0.count), position - consumed))) }
            if n <= 0 { return Int64(done) }
            consumed += Int64(n)
        }
        while done < want {
            let n = rawRead(p + done, want - done)
            if n <= 0 { break }
            done += n
            consumed += Int64(n)
            position += Int64(n)
        }
        return Int64(done)
    }

    /// The callbacks, with `self` as user data (the caller keeps `self` alive while the handle is open).
    static var virtualIO: SF_VIRTUAL_IO {
        SF_VIRTUAL_IO(
            get_filelen: { ud in Unmanaged<SndFileInput>.fromOpaque(ud!).takeUnretainedValue().length },
            seek: { offset, whence, ud in Unmanaged<SndFileInput>.fromOpaque(ud!).takeUnretainedValue().seek(offset, whence) },
            read: { p, count, ud in Unmanaged<SndFileInput>.fromOpaque(ud!).takeUnretainedValue().read(p!, count) },
            write: { _, _, _ in 0 },
            tell: { ud in Unmanaged<SndFileInput>.fromOpaque(ud!).takeUnretainedValue().position })
    }
}

/// Why a stream's header could not be read.
struct SndFileInputError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Where a libsndfile virtual-I/O seek (`lseek`'s `offset` and `whence`) lands, given the current
/// position and the end; nil for an unknown `whence` or a target before the start.
func seekTarget(_ offset: Int64, _ whence: Int32, current: Int64, end: Int64) -> Int64? {
    let target: Int64
    switch whence {
    case SEEK_SET: target = offset
    case SEEK_CUR: target = current + offset
    case SEEK_END: target = end + offset
    default: return nil
    }
    return target >= 0 ? target : nil
}
