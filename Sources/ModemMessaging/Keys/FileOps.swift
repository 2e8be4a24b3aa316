#if canImport(Glibc)
import Glibc
#endif

/// The file system calls of the key store: private folders and files, atomic replacement, a lock.
enum FileOps {
    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// `mkdir -p`, the last component with mode 0700 (parents with 0755 less the umask).
    static func makeDirectories(_ path: String) throws(KeyStoreError) {
        var st = stat()
        if stat(path, &st) == 0 { return }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        var current = path.hasPrefix("/") ? "" : "."
        for (i, part) in components.enumerated() {
            current += "/" + part
            let last = i == components.count - 1
            if mkdir(current, last ? 0o700 : 0o755) != 0 && errno != EEXIST {
                throw KeyStoreError(.io, "cannot create the folder \(current): \(errorText(errno))")
            }
        }
    }

    /// Checks that `path` is owned by us and not accessible to group or others.
    static func checkPrivate(_ path: String, what: String, directory: Bool) throws(KeyStoreError) {
        var st = stat()
        guard lstat(path, &st) == 0 || stat(path, &st) == 0 else {
            throw KeyStoreError(.io, "\(what) \(path): \(errorText(errno))")
        }
        if directory {
            var target = stat()
            guard stat(path, &target) == 0, (target.st_mode & S_IFMT) == S_IFDIR else {
                throw KeyStoreError(.io, "\(what) \(path) is not a directory")
            }
            st = target
        }
        guard st.st_uid == getuid() else {
            throw KeyStoreError(.insecurePermissions, "\(what) \(path) belongs to another user")
        }
        let mode = st.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let fix = directory ? "chmod 700" : "chmod 600"
            throw KeyStoreError(.insecurePermissions,
                                "\(what) \(path) has mode \(String(mode, radix: 8)): group or others can reach it; run '\(fix) \(path)'")
        }
    }

    /// The contents of a file (nil when it does not exist), at most `limit` bytes.
    static func read(_ path: String, limit: Int, privateFile: Bool) throws(KeyStoreError) -> [UInt8]? {
        // Non-blocking open: a FIFO (or a device) in a key's place is refused below instead of waiting
        // for a writer for ever.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw KeyStoreError(.io, "cannot read \(path): \(errorText(errno))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw KeyStoreError(.io, "\(path) is not a regular file")
        }
        if privateFile {
            guard st.st_uid == getuid() else { throw KeyStoreError(.insecurePermissions, "private key \(path) belongs to another user") }
            let mode = st.st_mode & 0o777
            guard mode & 0o077 == 0 else {
                throw KeyStoreError(.insecurePermissions,
                                    "private key \(path) has mode \(String(mode, radix: 8)): group or others can read it; run 'chmod 600 \(path)'")
            }
        }
        guard Int(st.st_size) <= limit else { throw KeyStoreError(.corrupt, "\(path) is larger than \(limit) bytes") }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while out.count <= limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw KeyStoreError(.io, "cannot read \(path): \(errorText(errno))")
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        guard out.count <= limit else { throw KeyStoreError(.corrupt, "\(path) is larger than \(limit) bytes") }
        return out
    }

    /// Replaces `path` atomically: a temporary file created with `O_EXCL` and mode 0600, written,
    /// `fsync`ed, renamed over `path`; then the folder is `fsync`ed.
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(KeyStoreError) {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw KeyStoreError(.io, "cannot create \(temporary): \(errorText(errno))") }
        var ok = true
        var code: Int32 = 0
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                ok = false; code = errno; break
            }
            done += n
        }
        if ok && fsync(fd) != 0 { ok = false; code = errno }
        close(fd)
        if ok && rename(temporary, path) != 0 { ok = false; code = errno }
        guard ok else {
            unlink(temporary)
            throw KeyStoreError(.io, "cannot write \(path): \(errorText(code))")
        }
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dirfd = open(folder.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }

    /// How long ``locked(_:_:)`` waits for another process's lock before it gives up, in seconds.
    static let lockPatience = 10.0

    /// Runs `body` holding an exclusive `flock` on `folder/.lock`; another process holding it longer
    /// than ``lockPatience`` is an error naming the lock (not a silent wait).
    static func locked<T>(_ folder: String, _ body: () throws(KeyStoreError) -> T) throws(KeyStoreError) -> T {
        let fd = open(folder + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw KeyStoreError(.io, "cannot open the lock \(folder)/.lock: \(errorText(errno))") }
        defer { close(fd) }
        // flock has no timeout: try, and try again every 50 ms while another process holds it.
        var waited = 0.0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            guard code == EWOULDBLOCK else { throw KeyStoreError(.io, "cannot lock \(folder)/.lock: \(errorText(code))") }
            guard waited < lockPatience else {
                throw KeyStoreError(.io, "the keys folder \(folder) is locked by another process (\(folder)/.lock held for \(Int(lockPatience)) s); try again when it is done")
            }
            var step = timespec(tv_sec: 0, tv_nsec: 50_000_000)
            nanosleep(&step, nil)
            waited += 0.05
        }
        return try body()
    }
}
