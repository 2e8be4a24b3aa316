import Crypto

/// Noise's CipherState (spec rev. 34, section 5.1) for ChaChaPoly: a key `k` and a 64-bit nonce `n`.
/// The nonce is 32 zero bits followed by `n` little-endian; `n` = 2^64 - 1 is reserved, so a state
/// that reaches it refuses to encrypt or decrypt again.
public struct CipherState: Sendable {
    /// The key, or nil before one is set (then encryption is the identity, as the spec says).
    private(set) var key: SymmetricKey?
    /// The next nonce.
    public private(set) var nonce: UInt64 = 0

    /// The length of the authentication tag.
    public static let tagLength = 16

    /// An empty state (no key).
    public init() {}

    /// A state with a 32-byte key and nonce 0.
    public init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    /// Whether a key is set.
    public var hasKey: Bool { key != nil }

    /// Sets the nonce (Noise's SetNonce, used by transports that carry explicit counters).
    public mutating func setNonce(_ value: UInt64) { nonce = value }

    /// The 12-byte ChaChaPoly nonce for a counter.
    static func nonceBytes(_ n: UInt64) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[4 + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i))) }
        return try! ChaChaPoly.Nonce(data: bytes)
    }

    /// EncryptWithAd: ciphertext with its 16-byte tag appended; the plaintext unchanged without a key.
    /// - Throws: ``NoiseError`` when the nonce is used up.
    public mutating func encrypt(ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        let box: ChaChaPoly.SealedBox
        do {
            box = try ChaChaPoly.seal(plaintext, using: key, nonce: Self.nonceBytes(nonce), authenticating: ad)
        } catch {
            throw NoiseError("ChaChaPoly failed: \(error)")
        }
        nonce += 1
        var out = [UInt8]()
        out.reserveCapacity(plaintext.count + Self.tagLength)
        out.append(contentsOf: box.ciphertext)
        out.append(contentsOf: box.tag)
        return out
    }

    /// DecryptWithAd: the plaintext of `ciphertext` (which ends with its tag); the input unchanged
    /// without a key. The nonce advances only when the message authenticates.
    /// - Throws: ``NoiseError`` when it does not authenticate, is shorter than a tag, or the nonce is used up.
    public mutating func decrypt(ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        let plaintext = try Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext[...])
        nonce += 1
        return plaintext
    }

    static func open(key: SymmetricKey, nonce: UInt64, ad: [UInt8], ciphertext: ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard ciphertext.count >= tagLength else { throw NoiseError("a message shorter than its authentication tag") }
        let split = ciphertext.endIndex - tagLength
        do {
            let box = try ChaChaPoly.SealedBox(nonce: nonceBytes(nonce), ciphertext: ciphertext[..<split], tag: ciphertext[split...])
            return Array(try ChaChaPoly.open(box, using: key, authenticating: ad))
        } catch {
            throw NoiseError("a message failed authentication (changed in transit, or another key)")
        }
    }

    /// Encrypts with an explicit counter (the records of a session carry it in clear), without
    /// touching ``nonce``.
    func seal(counter: UInt64, ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        var copy = self
        copy.nonce = counter
        return try copy.encrypt(ad: ad, plaintext: plaintext)
    }

    /// Decrypts with an explicit counter, without touching ``nonce``.
    func open(counter: UInt64, ad: [UInt8], ciphertext: ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard counter != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        return try Self.open(key: key, nonce: counter, ad: ad, ciphertext: ciphertext)
    }
}
