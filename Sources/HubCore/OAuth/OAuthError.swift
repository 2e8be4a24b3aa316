/// An OAuth 2.0 error answer of the token and revocation endpoints (RFC 6749 section 5.2, RFC 7009).
public struct OAuthError: Error, Equatable, Sendable {
    /// The registered error codes the hub uses.
    public enum Code: String, Sendable, Equatable {
        case invalidRequest = "invalid_request"
        case invalidClient = "invalid_client"
        case invalidGrant = "invalid_grant"
        case unauthorizedClient = "unauthorized_client"
        case unsupportedGrantType = "unsupported_grant_type"
        case invalidScope = "invalid_scope"
        case unsupportedTokenType = "unsupported_token_type"
    }

    public var code: Code
    /// Human-readable text for `error_description` (never holds a secret or a token).
    public var description: String
    /// Seconds for `Retry-After` when the answer is 429 (rate limited), else nil.
    public var retryAfter: Int?

    public init(_ code: Code, _ description: String, retryAfter: Int? = nil) {
        self.code = code
        self.description = description
        self.retryAfter = retryAfter
    }

    /// A rate-limit refusal: 429 `invalid_request` "too many attempts" with `Retry-After`.
    public static func tooManyAttempts(retryAfter: Int) -> OAuthError {
        OAuthError(.invalidRequest, "too many attempts", retryAfter: max(1, retryAfter))
    }

    /// The HTTP status: 401 for `invalid_client`, 429 when rate limited, else 400.
    public var status: Int {
        if retryAfter != nil { return 429 }
        return code == .invalidClient ? 401 : 400
    }

    /// The `WWW-Authenticate` challenge to send with it (only for `invalid_client`).
    public var wwwAuthenticate: String? {
        code == .invalidClient && retryAfter == nil ? "Basic realm=\"\(HubCore.realm)\"" : nil
    }

    /// The JSON body: `{"error":..., "error_description":...}`.
    public var body: [String: String] { ["error": code.rawValue, "error_description": description] }
}
