import ModemCrypto

/// The Ed25519 parameters of SPAKE2 as python-spake2 (0.9) defines them, which magic-wormhole uses:
/// its three blinding elements M, N and S made by its arbitrary-element routine from the seeds
/// `M`, `N` and `symmetric`, its password-to-scalar map and its way of turning entropy into a scalar.
/// Big-endian numbers where python-spake2 reads bytes as integers; little-endian encodings where
/// Ed25519 has them.
public enum SPAKE2Ed25519 {
    /// The element M (seed `M`), 32 bytes.
    public static let m = arbitraryElement(seed: Array("M".utf8))
    /// The element N (seed `N`), 32 bytes.
    public static let n = arbitraryElement(seed: Array("N".utf8))
    /// The element S of the symmetric variant (seed `symmetric`), 32 bytes.
    public static let s = arbitraryElement(seed: Array("symmetric".utf8))

    /// A group element nobody knows the discrete logarithm of, from `seed`: HKDF-SHA256 of the seed
    /// (empty salt, info `SPAKE2 arbitrary element`) to 48 bytes, read big-endian modulo p = 2^255 - 19
    /// as a y coordinate; successive y values are tried until one is on the curve (with the even x)
    /// and eight times that point is not the identity; that multiple is the element.
    public static func arbitraryElement(seed: [UInt8]) -> [UInt8] {
        let h = HMACSHA256.hkdf(inputKeyMaterial: seed, salt: [], info: Array("SPAKE2 arbitrary element".utf8), length: 48)
        var y = FieldNumber.reduce(bigEndian: h)
        while true {
            let encoded = y.littleEndianBytes  // top bit 0: the even x
            if let p2 = try? Ed25519Group.add(encoded, encoded), let p4 = try? Ed25519Group.add(p2, p2),
               let p8 = try? Ed25519Group.add(p4, p4), p8 != Ed25519Group.identity {
                return p8
            }
            y = y.plusOne()
        }
    }

    /// The password's scalar: HKDF-SHA256 of the password (empty salt, info `SPAKE2 pw`) to 48 bytes,
    /// read big-endian modulo ℓ.
    public static func passwordScalar(_ password: [UInt8]) -> [UInt8] {
        let h = HMACSHA256.hkdf(inputKeyMaterial: password, salt: [], info: Array("SPAKE2 pw".utf8), length: 48)
        return Ed25519Group.reduce(littleEndian: h.reversed())
    }

    /// A secret scalar from 64 bytes of entropy, read big-endian modulo ℓ.
    public static func scalar(fromEntropy entropy: [UInt8]) -> [UInt8] {
        precondition(entropy.count == 64, "64 bytes of entropy")
        return Ed25519Group.reduce(littleEndian: entropy.reversed())
    }
}

/// A number below p = 2^255 - 19 as four little-endian 64-bit limbs: just enough arithmetic for the
/// arbitrary-element routine (reduce a 384-bit number, add one).
struct FieldNumber: Equatable {
    var limbs: [UInt64]  // 4 limbs, little-endian

    static let p: [UInt64] = [0xFFFF_FFFF_FFFF_FFED, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF]

    /// A big-endian number of up to 64 bytes modulo p.
    static func reduce(bigEndian bytes: [UInt8]) -> FieldNumber {
        precondition(bytes.count <= 64)
        var v = [UInt64](repeating: 0, count: 8)
        for (i, b) in bytes.reversed().enumerated() { v[i / 8] |= UInt64(b) << (8 * UInt64(i % 8)) }
        // Fold: v = hi * 2^255 + lo ≡ hi * 19 + lo (mod p), until v < 2^255.
        while v[3] >> 63 != 0 || v[4...].contains(where: { $0 != 0 }) {
            var hi = [UInt64](repeating: 0, count: 8)
            for i in 0..<5 { hi[i] = (v[i + 3] >> 63) | (i + 4 < 8 ? v[i + 4] << 1 : 0) }
            var lo = Array(v[0..<4]) + [0, 0, 0, 0]
            lo[3] &= 0x7FFF_FFFF_FFFF_FFFF
            // lo + 19 * hi
            var carry: UInt64 = 0
            for i in 0..<8 {
                let product = hi[i].multipliedFullWidth(by: 19)
                let (s1, o1) = lo[i].addingReportingOverflow(product.low)
                let (s2, o2) = s1.addingReportingOverflow(carry)
                lo[i] = s2
                carry = product.high + (o1 ? 1 : 0) + (o2 ? 1 : 0)
            }
            v = lo
        }
        var n = FieldNumber(limbs: Array(v[0..<4]))
        if n.isAtLeastP { n = n.minusP() }
        return n
    }

    var isAtLeastP: Bool {
        for i in (0..<4).reversed() where limbs[i] != Self.p[i] { return limbs[i] > Self.p[i] }
        return true
    }

    func minusP() -> FieldNumber {
        var out = limbs
        var borrow: UInt64 = 0
        for i in 0..<4 {
            let (d1, b1) = out[i].subtractingReportingOverflow(Self.p[i])
            let (d2, b2) = d1.subtractingReportingOverflow(borrow)
            out[i] = d2
            borrow = (b1 ? 1 : 0) + (b2 ? 1 : 0)
        }
        return FieldNumber(limbs: out)
    }

    /// (self + 1) mod p.
    func plusOne() -> FieldNumber {
        var out = limbs
        for i in 0..<4 {
            let (s, o) = out[i].addingReportingOverflow(1)
            out[i] = s
            if !o { break }
        }
        let n = FieldNumber(limbs: out)
        return n.isAtLeastP ? n.minusP() : n
    }

    /// The 32-byte little-endian encoding.
    var littleEndianBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for limb in limbs { for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: limb >> (8 * UInt64(k)))) } }
        return out
    }
}
