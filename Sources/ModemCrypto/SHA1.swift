import CLibCrypto

/// SHA-1, for the one protocol here that still names it: the WebSocket opening handshake (RFC 6455's
/// `Sec-WebSocket-Accept`), where it proves the server read the request, not a secret. Never for
/// anything that must resist collisions.
public enum SHA1 {
    /// The digest length in bytes.
    public static let digestLength = 20

    /// The SHA-1 digest of `data`.
    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digestLength)
        var length: UInt32 = 0
        withBytes(data) { p in
            out.withUnsafeMutableBufferPointer { o in _ = EVP_Digest(p.baseAddress, p.count, o.baseAddress, &length, EVP_sha1(), nil) }
        }
        return out
    }
}
