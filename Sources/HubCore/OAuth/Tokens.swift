import ModemCrypto

/// Opaque tokens and ids: random bytes, base64url or base32 text with a prefix naming the kind.
public enum HubTokens {
    /// Prefix of access tokens.
    public static let accessPrefix = "mha_"
    /// Prefix of refresh tokens.
    public static let refreshPrefix = "mhr_"
    /// Prefix of client secrets.
    public static let secretPrefix = "mhs_"

    /// `count` bytes from the system's cryptographic generator.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    /// A new access token (32 random bytes).
    public static func newAccessToken() -> String { accessPrefix + base64url(randomBytes(32)) }
    /// A new refresh token (32 random bytes).
    public static func newRefreshToken() -> String { refreshPrefix + base64url(randomBytes(32)) }
    /// A new client secret (32 random bytes).
    public static func newClientSecret() -> String { secretPrefix + base64url(randomBytes(32)) }
    /// A new id: `prefix` + 16 random bytes in lowercase base32 (letters and digits only).
    public static func newID(prefix: String) -> String { prefix + base32(randomBytes(16)) }
    /// A new numeric code of `digits` digits (uniform).
    public static func newCode(digits: Int = 8) -> String {
        var g = SystemRandomNumberGenerator()
        return String((0..<digits).map { _ in Character(String(Int.random(in: 0...9, using: &g))) })
    }

    /// SHA-256 of the token's UTF-8 text: what the database keeps.
    public static func sha256(_ text: String) -> [UInt8] { Array(SHA256Hasher.hash(Array(text.utf8))) }

    /// base64url without padding (RFC 4648 section 5).
    public static func base64url(_ bytes: [UInt8]) -> String {
        let a = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [a[Int(n >> 18 & 63)], a[Int(n >> 12 & 63)], a[Int(n >> 6 & 63)], a[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [a[Int(n >> 18 & 63)], a[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [a[Int(n >> 18 & 63)], a[Int(n >> 12 & 63)], a[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lowercase base32 without padding (RFC 4648 alphabet, lowercased).
    public static func base32(_ bytes: [UInt8]) -> String {
        let a = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var out: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for b in bytes {
            buffer = buffer << 8 | UInt32(b); bits += 8
            while bits >= 5 { out.append(a[Int(buffer >> UInt32(bits - 5) & 31)]); bits -= 5 }
        }
        if bits > 0 { out.append(a[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
