#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a received file name cannot be used.
public enum NameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing usable is left after cleaning (`.`, `..`, empty, only separators or control characters).
    case empty(original: String)

    public var description: String {
        switch self {
        case .empty(let original): "the file name \(original.debugDescription) has nothing usable in it"
        }
    }
}

/// Turns a file name chosen by a peer into one that is safe to create inside a receive folder.
///
/// Rules, in order: keep the last path component after splitting on `/` and `\`; drop NUL and control
/// characters (C0, DEL, C1); strip leading dots and trailing spaces and dots; refuse what is left if
/// empty; prefix Windows reserved device names (`CON`, `NUL`, `COM1`...) with `_`; cut to 255 bytes at a
/// UTF-8 character boundary, keeping the extension. ``candidate(_:attempt:)`` adds ` (2)`, ` (3)`...
/// before the extension for collisions.
public enum NameCleaner {
    /// The longest name a Linux file system takes, in bytes.
    public static let maximumBytes = 255
    private static let reserved: Set<String> = {
        var s: Set<String> = ["CON", "PRN", "AUX", "NUL", "CLOCK$"]
        for i in 1...9 { s.insert("COM\(i)"); s.insert("LPT\(i)") }
        return s
    }()

    /// The cleaned name, or an error when nothing usable is left.
    public static func clean(_ raw: String) throws(NameError) -> String {
        let last = raw.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for s in last.unicodeScalars {
            if TerminalText.isUnsafe(s) { continue }  // controls, escapes, bidirectional overrides ("txt\u{202E}hs.exe")
            scalars.append(s)
        }
        var name = String(scalars)
        while name.hasPrefix(".") { name.removeFirst() }
        while let c = name.last, c == " " || c == "." { name.removeLast() }
        while name.hasPrefix(" ") { name.removeFirst() }
        guard !name.isEmpty else { throw .empty(original: raw) }
        let stem = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
        if reserved.contains(stem.uppercased().droppingTrailingSpaces) { name = "_" + name }
        return fit(name, suffix: "")
    }

    /// The name to try on the `attempt`-th collision (1 gives the name itself, 2 gives `stem (2).ext`).
    public static func candidate(_ cleaned: String, attempt: Int) -> String {
        attempt <= 1 ? fit(cleaned, suffix: "") : fit(cleaned, suffix: " (\(attempt))")
    }

    /// `name` cut to at most `maximumBytes` bytes of UTF-8 (the file system's encoding; 255 is Linux's
    /// `NAME_MAX` for one path component), on a character boundary, keeping an extension of up to 32
    /// bytes. Every name received from a peer (data-connection and wormhole file offers, a folder's zip
    /// entries, the hidden partial names made from them) is cut by this one rule: never by characters,
    /// which may be up to 4 bytes each (and a character of many combining marks more: such a
    /// character is cut between its scalars rather than dropped whole).
    public static func cut(_ name: String, maximumBytes: Int = NameCleaner.maximumBytes) -> String {
        fit(name, suffix: "", maximumBytes: maximumBytes)
    }

    /// The longest prefix of `text` of at most `maximumBytes` bytes of UTF-8 that ends between two Unicode
    /// scalars (never inside one, so the bytes stay valid UTF-8): how text for a bounded wire field (a
    /// session's user name or version, a refusal's words) is shortened.
    public static func utf8Prefix(_ text: String, maximumBytes: Int) -> String {
        guard text.utf8.count > maximumBytes else { return text }
        var scalars = String.UnicodeScalarView()
        var used = 0
        for s in text.unicodeScalars {
            let n = UTF8.width(s)
            if used + n > maximumBytes { break }
            scalars.append(s); used += n
        }
        return String(scalars)
    }

    /// `stem + suffix + extension` cut to `maximumBytes` bytes, cutting the stem at a character boundary.
    static func fit(_ name: String, suffix: String, maximumBytes: Int = NameCleaner.maximumBytes) -> String {
        if suffix.isEmpty, name.utf8.count <= maximumBytes { return name }
        var stem = name
        var ext = ""
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            let e = String(name[dot...])
            if e.utf8.count <= 32, e.utf8.count + suffix.utf8.count < maximumBytes { stem = String(name[..<dot]); ext = e }
        }
        let budget = max(0, maximumBytes - suffix.utf8.count - ext.utf8.count)
        if stem.utf8.count > budget {
            var cut = ""
            var used = 0
            for ch in stem {
                let n = ch.utf8.count
                if used + n > budget { break }
                cut.append(ch); used += n
            }
            if cut.isEmpty {
                // The first character alone is over the budget (a base and many combining marks):
                // cut between its Unicode scalars instead, still never inside one.
                var scalars = String.UnicodeScalarView()
                for s in stem.unicodeScalars {
                    let n = UTF8.width(s)
                    if used + n > budget { break }
                    scalars.append(s); used += n
                }
                cut = String(scalars)
            }
            stem = cut
        }
        let whole = stem + suffix + ext
        // Whatever the parts, the result fits (a suffix alone over the budget is cut too).
        return utf8Prefix(whole, maximumBytes: maximumBytes)
    }
}

private extension String {
    var droppingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// A failure of file-system work in a receive folder.
public struct FolderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was being done, naming the path.
    public var message: String
    /// The errno value, or 0.
    public var code: Int32
    public init(_ message: String, code: Int32 = 0) { self.message = message; self.code = code }
    public var description: String {
        code == 0 ? message : "\(message): \(String(cString: strerror(code)))"
    }
}

/// A receive folder held open by descriptor. Files are only ever created with
/// `openat(folder, name, O_CREAT | O_EXCL | O_NOFOLLOW)` under a cleaned name, so nothing is written
/// outside the folder, not even through a symbolic link someone placed in it.
public final class ReceiveFolder: Sendable {
    /// The folder's path as given.
    public let path: String
    /// The descriptor of the open folder.
    let fd: Int32

    /// Whether opening the folder created it (it was missing).
    public let created: Bool

    /// Opens (and creates, mode 0700, if missing) a receive folder.
    public init(path: String) throws(FolderError) {
        self.path = path
        var created = true
        if mkdir(path, 0o700) != 0 {
            guard errno == EEXIST else { throw FolderError("cannot create the folder \(path)", code: errno) }
            created = false
        }
        self.created = created
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FolderError("cannot open the folder \(path)", code: errno) }
        self.fd = fd
    }

    /// Removes the folder again when opening it created it and nothing was put in it (a receive that
    /// never got a session leaves no trace).
    public func removeIfCreatedAndEmpty() {
        guard created else { return }
        _ = rmdir(path)  // fails, leaving it, when anything is inside
    }

    /// Removes the partial folder (`.modem-partial`) when nothing is left in it: every file finished
    /// or was discarded. Call it when the receive is over; a file still partial keeps it for the resume.
    public func removeEmptyPartialFolder() {
        _ = unlinkat(fd, ".modem-partial", AT_REMOVEDIR)  // fails, leaving it, when anything is inside
    }

    deinit { close(fd) }

    /// Creates a new file under the cleaned name, adding ` (2)`, ` (3)`... while the name is taken.
    /// Returns the open descriptor (read/write) and the name used.
    public func createNew(cleanedName: String, mode: mode_t = 0o644) throws(FolderError) -> (fd: Int32, name: String) {
        for attempt in 1...10_000 {
            let name = NameCleaner.candidate(cleanedName, attempt: attempt)
            let f = openat(fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if f >= 0 { return (f, name) }
            if errno == EEXIST || errno == ELOOP { continue }
            throw FolderError("cannot create \(name) in \(path)", code: errno)
        }
        throw FolderError("no free name for \(cleanedName) in \(path)")
    }

    /// Bytes free for an unprivileged user on the folder's file system.
    public func freeBytes() throws(FolderError) -> UInt64 {
        var s = statvfs()
        guard fstatvfs(fd, &s) == 0 else { throw FolderError("cannot read the free space of \(path)", code: errno) }
        return UInt64(s.f_bavail) * UInt64(s.f_frsize)
    }

    /// The hidden folder of partial files (`.modem-partial`, mode 0700), opened without following links.
    func partialFolder() throws(FolderError) -> Int32 {
        if mkdirat(fd, ".modem-partial", 0o700) != 0, errno != EEXIST {
            throw FolderError("cannot create \(path)/.modem-partial", code: errno)
        }
        let f = openat(fd, ".modem-partial", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard f >= 0 else { throw FolderError("cannot open \(path)/.modem-partial", code: errno) }
        return f
    }
}
