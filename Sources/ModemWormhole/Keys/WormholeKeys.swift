import ModemCrypto

/// magic-wormhole's key schedule on the PAKE's 32-byte key, with its names: every key is
/// HKDF-SHA256 of the PAKE key (no salt) with a purpose as the info; a mailbox message is sealed
/// with the key of its sender's side and its phase; messages are secretboxes with a random nonce
/// in front.
public enum WormholeKeys {
    /// HKDF-SHA256 of `key` with `purpose` as the info (magic-wormhole's `derive_key`).
    public static func derive(_ key: [UInt8], purpose: [UInt8], length: Int = 32) -> [UInt8] {
        HMACSHA256.hkdf(inputKeyMaterial: key, salt: [], info: purpose, length: length)
    }

    /// HKDF-SHA256 of `key` with the text `purpose`.
    public static func derive(_ key: [UInt8], purpose: String, length: Int = 32) -> [UInt8] {
        derive(key, purpose: Array(purpose.utf8), length: length)
    }

    /// The key of the messages `side` sends in `phase`: purpose `wormhole:phase:` followed by
    /// SHA-256(side) and SHA-256(phase).
    public static func phaseKey(_ key: [UInt8], side: String, phase: String) -> [UInt8] {
        derive(key, purpose: Array("wormhole:phase:".utf8) + SHA256Hasher.hash(Array(side.utf8)) + SHA256Hasher.hash(Array(phase.utf8)))
    }

    /// A secretbox of `plaintext` under `key`: a random 24-byte nonce, then the tag and ciphertext.
    public static func seal(_ plaintext: [UInt8], key: [UInt8]) -> [UInt8] {
        let nonce = secureRandomBytes(SecretBox.nonceLength)
        // The key is always 32 bytes here (derived) and the nonce 24: sealing cannot fail.
        return nonce + ((try? SecretBox.seal(plaintext, key: key, nonce: nonce)) ?? [])
    }

    /// The plaintext of a nonce-prefixed secretbox.
    /// - Throws: ``CryptoError`` when it does not authenticate under `key` (magic-wormhole's sign
    ///   of a wrong code) or is too short.
    public static func open(_ sealed: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= SecretBox.nonceLength + SecretBox.tagLength else { throw CryptoError("a sealed message is at least 40 bytes") }
        return try SecretBox.open(sealed[SecretBox.nonceLength...], key: key, nonce: Array(sealed[..<SecretBox.nonceLength]))
    }
}
