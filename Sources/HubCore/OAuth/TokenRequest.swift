import Foundation

/// The client credentials a request presented, by one method (RFC 6749 section 2.3.1).
public struct PresentedClient: Sendable, Equatable {
    /// How the client authenticated.
    public enum Method: String, Sendable { case basic = "client_secret_basic", post = "client_secret_post" }
    public var id: String
    public var secret: String
    public var method: Method
    public init(id: String, secret: String, method: Method) { self.id = id; self.secret = secret; self.method = method }
}

/// The grants the token endpoint accepts.
public enum TokenGrant: Sendable, Equatable {
    case clientCredentials
    case password(username: String, password: String)
    case refreshToken(String)
}

/// A token or revocation request taken apart: who the client claims to be, and what it asks for.
public enum OAuthRequestParser {
    /// The only scope the hub knows.
    public static let scope = "hub"

    /// Extracts the client's credentials from the `Authorization` header value and the form.
    /// - Returns: nil when the request carries no client authentication (an `invalid_client` for the caller).
    /// - Throws: `invalid_request` for two methods at once or a malformed Basic header; `invalid_client`
    ///   for a Basic header of another scheme's shape that names no id.
    public static func client(authorization: String?, form: FormBody) throws(OAuthError) -> PresentedClient? {
        let bodyID = form["client_id"], bodySecret = form["client_secret"]
        if let header = authorization {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "basic" {
                guard let raw = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
                      let text = String(data: raw, encoding: .utf8),
                      let colon = text.firstIndex(of: ":")
                else { throw OAuthError(.invalidRequest, "malformed Basic authorization") }
                // RFC 6749 2.3.1: id and secret are form-urlencoded before Basic encoding.
                guard let id = FormBody.decode(text[..<colon]), let secret = FormBody.decode(text[text.index(after: colon)...])
                else { throw OAuthError(.invalidRequest, "malformed Basic authorization") }
                if bodySecret != nil { throw OAuthError(.invalidRequest, "client authenticated by more than one method") }
                if let bid = bodyID, bid != id { throw OAuthError(.invalidRequest, "client_id differs from the Basic credentials") }
                guard !id.isEmpty else { return nil }
                return PresentedClient(id: id, secret: secret, method: .basic)
            }
            // Another scheme (e.g. a Bearer header sent by mistake) is not client authentication.
        }
        guard let id = bodyID else { return nil }
        guard let secret = bodySecret else { return nil }
        return PresentedClient(id: id, secret: secret, method: .post)
    }

    /// Reads `grant_type` and its parameters.
    public static func grant(_ form: FormBody) throws(OAuthError) -> TokenGrant {
        guard let type = form["grant_type"] else { throw OAuthError(.invalidRequest, "grant_type is missing") }
        let grant: TokenGrant
        switch type {
        case "client_credentials":
            grant = .clientCredentials
        case "password":
            guard let u = form["username"] else { throw OAuthError(.invalidRequest, "username is missing") }
            guard let p = form["password"] else { throw OAuthError(.invalidRequest, "password is missing") }
            grant = .password(username: u, password: p)
        case "refresh_token":
            guard let t = form["refresh_token"] else { throw OAuthError(.invalidRequest, "refresh_token is missing") }
            grant = .refreshToken(t)
        default:
            throw OAuthError(.unsupportedGrantType, "grant_type '\(type.prefix(40))' is not supported")
        }
        if let s = form["scope"] {
            let wanted = Set(s.split(separator: " ").map(String.init))
            guard wanted.isSubset(of: [scope]) else { throw OAuthError(.invalidScope, "the only scope is '\(scope)'") }
        }
        return grant
    }
}

/// The successful token answer (RFC 6749 section 5.1).
public struct TokenResponse: Codable, Sendable, Equatable {
    public var access_token: String
    public var token_type: String
    public var expires_in: Int
    public var refresh_token: String?
    public var scope: String
    public init(accessToken: String, expiresIn: Int, refreshToken: String?, scope: String = OAuthRequestParser.scope) {
        self.access_token = accessToken
        self.token_type = "Bearer"
        self.expires_in = expiresIn
        self.refresh_token = refreshToken
        self.scope = scope
    }
}
