import CSodium

/// NaCl's secretbox: XSalsa20-Poly1305 with a 32-byte key and a 24-byte nonce (libsodium's
/// `crypto_secretbox_easy`: the 16-byte tag, then the ciphertext). magic-wormhole seals its mailbox
/// messages and transit records with it.
public enum SecretBox {
    /// Key length in bytes.
    public static let keyLength = 32
    /// Nonce length in bytes.
    public static let nonceLength = 24
    /// Tag length in bytes.
    public static let tagLength = 16

    /// The tag and ciphertext of `plaintext` (without the nonce).
    /// - Throws: ``CryptoError`` when the key or nonce has the wrong length.
    public static func seal(_ plaintext: some Collection<UInt8>, key: [UInt8], nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == keyLength, nonce.count == nonceLength else { throw CryptoError("secretbox keys are 32 bytes and nonces 24") }
        Sodium.ensure()
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        let n = plaintext.count
        _ = out.withUnsafeMutableBufferPointer { o in
            withBytes(plaintext) { p in crypto_secretbox_easy(o.baseAddress!, base(p), UInt64(n), nonce, key) }
        }
        return out
    }

    /// The plaintext of a tag and ciphertext.
    /// - Throws: ``CryptoError`` when it does not authenticate (another key, or changed on the way).
    public static func open(_ sealed: some Collection<UInt8>, key: [UInt8], nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == keyLength, nonce.count == nonceLength else { throw CryptoError("secretbox keys are 32 bytes and nonces 24") }
        guard sealed.count >= tagLength else { throw CryptoError("a secretbox message is at least 16 bytes") }
        Sodium.ensure()
        var out = [UInt8](repeating: 0, count: sealed.count - tagLength)
        let n = sealed.count
        let rc = out.withUnsafeMutableBufferPointer { o in
            withBytes(sealed) { c in
                crypto_secretbox_open_easy(o.baseAddress ?? UnsafeMutablePointer(mutating: base(c)), base(c), UInt64(n), nonce, key)
            }
        }
        guard rc == 0 else { throw CryptoError("a message failed authentication (changed in transit, or another key)") }
        return out
    }
}
