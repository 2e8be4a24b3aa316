import ModemCrypto
import ModemRuntime
import Testing

private func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex) ?? [] }

/// ModemCrypto against published answers (RFCs and the primitives' own test vectors), and its
/// refusals. Messaging's Noise vectors exercise the same primitives through the handshake.
@Suite("Crypto vectors")
struct CryptoVectorTests {
    @Test("SHA-256 and SHA-1 of \"abc\" (FIPS 180); SHA-256 fed in pieces equals SHA-256 of the whole")
    func hashes() {
        #expect(SHA256Hasher.hash(Array("abc".utf8))
                == bytes("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(SHA1.hash(Array("abc".utf8)) == bytes("a9993e364706816aba3e25717850c26c9cd0d89d"))
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = SHA256Hasher()
        hasher.update(data[0..<1])
        hasher.update(data[1..<500])
        hasher.update(data[500...])
        #expect(hasher.finalize() == SHA256Hasher.hash(data))
    }

    @Test("HMAC-SHA-256 and HKDF-SHA-256 give the published answers (RFC 4231 case 2, RFC 5869 cases 1 and 3)")
    func hmacAndHKDFVectors() {
        #expect(HMACSHA256.code(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
                == bytes("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        #expect(HMACSHA256.hkdf(inputKeyMaterial: ikm, salt: Array(0...12), info: Array(0xf0...0xf9), length: 42)
                == bytes("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
        #expect(HMACSHA256.hkdf(inputKeyMaterial: ikm, salt: [UInt8](), info: [UInt8](), length: 42)
                == bytes("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    @Test("X25519: RFC 7748 section 6.1, both public keys and the shared secret from both sides")
    func x25519() throws {
        let alice = try X25519PrivateKey(rawRepresentation: bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bob = try X25519PrivateKey(rawRepresentation: bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        #expect(alice.publicKey.rawRepresentation == bytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        #expect(bob.publicKey.rawRepresentation == bytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        let shared = bytes("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(try alice.sharedSecret(with: bob.publicKey) == shared)
        #expect(try bob.sharedSecret(with: alice.publicKey) == shared)
        #expect(throws: CryptoError.self) { _ = try X25519PrivateKey(rawRepresentation: [1, 2, 3]) }
    }

    @Test("ChaCha20-Poly1305: RFC 8439 section 2.8.2; a changed byte or another AD does not open")
    func chaCha20Poly1305() throws {
        let key = Array(UInt8(0x80)...UInt8(0x9f))
        let nonce = bytes("070000004041424344454647")
        let ad = bytes("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        var sealed: [UInt8] = []
        try AEAD.chaCha20Poly1305.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext, into: &sealed)
        #expect(sealed == bytes("d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116" + "1ae10b594f09e26a7e902ecbd0600691"))
        let ciphertext = sealed.dropLast(AEAD.tagLength), tag = sealed.suffix(AEAD.tagLength)
        #expect(try AEAD.chaCha20Poly1305.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext, tag: tag) == plaintext)
        var changed = Array(ciphertext)
        changed[5] ^= 1
        #expect(throws: CryptoError.self) { _ = try AEAD.chaCha20Poly1305.open(key: key, nonce: nonce, ad: ad, ciphertext: changed, tag: tag) }
        #expect(throws: CryptoError.self) { _ = try AEAD.chaCha20Poly1305.open(key: key, nonce: nonce, ad: [1], ciphertext: ciphertext, tag: tag) }
    }

    @Test("AES-256-GCM: the all-zero key and nonce (GCM spec test cases 13 and 14); wrong lengths are refused")
    func aes256GCM() throws {
        let key = [UInt8](repeating: 0, count: 32), nonce = [UInt8](repeating: 0, count: 12)
        var empty: [UInt8] = []
        try AEAD.aes256GCM.seal(key: key, nonce: nonce, ad: [UInt8](), plaintext: [UInt8](), into: &empty)
        #expect(empty == bytes("530f8afbc74536b9a963b4f1c4cb738b"))
        var block: [UInt8] = []
        try AEAD.aes256GCM.seal(key: key, nonce: nonce, ad: [UInt8](), plaintext: [UInt8](repeating: 0, count: 16), into: &block)
        #expect(block == bytes("cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"))
        #expect(try AEAD.aes256GCM.open(key: key, nonce: nonce, ad: [UInt8](), ciphertext: block.prefix(16), tag: block.suffix(16))
                == [UInt8](repeating: 0, count: 16))
        var out: [UInt8] = []
        #expect(throws: CryptoError.self) { try AEAD.aes256GCM.seal(key: [1], nonce: nonce, ad: [UInt8](), plaintext: [UInt8](), into: &out) }
        #expect(out.isEmpty)
    }

    @Test("secretbox opens what it sealed, and nothing changed or under another key")
    func secretBox() throws {
        let key = [UInt8](repeating: 7, count: SecretBox.keyLength), nonce = [UInt8](repeating: 9, count: SecretBox.nonceLength)
        let sealed = try SecretBox.seal(Array("hello".utf8), key: key, nonce: nonce)
        #expect(sealed.count == 5 + SecretBox.tagLength)
        #expect(try SecretBox.open(sealed, key: key, nonce: nonce) == Array("hello".utf8))
        var changed = sealed
        changed[changed.count - 1] ^= 0x80
        #expect(throws: CryptoError.self) { _ = try SecretBox.open(changed, key: key, nonce: nonce) }
        #expect(throws: CryptoError.self) { _ = try SecretBox.open(sealed, key: [UInt8](repeating: 8, count: 32), nonce: nonce) }
    }

    @Test("Ed25519 group: 1·B is the base point, B + identity = B, a scalar and its negation cancel")
    func ed25519Group() throws {
        var one = [UInt8](repeating: 0, count: 32)
        one[0] = 1
        let base = try Ed25519Group.multiplyBase(one)
        #expect(base == bytes("5866666666666666666666666666666666666666666666666666666666666666"))
        #expect(try Ed25519Group.add(base, Ed25519Group.identity) == base)
        var three = one
        three[0] = 3
        let p = try Ed25519Group.multiplyBase(three)
        let q = try Ed25519Group.multiplyBase(Ed25519Group.negate(three))
        #expect(try Ed25519Group.add(p, q) == Ed25519Group.identity)
        #expect(!Ed25519Group.isValidElement([UInt8](repeating: 0xff, count: 32)))
    }

    @Test("constant-time comparison: equal, different, different lengths")
    func constantTime() {
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(secureRandomBytes(16).count == 16)
    }
}
