#if canImport(Glibc)
import Glibc
#endif
import CLibSSL

/// Whom a `wss://` connection trusts: the system's store of certificate authorities (OpenSSL's default
/// paths, so `SSL_CERT_FILE` and `SSL_CERT_DIR` apply) and, beside it, the certificates of
/// ``certificateFiles`` (`modem ... --ca FILE`). Verification is never off: the server's chain must end
/// at one of these and its certificate must name the URL's host (a DNS name, or an IP address for an IP
/// literal).
public struct TLSTrust: Sendable, Equatable {
    /// PEM files of certificates trusted beside the system's store (a private CA, or a server's own
    /// self-signed certificate).
    public var certificateFiles: [String]

    /// Trust the system's store and the certificates in `certificateFiles`.
    public init(certificateFiles: [String] = []) {
        self.certificateFiles = certificateFiles
    }

    /// The system's store alone.
    public static let system = TLSTrust()

    /// Checks that every file of ``certificateFiles`` can be read and holds at least one PEM certificate.
    /// - Throws: ``WormholeError`` (`.local`) naming the file and OpenSSL's reason.
    public func validate() throws(WormholeError) {
        guard !certificateFiles.isEmpty else { return }
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw WormholeError(.local, "TLS: \(TLSStream.openSSLReason(fallback: "OpenSSL could not make a context"))")
        }
        defer { SSL_CTX_free(context) }
        try load(into: context)
    }

    /// Adds the system's store and the files to `context`'s trusted certificates.
    func load(into context: OpaquePointer) throws(WormholeError) {
        ERR_clear_error()
        // SSL_CERT_FILE / SSL_CERT_DIR, else OpenSSL's own folder; a missing store leaves nothing trusted
        // (every server then fails verification, with a message saying so), it is not an error here.
        _ = SSL_CTX_set_default_verify_paths(context)
        ERR_clear_error()
        for file in certificateFiles {
            guard access(file, R_OK) == 0 else {
                throw WormholeError(.local, "\(file): \(String(cString: strerror(errno)).lowercased())")
            }
            guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                let reason = TLSStream.openSSLReason(fallback: "not PEM")
                throw WormholeError(.local, "\(file): no PEM certificate could be read (\(reason))")
            }
        }
    }
}
