import ModemCrypto

/// How a password reaches bcrypt, so that every byte of it counts.
///
/// bcrypt reads at most 72 bytes and stops at a NUL (its input is a C string): given the password
/// itself, `a\u{0}bcdefghij` would log in as `a`, and a 100-character password as its first 72. So the
/// hub hashes ``prehash(_:)`` of the password instead: HMAC-SHA-256 of its UTF-8 bytes under a fixed
/// label, written in base64url (43 characters, no NUL), then bcrypt. A stored hash of this kind starts
/// with ``prefix``; hashes without it (made before) are of the password itself and still verify, and
/// the hub stores the new kind in their place at the next good login.
public enum PasswordHashing {
    /// Marks a stored hash as bcrypt of ``prehash(_:)``; the bcrypt hash follows it.
    public static let prefix = "$hmac-sha256$"

    /// The label HMAC-SHA-256 keys the pre-hash with (a domain separation, not a secret).
    static let label = Array("SwiftModem hub password v1".utf8)

    /// What bcrypt is given for `password`: base64url of HMAC-SHA-256 of all its bytes.
    public static func prehash(_ password: String) -> String {
        HubTokens.base64url(HMACSHA256.code(for: Array(password.utf8), key: label))
    }

    /// The cost of a bcrypt hash (`$2b$12$...` is 12), or nil if it is not one.
    public static func bcryptCost(of bcrypt: String) -> Int? {
        let parts = bcrypt.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].isEmpty, parts[1].hasPrefix("2"), parts[2].count == 2 else { return nil }
        return Int(parts[2])
    }

    /// The stored hash's kind and its bcrypt part.
    public static func parse(stored: String) -> (prehashed: Bool, bcrypt: String) {
        stored.hasPrefix(prefix) ? (true, String(stored.dropFirst(prefix.count))) : (false, stored)
    }
}
