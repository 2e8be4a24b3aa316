#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime

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

    /// Replaces `path` atomically, readable by the owner only, synced (the runtime's ``AtomicFile``).
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(KeyStoreError) {
        do throws(AtomicFileError) {
            try AtomicFile.write(bytes, to: path, mode: .ownerOnly, durability: .synced)
        } catch {
            throw KeyStoreError(.io, error.description)
        }
    }

    /// How long ``locked(_:patience:_:)`` waits for another process's lock before it gives up, in seconds.
    static let lockPatience = 10.0

    /// Runs `body` holding an exclusive `flock` on `folder/.lock`; another process holding it longer
    /// than `patience` seconds is an error naming the lock (not a silent wait).
    ///
    /// A free lock is taken at once. A held one is waited for with a blocking `flock` on the runtime's
    /// blocking facility (``BlockingCalls/waitAtMost(seconds:_:whenLate:)``), so the lock is taken the
    /// moment the other process lets go, with no polling; when the patience runs out first, the late
    /// lock is dropped (its descriptor closed) whenever it comes.
    static func locked<T>(_ folder: String, patience: Double = lockPatience,
                          _ body: () throws(KeyStoreError) -> T) throws(KeyStoreError) -> T {
        let fd = open(folder + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw KeyStoreError(.io, "cannot open the lock \(folder)/.lock: \(errorText(errno))") }
        var code = lock(fd, blocking: false)
        if code == EWOULDBLOCK {
            guard let waited = BlockingCalls.waitAtMost(seconds: patience, { lock(fd, blocking: true) },
                                                        whenLate: { _ in close(fd) }) else {
                // The blocked flock owns the descriptor now and closes it when it returns.
                throw KeyStoreError(.io, "the keys folder \(folder) is locked by another process (\(folder)/.lock held for \(Int(patience)) s); try again when it is done")
            }
            code = waited
        }
        defer { close(fd) }
        guard code == 0 else { throw KeyStoreError(.io, "cannot lock \(folder)/.lock: \(errorText(code))") }
        return try body()
    }

    /// `flock(LOCK_EX)` on `fd`, retried on `EINTR`: 0, or the `errno` (`EWOULDBLOCK`: held elsewhere).
    private static func lock(_ fd: Int32, blocking: Bool) -> Int32 {
        while flock(fd, LOCK_EX | (blocking ? 0 : LOCK_NB)) != 0 {
            let code = errno
            if code != EINTR { return code }
        }
        return 0
    }
}
