#if canImport(Glibc)
import Glibc
#endif
import ModemCrypto
import Foundation
import ModemMessaging
import Testing

/// A fresh folder path under the temporary directory (not created).
func temporaryKeysPath(_ tag: String) -> String {
    let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    return "\(base)/smk-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/nested/keys"
}

func mode(of path: String) -> UInt32 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt32(st.st_mode & 0o777) : 0xFFFF
}

@Suite("Keys")
struct KeysTests {
    @Test("key text round-trips, is 47 characters and starts with smk1")
    func keyTextRoundTrip() throws {
        for _ in 0..<50 {
            let key = Array(X25519PrivateKey().publicKey.rawRepresentation)
            let text = KeyText.encode(key)
            #expect(text.count == 47)
            #expect(text.hasPrefix("smk1"))
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(try KeyText.decode(text) == key)
            #expect(try KeyText.decode("  \(text)\n") == key)
        }
    }

    @Test("bad key texts are refused with the problem named")
    func keyTextRefusals() throws {
        let good = KeyText.encode(Array(X25519PrivateKey().publicKey.rawRepresentation))
        func refusal(_ text: String) -> String? {
            do { _ = try KeyText.decode(text); return nil } catch { #expect(error.kind == .invalidKey); return error.description }
        }
        #expect(refusal("smk2" + good.dropFirst(4))?.contains("smk1") == true)
        #expect(refusal(String(good.dropLast()))?.contains("47") == true)
        #expect(refusal(good + "A")?.contains("47") == true)
        #expect(refusal(String(good.dropLast()) + "*")?.contains("base64url") == true)
        #expect(refusal("") != nil)
        // Non-canonical: the last character carries 4 unused bits that must be zero.
        let last = good.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = alphabet.firstIndex(of: last)!
        let twisted = String(good.dropLast()) + String(alphabet[index ^ 1])
        #expect(refusal(twisted) != nil)
    }

    @Test("all-zero and low-order points are refused")
    func lowOrderPoints() {
        var points: [[UInt8]] = [[UInt8](repeating: 0, count: 32)]
        points.append([1] + [UInt8](repeating: 0, count: 31))
        points.append(hexBytes("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"))
        points.append(hexBytes("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"))
        points.append([0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F])  // p - 1
        points.append([0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F])  // p
        points.append([0xEE] + [UInt8](repeating: 0xFF, count: 30) + [0x7F])  // p + 1
        for point in points {
            #expect(throws: KeyStoreError.self) { try KeyText.decode(KeyText.encode(point)) }
        }
        #expect(throws: KeyStoreError.self) { try KeyText.validatePublicKey([1, 2, 3]) }
    }

    @Test("fingerprint: 16 hex digits, differs between keys, stable for one key")
    func fingerprint() {
        let a = Array(X25519PrivateKey().publicKey.rawRepresentation)
        let b = Array(X25519PrivateKey().publicKey.rawRepresentation)
        #expect(keyFingerprint(a).count == 16)
        #expect(keyFingerprint(a).allSatisfy { "0123456789abcdef".contains($0) })
        #expect(keyFingerprint(a) == keyFingerprint(a))
        #expect(keyFingerprint(a) != keyFingerprint(b))
        #expect(keyFingerprint([UInt8](repeating: 0, count: 32)) == "66687aadf862bd77")
    }

    @Test("a new folder is created 0700 with parents; the identity is 0600 and stable")
    func identityCreatedPrivately() throws {
        let path = temporaryKeysPath("id")
        let store = try KeyStore(folder: path)
        #expect(store.folder == path)
        #expect(mode(of: path) == 0o700)
        let key = try store.identity()
        #expect(mode(of: path + "/identity") == 0o600)
        let again = try KeyStore(folder: path).identity()
        #expect(key.rawRepresentation == again.rawRepresentation)
        let text = try String(contentsOfFile: path + "/identity", encoding: .utf8)
        #expect(text.hasPrefix("x25519-private "))
        #expect(try store.publicKey() == Array(key.publicKey.rawRepresentation))
        // No temporary files left behind.
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        #expect(!names.contains { $0.contains(".tmp-") })
    }

    @Test("a private key or folder readable by group or others is refused")
    func insecurePermissions() throws {
        let path = temporaryKeysPath("perm")
        let store = try KeyStore(folder: path)
        _ = try store.identity()
        chmod(path + "/identity", 0o644)
        do {
            _ = try store.identity()
            Issue.record("a world-readable identity was accepted")
        } catch {
            #expect(error.kind == .insecurePermissions)
            #expect(error.description.contains("chmod 600"))
            #expect(!error.description.contains("x25519-private"))
        }
        chmod(path + "/identity", 0o600)
        _ = try store.identity()
        chmod(path, 0o755)
        #expect(throws: KeyStoreError(.insecurePermissions, "keys folder \(path) has mode 755: group or others can reach it; run 'chmod 700 \(path)'")) {
            try KeyStore(folder: path)
        }
        chmod(path, 0o700)
    }

    @Test("a damaged identity file is reported, not replaced")
    func damagedIdentity() throws {
        let path = temporaryKeysPath("bad")
        let store = try KeyStore(folder: path)
        let fd = open(path + "/identity", O_WRONLY | O_CREAT, 0o600)
        _ = write(fd, "garbage\n", 8)
        close(fd)
        #expect(throws: KeyStoreError.self) { try store.identity() }
        #expect(try String(contentsOfFile: path + "/identity", encoding: .utf8) == "garbage\n")
    }

    @Test("a FIFO in the identity's place is refused at once, not waited on", .timeLimit(.minutes(1)))
    func fifoIdentity() throws {
        let path = temporaryKeysPath("fifo")
        let store = try KeyStore(folder: path)
        #expect(mkfifo(path + "/identity", 0o600) == 0)
        #expect(throws: KeyStoreError.self) { try store.identity() }
        do { _ = try store.identity() } catch { #expect(error.description.contains("not a regular file"), "\(error)") }
    }

    @Test("a lock held by another process: trust gives up after its patience with an error naming the lock",
          .timeLimit(.minutes(1)))
    func heldLock() throws {
        let path = temporaryKeysPath("held")
        let store = try KeyStore(folder: path)
        let other = open(path + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)  // another open file: another holder
        defer { close(other) }
        #expect(flock(other, LOCK_EX) == 0)
        let key = Array(X25519PrivateKey().publicKey.rawRepresentation)
        do {
            try store.trust(name: "p", publicKey: key)
            Issue.record("trusted while another process held the lock")
        } catch {
            #expect(error.description.contains("locked by another process") && error.description.contains(".lock"), "\(error)")
        }
        flock(other, LOCK_UN)
        try store.trust(name: "p", publicKey: key)
        #expect(try store.trustedPeers().map(\.name) == ["p"])
    }

    @Test("trust, replace by key, list, forget, expiry round-trip through the file")
    func trustLifecycle() throws {
        let store = try KeyStore(folder: temporaryKeysPath("trust"))
        #expect(try store.trustedPeers().isEmpty)
        let a = Array(X25519PrivateKey().publicKey.rawRepresentation)
        let b = Array(X25519PrivateKey().publicKey.rawRepresentation)
        try store.trust(name: "alice", publicKey: a)
        let expiry = try RFC3339.parse("2030-05-01T10:20:30Z")
        try store.trust(name: "bob.b_1-x", publicKey: b, expires: expiry)
        #expect(try store.trustedPeers() == [TrustedPeer(name: "alice", publicKey: a), TrustedPeer(name: "bob.b_1-x", publicKey: b, expires: expiry)])
        #expect(mode(of: store.folder + "/trusted") == 0o600)
        // The same key under a new name replaces the entry.
        try store.trust(name: "alice2", publicKey: a)
        #expect(try store.trustedPeers().map(\.name) == ["bob.b_1-x", "alice2"])
        #expect(try store.trustEntry(for: b)?.expires == expiry)
        #expect(try store.trustEntry(for: b)?.isExpired(at: expiry.addingTimeInterval(-1)) == false)
        #expect(try store.trustEntry(for: b)?.isExpired(at: expiry) == true)
        #expect(try store.trustEntry(for: [UInt8](repeating: 9, count: 32)) == nil)
        let text = try String(contentsOfFile: store.folder + "/trusted", encoding: .utf8)
        #expect(text.contains("bob.b_1-x \(KeyText.encode(b)) expires=2030-05-01T10:20:30Z\n"))
        try store.forget(name: "alice2")
        #expect(try store.trustEntry(for: a) == nil)
        #expect(throws: KeyStoreError.self) { try store.forget(name: "alice2") }
    }

    @Test("names outside [A-Za-z0-9._-]{1,64} and bad keys are refused")
    func nameRules() throws {
        let store = try KeyStore(folder: temporaryKeysPath("names"))
        let key = Array(X25519PrivateKey().publicKey.rawRepresentation)
        for bad in ["", "a b", "ä", "x/y", String(repeating: "n", count: 65), "new\nline"] {
            #expect(throws: KeyStoreError.self) { try store.trust(name: bad, publicKey: key) }
        }
        try store.trust(name: String(repeating: "n", count: 64), publicKey: key)
        #expect(throws: KeyStoreError.self) { try store.trust(name: "zero", publicKey: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: KeyStoreError.self) { try RFC3339.parse("tomorrow") }
    }

    @Test("a damaged trusted file names its line")
    func damagedTrustFile() throws {
        let store = try KeyStore(folder: temporaryKeysPath("dmg"))
        let key = KeyText.encode(Array(X25519PrivateKey().publicKey.rawRepresentation))
        try "ok \(key)\n# comment\n\nbroken line here too\n".write(toFile: store.folder + "/trusted", atomically: false, encoding: .utf8)
        do {
            _ = try store.trustedPeers()
            Issue.record("a damaged file was accepted")
        } catch {
            #expect(error.kind == .corrupt)
            #expect(error.description.contains("line 4"))
        }
    }

    @Test("two stores trusting at once lose no entry (the lock)")
    func concurrentTrust() async throws {
        let path = temporaryKeysPath("lock")
        _ = try KeyStore(folder: path)
        let keys = (0..<16).map { _ in Array(X25519PrivateKey().publicKey.rawRepresentation) }
        await withTaskGroup(of: Void.self) { group in
            for (i, key) in keys.enumerated() {
                group.addTask { try? KeyStore(folder: path).trust(name: "p\(i)", publicKey: key) }
            }
        }
        #expect(try Set(KeyStore(folder: path).trustedPeers().map(\.name)) == Set((0..<16).map { "p\($0)" }))
    }

    @Test("default user name is USER@host, at most 64 bytes")
    func userName() {
        let name = defaultUserName()
        #expect(name.contains("@"))
        #expect((3...64).contains(name.utf8.count))
    }
}

func hexBytes(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = text.startIndex
    while i < text.endIndex {
        let j = text.index(i, offsetBy: 2)
        out.append(UInt8(text[i..<j], radix: 16)!)
        i = j
    }
    return out
}
