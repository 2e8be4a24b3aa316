import ModemCrypto

/// Noise's SymmetricState (spec rev. 34, section 5.2) with SHA-256: the chaining key `ck`, the
/// handshake hash `h`, and the CipherState keyed by MixKey.
public struct SymmetricState: Sendable {
    /// The hash length (SHA-256).
    public static let hashLength = 32
    private(set) var chainingKey: [UInt8]
    /// The handshake hash `h`.
    public private(set) var handshakeHash: [UInt8]
    private(set) var cipher: CipherState

    /// InitializeSymmetric(protocolName), with the AEAD the name ends in (`_ChaChaPoly_` or `_AESGCM_`).
    public init(protocolName: String, cipher: NoiseCipher = .chaChaPoly) {
        self.cipher = CipherState(cipher: cipher)
        let name = Array(protocolName.utf8)
        if name.count <= Self.hashLength {
            handshakeHash = name + [UInt8](repeating: 0, count: Self.hashLength - name.count)
        } else {
            handshakeHash = SHA256Hasher.hash(name)
        }
        chainingKey = handshakeHash
    }

    /// MixKey(ikm): `ck, k = HKDF(ck, ikm, 2)`; the CipherState gets `k` with nonce 0.
    public mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let (ck, k, _) = Self.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = ck
        cipher = CipherState(key: k, cipher: cipher.cipher)
    }

    /// MixHash(data): `h = SHA-256(h || data)`.
    public mutating func mixHash(_ data: [UInt8]) {
        var hasher = SHA256Hasher()
        hasher.update(handshakeHash)
        hasher.update(data)
        handshakeHash = hasher.finalize()
    }

    /// EncryptAndHash(plaintext).
    public mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// DecryptAndHash(ciphertext).
    public mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Whether the CipherState has a key (so `s` is sent encrypted: 48 bytes instead of 32).
    public var hasKey: Bool { cipher.hasKey }

    /// Split(): the two transport CipherStates (initiator to responder, responder to initiator).
    public func split() -> (CipherState, CipherState) {
        let (k1, k2, _) = Self.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputs: 2)
        return (CipherState(key: k1, cipher: cipher.cipher), CipherState(key: k2, cipher: cipher.cipher))
    }

    /// Noise's HKDF (section 4.3) on HMAC-SHA256: two or three 32-byte outputs.
    public static func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputs: Int) -> ([UInt8], [UInt8], [UInt8]?) {
        let tempKey = HMACSHA256.code(for: inputKeyMaterial, key: chainingKey)
        let output1 = HMACSHA256.code(for: [0x01], key: tempKey)
        let output2 = HMACSHA256.code(for: output1 + [0x02], key: tempKey)
        guard outputs == 3 else { return (output1, output2, nil) }
        let output3 = HMACSHA256.code(for: output2 + [0x03], key: tempKey)
        return (output1, output2, output3)
    }
}
