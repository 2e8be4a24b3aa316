import HubCore
import HTTPTypes

/// An answer of the `/v1` API other than success; the JSend middleware renders it.
public enum HubAPIError: Error, Sendable, Equatable {
    /// 400 `fail` naming the field.
    case badRequest(String, field: String? = nil)
    /// 401 `fail` with a Bearer challenge; the associated text is the `error_description` of an
    /// `invalid_token` (nil: no token was sent, so no error code, as RFC 6750 section 3.1 says).
    case unauthorized(String?)
    /// 403 `fail`.
    case forbidden(String)
    /// 404 `fail`.
    case notFound(String)
    /// 405 `fail` with `Allow`.
    case methodNotAllowed(allow: [String])
    /// 409 `fail`.
    case conflict(String)
    /// 413 `fail`.
    case tooLarge
    /// 415 `fail`.
    case unsupportedMediaType(String)
    /// 429 `fail` with `Retry-After`.
    case tooManyRequests(retryAfter: Int)
    /// 500 `error` (the message is generic; details go to the log).
    case internalError(String)

    /// The HTTP status.
    public var status: HTTPResponse.Status {
        switch self {
        case .badRequest: return .badRequest
        case .unauthorized: return .unauthorized
        case .forbidden: return .forbidden
        case .notFound: return .notFound
        case .methodNotAllowed: return .methodNotAllowed
        case .conflict: return .conflict
        case .tooLarge: return .contentTooLarge
        case .unsupportedMediaType: return .unsupportedMediaType
        case .tooManyRequests: return .tooManyRequests
        case .internalError: return .internalServerError
        }
    }

    /// The JSend body.
    public var body: String {
        switch self {
        case .badRequest(let m, let f): return JSend.fail(m, field: f)
        case .unauthorized(let d): return JSend.fail(d ?? "a Bearer token is required")
        case .forbidden(let m), .notFound(let m), .conflict(let m): return JSend.fail(m)
        case .methodNotAllowed(let allow): return JSend.fail("method not allowed; allowed: \(allow.joined(separator: ", "))")
        case .tooLarge: return JSend.fail("request body is larger than \(Limits.maxBodyBytes) bytes")
        case .unsupportedMediaType(let m): return JSend.fail(m)
        case .tooManyRequests: return JSend.fail("too many requests")
        case .internalError(let m): return JSend.error(m)
        }
    }

    /// Extra headers: `WWW-Authenticate`, `Allow`, `Retry-After`.
    public var headers: HTTPFields {
        var h = HTTPFields()
        switch self {
        case .unauthorized(let d):
            if let d {
                h[.wwwAuthenticate] = "Bearer realm=\"\(HubCore.realm)\", error=\"invalid_token\", error_description=\"\(d)\""
            } else {
                h[.wwwAuthenticate] = "Bearer realm=\"\(HubCore.realm)\""
            }
        case .methodNotAllowed(let allow): h[.allow] = allow.joined(separator: ", ")
        case .tooManyRequests(let s): h[.retryAfter] = String(s)
        default: break
        }
        return h
    }
}
