#if canImport(Glibc)
import Glibc
#endif
import ModemCrypto
import Foundation

/// A peer whose key this installation trusts.
public struct TrustedPeer: Sendable, Equatable {
    /// A label for people (`[A-Za-z0-9._-]{1,64}`); the key is the identity.
    public var name: String
    /// The peer's X25519 public key (32 bytes).
    public var publicKey: [UInt8]
    /// When the trust ends (nil: never).
    public var expires: Date?

    /// Creates an entry.
    public init(name: String, publicKey: [UInt8], expires: Date? = nil) {
        self.name = name
        self.publicKey = publicKey
        self.expires = expires
    }

    /// Whether the trust has ended at `date`.
    public func isExpired(at date: Date) -> Bool {
        if let expires { return date >= expires }
        return false
    }
}

/// The keys folder of one installation: its identity (an X25519 private key, created on first use)
/// and the public keys it trusts.
///
/// Files: `identity` (`x25519-private <base64 of 32 bytes>`, mode 0600) and `trusted` (one line per
/// peer: `NAME KEY [expires=RFC3339]`), in a folder of mode 0700. Files are replaced atomically
/// (temporary name with `O_EXCL`, `fsync`, `rename`) under a lock, so two processes never lose an
/// update. A folder or identity readable by group or others is refused.
public struct KeyStore: Sendable {
    /// The folder's path.
    public let folder: String

    /// Opens (creating it with mode 0700 if needed, parents included) a keys folder.
    /// - Parameter folder: the folder; nil for the default, `$XDG_DATA_HOME/swiftmodem/keys` or
    ///   `~/.local/share/swiftmodem/keys`.
    /// - Throws: ``KeyStoreError`` when it cannot be created, is not a directory, or is accessible to
    ///   group or others.
    public init(folder: String? = nil) throws(KeyStoreError) {
        let path: String
        if let folder { path = folder } else { path = try KeyStore.defaultFolder() }
        guard !path.isEmpty else { throw KeyStoreError(.io, "the keys folder path is empty") }
        self.folder = path
        try FileOps.makeDirectories(path)
        try FileOps.checkPrivate(path, what: "keys folder", directory: true)
    }

    /// The default keys folder: `$XDG_DATA_HOME/swiftmodem/keys`, else `~/.local/share/swiftmodem/keys`.
    public static func defaultFolder() throws(KeyStoreError) -> String {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/swiftmodem/keys" }
        var home = env["HOME"] ?? ""
        if home.isEmpty, let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { home = String(cString: dir) }
        guard home.hasPrefix("/") else {
            throw KeyStoreError(.io, "no home folder ($HOME is not set): give the keys folder with --keys DIR")
        }
        return home + "/.local/share/swiftmodem/keys"
    }

    private var identityPath: String { folder + "/identity" }
    private var trustedPath: String { folder + "/trusted" }

    /// This installation's private key, created (and stored with mode 0600) on first use.
    /// - Parameter newKey: makes the key on first use (default: a fresh random key; a harness that
    ///   must be reproducible gives a seeded one).
    /// - Throws: ``KeyStoreError``: the file is readable by others, damaged, or cannot be written.
    public func identity(creating newKey: () -> X25519PrivateKey = { X25519PrivateKey() }) throws(KeyStoreError) -> X25519PrivateKey {
        if let key = try readIdentity() { return key }
        return try FileOps.locked(folder) { () throws(KeyStoreError) -> X25519PrivateKey in
            if let key = try readIdentity() { return key }  // another process made it meanwhile
            let key = newKey()
            let line = "x25519-private " + Data(key.rawRepresentation).base64EncodedString() + "\n"
            try FileOps.writeAtomically(identityPath, Array(line.utf8))
            return key
        }
    }

    /// This installation's public key (32 bytes), creating the identity on first use.
    public func publicKey() throws(KeyStoreError) -> [UInt8] {
        Array(try identity().publicKey.rawRepresentation)
    }

    private func readIdentity() throws(KeyStoreError) -> X25519PrivateKey? {
        guard let bytes = try FileOps.read(identityPath, limit: 4096, privateFile: true) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces()
        let parts = text.split(separator: " ")
        guard parts.count == 2, parts[0] == "x25519-private", let raw = Data(base64Encoded: String(parts[1])), raw.count == 32,
              let key = try? X25519PrivateKey(rawRepresentation: raw)
        else {
            throw KeyStoreError(.corrupt, "\(identityPath): not an identity file (expected one line 'x25519-private BASE64')")
        }
        return key
    }

    /// The trusted peers, in file order.
    /// - Throws: ``KeyStoreError`` when the file is damaged (the line is named) or unreadable.
    public func trustedPeers() throws(KeyStoreError) -> [TrustedPeer] {
        guard let bytes = try FileOps.read(trustedPath, limit: 4 << 20, privateFile: false) else { return [] }
        var peers: [TrustedPeer] = []
        for (index, raw) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw).trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            do {
                peers.append(try Self.parseTrustLine(line))
            } catch {
                throw KeyStoreError(.corrupt, "\(trustedPath) line \(index + 1): \(error.description)")
            }
        }
        return peers
    }

    /// What two trusted names are compared by: names that differ only in case are one name (`Bob` cannot
    /// stand beside `bob` as another key).
    public static func nameKey(_ name: String) -> String { name.lowercased() }

    /// Whether two trusted names are one name (``nameKey(_:)``).
    public static func sameName(_ a: String, _ b: String) -> Bool { nameKey(a) == nameKey(b) }

    /// Trusts a public key under a name, replacing any entry with the same key. The name is the one
    /// every session with this key shows for the peer, so it must not already name another key (in any case).
    /// - Throws: ``KeyStoreError``: a bad name or key (`.invalidName`, `.invalidKey`), a name already
    ///   trusted for another key (`.nameTaken`), or the file cannot be written.
    public func trust(name: String, publicKey: [UInt8], expires: Date? = nil) throws(KeyStoreError) {
        try Self.validateName(name)
        try KeyText.validatePublicKey(publicKey)
        try FileOps.locked(folder) { () throws(KeyStoreError) in
            var peers = try trustedPeers()
            if let other = peers.first(where: { Self.sameName($0.name, name) && $0.publicKey != publicKey }) {
                throw KeyStoreError(.nameTaken, "'\(name)' is already the name of another trusted key (fingerprint \(keyFingerprint(other.publicKey))): choose another name, or 'modem keys forget \(name)' first")
            }
            peers.removeAll { $0.publicKey == publicKey }
            peers.append(TrustedPeer(name: name, publicKey: publicKey, expires: expires))
            try writeTrusted(peers)
        }
    }

    /// Trusts a key met by pairing and returns the local name it is trusted under. The peer's claimed
    /// name is only a suggestion: a key trusted already keeps its name (its expiry is lifted: the
    /// pairing proved it again); otherwise the claim is used when it is a valid name no other key holds,
    /// else `fallback` (then `fallback-2`, `-3`... while those are taken). So a peer can never take the
    /// name of a key trusted before it.
    /// - Throws: ``KeyStoreError``: a bad key, or the file cannot be written.
    public func trustPaired(claimedName: String, publicKey: [UInt8], fallback: String) throws(KeyStoreError) -> String {
        try KeyText.validatePublicKey(publicKey)
        try Self.validateName(fallback)
        return try FileOps.locked(folder) { () throws(KeyStoreError) -> String in
            var peers = try trustedPeers()
            let taken = Set(peers.filter { $0.publicKey != publicKey }.map { Self.nameKey($0.name) })
            let name: String
            if let existing = peers.first(where: { $0.publicKey == publicKey }) {
                name = existing.name
            } else if (try? Self.validateName(claimedName)) != nil, !taken.contains(Self.nameKey(claimedName)) {
                name = claimedName
            } else {
                var candidate = fallback
                var n = 2
                while taken.contains(Self.nameKey(candidate)) {
                    candidate = String(fallback.prefix(56)) + "-\(n)"
                    n += 1
                }
                name = candidate
            }
            peers.removeAll { $0.publicKey == publicKey }
            peers.append(TrustedPeer(name: name, publicKey: publicKey))
            try writeTrusted(peers)
            return name
        }
    }

    /// The local name of a trusted key as a session shows it: the entry's name, or nil when the key is
    /// not trusted here (expired entries included: the caller tells "expired" from "unknown").
    public func trustedName(for publicKey: [UInt8]) throws(KeyStoreError) -> String? {
        try trustEntry(for: publicKey)?.name
    }

    /// Forgets every entry with this name.
    /// - Throws: ``KeyStoreError`` (`.notFound`) when there is none.
    public func forget(name: String) throws(KeyStoreError) {
        try Self.validateName(name)
        try FileOps.locked(folder) { () throws(KeyStoreError) in
            let peers = try trustedPeers()
            let kept = peers.filter { $0.name != name }
            guard kept.count < peers.count else { throw KeyStoreError(.notFound, "no trusted peer named '\(name)'") }
            try writeTrusted(kept)
        }
    }

    /// The trust entry for a public key, or nil when the key is not trusted (expired entries are
    /// returned: the caller tells "expired" from "unknown").
    public func trustEntry(for publicKey: [UInt8]) throws(KeyStoreError) -> TrustedPeer? {
        try trustedPeers().first { $0.publicKey == publicKey }
    }

    private func writeTrusted(_ peers: [TrustedPeer]) throws(KeyStoreError) {
        var text = ""
        for peer in peers {
            text += peer.name + " " + KeyText.encode(peer.publicKey)
            if let expires = peer.expires { text += " expires=" + RFC3339.format(expires) }
            text += "\n"
        }
        try FileOps.writeAtomically(trustedPath, Array(text.utf8))
    }

    /// Checks a peer name: 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    /// - Throws: ``KeyStoreError`` (`.invalidName`).
    public static func validateName(_ name: String) throws(KeyStoreError) {
        let ok = name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
        }
        guard ok, (1...64).contains(name.utf8.count) else {
            throw KeyStoreError(.invalidName, "a peer name has 1 to 64 characters of A-Z a-z 0-9 . _ - (got '\(name.prefix(80))')")
        }
    }

    static func parseTrustLine(_ line: String) throws(KeyStoreError) -> TrustedPeer {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard fields.count == 2 || fields.count == 3 else {
            throw KeyStoreError(.corrupt, "expected 'NAME KEY [expires=RFC3339]'")
        }
        try validateName(fields[0])
        let key = try KeyText.decode(fields[1])
        var expires: Date?
        if fields.count == 3 {
            guard fields[2].hasPrefix("expires=") else { throw KeyStoreError(.corrupt, "the third field is 'expires=RFC3339'") }
            expires = try RFC3339.parse(String(fields[2].dropFirst("expires=".count)))
        }
        return TrustedPeer(name: fields[0], publicKey: key, expires: expires)
    }
}

/// RFC 3339 timestamps (`2027-01-31T12:00:00Z`, offsets and fractions accepted).
public enum RFC3339 {
    /// Parses a timestamp.
    /// - Throws: ``KeyStoreError`` (`.invalidDate`).
    public static func parse(_ text: String) throws(KeyStoreError) -> Date {
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = fractional.date(from: text) { return date }
        throw KeyStoreError(.invalidDate, "'\(text.prefix(40))' is not an RFC 3339 time such as 2027-01-31T12:00:00Z")
    }

    /// Formats a date in UTC, whole seconds.
    public static func format(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }
}

/// The default user name announced in sessions when none is given: `$USER@hostname`, cut to 64 bytes.
public func defaultUserName() -> String {
    var user = ProcessInfo.processInfo.environment["USER"] ?? ""
    if user.isEmpty, let pw = getpwuid(getuid()), let name = pw.pointee.pw_name { user = String(cString: name) }
    if user.isEmpty { user = "user" }
    var host = [CChar](repeating: 0, count: 256)
    let hostName = gethostname(&host, host.count - 1) == 0
        ? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
    var name = user + "@" + hostName
    while name.utf8.count > 64 { name.removeLast() }
    return name
}
