import CSodium

/// The prime-order group of Ed25519 (order ℓ = 2^252 + 27742317777372353535851937790883648493) on
/// libsodium's point and scalar operations, for protocols that compute in the group itself (SPAKE2).
/// Points are their 32-byte encodings (y little-endian, the sign of x in the top bit); scalars are
/// 32 bytes little-endian, reduced modulo ℓ.
public enum Ed25519Group {
    /// The length of a point's encoding and of a scalar.
    public static let length = 32
    /// The neutral element's encoding (x = 0, y = 1).
    public static let identity: [UInt8] = [1] + [UInt8](repeating: 0, count: 31)

    /// `p + q` for any two points on the curve (not only the prime-order subgroup).
    /// - Throws: ``CryptoError`` when either is not the encoding of a point on the curve.
    public static func add(_ p: [UInt8], _ q: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard p.count == length, q.count == length else { throw CryptoError("an Ed25519 point is 32 bytes") }
        Sodium.ensure()
        var r = [UInt8](repeating: 0, count: length)
        let rc = r.withUnsafeMutableBufferPointer { crypto_core_ed25519_add($0.baseAddress!, p, q) }
        guard rc == 0 else { throw CryptoError("not a point on the Ed25519 curve") }
        return r
    }

    /// Whether `p` is a point of the prime-order subgroup other than a low-order one (what a peer's
    /// group element must be).
    public static func isValidElement(_ p: [UInt8]) -> Bool {
        guard p.count == length else { return false }
        Sodium.ensure()
        return crypto_core_ed25519_is_valid_point(p) == 1
    }

    /// `n · p` for a point `p` of the prime-order subgroup and a scalar `n` (not clamped).
    /// - Throws: ``CryptoError`` when `p` is not a valid element or the product is the identity.
    public static func multiply(_ n: [UInt8], _ p: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard n.count == length, p.count == length else { throw CryptoError("Ed25519 scalars and points are 32 bytes") }
        Sodium.ensure()
        var r = [UInt8](repeating: 0, count: length)
        let rc = r.withUnsafeMutableBufferPointer { crypto_scalarmult_ed25519_noclamp($0.baseAddress!, n, p) }
        guard rc == 0 else { throw CryptoError("the point is not a valid Ed25519 group element, or the product is the identity") }
        return r
    }

    /// `n · B` for the standard base point `B` and a scalar `n` (not clamped).
    /// - Throws: ``CryptoError`` when `n` is zero modulo ℓ.
    public static func multiplyBase(_ n: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard n.count == length else { throw CryptoError("an Ed25519 scalar is 32 bytes") }
        Sodium.ensure()
        var r = [UInt8](repeating: 0, count: length)
        let rc = r.withUnsafeMutableBufferPointer { crypto_scalarmult_ed25519_base_noclamp($0.baseAddress!, n) }
        guard rc == 0 else { throw CryptoError("the scalar is zero") }
        return r
    }

    /// A number of up to 64 bytes, little-endian, reduced modulo ℓ.
    public static func reduce(littleEndian bytes: [UInt8]) -> [UInt8] {
        precondition(bytes.count <= 64, "at most 64 bytes to reduce")
        Sodium.ensure()
        let wide = bytes + [UInt8](repeating: 0, count: 64 - bytes.count)
        var r = [UInt8](repeating: 0, count: length)
        r.withUnsafeMutableBufferPointer { crypto_core_ed25519_scalar_reduce($0.baseAddress!, wide) }
        return r
    }

    /// `-n` modulo ℓ.
    public static func negate(_ n: [UInt8]) -> [UInt8] {
        precondition(n.count == length, "an Ed25519 scalar is 32 bytes")
        Sodium.ensure()
        var r = [UInt8](repeating: 0, count: length)
        r.withUnsafeMutableBufferPointer { crypto_core_ed25519_scalar_negate($0.baseAddress!, n) }
        return r
    }
}
