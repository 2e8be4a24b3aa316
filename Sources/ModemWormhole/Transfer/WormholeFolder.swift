#if canImport(Glibc)
import Glibc
#endif
import ModemMessaging
import ModemRuntime

/// The folder a wormhole receive writes into, held open by descriptor: everything arrives under a
/// hidden partial name (`.NAME.modem-partial-XXXX`, created with `O_EXCL | O_NOFOLLOW`) and is put
/// in place under its cleaned name (``NameCleaner``; ` (2)`... when taken, never replacing anything)
/// only once complete and verified. Nothing is created before an offer is accepted.
public final class WormholeFolder: Sendable {
    /// The path as given.
    public let path: String
    let fd: Int32

    /// Opens the folder (it must exist).
    /// - Throws: ``WormholeError`` (`.local`).
    public init(path: String) throws(WormholeError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw WormholeError(.local, "cannot open the folder \(path): \(String(cString: strerror(errno)))") }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Bytes free for an unprivileged user there.
    public func freeBytes() -> UInt64? {
        var s = statvfs()
        guard fstatvfs(fd, &s) == 0 else { return nil }
        return UInt64(s.f_bavail) * UInt64(s.f_frsize)
    }

    /// A new hidden partial file for `name`, open for writing.
    func createPartial(for name: String) throws(WormholeError) -> (fd: Int32, name: String) {
        for _ in 0..<100 {
            let partial = Self.partialName(for: name)
            let f = openat(fd, partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if f >= 0 { return (f, partial) }
            if errno != EEXIST { throw WormholeError(.local, "cannot create a file in \(path): \(String(cString: strerror(errno)))") }
        }
        throw WormholeError(.local, "cannot create a partial file in \(path)")
    }

    /// The hidden partial name for `name`: `.` + the name cut to 200 bytes (``NameCleaner/cut(_:maximumBytes:)``,
    /// never by characters, which may be 4 bytes each) + `.modem-partial-` + 8 hex digits: at most 224
    /// bytes, within the 255 bytes a file name may have.
    static func partialName(for name: String) -> String {
        "." + NameCleaner.cut(name, maximumBytes: 200) + ".modem-partial-" + Hex.encode((0..<4).map { _ in UInt8.random(in: 0...255) })
    }

    /// Puts a finished partial file or folder in place under `cleaned` (` (2)`, ` (3)`... while taken;
    /// nothing existing is replaced). Files are linked then unlinked (never clobbering); folders renamed
    /// after checking the name is free.
    /// - Returns: the name used.
    func putInPlace(partial: String, cleaned: String, isFolder: Bool) throws(WormholeError) -> String {
        for attempt in 1...10_000 {
            let name = NameCleaner.candidate(cleaned, attempt: attempt)
            if isFolder {
                var st = stat()
                if fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { continue }
                if renameat(fd, partial, fd, name) == 0 { return name }
            } else {
                if linkat(fd, partial, fd, name, 0) == 0 {
                    unlinkat(fd, partial, 0)
                    return name
                }
                if errno == EEXIST { continue }
            }
            throw WormholeError(.local, "cannot put \(name) in place in \(path): \(String(cString: strerror(errno)))")
        }
        throw WormholeError(.local, "no free name for \(cleaned) in \(path)")
    }

    /// Removes a partial file (after a failure).
    func removePartial(_ name: String) { unlinkat(fd, name, 0) }
}
