import CZlib
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ModemRuntime

/// Why a PNG file could not be written.
public struct PNGWriteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The file concerned.
    public var path: String
    /// What failed.
    public var message: String
    /// The `errno` value.
    public var code: Int32

    /// Creates an error.
    public init(path: String, message: String, code: Int32) {
        self.path = path
        self.message = message
        self.code = code
    }

    public var description: String { "\(path): \(message) (code \(code))" }
}

/// Encodes ``PNGImage``s as PNG files (8-bit truecolour, no interlace): signature, IHDR, optional
/// tEXt, one IDAT with each row filtered by the heuristic of the PNG book (least sum of absolute
/// differences) and compressed by zlib, IEND; every chunk with its CRC-32 (zlib's).
public enum PNGEncoder {
    /// The eight bytes every PNG file starts with.
    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The bytes of a PNG file.
    /// - Parameters:
    ///   - image: the picture.
    ///   - text: tEXt key/value pairs (Latin-1 keys of 1...79 characters), e.g. `["Software": "SwiftModem"]`.
    ///   - level: zlib's compression level, 0 (stored) ... 9 (smallest); default 6.
    public static func encode(_ image: PNGImage, text: [(key: String, value: String)] = [], level: Int32 = 6) -> [UInt8] {
        precondition((0...9).contains(level), "PNGEncoder level must be 0...9, got \(level)")
        var out = signature
        var ihdr: [UInt8] = []
        ihdr += bigEndian(UInt32(image.width))
        ihdr += bigEndian(UInt32(image.height))
        ihdr += [8, 2, 0, 0, 0]         // bit depth 8, colour type 2 (RGB), deflate, adaptive filters, no interlace
        appendChunk("IHDR", ihdr, to: &out)
        for (key, value) in text {
            let k = Array(key.utf8.prefix(79)).filter { $0 != 0 }
            guard !k.isEmpty else { continue }
            appendChunk("tEXt", k + [0] + Array(value.utf8).filter { $0 != 0 }, to: &out)
        }
        appendChunk("IDAT", zlibCompress(filteredScanlines(image), level: level), to: &out)
        appendChunk("IEND", [], to: &out)
        return out
    }

    /// Writes a PNG file (mode 0644 less the umask). A regular file is written under a temporary
    /// name in the same folder and renamed over `path` once complete, so an existing file is only
    /// replaced by a whole picture; anything else (a pipe, `/dev/stdout`) is written directly.
    /// - Throws: ``PNGWriteError`` naming the file and the system's reason.
    public static func write(_ image: PNGImage, to path: String, text: [(key: String, value: String)] = []) throws {
        let bytes = encode(image, text: text)
        var st = stat()
        let direct = stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG
        if direct && (st.st_mode & S_IFMT) == S_IFDIR {
            throw PNGWriteError(path: path, message: "is a directory", code: EISDIR)
        }
        guard direct else {
            // A regular file (or none yet): replaced whole, through the runtime's atomic write.
            do throws(AtomicFileError) {
                try AtomicFile.write(bytes, to: path, mode: .umask, durability: .unsynced)
            } catch {
                let why = error.code == ENOENT ? "the folder does not exist" : String(cString: strerror(error.code))
                let what = error.step.hasPrefix("cannot create") ? "cannot create" : error.step
                throw PNGWriteError(path: path, message: "\(what): \(why)", code: error.code)
            }
            return
        }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw PNGWriteError(path: path, message: "cannot open: \(String(cString: strerror(e)))", code: e)
        }
        func fail(_ what: String, _ e: Int32) -> PNGWriteError {
            PNGWriteError(path: path, message: "\(what): \(String(cString: strerror(e)))", code: e)
        }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                posixWrite(fd, raw.baseAddress! + written, bytes.count - written)
            }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                close(fd)
                throw fail("write failed", e)
            }
            written += n
        }
        if close(fd) != 0 { throw fail("closing failed", errno) }
    }

    /// Each row prefixed by its filter type byte and filtered (None, Sub, Up, Average or Paeth,
    /// whichever gives the smallest sum of absolute values).
    static func filteredScanlines(_ image: PNGImage) -> [UInt8] {
        let stride = image.width * 3, bpp = 3
        var out: [UInt8] = []
        out.reserveCapacity((stride + 1) * image.height)
        var candidate = [[UInt8]](repeating: [UInt8](repeating: 0, count: stride), count: 5)
        image.pixels.withUnsafeBufferPointer { px in
            for y in 0..<image.height {
                let row = y * stride
                let up = y > 0 ? row - stride : -1
                for i in 0..<stride {
                    let x = px[row + i]
                    let a = i >= bpp ? px[row + i - bpp] : 0
                    let b = up >= 0 ? px[up + i] : 0
                    let c = (up >= 0 && i >= bpp) ? px[up + i - bpp] : 0
                    candidate[0][i] = x
                    candidate[1][i] = x &- a
                    candidate[2][i] = x &- b
                    candidate[3][i] = x &- UInt8((Int(a) + Int(b)) / 2)
                    candidate[4][i] = x &- paeth(a, b, c)
                }
                var best = 0, bestCost = Int.max
                for f in 0..<5 {
                    var cost = 0
                    for v in candidate[f] { cost += v < 128 ? Int(v) : 256 - Int(v) }
                    if cost < bestCost { bestCost = cost; best = f }
                }
                out.append(UInt8(best))
                out += candidate[best]
            }
        }
        return out
    }

    static func paeth(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> UInt8 {
        let p = Int(a) + Int(b) - Int(c)
        let pa = abs(p - Int(a)), pb = abs(p - Int(b)), pc = abs(p - Int(c))
        if pa <= pb && pa <= pc { return a }
        if pb <= pc { return b }
        return c
    }

    private static func appendChunk(_ type: String, _ data: [UInt8], to out: inout [UInt8]) {
        let t = Array(type.utf8)
        out += bigEndian(UInt32(data.count))
        out += t
        out += data
        out += bigEndian(crc32(t + data))
    }

    /// zlib's CRC-32 (ISO-HDLC, as PNG chunks use).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        CRC32.checksum(bytes)
    }

    /// A zlib stream (RFC 1950) of `data`, by zlib's `compress2`.
    static func zlibCompress(_ data: [UInt8], level: Int32) -> [UInt8] {
        var size = compressBound(uLong(data.count))
        var out = [UInt8](repeating: 0, count: Int(size))
        let rc = out.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { i in compress2(o.baseAddress, &size, i.baseAddress, uLong(i.count), level) }
        }
        // compressBound guarantees room, and the arguments are valid: anything else is a broken zlib.
        precondition(rc == Z_OK, "zlib compress2 failed with \(rc)")
        out.removeLast(out.count - Int(size))
        return out
    }

    private static func bigEndian(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
}

/// `write(2)`, out of the way of ``PNGEncoder/write(_:to:text:)``.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
