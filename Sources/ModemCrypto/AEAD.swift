import CLibCrypto
import CSodium

/// The two AEADs of Noise (and of our sessions): ChaCha20-Poly1305 (RFC 8439, libsodium's IETF
/// construction) and AES-256-GCM (OpenSSL's libcrypto, which uses the CPU's AES instructions where
/// there are any and is correct everywhere). Keys are 32 bytes, nonces 12, tags 16.
public enum AEAD: Sendable {
    case chaCha20Poly1305
    case aes256GCM

    /// Key length in bytes.
    public static let keyLength = 32
    /// Nonce length in bytes.
    public static let nonceLength = 12
    /// Tag length in bytes.
    public static let tagLength = 16

    /// Seals `plaintext`: its ciphertext, then the 16-byte tag, appended to `out`.
    /// - Throws: ``CryptoError`` when the key or nonce has the wrong length.
    public func seal(key: [UInt8], nonce: [UInt8], ad: some Collection<UInt8>, plaintext: some Collection<UInt8>,
                     into out: inout [UInt8]) throws(CryptoError) {
        guard key.count == Self.keyLength, nonce.count == Self.nonceLength else {
            throw CryptoError("AEAD keys are 32 bytes and nonces 12")
        }
        let start = out.count
        let n = plaintext.count
        out.append(contentsOf: repeatElement(0, count: n + Self.tagLength))
        let ok: Bool = out.withUnsafeMutableBufferPointer { o in
            withBytes(plaintext) { p in
                withBytes(ad) { a in
                    let dst = o.baseAddress! + start
                    switch self {
                    case .chaCha20Poly1305:
                        Sodium.ensure()
                        var clen: UInt64 = 0
                        return crypto_aead_chacha20poly1305_ietf_encrypt(dst, &clen, base(p), UInt64(n), base(a), UInt64(a.count),
                                                                         nil, nonce, key) == 0
                    case .aes256GCM:
                        return OpenSSLGCM.seal(key: key, nonce: nonce, ad: a, plaintext: p, out: dst)
                    }
                }
            }
        }
        guard ok else {
            out.removeLast(out.count - start)
            throw CryptoError("sealing failed")
        }
    }

    /// Opens `ciphertext` with its `tag`: the plaintext.
    /// - Throws: ``CryptoError`` when it does not authenticate (changed in transit, or another key).
    public func open(key: [UInt8], nonce: [UInt8], ad: some Collection<UInt8>, ciphertext: some Collection<UInt8>,
                     tag: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        guard key.count == Self.keyLength, nonce.count == Self.nonceLength, tag.count == Self.tagLength else {
            throw CryptoError("AEAD keys are 32 bytes, nonces 12 and tags 16")
        }
        let n = ciphertext.count
        var out = [UInt8](repeating: 0, count: n)
        let ok: Bool = out.withUnsafeMutableBufferPointer { o in
            withBytes(ciphertext) { c in
                withBytes(tag) { t in
                    withBytes(ad) { a in
                        switch self {
                        case .chaCha20Poly1305:
                            Sodium.ensure()
                            return crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                                o.baseAddress ?? UnsafeMutablePointer(mutating: base(c)), nil, base(c), UInt64(n), base(t),
                                base(a), UInt64(a.count), nonce, key) == 0
                        case .aes256GCM:
                            return OpenSSLGCM.open(key: key, nonce: nonce, ad: a, ciphertext: c, tag: t, out: o.baseAddress)
                        }
                    }
                }
            }
        }
        guard ok else { throw CryptoError("a message failed authentication (changed in transit, or another key)") }
        return out
    }
}

/// AES-256-GCM through OpenSSL's EVP interface, one context per call.
enum OpenSSLGCM {
    static func seal(key: [UInt8], nonce: [UInt8], ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
                     out: UnsafeMutablePointer<UInt8>) -> Bool {
        guard let ctx = EVP_CIPHER_CTX_new() else { return false }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var len: Int32 = 0
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1,
              EVP_EncryptInit_ex(ctx, nil, nil, key, nonce) == 1 else { return false }
        if ad.count > 0 {
            guard ad.count <= Int(Int32.max), EVP_EncryptUpdate(ctx, nil, &len, base(ad), Int32(ad.count)) == 1 else { return false }
        }
        var written = 0
        var offset = 0
        while offset < plaintext.count {
            let chunk = min(plaintext.count - offset, 1 << 30)
            guard EVP_EncryptUpdate(ctx, out + written, &len, base(plaintext) + offset, Int32(chunk)) == 1 else { return false }
            written += Int(len)
            offset += chunk
        }
        guard EVP_EncryptFinal_ex(ctx, out + written, &len) == 1 else { return false }
        written += Int(len)
        return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(AEAD.tagLength), out + written) == 1
    }

    static func open(key: [UInt8], nonce: [UInt8], ad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
                     tag: UnsafeRawBufferPointer, out: UnsafeMutablePointer<UInt8>?) -> Bool {
        guard let ctx = EVP_CIPHER_CTX_new() else { return false }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var len: Int32 = 0
        var scratch: UInt8 = 0
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1,
              EVP_DecryptInit_ex(ctx, nil, nil, key, nonce) == 1 else { return false }
        if ad.count > 0 {
            guard ad.count <= Int(Int32.max), EVP_DecryptUpdate(ctx, nil, &len, base(ad), Int32(ad.count)) == 1 else { return false }
        }
        var written = 0
        var offset = 0
        while offset < ciphertext.count, let out {
            let chunk = min(ciphertext.count - offset, 1 << 30)
            guard EVP_DecryptUpdate(ctx, out + written, &len, base(ciphertext) + offset, Int32(chunk)) == 1 else { return false }
            written += Int(len)
            offset += chunk
        }
        var tagBytes = Array(UnsafeBufferPointer(start: base(tag), count: tag.count))
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tag.count), &tagBytes) == 1 else { return false }
        return withUnsafeMutablePointer(to: &scratch) { s in
            EVP_DecryptFinal_ex(ctx, (out.map { $0 + written }) ?? s, &len) == 1
        }
    }
}
