#if canImport(Glibc)
import Glibc
#endif

/// Why a ``KISSServer`` could not start or keep serving: an operating-system failure, with the C
/// call that failed and its `errno`.
public struct KISSServerError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What kind of failure it is, for callers that react to some of them.
    public enum Kind: Sendable, Hashable {
        /// The bind address is not an address or host name this machine can resolve.
        case invalidAddress
        /// Another socket is already listening on the address and port (`EADDRINUSE`).
        case addressInUse
        /// Not allowed, e.g. a port below 1024 without privileges (`EACCES`).
        case permissionDenied
        /// Any other failure of a socket call.
        case systemCallFailed
    }

    /// The kind of failure.
    public var kind: Kind
    /// The C call that failed, e.g. `bind`.
    public var operation: String
    /// Its `errno` (0 when it was not an `errno` failure, e.g. `getaddrinfo`).
    public var code: Int32
    /// The full one-line explanation.
    public var description: String

    /// Creates an error.
    public init(kind: Kind, operation: String, code: Int32, description: String) {
        self.kind = kind
        self.operation = operation
        self.code = code
        self.description = description
    }

    /// The failure of `operation` with `errno` `code`, explained in the context of `what` (e.g.
    /// "cannot listen on 127.0.0.1:8001").
    static func system(_ operation: String, code: Int32, what: String) -> KISSServerError {
        let text = String(cString: strerror(code))
        switch code {
        case EADDRINUSE:
            return KISSServerError(kind: .addressInUse, operation: operation, code: code,
                                   description: "\(what): the port is in use (another program, or another TNC, is listening on it): \(operation): \(text) (errno \(code))")
        case EACCES, EPERM:
            return KISSServerError(kind: .permissionDenied, operation: operation, code: code,
                                   description: "\(what): permission denied (ports below 1024 need privileges): \(operation): \(text) (errno \(code))")
        case EADDRNOTAVAIL:
            return KISSServerError(kind: .invalidAddress, operation: operation, code: code,
                                   description: "\(what): the address is not one of this machine's: \(operation): \(text) (errno \(code))")
        default:
            return KISSServerError(kind: .systemCallFailed, operation: operation, code: code,
                                   description: "\(what): \(operation): \(text) (errno \(code))")
        }
    }
}
