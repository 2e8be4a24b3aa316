import ModemCrypto

/// The AEAD of a Noise protocol name (spec rev. 34, section 12): `ChaChaPoly` or `AESGCM`.
public enum NoiseCipher: String, Sendable, CaseIterable {
    /// ChaCha20-Poly1305; the nonce is 32 zero bits then the counter little-endian.
    case chaChaPoly = "ChaChaPoly"
    /// AES-256-GCM; the nonce is 32 zero bits then the counter big-endian. Sessions use it: with
    /// AES-NI/VAES swift-crypto sealed 64 KB records at 5-7 GB/s here, against 1.2-1.7 GB/s for
    /// ChaChaPoly through the same API (Benchmarks/README.md, "Messaging: faster record path").
    case aesGCM = "AESGCM"
}

/// Noise's CipherState (spec rev. 34, section 5.1) for ChaChaPoly or AESGCM: a key `k` and a 64-bit
/// nonce `n`. `n` = 2^64 - 1 is reserved, so a state that reaches it refuses to encrypt or decrypt again.
public struct CipherState: Sendable {
    /// The key, or nil before one is set (then encryption is the identity, as the spec says).
    private(set) var key: [UInt8]?
    /// The AEAD.
    public let cipher: NoiseCipher
    /// The next nonce.
    public private(set) var nonce: UInt64 = 0

    /// The length of the authentication tag.
    public static let tagLength = 16

    /// An empty state (no key).
    public init(cipher: NoiseCipher = .chaChaPoly) { self.cipher = cipher }

    /// A state with a 32-byte key and nonce 0.
    public init(key: [UInt8], cipher: NoiseCipher = .chaChaPoly) {
        self.key = key
        self.cipher = cipher
    }

    /// Whether a key is set.
    public var hasKey: Bool { key != nil }

    /// Sets the nonce (Noise's SetNonce, used by transports that carry explicit counters).
    public mutating func setNonce(_ value: UInt64) { nonce = value }

    /// The 12 nonce bytes for a counter: 4 zero bytes, then the counter in the cipher's byte order.
    static func nonceBytes(_ n: UInt64, _ cipher: NoiseCipher) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 {
            let byte = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i)))
            bytes[cipher == .chaChaPoly ? 4 + i : 11 - i] = byte
        }
        return bytes
    }

    /// The AEAD that implements a Noise cipher.
    static func aead(_ cipher: NoiseCipher) -> AEAD { cipher == .chaChaPoly ? .chaCha20Poly1305 : .aes256GCM }

    /// Seals `plaintext`: ciphertext and tag, appended to `out`.
    static func seal(_ cipher: NoiseCipher, key: [UInt8], counter: UInt64, ad: some Collection<UInt8>,
                     plaintext: some Collection<UInt8>, into out: inout [UInt8]) throws(NoiseError) {
        do {
            try aead(cipher).seal(key: key, nonce: nonceBytes(counter, cipher), ad: ad, plaintext: plaintext, into: &out)
        } catch {
            throw NoiseError("\(cipher.rawValue) failed: \(error)")
        }
    }

    /// Opens ciphertext `c` with tag `t`: the plaintext.
    static func open(_ cipher: NoiseCipher, key: [UInt8], counter: UInt64, ad: some Collection<UInt8>,
                     ciphertext c: some Collection<UInt8>, tag t: some Collection<UInt8>) throws(NoiseError) -> [UInt8] {
        do {
            return try aead(cipher).open(key: key, nonce: nonceBytes(counter, cipher), ad: ad, ciphertext: c, tag: t)
        } catch {
            throw NoiseError("a message failed authentication (changed in transit, or another key)")
        }
    }

    /// EncryptWithAd: ciphertext with its 16-byte tag appended; the plaintext unchanged without a key.
    /// - Throws: ``NoiseError`` when the nonce is used up.
    public mutating func encrypt(ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        var out = [UInt8]()
        out.reserveCapacity(plaintext.count + Self.tagLength)
        try Self.seal(cipher, key: key, counter: nonce, ad: ad, plaintext: plaintext, into: &out)
        nonce += 1
        return out
    }

    /// DecryptWithAd: the plaintext of `ciphertext` (which ends with its tag); the input unchanged
    /// without a key. The nonce advances only when the message authenticates.
    /// - Throws: ``NoiseError`` when it does not authenticate, is shorter than a tag, or the nonce is used up.
    public mutating func decrypt(ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        guard ciphertext.count >= Self.tagLength else { throw NoiseError("a message shorter than its authentication tag") }
        let split = ciphertext.count - Self.tagLength
        let plaintext = try Self.open(cipher, key: key, counter: nonce, ad: ad, ciphertext: ciphertext[..<split], tag: ciphertext[split...])
        nonce += 1
        return plaintext
    }

    /// A whole record frame, `header | ciphertext | tag`, for `kind | body` under an explicit counter
    /// (carried in clear in `header`, which is also the associated data). Copies: the plaintext is
    /// assembled once, the sealed box is copied once into the frame.
    func sealFrame(counter: UInt64, header: [UInt8], kind: UInt8, body: [UInt8]) throws(NoiseError) -> [UInt8] {
        var frame = [UInt8]()
        var plaintext = [UInt8]()
        try sealFrame(counter: counter, header: header, kind: kind, body: body, into: &frame, scratch: &plaintext)
        return frame
    }

    /// ``sealFrame(counter:header:kind:body:)`` into buffers the caller keeps from record to record:
    /// `frame` is replaced by the frame and `scratch` holds the plaintext while it is sealed. Both
    /// keep their capacity, so a session that hands the same two buffers back each time allocates
    /// neither of them per record.
    func sealFrame(counter: UInt64, header: [UInt8], kind: UInt8, body: [UInt8],
                   into frame: inout [UInt8], scratch: inout [UInt8]) throws(NoiseError) {
        guard let key else { throw NoiseError("no key") }
        guard counter != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        scratch.removeAll(keepingCapacity: true)
        scratch.reserveCapacity(body.count + 1)
        scratch.append(kind)
        scratch.append(contentsOf: body)
        frame.removeAll(keepingCapacity: true)
        frame.reserveCapacity(header.count + scratch.count + Self.tagLength)
        frame.append(contentsOf: header)
        try Self.seal(cipher, key: key, counter: counter, ad: header, plaintext: scratch, into: &frame)
    }

    /// Opens a record frame (`header` of `headerLength` bytes, then ciphertext and tag) under an
    /// explicit counter: the kind and the body.
    func openFrame(counter: UInt64, frame: [UInt8], headerLength: Int) throws(NoiseError) -> (kind: UInt8, body: [UInt8]) {
        guard let key else { throw NoiseError("no key") }
        guard counter != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        guard frame.count >= headerLength + Self.tagLength + 1 else { throw NoiseError("a record shorter than its tag") }
        let split = frame.count - Self.tagLength
        let plaintext = try Self.open(cipher, key: key, counter: counter, ad: frame[0..<headerLength],
                                      ciphertext: frame[headerLength..<split], tag: frame[split...])
        guard let kind = plaintext.first else { throw NoiseError("an empty record") }
        return (kind, Array(plaintext.dropFirst()))
    }
}
