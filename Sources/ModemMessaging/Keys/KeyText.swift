import ModemCrypto

/// The text form of a public key people copy around: `smk1` followed by the 32 key bytes in
/// base64url without padding (47 characters in all), e.g. in `modem keys show` and `modem keys trust`.
public enum KeyText {
    /// The prefix of every key text ("SwiftModem key, version 1").
    public static let prefix = "smk1"
    /// The length of a key text in characters.
    public static let length = 47

    /// The text of a 32-byte X25519 public key.
    public static func encode(_ publicKey: [UInt8]) -> String {
        prefix + Base64URL.encode(publicKey)
    }

    /// The 32 key bytes of a key text, validated: prefix, length, alphabet, canonical encoding, and a
    /// usable X25519 point (not all-zero, not of low order).
    /// - Throws: ``KeyStoreError`` (`.invalidKey`) naming what is wrong.
    public static func decode(_ text: String) throws(KeyStoreError) -> [UInt8] {
        let trimmed = text.trimmingSpaces()
        guard trimmed.hasPrefix(prefix) else {
            throw KeyStoreError(.invalidKey, "a key text starts with '\(prefix)' (got '\(trimmed.prefix(8))...')")
        }
        guard trimmed.utf8.count == length else {
            throw KeyStoreError(.invalidKey, "a key text has \(length) characters, this one has \(trimmed.utf8.count)")
        }
        guard let bytes = Base64URL.decode(trimmed.dropFirst(prefix.count)), bytes.count == 32 else {
            throw KeyStoreError(.invalidKey, "the key text is not base64url (letters, digits, '-' and '_' after '\(prefix)')")
        }
        try validatePublicKey(bytes)
        return bytes
    }

    /// Checks that 32 bytes are a usable X25519 public key: not all-zero and not a point of low order
    /// (such a key makes every shared secret predictable).
    /// - Throws: ``KeyStoreError`` (`.invalidKey`).
    public static func validatePublicKey(_ bytes: [UInt8]) throws(KeyStoreError) {
        guard bytes.count == 32 else {
            throw KeyStoreError(.invalidKey, "an X25519 public key has 32 bytes, not \(bytes.count)")
        }
        guard bytes.contains(where: { $0 != 0 }) else {
            throw KeyStoreError(.invalidKey, "the key is all zeros")
        }
        // A point of small order times any clamped scalar (a multiple of 8) is the identity, whose
        // X25519 output is all zeros: one multiplication finds every such point, canonical or not.
        guard let peer = try? X25519PublicKey(rawRepresentation: bytes),
              (try? probeKey.sharedSecret(with: peer)) != nil
        else {
            throw KeyStoreError(.invalidKey, "the key is a low-order point of Curve25519, not a real public key")
        }
    }

    private static let probeKey = try! X25519PrivateKey(rawRepresentation: [UInt8](repeating: 0x5A, count: 32))
}

/// A short hex fingerprint of a public key (the first 8 bytes of its SHA-256), for file names and
/// display: 16 lowercase hex digits.
public func keyFingerprint(_ publicKey: [UInt8]) -> String {
    let digest = SHA256Hasher.hash(publicKey)
    return digest.prefix(8).map { byte in
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
    }.joined()
}

/// base64url (RFC 4648 section 5) without padding, strict on decoding.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            let chars = min(4, (bytes.count - i) + 1)
            for k in 0..<chars { out.append(alphabet[Int((v >> UInt32(18 - 6 * k)) & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes, or nil for a character outside the alphabet, a length of 1 mod 4, or non-zero
    /// unused bits in the last character (so every key has exactly one text).
    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var values: [UInt32] = []
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(UInt32(c - UInt8(ascii: "A")))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(UInt32(c - UInt8(ascii: "a") + 26))
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(UInt32(c - UInt8(ascii: "0") + 52))
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < values.count {
            let n = min(4, values.count - i)
            var v: UInt32 = 0
            for k in 0..<4 { v = v << 6 | (k < n ? values[i + k] : 0) }
            let produced = n - 1
            let bytes = [UInt8(v >> 16 & 255), UInt8(v >> 8 & 255), UInt8(v & 255)]
            if n < 4 {
                // Unused low bits of the last character must be zero.
                for k in produced..<3 where bytes[k] != 0 { return nil }
            }
            out.append(contentsOf: bytes.prefix(produced == 3 ? 3 : produced))
            i += 4
        }
        return out
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line ends.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[start...end])
    }
}
