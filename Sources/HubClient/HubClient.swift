import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// The hub API's client (Bliep's API) in Swift form, for the hub (`modem-hub serve`): OAuth2 client credentials and
/// resource-owner tokens, the `/v1` API's JSend envelope, pagination, the account flow and groups over
/// REST. The groups socket is `HubGroupsConnection` (`connectGroups(user:)`).
///
/// Tokens are held in memory (`credentials`; `restore(_:)` and `onCredentialsChange` let a program keep
/// them). They never appear in a description, a log line or an error.
///
/// Invalid tokens: when the hub answers 401 to a `/v1` call, the client first refreshes a resource
/// owner's access token with its refresh token (once, shared by concurrent calls: refresh tokens rotate),
/// and retries. When that is impossible or fails, it forgets the refused token and calls ``oauthError``;
/// if the handler obtained a new token (e.g. by `authenticateClientCredentials()`), the call is retried
/// once with it, else it throws ``HubClientError/invalidToken(description:)``.
public final class HubClient: Sendable {
    /// What an `oauthError` handler gets: the client (to reauthenticate) and the error.
    public typealias OAuthErrorHandler = @Sendable (HubClient, HubClientError) async -> Void

    /// The hub's base URL (`http(s)://host:port`, no trailing slash).
    public let baseURL: String
    /// The OAuth client id.
    public let clientID: String
    private let clientSecret: String
    /// Seconds before a request is given up.
    public let timeout: TimeAmount

    private struct State {
        var credentials = HubCredentials()
        var insecure = false
        var oauthError: OAuthErrorHandler?
        var onChange: (@Sendable (HubCredentials) -> Void)?
        var refreshing: Task<HubTokenSet, any Error>?
    }
    private let state = Mutex(State())
    private let http: HTTPClient

    /// A client of the hub at `baseURL` with the OAuth client's id and secret (from
    /// `modem-hub client add`).
    /// - Throws: ``HubClientError/invalidArgument(_:)`` when the URL is not `http(s)://HOST[:PORT]`.
    public init(baseURL: String, clientID: String, clientSecret: String, timeout: Duration = .seconds(30)) throws {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil, url.query == nil
        else { throw HubClientError.invalidArgument("the hub URL must be http(s)://HOST[:PORT], got '\(baseURL)'") }
        guard !clientID.isEmpty, !clientSecret.isEmpty else {
            throw HubClientError.invalidArgument("the client id and secret must not be empty")
        }
        self.baseURL = base
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.timeout = .nanoseconds(max(1, timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
        self.http = hubHTTPClient
    }

    // MARK: - Settings and state

    /// Accept any certificate (self-signed, expired, another host's) from the hub, on every later request
    /// and groups socket. For development against a hub with a self-signed certificate ONLY: it turns off
    /// the protection TLS gives against anyone between you and the hub. Never in production. Off by default.
    public func allowInvalidCertificates() {
        state.withLock { $0.insecure = true }
    }

    /// Whether ``allowInvalidCertificates()`` was called.
    public var allowsInvalidCertificates: Bool { state.withLock { $0.insecure } }

    /// Called when the hub refuses a token that cannot be refreshed (see the type's description).
    public var oauthError: OAuthErrorHandler? {
        get { state.withLock { $0.oauthError } }
        set { state.withLock { $0.oauthError = newValue } }
    }

    /// Called with the new credentials whenever they change (obtained, refreshed, forgotten), e.g. to
    /// save them. Called outside the client's lock, on the task that changed them.
    public var onCredentialsChange: (@Sendable (HubCredentials) -> Void)? {
        get { state.withLock { $0.onChange } }
        set { state.withLock { $0.onChange = newValue } }
    }

    /// The tokens held now.
    public var credentials: HubCredentials { state.withLock { $0.credentials } }

    /// Takes tokens kept from an earlier run.
    public func restore(_ credentials: HubCredentials) {
        update { $0 = credentials }
    }

    /// Whether a client-credentials access token is held.
    public var isClientAuthorized: Bool { state.withLock { $0.credentials.client != nil } }

    /// Whether a resource owner's access token is held.
    public var isResourceOwnerAuthorized: Bool { state.withLock { $0.credentials.resourceOwner != nil } }

    /// The access token calls use now: the resource owner's if held, else the client's.
    var currentAccessToken: String? {
        state.withLock { ($0.credentials.resourceOwner ?? $0.credentials.client)?.accessToken }
    }

    private func update(_ change: (inout HubCredentials) -> Void) {
        let (creds, observer) = state.withLock { s -> (HubCredentials, (@Sendable (HubCredentials) -> Void)?) in
            change(&s.credentials)
            return (s.credentials, s.onChange)
        }
        observer?(creds)
    }

    // MARK: - OAuth2

    /// `isReachable`: whether the hub answers its metadata (`/.well-known/oauth-authorization-server`)
    /// within 5 seconds. False for a closed port, a refused certificate, or any other answer.
    public func isReachable() async -> Bool {
        do {
            let r = try await send(.GET, "/.well-known/oauth-authorization-server", timeout: .seconds(5))
            return r.status == 200
        } catch {
            return false
        }
    }

    /// Obtains a client-credentials token (anonymous calls: registration, groups as a device).
    @discardableResult
    public func authenticateClientCredentials() async throws -> HubTokenSet {
        let t = try await tokenRequest(["grant_type": "client_credentials"])
        update { $0.client = t }
        return t
    }

    /// Obtains a resource owner's tokens with the password grant (the client must be allowed it:
    /// `modem-hub client add NAME --password-grant`).
    @discardableResult
    public func authenticateResourceOwner(username: String, password: String) async throws -> HubTokenSet {
        let t = try await tokenRequest(["grant_type": "password", "username": username, "password": password])
        update { $0.resourceOwner = t }
        return t
    }

    /// Exchanges the resource owner's refresh token for new tokens (the refresh token rotates: the old one
    /// is dead afterwards). Concurrent calls share one exchange.
    @discardableResult
    public func refreshResourceOwner() async throws -> HubTokenSet {
        let task = state.withLock { s -> Task<HubTokenSet, any Error>? in
            if let t = s.refreshing { return t }
            guard let refresh = s.credentials.resourceOwner?.refreshToken else { return nil }
            let t = Task { try await self.tokenRequest(["grant_type": "refresh_token", "refresh_token": refresh]) }
            s.refreshing = t
            return t
        }
        guard let task else { throw HubClientError.notAuthenticated }
        do {
            let t = try await task.value
            update { $0.resourceOwner = t }
            state.withLock { if $0.refreshing == task { $0.refreshing = nil } }
            return t
        } catch {
            state.withLock { if $0.refreshing == task { $0.refreshing = nil } }
            throw error
        }
    }

    /// Revokes the client-credentials token at the hub (RFC 7009) and forgets it. Returns whether the hub
    /// confirmed (true also when there was none); the token is forgotten either way.
    @discardableResult
    public func deauthenticateClient() async -> Bool {
        let token = state.withLock { $0.credentials.client }
        update { $0.client = nil }
        guard let token else { return true }
        return await revoke(token.accessToken, hint: "access_token")
    }

    /// Revokes the resource owner's tokens at the hub (the refresh token's whole family, and with it the
    /// access tokens minted from it) and forgets them. Returns whether the hub confirmed.
    @discardableResult
    public func deauthenticateResourceOwner() async -> Bool {
        let token = state.withLock { $0.credentials.resourceOwner }
        update { $0.resourceOwner = nil }
        guard let token else { return true }
        if let refresh = token.refreshToken {
            let a = await revoke(refresh, hint: "refresh_token")
            let b = await revoke(token.accessToken, hint: "access_token")
            return a && b
        }
        return await revoke(token.accessToken, hint: "access_token")
    }

    private func revoke(_ token: String, hint: String) async -> Bool {
        let body = formEncoded(["token": token, "token_type_hint": hint])
        guard let r = try? await send(.POST, "/oauth/revoke", body: Data(body.utf8),
                                      contentType: "application/x-www-form-urlencoded", authorization: basicAuthorization)
        else { return false }
        return r.status == 200
    }

    private var basicAuthorization: String {
        // RFC 6749 2.3.1: id and secret are form-urlencoded before Basic encoding.
        let pair = formComponent(clientID) + ":" + formComponent(clientSecret)
        return "Basic " + Data(pair.utf8).base64EncodedString()
    }

    private func tokenRequest(_ fields: [String: String]) async throws -> HubTokenSet {
        let r = try await send(.POST, "/oauth/token", body: Data(formEncoded(fields).utf8),
                               contentType: "application/x-www-form-urlencoded", authorization: basicAuthorization)
        let json = try? HubJSON(parsing: String(decoding: r.body, as: UTF8.self))
        guard r.status == 200 else {
            guard let error = json?["error"]?.stringValue else {
                throw HubClientError.unexpectedResponse(status: r.status, detail: "the token endpoint answered without an OAuth error")
            }
            throw HubClientError.oauth(status: r.status, error: error, description: json?["error_description"]?.stringValue)
        }
        guard let access = json?["access_token"]?.stringValue, !access.isEmpty else {
            throw HubClientError.unexpectedResponse(status: r.status, detail: "no access_token in the token answer")
        }
        guard json?["token_type"]?.stringValue?.lowercased() == "bearer" else {
            throw HubClientError.unexpectedResponse(status: r.status, detail: "token_type is not Bearer")
        }
        let expires = json?["expires_in"]?.int64Value.map { Date().addingTimeInterval(TimeInterval($0)) }
        return HubTokenSet(accessToken: access, refreshToken: json?["refresh_token"]?.stringValue, expiresAt: expires,
                           scope: json?["scope"]?.stringValue)
    }

    // MARK: - Accounts (the hub API's flow)

    /// `createAccount`: a pending account; the hub delivers a confirmation code out of band (in
    /// development, its log). Needs a token (a client-credentials one will do).
    public func createAccount(username: String, password: String, contact: String) async throws {
        _ = try await api(.POST, "/v1/accounts", json: ["username": .string(username), "password": .string(password),
                                                        "contact": .string(contact)])
    }

    /// `confirmRegistration`: the code makes the account; the answer is the resource owner's tokens,
    /// which the client keeps.
    @discardableResult
    public func confirmRegistration(username: String, code: String) async throws -> HubTokenSet {
        let d = try await api(.POST, "/v1/accounts/confirm", json: ["username": .string(username), "code": .string(code)])
        let t = try tokens(from: d)
        update { $0.resourceOwner = t }
        return t
    }

    /// `forgotLogin`: the hub sends a reset code to the account's contact (it answers the same whether or
    /// not the account exists).
    public func forgotLogin(username: String) async throws {
        _ = try await api(.POST, "/v1/accounts/forgot", json: ["username": .string(username)])
    }

    /// Sets a new password with the reset code; every earlier session of the account is revoked and the
    /// answer is new resource-owner tokens, which the client keeps.
    @discardableResult
    public func resetPassword(username: String, code: String, newPassword: String) async throws -> HubTokenSet {
        let d = try await api(.POST, "/v1/accounts/reset", json: ["username": .string(username), "code": .string(code),
                                                                 "password": .string(newPassword)])
        let t = try tokens(from: d)
        update { $0.resourceOwner = t }
        return t
    }

    /// `GET /v1/users/me`: who the current token acts as.
    public func me() async throws -> HubIdentity {
        try decode(HubIdentity.self, try await api(.GET, "/v1/users/me").data)
    }

    private func tokens(from d: JSendAnswer) throws -> HubTokenSet {
        guard let access = d.data["access_token"]?.stringValue else {
            throw HubClientError.unexpectedResponse(status: d.status, detail: "no access_token in data")
        }
        return HubTokenSet(accessToken: access, refreshToken: d.data["refresh_token"]?.stringValue,
                           expiresAt: d.data["expires_in"]?.int64Value.map { Date().addingTimeInterval(TimeInterval($0)) },
                           scope: d.data["scope"]?.stringValue)
    }

    // MARK: - Groups over REST

    /// A page of a group's members (online: timestamp 0, else last seen), by user id.
    public func members(group: String, limit: Int? = nil, skip: Int = 0) async throws -> HubPage<HubMember> {
        try await page(HubMember.self, "/v1/groups/\(try pathName(group, "group"))/members", limit: limit, skip: skip)
    }

    /// A page of a group's kept posts, oldest first.
    public func posts(group: String, limit: Int? = nil, skip: Int = 0) async throws -> HubPage<HubPost> {
        try await page(HubPost.self, "/v1/groups/\(try pathName(group, "group"))/posts", limit: limit, skip: skip)
    }

    /// One kept post; ``HubClientError/fail(status:message:field:)`` with 404 when there is none.
    public func post(group: String, pid: String) async throws -> HubPost {
        let path = "/v1/groups/\(try pathName(group, "group"))/posts/\(try pathName(pid, "pid"))"
        return try decode(HubPost.self, try await api(.GET, path).data)
    }

    /// Posts (or replaces one's own) `pid` with its payload; delivered to the group and kept until unposted.
    @discardableResult
    public func post(group: String, pid: String, pidload: [String: HubJSON]) async throws -> HubPost {
        let path = "/v1/groups/\(try pathName(group, "group"))/posts"
        return try decode(HubPost.self, try await api(.POST, path, json: ["pid": .string(pid), "pidload": .object(pidload)]).data)
    }

    /// Removes one's own post (403 for another user's, 404 when there is none).
    public func unpost(group: String, pid: String) async throws {
        _ = try await api(.DELETE, "/v1/groups/\(try pathName(group, "group"))/posts/\(try pathName(pid, "pid"))")
    }

    /// Sets the caller's userload; the hub tells every group the user joined.
    public func updateUserload(_ userload: [String: HubJSON]) async throws {
        _ = try await api(.PUT, "/v1/users/me/userload", json: .object(userload))
    }

    private func page<T: Decodable & Sendable>(_ type: T.Type, _ path: String, limit: Int?, skip: Int) async throws -> HubPage<T> {
        guard skip >= 0 else { throw HubClientError.invalidArgument("skip must be 0 or more") }
        if let limit, limit < 1 { throw HubClientError.invalidArgument("limit must be 1 or more") }
        var query = ["skip=\(skip)"]
        if let limit { query.append("limit=\(limit)") }
        let a = try await api(.GET, path + "?" + query.joined(separator: "&"))
        guard let l = a.root["limit"]?.int64Value, case .bool(let more)? = a.root["more"] else {
            throw HubClientError.unexpectedResponse(status: a.status, detail: "a list without limit and more")
        }
        return HubPage(items: try decode([T].self, a.data), limit: Int(l), more: more, skip: skip)
    }

    private func pathName(_ s: String, _ what: String) throws -> String {
        guard !s.isEmpty, s.utf8.count <= 256 else { throw HubClientError.invalidArgument("\(what) must be 1 to 256 bytes") }
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }

    private func decode<T: Decodable>(_ type: T.Type, _ json: HubJSON) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(json.jsonText.utf8))
        } catch {
            throw HubClientError.unexpectedResponse(status: 200, detail: "data is not a \(T.self): \(error)")
        }
    }

    // MARK: - The groups socket

    /// Opens `/v1/socket` with the current token (the resource owner's if held, else the client's) and
    /// says hello with `user` (a device id kept from an earlier connection; nil asks for a new one).
    public func connectGroups(user: String? = nil) async throws -> HubGroupsConnection {
        guard let token = currentAccessToken else { throw HubClientError.notAuthenticated }
        // The socket's TLS: verified unless allowInvalidCertificates; a peer that never answers the TLS
        // close costs 1 s at close rather than NIOSSL's default 5 s.
        var tls = tlsConfiguration ?? TLSConfiguration.makeClientConfiguration()
        tls.shutdownTimeout = .seconds(1)
        return try await HubGroupsConnection.connect(baseURL: baseURL, accessToken: token, user: user, tlsConfiguration: tls)
    }

    // MARK: - HTTP

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    struct JSendAnswer {
        var status: Int
        var root: [String: HubJSON]
        var data: HubJSON
    }

    var tlsConfiguration: TLSConfiguration? {
        guard state.withLock({ $0.insecure }) else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }

    /// A `/v1` call with the current token: 401 handling (refresh, oauthError, one retry) and JSend.
    private func api(_ method: HTTPMethod, _ path: String, json: HubJSON? = nil) async throws -> JSendAnswer {
        let body = json.map { Data($0.jsonText.utf8) }
        var handled = false
        for _ in 0..<4 {
            guard case let (kind, token)? = state.withLock({ s -> (Bool, String)? in
                if let r = s.credentials.resourceOwner { return (true, r.accessToken) }
                if let c = s.credentials.client { return (false, c.accessToken) }
                return nil
            }) else { throw HubClientError.notAuthenticated }
            let r = try await send(method, path, body: body, contentType: body == nil ? nil : "application/json",
                                   authorization: "Bearer " + token)
            guard r.status == 401 else { return try jsend(r) }
            let reason = Self.invalidTokenDescription(r.headers)
            // Another call may have refreshed it meanwhile: retry with the new one.
            if currentAccessToken != token { continue }
            if handled { throw HubClientError.invalidToken(description: reason) }
            handled = true
            if kind, state.withLock({ $0.credentials.resourceOwner?.refreshToken != nil }) {
                if (try? await refreshResourceOwner()) != nil { continue }
            }
            update { c in
                if c.resourceOwner?.accessToken == token { c.resourceOwner = nil }
                if c.client?.accessToken == token { c.client = nil }
            }
            let error = HubClientError.invalidToken(description: reason)
            guard let handler = oauthError else { throw error }
            await handler(self, error)
            guard let now = currentAccessToken, now != token else { throw error }
        }
        throw HubClientError.invalidToken(description: "tokens kept changing while retrying")
    }

    private static func invalidTokenDescription(_ headers: HTTPHeaders) -> String? {
        guard let h = headers.first(name: "WWW-Authenticate"), let r = h.range(of: "error_description=\"") else { return nil }
        let rest = h[r.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    private func jsend(_ r: Answer) throws -> JSendAnswer {
        let text = String(decoding: r.body, as: UTF8.self)
        guard let json = try? HubJSON(parsing: text), let root = json.objectValue, let status = root["status"]?.stringValue else {
            throw HubClientError.unexpectedResponse(status: r.status, detail: "not a JSend body: \(text.prefix(200))")
        }
        switch status {
        case "success":
            guard (200..<300).contains(r.status) else {
                throw HubClientError.unexpectedResponse(status: r.status, detail: "success with HTTP \(r.status)")
            }
            return JSendAnswer(status: r.status, root: root, data: root["data"] ?? .null)
        case "fail":
            let message = root["data"]?["message"]?.stringValue ?? "refused"
            throw HubClientError.fail(status: r.status, message: message, field: root["data"]?["field"]?.stringValue)
        case "error":
            throw HubClientError.server(status: r.status, message: root["message"]?.stringValue ?? "no message")
        default:
            throw HubClientError.unexpectedResponse(status: r.status, detail: "JSend status '\(status)'")
        }
    }

    /// Sends one request; transport failures become ``HubClientError/transport(_:)``.
    private func send(_ method: HTTPMethod, _ path: String, body: Data? = nil, contentType: String? = nil,
                      authorization: String? = nil, timeout: TimeAmount? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "HubClient (swiftmodem)")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        request.tlsConfiguration = tlsConfiguration
        do {
            let response = try await http.execute(request, timeout: timeout ?? self.timeout)
            let bytes = try await response.body.collect(upTo: 16 << 20)
            return Answer(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
        } catch let e as HubClientError {
            throw e
        } catch {
            throw HubClientError.transport(Self.describe(error))
        }
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? HTTPClientError { return "\(e)" }
        if let e = error as? NIOSSLError { return "TLS: \(e)" }
        if let e = error as? BoringSSLError { return "TLS: \(e)" }
        return String(describing: error)
    }
}

/// One HTTP client for every HubClient (never shut down, like `HTTPClient.shared`), set for an API
/// client: a failed connection (closed port, refused certificate) fails the request at once instead of
/// being retried until the request's deadline, and redirects are not followed (a token must not travel
/// to another place).
let hubHTTPClient: HTTPClient = {
    var c = HTTPClient.Configuration()
    c.connectionPool.retryConnectionEstablishment = false
    c.timeout.connect = .seconds(10)
    c.redirectConfiguration = .disallow
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: c)
}()

func formComponent(_ s: String) -> String {
    var out = ""
    for b in s.utf8 {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
            out.unicodeScalars.append(Unicode.Scalar(b))
        case UInt8(ascii: " "):
            out += "+"
        default:
            out += String(format: "%%%02X", b)
        }
    }
    return out
}

func formEncoded(_ fields: [String: String]) -> String {
    fields.sorted { $0.key < $1.key }.map { formComponent($0.key) + "=" + formComponent($0.value) }.joined(separator: "&")
}
