import CLibCrypto
import CSodium

/// SHA-256, all at once (``hash(_:)``) or streamed (``update(_:)`` then ``finalize()``), on OpenSSL's
/// libcrypto (which uses the CPU's SHA extensions or vector code: the hashing of whole files is the
/// biggest CPU cost of a transfer). A value: a copy goes on from where the original was.
public struct SHA256Hasher: @unchecked Sendable {
    /// The digest length in bytes.
    public static let digestLength = 32

    /// The OpenSSL context, shared between copies until one of them changes (copy on write).
    private final class Context {
        let ctx: OpaquePointer
        init() {
            guard let c = EVP_MD_CTX_new(), EVP_DigestInit_ex(c, EVP_sha256(), nil) == 1 else {
                fatalError("OpenSSL could not start a SHA-256 context (out of memory)")
            }
            ctx = c
        }
        init(copying other: Context) {
            guard let c = EVP_MD_CTX_new(), EVP_MD_CTX_copy_ex(c, other.ctx) == 1 else {
                fatalError("OpenSSL could not copy a SHA-256 context (out of memory)")
            }
            ctx = c
        }
        deinit { EVP_MD_CTX_free(ctx) }
    }
    private var context = Context()

    /// A hasher that has seen nothing.
    public init() {}

    private mutating func unique() -> OpaquePointer {
        if !isKnownUniquelyReferenced(&context) { context = Context(copying: context) }
        return context.ctx
    }

    /// Feeds bytes.
    public mutating func update(_ data: some Collection<UInt8>) {
        guard !data.isEmpty else { return }
        let ctx = unique()
        withBytes(data) { p in _ = EVP_DigestUpdate(ctx, p.baseAddress, p.count) }
    }

    /// Feeds raw bytes.
    public mutating func update(bytes: UnsafeRawBufferPointer) {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(unique(), start, bytes.count)
    }

    /// The digest of everything fed so far (the hasher itself is left as it was).
    public func finalize() -> [UInt8] {
        let copy = Context(copying: context)
        var out = [UInt8](repeating: 0, count: Self.digestLength)
        var length: UInt32 = 0
        out.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(copy.ctx, $0.baseAddress, &length) }
        return out
    }

    /// The SHA-256 digest of `data`.
    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digestLength)
        var length: UInt32 = 0
        withBytes(data) { p in
            out.withUnsafeMutableBufferPointer { o in _ = EVP_Digest(p.baseAddress, p.count, o.baseAddress, &length, EVP_sha256(), nil) }
        }
        return out
    }
}

/// HMAC-SHA-256 (RFC 2104) and HKDF-SHA-256 (RFC 5869).
public enum HMACSHA256 {
    /// The code's length in bytes.
    public static let length = 32

    /// HMAC-SHA-256 of `message` under `key` (any length).
    public static func code(for message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        Sodium.ensure()
        var state = crypto_auth_hmacsha256_state()
        var out = [UInt8](repeating: 0, count: length)
        withBytes(key) { k in _ = crypto_auth_hmacsha256_init(&state, base(k), k.count) }
        withBytes(message) { m in _ = crypto_auth_hmacsha256_update(&state, base(m), UInt64(m.count)) }
        out.withUnsafeMutableBufferPointer { _ = crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        return out
    }

    /// HKDF-SHA-256: extract with `salt` (empty: 32 zero bytes, as RFC 5869 says), expand with `info`
    /// to `length` bytes (at most 255 x 32).
    public static func hkdf(inputKeyMaterial: some Collection<UInt8>, salt: some Collection<UInt8>,
                            info: some Collection<UInt8>, length: Int) -> [UInt8] {
        precondition(length >= 0 && length <= 255 * Self.length, "HKDF-SHA-256 gives at most 8160 bytes")
        let saltBytes = salt.isEmpty ? [UInt8](repeating: 0, count: Self.length) : Array(salt)
        let prk = code(for: inputKeyMaterial, key: saltBytes)
        var out: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        let infoBytes = Array(info)
        while out.count < length {
            block = code(for: block + infoBytes + [counter], key: prk)
            out += block
            counter &+= 1
        }
        return Array(out.prefix(length))
    }
}
