#if canImport(Glibc)
import Glibc
#endif

/// A failed atomic replacement: the file, the step and its `errno`.
public struct AtomicFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file that was to be replaced.
    public var path: String
    /// The step that failed, e.g. "cannot create the temporary file".
    public var step: String
    /// Its `errno`.
    public var code: Int32

    /// An error for `path` at `step` with `errno` `code`.
    public init(path: String, step: String, code: Int32) {
        self.path = path
        self.step = step
        self.code = code
    }

    /// "cannot write /x/y: cannot create the temporary file: No such file or directory".
    public var description: String {
        let why = code == ENOENT && step.contains("create") ? "the folder does not exist" : String(cString: strerror(code))
        return "cannot write \(path): \(step): \(why)"
    }
}

/// Files replaced whole or not at all: the bytes go to a temporary file beside the target (created
/// with `O_EXCL`, so never someone else's), are written and `fsync`ed, and the temporary file is
/// renamed over the target; then the folder is `fsync`ed (with ``Durability/synced``). A reader sees
/// the old file or the new one, never a part. The one atomic write of the code base (keys, images,
/// the hub client's login).
public enum AtomicFile {
    /// The mode a new file gets.
    public enum Mode: Sendable, Equatable {
        /// Readable by the owner only (0600): private keys, tokens.
        case ownerOnly
        /// What `creat` would give: 0666 less the process's umask (images, exports).
        case umask
    }

    /// How far the bytes are pushed to the disk before the rename.
    public enum Durability: Sendable, Equatable {
        /// `fsync` of the file before the rename and of its folder after it: the new content survives
        /// a crash of the machine (keys, logins).
        case synced
        /// No `fsync`: still all or nothing for readers, cheaper (images, exports).
        case unsynced
    }

    /// Replaces (or creates) `path` with `bytes`.
    /// - Throws: ``AtomicFileError`` naming the file and the step; the temporary file is removed.
    public static func write(_ bytes: [UInt8], to path: String, mode: Mode = .ownerOnly,
                             durability: Durability = .synced) throws(AtomicFileError) {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let permissions: mode_t
        switch mode {
        case .ownerOnly: permissions = 0o600
        case .umask: permissions = 0o666
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, permissions)
        guard fd >= 0 else { throw AtomicFileError(path: path, step: "cannot create the temporary file \(temporary)", code: errno) }
        if mode == .ownerOnly { _ = fchmod(fd, 0o600) }
        func fail(_ step: String, _ code: Int32) -> AtomicFileError {
            unlink(temporary)
            return AtomicFileError(path: path, step: step, code: code)
        }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                close(fd)
                throw fail("write failed", code)
            }
            done += n
        }
        if durability == .synced && fsync(fd) != 0 {
            let code = errno
            close(fd)
            throw fail("fsync failed", code)
        }
        if close(fd) != 0 { throw fail("closing failed", errno) }
        if rename(temporary, path) != 0 { throw fail("cannot replace the file", errno) }
        guard durability == .synced else { return }
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dirfd = open(folder.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }
}
