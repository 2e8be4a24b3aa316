#if canImport(Glibc)
import Glibc
#endif
import CZlib
import ModemMessaging
import ModemRuntime

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
            let crc = CRC32.checksum(content)
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
/// no empty or control-character components; anything else refuses the whole archive; a component
/// over 255 bytes is cut by ``NameCleaner/cut(_:maximumBytes:)``), stored and deflated entries (zlib,
/// streamed in 64 KiB pieces), each entry's CRC-32 and exact size checked, the archive's bounds
/// (``ZipLimits``: entries, bytes per entry and in all, ratio; entries whose data overlap) checked
/// before anything is written and again as it inflates, files created with `O_EXCL | O_NOFOLLOW` under
/// folders opened without following links; the folder is unpacked under a hidden partial name and
/// renamed into place only when every entry checked out (a refusal leaves nothing behind).
public enum ZipReader {
    struct Result { var name: String; var files: Int; var bytes: UInt64 }

    /// One file or folder of the central directory, its numbers checked.
    struct Entry {
        var rawName: String
        var components: [String]
        var isDirectory: Bool
        var method: UInt16
        var crc: UInt32
        var compressedSize: Int
        /// The size the archive declares (checked against the bounds, never trusted for an allocation).
        var size: UInt64
        var mode: UInt32
        /// Where the entry's data starts (after its local header).
        var dataStart: Int
    }

    /// An archive's bytes by offset: `size` of them, read `count` at a time (at most 64 KiB per call
    /// but for the directory, which is at most the archive's size).
    struct Source {
        let size: Int
        let readAt: (_ offset: Int, _ count: Int) throws(WormholeError) -> [UInt8]

        func read(_ offset: Int, _ count: Int) throws(WormholeError) -> [UInt8] {
            guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
                throw WormholeError(.peer, "the zip is truncated or malformed")
            }
            return try readAt(offset, count)
        }
    }

    static let chunkBytes = 1 << 16

    /// Checks an archive held in memory as ``unpack(folder:zipPartial:name:limits:)`` would, writing
    /// nothing: the directory, every bound of `limits`, and every entry inflated (and discarded) with
    /// its size and CRC-32 checked. For fuzzing and for tools that want a verdict before unpacking.
    /// - Returns: the files and the bytes they unpack to.
    /// - Throws: ``WormholeError`` (`.peer`) naming what is wrong or the bound that was hit.
    public static func verify(archive: [UInt8], limits: ZipLimits = ZipLimits()) throws(WormholeError) -> (files: Int, bytes: UInt64) {
        let source = Source(size: archive.count) { (offset: Int, count: Int) throws(WormholeError) -> [UInt8] in Array(archive[offset..<(offset + count)]) }
        let entries = try directory(source, limits: limits, room: nil)
        var files = 0
        var bytes: UInt64 = 0
        for e in entries where !e.isDirectory {
            bytes += try copy(e, from: source) { (_: [UInt8]) throws(WormholeError) in }
            files += 1
        }
        return (files, bytes)
    }

    static func unpack(folder: WormholeFolder, zipPartial: String, name: String,
                       limits: ZipLimits = ZipLimits()) throws(WormholeError) -> Result {
        let zfd = openat(folder.fd, zipPartial, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard zfd >= 0 else { throw WormholeError(.local, "cannot reopen the received zip: \(String(cString: strerror(errno)))") }
        defer { close(zfd) }
        var st = stat()
        guard fstat(zfd, &st) == 0, st.st_size >= 0 else { throw WormholeError(.local, "cannot read the received zip: \(String(cString: strerror(errno)))") }
        let source = Source(size: Int(st.st_size)) { (offset: Int, count: Int) throws(WormholeError) -> [UInt8] in
            var b = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = b.withUnsafeMutableBytes { pread(zfd, $0.baseAddress! + got, count - got, off_t(offset + got)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw WormholeError(.peer, "the zip is truncated") }
                got += n
            }
            return b
        }
        // Everything is checked before the first byte is written.
        let entries = try directory(source, limits: limits, room: folder.freeBytes())
        // Unpack into a hidden folder.
        let partialDir = WormholeFolder.partialName(for: name)
        guard mkdirat(folder.fd, partialDir, 0o755) == 0 else { throw WormholeError(.local, "cannot create a folder in \(folder.path): \(String(cString: strerror(errno)))") }
        var done = false
        defer { if !done { removeTree(folder.fd, partialDir) } }
        let root = openat(folder.fd, partialDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard root >= 0 else { throw WormholeError(.local, "cannot open a folder in \(folder.path)") }
        defer { close(root) }
        var files = 0
        var total: UInt64 = 0
        for e in entries {
            let parent = try openParents(root, Array(e.components.dropLast(e.isDirectory ? 0 : 1)))
            defer { if parent != root { close(parent) } }
            if e.isDirectory { continue }
            let perm = mode_t(e.mode & 0o755 == 0 ? 0o644 : (e.mode & 0o755) | 0o600)
            let f = openat(parent, e.components.last!, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm)
            guard f >= 0 else { throw WormholeError(.peer, "the zip's entry \(printableText(e.rawName)) cannot be created (\(String(cString: strerror(errno))))") }
            defer { close(f) }
            total += try copy(e, from: source) { (data: [UInt8]) throws(WormholeError) in
                var off = 0
                while off < data.count {
                    let n = data.withUnsafeBytes { write(f, $0.baseAddress! + off, data.count - off) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw WormholeError(.local, "writing into \(folder.path): \(String(cString: strerror(errno)))") }
                    off += n
                }
            }
            files += 1
        }
        unlinkat(folder.fd, zipPartial, 0)
        let final = try folder.putInPlace(partial: partialDir, cleaned: name, isFolder: true)
        done = true
        return Result(name: final, files: files, bytes: total)
    }

    /// The central directory's entries, every number checked: the entry count, the declared sizes
    /// against `limits` (and `room`, the bytes free where it unpacks), the data of every entry inside
    /// the archive and no two entries sharing bytes.
    static func directory(_ source: Source, limits: ZipLimits, room: UInt64?) throws(WormholeError) -> [Entry] {
        let size = source.size
        // The end of central directory record: within the last 64 KiB + 22 bytes.
        let tailLength = min(size, 65_557)
        let tail = try source.read(size - tailLength, tailLength)
        guard tailLength >= 22, let eocd = stride(from: tailLength - 22, through: 0, by: -1).first(where: {
            tail[$0] == 0x50 && tail[$0 + 1] == 0x4b && tail[$0 + 2] == 5 && tail[$0 + 3] == 6 }) else {
            throw WormholeError(.peer, "the received folder is not a zip file")
        }
        let count = Int(u16(tail, eocd + 10))
        let cdSize = Int(u32(tail, eocd + 12)), cdOffset = Int(u32(tail, eocd + 16))
        guard cdOffset != 0xFFFF_FFFF, count != 0xFFFF else { throw WormholeError(.peer, "zip64 archives are not supported") }
        guard count <= limits.maximumEntries else {
            throw WormholeError(.peer, "the zip holds \(count) entries, more than the limit of \(limits.maximumEntries) (refused)")
        }
        guard cdSize <= Self.maximumDirectoryBytes else {
            throw WormholeError(.peer, "the zip's central directory is \(cdSize) bytes, more than the limit of \(Self.maximumDirectoryBytes) (refused)")
        }
        let cd = try source.read(cdOffset, cdSize)
        var entries: [Entry] = []
        // Every folder the archive makes (its folder entries and the parents of every entry), by a hash of
        // its path: each costs a block of the file system, so folders count toward the byte bounds too.
        var folders = Set<Int>()
        var ranges: [(start: Int, end: Int, name: String)] = []
        var p = 0
        var fileBytes: UInt64 = 0
        let ratioBound = limits.ratioBound(archiveBytes: UInt64(size))
        /// The bytes the archive unpacks to so far (its files, and a block per folder), checked against every bound.
        func checkTotals() throws(WormholeError) {
            let declared = fileBytes + UInt64(folders.count) * Self.folderBytes  // at most 65,535 sizes under 2^32 each and 65,536 folders: no overflow
            guard declared <= limits.maximumTotalBytes else {
                throw WormholeError(.peer, "the zip unpacks to more than the limit of \(limits.maximumTotalBytes) bytes (refused)")
            }
            guard declared <= ratioBound else {
                throw WormholeError(.peer, "the zip of \(size) bytes unpacks to more than \(ratioBound) bytes, over the limit of \(limits.maximumRatio) bytes per byte of the archive (refused as a zip bomb)")
            }
            if let room, declared > room {
                throw WormholeError(.peer, "the zip unpacks to more than the \(room) bytes there is room for (refused)")
            }
        }
        for _ in 0..<count {
            guard cd.count - p >= 46, u32(cd, p) == 0x0201_4b50 else { throw WormholeError(.peer, "the zip's central directory is malformed") }
            let method = u16(cd, p + 10), crc = u32(cd, p + 16)
            let csize = Int(u32(cd, p + 20)), usize = UInt64(u32(cd, p + 24))
            let nlen = Int(u16(cd, p + 28)), xlen = Int(u16(cd, p + 30)), clen = Int(u16(cd, p + 32))
            let mode = u32(cd, p + 38) >> 16
            let local = Int(u32(cd, p + 42))
            guard cd.count - p - 46 >= nlen else { throw WormholeError(.peer, "the zip's central directory is malformed") }
            let rawName = String(decoding: cd[(p + 46)..<(p + 46 + nlen)], as: UTF8.self)
            p = min(cd.count, p + 46 + nlen + xlen + clen)
            guard csize != 0xFFFF_FFFF, usize != 0xFFFF_FFFF, local != 0xFFFF_FFFF else { throw WormholeError(.peer, "zip64 archives are not supported") }
            let components = try checkedPath(rawName)
            if components.isEmpty { continue }
            let isDirectory = rawName.hasSuffix("/")
            let folderDepth = isDirectory ? components.count : components.count - 1
            for depth in stride(from: 1, through: folderDepth, by: 1) {
                folders.insert(components[0..<depth].joined(separator: "/").hashValue)
            }
            guard folders.count <= limits.maximumEntries else {
                throw WormholeError(.peer, "the zip makes more than \(limits.maximumEntries) folders, more than the limit of entries (refused)")
            }
            try checkTotals()
            if isDirectory {
                entries.append(Entry(rawName: rawName, components: components, isDirectory: true, method: method, crc: crc,
                                     compressedSize: 0, size: 0, mode: mode, dataStart: 0))
                continue
            }
            let what = "the zip's entry \(printableText(rawName))"
            guard method == 0 || method == 8 else { throw WormholeError(.peer, "\(what) uses compression method \(method)") }
            guard method == 8 || UInt64(csize) == usize else { throw WormholeError(.peer, "\(what) is stored with two different sizes") }
            guard usize <= limits.maximumEntryBytes else {
                throw WormholeError(.peer, "\(what) unpacks to \(usize) bytes, more than the limit of \(limits.maximumEntryBytes) bytes per file (refused)")
            }
            fileBytes += usize  // at most 65,535 sizes under 2^32 each: no overflow
            try checkTotals()
            let header = try source.read(local, 30)
            guard u32(header, 0) == 0x0403_4b50 else { throw WormholeError(.peer, "\(what) is malformed") }
            let dataStart = local + 30 + Int(u16(header, 26)) + Int(u16(header, 28))
            guard dataStart <= size, csize <= size - dataStart else { throw WormholeError(.peer, "\(what) is truncated") }
            ranges.append((local, dataStart + csize, rawName))
            entries.append(Entry(rawName: rawName, components: components, isDirectory: false, method: method, crc: crc,
                                 compressedSize: csize, size: usize, mode: mode, dataStart: dataStart))
        }
        // Entries that share bytes make a small archive unpack many times over (an overlapping zip bomb).
        ranges.sort { $0.start < $1.start }
        for (a, b) in zip(ranges, ranges.dropFirst()) where b.start < a.end {
            throw WormholeError(.peer, "the zip's entries \(printableText(a.name)) and \(printableText(b.name)) overlap (refused as a zip bomb)")
        }
        return entries
    }

    /// Inflates (or copies) one entry in 64 KiB pieces into `sink`, stopping the moment it makes more
    /// than it declared; then checks it made exactly that much and its CRC-32.
    /// - Returns: the bytes it made.
    static func copy(_ e: Entry, from source: Source, into sink: ([UInt8]) throws(WormholeError) -> Void) throws(WormholeError) -> UInt64 {
        let what = "the zip's entry \(printableText(e.rawName))"
        var crc = CRC32()
        var produced: UInt64 = 0
        func emit(_ piece: [UInt8]) throws(WormholeError) {
            produced += UInt64(piece.count)
            guard produced <= e.size else {
                throw WormholeError(.peer, "\(what) inflates to more than the \(e.size) bytes it declares (refused)")
            }
            crc.update(piece)
            try sink(piece)
        }
        if e.method == 0 {
            var at = 0
            while at < e.compressedSize {
                let n = min(chunkBytes, e.compressedSize - at)
                try emit(try source.read(e.dataStart + at, n))
                at += n
            }
        } else if e.compressedSize > 0 || e.size > 0 {  // an empty file may come deflated into nothing
            var stream = z_stream()
            guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                throw WormholeError(.local, "zlib could not start inflating")
            }
            defer { inflateEnd(&stream) }
            let input = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkBytes)
            let output = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkBytes)
            defer { input.deallocate(); output.deallocate() }
            var at = 0
            var ended = false
            while !ended {
                if stream.avail_in == 0 {
                    guard at < e.compressedSize else { throw WormholeError(.peer, "\(what) is cut short (its deflate data does not end)") }
                    let n = min(chunkBytes, e.compressedSize - at)
                    let bytes = try source.read(e.dataStart + at, n)
                    bytes.withUnsafeBufferPointer { input.update(from: $0.baseAddress!, count: n) }
                    at += n
                    stream.next_in = input
                    stream.avail_in = uInt(n)
                }
                stream.next_out = output
                stream.avail_out = uInt(chunkBytes)
                let before = stream.avail_in
                let rc = inflate(&stream, Z_NO_FLUSH)
                let made = chunkBytes - Int(stream.avail_out)
                if made > 0 { try emit(Array(UnsafeBufferPointer(start: output, count: made))) }
                switch rc {
                case Z_STREAM_END: ended = true
                case Z_OK, Z_BUF_ERROR:
                    // No progress with input left and room to write: the data is unusable.
                    if made == 0, stream.avail_in == before, before > 0 {
                        throw WormholeError(.peer, "\(what) is not valid deflate data")
                    }
                default: throw WormholeError(.peer, "\(what) is not valid deflate data")
                }
            }
        }
        guard produced == e.size else { throw WormholeError(.peer, "\(what) unpacks to \(produced) bytes, not the \(e.size) it declares") }
        guard crc.value == e.crc else { throw WormholeError(.peer, "\(what) fails its CRC-32 check") }
        return produced
    }

    /// The most bytes of central directory read (64 MiB: 65,535 entries with paths of 1 KiB fit).
    static let maximumDirectoryBytes = 64 << 20
    /// The most folders deep an entry's path may be.
    static let maximumDepth = 64
    /// What a folder is counted as toward the byte bounds: one block of a file system.
    static let folderBytes: UInt64 = 4096

    /// The components of an entry's path, or a refusal of the archive. A component over 255 bytes
    /// (a file system's limit) is cut by ``NameCleaner/cut(_:maximumBytes:)`` on a character boundary,
    /// keeping its extension; the path is checked again after the cut (a cut can leave `..`: a dot, a dot
    /// and one character of 255 bytes of combining marks).
    static func checkedPath(_ raw: String) throws(WormholeError) -> [String] {
        guard !raw.hasPrefix("/"), !raw.contains("\\"), !raw.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw WormholeError(.peer, "the zip holds an unsafe path \(printableText(raw)) (refused)")
        }
        var parts = raw.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts.removeLast() }
        guard parts.count <= Self.maximumDepth else {
            throw WormholeError(.peer, "the zip holds a path \(parts.count) folders deep, more than the limit of \(Self.maximumDepth) (refused)")
        }
        let cut = parts.map { NameCleaner.cut($0) }
        for part in parts + cut where part.isEmpty || part == "." || part == ".." {
            throw WormholeError(.peer, "the zip holds an unsafe path \(printableText(raw)) (refused)")
        }
        return cut
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
