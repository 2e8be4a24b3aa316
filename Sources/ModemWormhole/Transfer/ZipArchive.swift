#if canImport(Glibc)
import Glibc
#endif
import CZlib
import ModemMessaging

/// Writes a folder as a zip file (what magic-wormhole's folder offers carry): every regular file and
/// folder under it, stored (uncompressed; the stock receiver's zipfile reads any method), paths
/// relative to it, Unix modes kept. Symbolic links are skipped. Zip64 is not written: at most
/// 65,535 entries and 4 GiB.
enum ZipWriter {
    struct Result { var path: String; var files: Int; var bytes: UInt64 }

    static func write(folder: String) throws(WormholeError) -> Result {
        var template = Array("/tmp/modem-wormhole-XXXXXX.zip".utf8CString)
        let out = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, 4) }
        guard out >= 0 else { throw WormholeError(.local, "cannot create a temporary zip file: \(String(cString: strerror(errno)))") }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { close(out) }
        var central: [UInt8] = []
        var offset: UInt64 = 0
        var entries = 0, files = 0
        var bytes: UInt64 = 0
        func emit(_ b: [UInt8]) throws(WormholeError) {
            var off = 0
            while off < b.count {
                let n = b.withUnsafeBytes { Glibc.write(out, $0.baseAddress! + off, b.count - off) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw WormholeError(.local, "writing the zip file: \(String(cString: strerror(errno)))") }
                off += n
            }
            offset += UInt64(b.count)
        }
        func walk(_ dir: String, _ prefix: String) throws(WormholeError) {
            guard let d = opendir(dir) else { throw WormholeError(.local, "\(dir): \(String(cString: strerror(errno)))") }
            var names: [String] = []
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(d)
            for name in names.sorted() {
                let full = dir + "/" + name
                var st = stat()
                guard lstat(full, &st) == 0 else { continue }
                let kind = st.st_mode & S_IFMT
                let arc = prefix + name
                if kind == S_IFDIR {
                    try entry(arc + "/", mode: UInt32(st.st_mode), data: nil)
                    try walk(full, arc + "/")
                } else if kind == S_IFREG {
                    try entry(arc, mode: UInt32(st.st_mode), data: full)
                }
            }
        }
        func entry(_ name: String, mode: UInt32, data: String?) throws(WormholeError) {
            entries += 1
            guard entries < 65_535, offset < 0xFFFF_FFFF else { throw WormholeError(.local, "the folder is too large for a zip without zip64") }
            var content: [UInt8] = []
            if let data {
                let fd = open(data, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw WormholeError(.local, "\(data): \(String(cString: strerror(errno)))") }
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    guard n >= 0 else { throw WormholeError(.local, "\(data): \(String(cString: strerror(errno)))") }
                    if n == 0 { break }
                    content += buffer[0..<n]
                    guard content.count < 0xFFFF_0000 else { throw WormholeError(.local, "\(data) is too large for a zip without zip64") }
                }
                files += 1
                bytes += UInt64(content.count)
            }
            let crc = content.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
            let n = Array(name.utf8)
            let here = UInt32(offset)
            var local: [UInt8] = le32(0x0403_4b50) + le16(20) + le16(0x0800) + le16(0) + le16(0) + le16(0x21)
            local += le32(crc) + le32(UInt32(content.count)) + le32(UInt32(content.count)) + le16(UInt16(n.count)) + le16(0) + n
            try emit(local)
            try emit(content)
            central += le32(0x0201_4b50) + le16(0x0314) + le16(20) + le16(0x0800) + le16(0) + le16(0) + le16(0x21)
            central += le32(crc) + le32(UInt32(content.count)) + le32(UInt32(content.count)) + le16(UInt16(n.count))
            central += le16(0) + le16(0) + le16(0) + le16(0) + le32(mode << 16) + le32(here) + n
        }
        try walk(folder, "")
        let cdOffset = UInt32(offset)
        try emit(central)
        try emit(le32(0x0605_4b50) + le16(0) + le16(0) + le16(UInt16(entries)) + le16(UInt16(entries))
                 + le32(UInt32(central.count)) + le32(cdOffset) + le16(0))
        return Result(path: path, files: files, bytes: bytes)
    }
}

/// Unpacks a received zip into a new folder: every entry's path checked (no absolute paths, no `..`,
/// no empty or control-character components; anything else refuses the whole archive), stored and
/// deflated entries (zlib), each entry's CRC-32 and size checked, files created with `O_EXCL |
/// O_NOFOLLOW` under folders opened without following links; the folder is unpacked under a hidden
/// partial name and renamed into place only when every entry checked out.
enum ZipReader {
    struct Result { var name: String; var files: Int; var bytes: UInt64 }
    /// At most this many entries and bytes unpacked (a zip bomb stops there).
    static let maximumEntries = 100_000
    static let maximumBytes: UInt64 = 64 << 30

    static func unpack(folder: WormholeFolder, zipPartial: String, name: String) throws(WormholeError) -> Result {
        let zfd = openat(folder.fd, zipPartial, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard zfd >= 0 else { throw WormholeError(.local, "cannot reopen the received zip: \(String(cString: strerror(errno)))") }
        defer { close(zfd) }
        var st = stat()
        fstat(zfd, &st)
        let size = Int(st.st_size)
        func readAt(_ offset: Int, _ count: Int) throws(WormholeError) -> [UInt8] {
            guard offset >= 0, count >= 0, offset + count <= size else { throw WormholeError(.peer, "the zip is truncated or malformed") }
            var b = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = b.withUnsafeMutableBytes { pread(zfd, $0.baseAddress! + got, count - got, off_t(offset + got)) }
                guard n > 0 else { throw WormholeError(.peer, "the zip is truncated") }
                got += n
            }
            return b
        }
        // The end of central directory record: within the last 64 KiB + 22 bytes.
        let tailLength = min(size, 65_557)
        let tail = try readAt(size - tailLength, tailLength)
        guard tailLength >= 22, let eocd = stride(from: tailLength - 22, through: 0, by: -1).first(where: {
            tail[$0] == 0x50 && tail[$0 + 1] == 0x4b && tail[$0 + 2] == 5 && tail[$0 + 3] == 6 }) else {
            throw WormholeError(.peer, "the received folder is not a zip file")
        }
        let count = Int(u16(tail, eocd + 10))
        let cdSize = Int(u32(tail, eocd + 12)), cdOffset = Int(u32(tail, eocd + 16))
        guard count < maximumEntries, cdOffset != 0xFFFF_FFFF else { throw WormholeError(.peer, "zip64 archives are not supported") }
        let cd = try readAt(cdOffset, cdSize)
        // Unpack into a hidden folder.
        let partialDir = "." + String(name.prefix(200)) + ".modem-partial-" + hexEncode((0..<4).map { _ in UInt8.random(in: 0...255) })
        guard mkdirat(folder.fd, partialDir, 0o755) == 0 else { throw WormholeError(.local, "cannot create a folder in \(folder.path): \(String(cString: strerror(errno)))") }
        var done = false
        defer { if !done { removeTree(folder.fd, partialDir) } }
        let root = openat(folder.fd, partialDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard root >= 0 else { throw WormholeError(.local, "cannot open a folder in \(folder.path)") }
        defer { close(root) }
        var p = 0, files = 0
        var total: UInt64 = 0
        // Never more than the folder's file system has free (a zip that unpacks to more is refused).
        let limit = min(maximumBytes, folder.freeBytes() ?? maximumBytes)
        for _ in 0..<count {
            guard p + 46 <= cd.count, u32(cd, p) == 0x0201_4b50 else { throw WormholeError(.peer, "the zip's central directory is malformed") }
            let method = u16(cd, p + 10), crc = u32(cd, p + 16)
            let csize = Int(u32(cd, p + 20)), usize = Int(u32(cd, p + 24))
            let nlen = Int(u16(cd, p + 28)), xlen = Int(u16(cd, p + 30)), clen = Int(u16(cd, p + 32))
            let mode = u32(cd, p + 38) >> 16
            let local = Int(u32(cd, p + 42))
            guard p + 46 + nlen <= cd.count else { throw WormholeError(.peer, "the zip's central directory is malformed") }
            let rawName = String(decoding: cd[(p + 46)..<(p + 46 + nlen)], as: UTF8.self)
            p += 46 + nlen + xlen + clen
            guard csize != 0xFFFF_FFFF, usize != 0xFFFF_FFFF, local != 0xFFFF_FFFF else { throw WormholeError(.peer, "zip64 archives are not supported") }
            let components = try checkedPath(rawName)
            if components.isEmpty { continue }
            total += UInt64(usize)
            guard total <= limit else { throw WormholeError(.peer, "the zip unpacks to more than the \(limit) bytes there is room for") }
            let isDir = rawName.hasSuffix("/")
            let parent = try openParents(root, Array(components.dropLast(isDir ? 0 : 1)))
            defer { if parent != root { close(parent) } }
            if isDir { continue }
            let header = try readAt(local, 30)
            guard u32(header, 0) == 0x0403_4b50 else { throw WormholeError(.peer, "the zip's entry \(printableText(rawName)) is malformed") }
            let start = local + 30 + Int(u16(header, 26)) + Int(u16(header, 28))
            let compressed = try readAt(start, csize)
            let data: [UInt8]
            switch method {
            case 0: data = compressed
            case 8: data = try inflateRaw(compressed, expected: usize)
            default: throw WormholeError(.peer, "the zip's entry \(printableText(rawName)) uses compression method \(method)")
            }
            guard data.count == usize, data.withUnsafeBufferPointer({ UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }) == crc else {
                throw WormholeError(.peer, "the zip's entry \(printableText(rawName)) fails its CRC-32 check")
            }
            let perm = mode_t(mode & 0o755 == 0 ? 0o644 : (mode & 0o755) | 0o600)
            let f = openat(parent, components.last!, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm)
            guard f >= 0 else { throw WormholeError(.peer, "the zip's entry \(printableText(rawName)) cannot be created (\(String(cString: strerror(errno))))") }
            defer { close(f) }
            var off = 0
            while off < data.count {
                let n = data.withUnsafeBytes { write(f, $0.baseAddress! + off, data.count - off) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw WormholeError(.local, "writing into \(folder.path): \(String(cString: strerror(errno)))") }
                off += n
            }
            files += 1
        }
        unlinkat(folder.fd, zipPartial, 0)
        let final = try folder.putInPlace(partial: partialDir, cleaned: name, isFolder: true)
        done = true
        return Result(name: final, files: files, bytes: total)
    }

    /// The components of an entry's path, or a refusal of the archive.
    static func checkedPath(_ raw: String) throws(WormholeError) -> [String] {
        guard !raw.hasPrefix("/"), !raw.contains("\\"), !raw.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw WormholeError(.peer, "the zip holds an unsafe path \(printableText(raw)) (refused)")
        }
        var parts = raw.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts.removeLast() }
        guard parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && $0.utf8.count <= 255 }) else {
            throw WormholeError(.peer, "the zip holds an unsafe path \(printableText(raw)) (refused)")
        }
        return parts
    }

    /// Opens (creating) the folders of `components` under `root`, never following a link.
    static func openParents(_ root: Int32, _ components: [String]) throws(WormholeError) -> Int32 {
        var current = root
        for c in components {
            if mkdirat(current, c, 0o755) != 0 && errno != EEXIST { throw WormholeError(.local, "cannot create the folder \(printableText(c))") }
            let next = openat(current, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if current != root { close(current) }
            guard next >= 0 else { throw WormholeError(.peer, "the zip's folder \(printableText(c)) cannot be opened (refused)") }
            current = next
        }
        return current
    }

    static func inflateRaw(_ input: [UInt8], expected: Int) throws(WormholeError) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw WormholeError(.local, "zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: max(expected, 1))
        var input = input
        let rc: Int32 = input.withUnsafeMutableBufferPointer { i in
            out.withUnsafeMutableBufferPointer { o in
                stream.next_in = i.baseAddress
                stream.avail_in = uInt(i.count)
                stream.next_out = o.baseAddress
                stream.avail_out = uInt(o.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard rc == Z_STREAM_END, Int(stream.total_out) == expected else { throw WormholeError(.peer, "a zip entry does not inflate to its size") }
        return Array(out.prefix(expected))
    }

    /// Removes a partly unpacked folder.
    static func removeTree(_ parentFD: Int32, _ name: String) {
        let fd = openat(parentFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0, let d = fdopendir(fd) {
            var names: [(String, Bool)] = []
            while let e = readdir(d) {
                let n = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if n != "." && n != ".." { names.append((n, e.pointee.d_type == UInt8(DT_DIR))) }
            }
            for (n, isDir) in names { if isDir { removeTree(dirfd(d), n) } else { unlinkat(dirfd(d), n, 0) } }
            closedir(d)
        }
        unlinkat(parentFD, name, Int32(AT_REMOVEDIR))
    }
}

func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
func u32(_ b: [UInt8], _ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[i + $1]) << (8 * UInt32($1)) } }
