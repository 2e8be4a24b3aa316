import CSodium

/// A failure of a cryptographic operation: wrong sizes, a key that gives no shared secret, a message
/// that does not authenticate.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// An X25519 public key: 32 bytes (RFC 7748).
public struct X25519PublicKey: Sendable, Equatable, Hashable {
    /// The 32 bytes.
    public let rawRepresentation: [UInt8]

    /// A key from its 32 bytes.
    /// - Throws: ``CryptoError`` when `raw` is not 32 bytes long.
    public init(rawRepresentation raw: some Collection<UInt8>) throws(CryptoError) {
        guard raw.count == X25519PrivateKey.length else {
            throw CryptoError("an X25519 public key is 32 bytes, not \(raw.count)")
        }
        rawRepresentation = Array(raw)
    }
}

/// An X25519 private key (RFC 7748): key agreement for the Noise handshake and pairing.
public struct X25519PrivateKey: Sendable {
    /// Key length in bytes.
    public static let length = 32
    /// The 32 secret bytes.
    public let rawRepresentation: [UInt8]
    /// The matching public key.
    public let publicKey: X25519PublicKey

    /// A fresh random key.
    public init() {
        try! self.init(rawRepresentation: secureRandomBytes(Self.length))
    }

    /// A key from its 32 bytes.
    /// - Throws: ``CryptoError`` when `raw` is not 32 bytes long.
    public init(rawRepresentation raw: some Collection<UInt8>) throws(CryptoError) {
        guard raw.count == Self.length else { throw CryptoError("an X25519 private key is 32 bytes, not \(raw.count)") }
        Sodium.ensure()
        let secret = Array(raw)
        var pub = [UInt8](repeating: 0, count: Self.length)
        _ = pub.withUnsafeMutableBufferPointer { p in secret.withUnsafeBufferPointer { crypto_scalarmult_curve25519_base(p.baseAddress!, $0.baseAddress!) } }
        rawRepresentation = secret
        publicKey = try X25519PublicKey(rawRepresentation: pub)
    }

    /// The shared secret with `peer` (32 bytes).
    /// - Throws: ``CryptoError`` when the peer's key is a low-order point (the result would be all zero).
    public func sharedSecret(with peer: X25519PublicKey) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.length)
        let rc = out.withUnsafeMutableBufferPointer { o in
            rawRepresentation.withUnsafeBufferPointer { s in
                peer.rawRepresentation.withUnsafeBufferPointer { p in crypto_scalarmult_curve25519(o.baseAddress!, s.baseAddress!, p.baseAddress!) }
            }
        }
        guard rc == 0, out.contains(where: { $0 != 0 }) else {
            throw CryptoError("the peer's key gives no shared secret (a low-order point)")
        }
        return out
    }
}
