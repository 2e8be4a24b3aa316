import CSndFile
#if canImport(Glibc)
import Glibc
#endif

/// A stream (a pipe, standard output, a character device) that libsndfile writes a WAV file to,
/// through its virtual I/O interface.
///
/// libsndfile refuses to write WAV to a pipe, because it rewrites the header with the true sizes
/// when the file is closed. Here it believes it can seek: bytes go to the stream in order, and a
/// write behind what was already sent (the final header) is dropped. So the header keeps the sizes
/// a streaming writer uses for "unknown" (0xFFFFFFFF, patched in as the header goes out): readers
/// then read to the end of the stream (as this package's reader, sox and ffmpeg do).
final class SndFileOutput {
    let fd: Int32
    /// Bytes sent to the stream.
    private(set) var sent: Int64 = 0
    /// The logical write position.
    private var position: Int64 = 0
    /// Set when a write failed with a system error (errno).
    private(set) var writeErrno: Int32 = 0

    /// Takes ownership of `fd`.
    init(fd: Int32) { self.fd = fd }

    deinit { _ = close(fd) }

    func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        guard let target = seekTarget(offset, whence, current: position, end: sent) else { return -1 }
        position = target
        return position
    }

    func write(_ p: UnsafeRawPointer, _ count: Int64) -> Int64 {
        guard count > 0 else { return 0 }
        // A rewrite of bytes already sent (the header, at close) cannot happen on a stream.
        if position < sent {
            position += count
            return count
        }
        // A gap (a seek ahead) is filled with zeros, as in a file.
        while sent < position {
            var zeros = [UInt8](repeating: 0, count: Int(min(4096, position - sent)))
            guard writeAll(&zeros, zeros.count) else { return 0 }
        }
        var bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: Int(count)))
        if sent == 0 { Self.markSizesUnknown(&bytes) }
        guard writeAll(&bytes, bytes.count) else { return 0 }
        position += count
        return count
    }

    /// Writes all of `bytes`, retrying after EINTR; false (with ``writeErrno``) on failure.
    private func writeAll(_ bytes: inout [UInt8], _ count: Int) -> Bool {
        var done = 0
        while done < count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                writeErrno = n < 0 ? errno : EIO
                return false
            }
            done += n
        }
        sent += Int64(count)
        return true
    }

    /// In the first bytes of a RIFF/WAVE header, sets the RIFF size and the `data` chunk's size to
    /// 0xFFFFFFFF ("unknown"), the sizes of a stream whose end is not known when it starts.
    static func markSizesUnknown(_ bytes: inout [UInt8]) {
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else { return }
        for i in 4..<8 { bytes[i] = 0xFF }
        var offset = 12
        while offset + 8 <= bytes.count {
            let size = Int(UInt32(bytes[offset + 4]) | UInt32(bytes[offset + 5]) << 8
                           | UInt32(bytes[offset + 6]) << 16 | UInt32(bytes[offset + 7]) << 24)
            if bytes[offset..<offset + 4].elementsEqual("data".utf8) {
                for i in offset + 4..<offset + 8 { bytes[i] = 0xFF }
                return
            }
            offset += 8 + size + (size & 1)
        }
    }

    /// The callbacks, with `self` as user data (the caller keeps `self` alive while the handle is open).
    static var virtualIO: SF_VIRTUAL_IO {
        SF_VIRTUAL_IO(
            get_filelen: { ud in Unmanaged<SndFileOutput>.fromOpaque(ud!).takeUnretainedValue().sent },
            seek: { offset, whence, ud in Unmanaged<SndFileOutput>.fromOpaque(ud!).takeUnretainedValue().seek(offset, whence) },
            read: { _, _, _ in 0 },
            write: { p, count, ud in Unmanaged<SndFileOutput>.fromOpaque(ud!).takeUnretainedValue().write(p!, count) },
            tell: { ud in Unmanaged<SndFileOutput>.fromOpaque(ud!).takeUnretainedValue().position })
    }
}
