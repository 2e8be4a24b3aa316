import Crypto
import Foundation

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

    /// A whole record frame, `header | ciphertext | tag`, for `kind | body` under an explicit counter
    /// (carried in clear in `header`, which is also the associated data). Copies: the plaintext is
    /// assembled once, the sealed box is copied once into the frame.
    func sealFrame(counter: UInt64, header: [UInt8], kind: UInt8, body: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { throw NoiseError("no key") }
        guard counter != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        var plaintext = [UInt8]()
        plaintext.reserveCapacity(body.count + 1)
        plaintext.append(kind)
        plaintext.append(contentsOf: body)
        let box: ChaChaPoly.SealedBox
        do {
            box = try ChaChaPoly.seal(plaintext, using: key, nonce: Self.nonceBytes(counter), authenticating: header)
        } catch {
            throw NoiseError("ChaChaPoly failed: \(error)")
        }
        let combined = box.combined  // nonce (12) | ciphertext | tag
        var frame = [UInt8]()
        frame.reserveCapacity(header.count + combined.count - 12)
        frame.append(contentsOf: header)
        frame.append(contentsOf: combined.dropFirst(12))
        return frame
    }

    /// Opens a record frame (`header` of `headerLength` bytes, then ciphertext and tag) under an
    /// explicit counter: the kind and the body.
    func openFrame(counter: UInt64, frame: [UInt8], headerLength: Int) throws(NoiseError) -> (kind: UInt8, body: [UInt8]) {
        guard let key else { throw NoiseError("no key") }
        guard counter != UInt64.max else { throw NoiseError("the nonce is used up (2^64 - 1 messages)") }
        guard frame.count >= headerLength + Self.tagLength + 1 else { throw NoiseError("a record shorter than its tag") }
        let split = frame.count - Self.tagLength
        let plaintext: Data
        do {
            let box = try ChaChaPoly.SealedBox(nonce: Self.nonceBytes(counter), ciphertext: frame[headerLength..<split], tag: frame[split...])
            plaintext = try ChaChaPoly.open(box, using: key, authenticating: frame[0..<headerLength])
        } catch {
            throw NoiseError("a message failed authentication (changed in transit, or another key)")
        }
        guard let kind = plaintext.first else { throw NoiseError("an empty record") }
        return (kind, Array(plaintext.dropFirst()))
    }
}
