import Foundation

/// What went wrong in a call to the hub. Every case names the problem; none carries a token or secret.
public enum HubClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No access token: call `authenticateClientCredentials()` or `authenticateResourceOwner(...)` first.
    case notAuthenticated
    /// The hub refused the access token (401 `invalid_token`: expired, revoked or unknown), after the
    /// automatic refresh and the `oauthError` handler had their chance.
    case invalidToken(description: String?)
    /// The token or revocation endpoint answered an RFC 6749 error (`invalid_client`, `invalid_grant`,
    /// `unauthorized_client`, `invalid_request`, ...).
    case oauth(status: Int, error: String, description: String?)
    /// JSend `fail`: the request was refused (400, 403, 404, 409, 413, ...); `field` names the bad input.
    case fail(status: Int, message: String, field: String?)
    /// JSend `error`: the hub failed (5xx).
    case server(status: Int, message: String)
    /// The answer was not what the API promises (not JSON, not JSend, a missing member).
    case unexpectedResponse(status: Int, detail: String)
    /// The hub could not be reached (connection refused, TLS refused, timeout, ...).
    case transport(String)
    /// Bad input on this side (an invalid URL or name) before anything was sent.
    case invalidArgument(String)
    /// The groups socket closed without `close()` being called (dropped, or closed by the hub).
    case socketClosed(String)

    public var description: String {
        switch self {
        case .notAuthenticated:
            return "not authenticated: get a token with authenticateClientCredentials() or authenticateResourceOwner()"
        case .invalidToken(let d):
            return "the hub refused the access token (invalid_token)" + (d.map { ": \($0)" } ?? "")
        case .oauth(let status, let error, let d):
            return "OAuth error \(error) (HTTP \(status))" + (d.map { ": \($0)" } ?? "")
        case .fail(let status, let message, let field):
            return "refused (HTTP \(status)): \(message)" + (field.map { " [field \($0)]" } ?? "")
        case .server(let status, let message):
            return "hub error (HTTP \(status)): \(message)"
        case .unexpectedResponse(let status, let detail):
            return "unexpected answer (HTTP \(status)): \(detail)"
        case .transport(let what):
            return "cannot reach the hub: \(what)"
        case .invalidArgument(let what):
            return "invalid argument: \(what)"
        case .socketClosed(let why):
            return "the groups socket closed: \(why)"
        }
    }
}
