import Foundation
import HubCore
import HubStore
import HummingbirdBcrypt
import Logging
import NIOPosix
import Synchronization

/// The hub's authorization server: issues, rotates, revokes and checks tokens; counts failures.
///
/// Secrets, passwords and tokens are never logged; only client ids and outcomes are.
public final class HubAuthority: Sendable {
    public struct Settings: Sendable {
        /// Access token lifetime in seconds (`--access-ttl`, 600 by default).
        public var accessTTL: Int = 600
        /// Refresh token lifetime in seconds (14 days).
        public var refreshTTL: Int = 14 * 24 * 3600
        /// bcrypt cost (log2 of the rounds) of new password hashes (`--bcrypt-cost`, 12 by default; each
        /// step doubles the work of a sign-up and of a login). A stored hash of another cost is hashed anew
        /// at this one on its owner's next login.
        public var bcryptCost: UInt8 = HubAuthority.defaultBcryptCost
        /// The costs `bcryptCost` may take: bcrypt's lowest, 4 (for tests), to 18 (about a minute a login).
        public static let bcryptCosts: ClosedRange<Int> = 4...18
        /// Failed client authentications allowed per (IP, client id) per minute.
        public var clientFailuresPerMinute = 10
        /// The bounds on sign-ups, codes, guesses and password grants, per account and per address.
        public var accounts = AccountLimits()
        public init() {}
    }

    public let store: any HubAuthStore
    public let settings: Settings
    let logger: Logger
    let clock: @Sendable () -> Int64

    private struct Limiters {
        var clientFailures: BoundedRateLimiter
    }
    private let limiters: Mutex<Limiters>
    /// The hash verified against for unknown usernames: made once, at ``Settings/bcryptCost``, on first use.
    private let decoy = Mutex<String?>(nil)
    /// The bounds of the account flow and of password grants (settings.accounts), on ``clock``.
    public let accountLimiter: AccountLimiter

    /// - Parameter clock: Unix time in milliseconds (tests pass a fake one).
    public init(store: any HubAuthStore, settings: Settings = Settings(), logger: Logger,
                clock: @escaping @Sendable () -> Int64 = HubAuthority.systemMillis) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.limiters = Mutex(Limiters(
            clientFailures: BoundedRateLimiter(limit: settings.clientFailuresPerMinute, windowMs: 60_000,
                                               maxKeys: settings.accounts.limiterKeys)))
        self.accountLimiter = AccountLimiter(limits: settings.accounts)
    }

    /// The bcrypt cost of new password hashes unless set otherwise.
    public static let defaultBcryptCost: UInt8 = 12

    /// Unix time now, in milliseconds.
    @Sendable public static func systemMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    // MARK: passwords (bcrypt on the thread pool, never on an event loop)

    /// The hash stored for `password`: bcrypt at the configured cost of its pre-hash, so that every
    /// byte counts (``PasswordHashing``), computed on NIO's thread pool.
    public func hashPassword(_ password: String) async throws -> String {
        let cost = settings.bcryptCost
        return try await NIOThreadPool.singleton.runIfActive {
            PasswordHashing.prefix + Bcrypt.hash(PasswordHashing.prehash(password), cost: cost)
        }
    }

    /// Checks `password` against a stored hash on NIO's thread pool; with no hash (an unknown user) it
    /// checks against a decoy of the configured cost so the time taken does not tell which names exist,
    /// and answers false. A hash of the older kind (bcrypt of the password itself) still verifies.
    public func verifyPassword(_ password: String, hash: String?) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive {
            let (prehashed, bcrypt) = PasswordHashing.parse(stored: hash ?? self.decoyHash())
            let ok = Bcrypt.verify(prehashed ? PasswordHashing.prehash(password) : password, hash: bcrypt)
            return hash != nil && ok
        }
    }

    // MARK: client authentication

    /// Authenticates the client of a token or revocation request (rate-limited per IP and client id).
    public func authenticateClient(authorization: String?, form: FormBody, ip: String) async throws -> ClientRecord {
        let presented = try OAuthRequestParser.client(authorization: authorization, form: form)
        let key = ip + "|" + (presented?.id ?? "")
        let now = clock()
        // Failures are recorded after the store answered (not reserved before, as password attempts are):
        // a client secret is a 256-bit random value that no burst of guesses can find, while an app's
        // honest burst of concurrent token requests must not be refused.
        if let wait = limiters.withLock({ l in l.clientFailures.retryAfter(key, nowMs: now) }) {
            throw OAuthError.tooManyAttempts(retryAfter: wait)
        }
        guard let p = presented else {
            limiters.withLock { $0.clientFailures.record(key, nowMs: now) }
            throw OAuthError(.invalidClient, "client authentication is required")
        }
        let client = try await store.client(id: p.id)
        guard let client, constantTimeEqual(client.secretSHA256, HubTokens.sha256(p.secret)) else {
            limiters.withLock { $0.clientFailures.record(key, nowMs: now) }
            logger.info("client authentication failed", metadata: ["client_id": "\(p.id.prefix(64))"])
            throw OAuthError(.invalidClient, "unknown client or wrong secret")
        }
        return client
    }

    // MARK: token endpoint

    /// Answers a token request (form already parsed) or throws its `OAuthError`.
    public func token(authorization: String?, form: FormBody, ip: String) async throws -> TokenResponse {
        let client = try await authenticateClient(authorization: authorization, form: form, ip: ip)
        let grant = try OAuthRequestParser.grant(form)
        switch grant {
        case .clientCredentials:
            return try await issueAccessOnly(client: client)
        case .password(let username, let password):
            guard client.passwordGrant else {
                throw OAuthError(.unauthorizedClient, "this client may not use the password grant")
            }
            let now = clock()
            // Counted under the one key of the name (any case is the same account), whether or not it
            // exists; a name that is not valid cannot be an account, and is counted as one key. The
            // attempt is reserved as a failure here, before the bcrypt (so a burst of concurrent guesses
            // all count), and given back only when it succeeds.
            let account = AccountName.validKey(username) ?? "\u{0}invalid"
            if let w = accountLimiter.admit(.login(account: account, address: ip), nowMs: now) {
                throw OAuthError.tooManyAttempts(retryAfter: w)
            }
            let user = AccountName.validKey(username) == nil ? nil : try await store.user(name: username)
            let ok = try await verifyPassword(password, hash: user?.passwordBcrypt)
            guard let user, ok, user.confirmed else {
                throw OAuthError(.invalidGrant, "wrong username or password")
            }
            accountLimiter.loginSucceeded(account: account, admittedAtMs: now)
            let stored = PasswordHashing.parse(stored: user.passwordBcrypt)
            if !stored.prehashed || PasswordHashing.bcryptCost(of: stored.bcrypt) != Int(settings.bcryptCost) {
                // A hash of the older kind (bcrypt of the password itself), or of another cost than the
                // configured one: stored anew, so that from now on every byte of the password counts and
                // the work a guess costs is the operator's choice.
                try await store.setPassword(userID: user.id, bcrypt: try await hashPassword(password))
            }
            return try await issuePair(client: client, subject: user.id)
        case .refreshToken(let presented):
            let now = clock()
            let access = HubTokens.newAccessToken(), refresh = HubTokens.newRefreshToken()
            let outcome = try await store.rotateRefreshToken(
                presented: HubTokens.sha256(presented), clientID: client.id, nowMs: now,
                next: RefreshTokenRecord(sha256: HubTokens.sha256(refresh), family: "", clientID: client.id, subject: "",
                                         expiresMs: now + Int64(settings.refreshTTL) * 1000),
                access: AccessTokenRecord(sha256: HubTokens.sha256(access), clientID: client.id, subject: "", family: nil,
                                          expiresMs: now + Int64(settings.accessTTL) * 1000))
            switch outcome {
            case .rotated:
                return TokenResponse(accessToken: access, expiresIn: settings.accessTTL, refreshToken: refresh)
            case .reused:
                logger.warning("refresh token reused: family revoked", metadata: ["client_id": "\(client.id)"])
                throw OAuthError(.invalidGrant, "refresh token is no longer valid")
            case .invalid:
                throw OAuthError(.invalidGrant, "refresh token is unknown, expired or revoked")
            }
        }
    }

    /// A client-credentials access token (no refresh token).
    func issueAccessOnly(client: ClientRecord) async throws -> TokenResponse {
        let now = clock()
        let access = HubTokens.newAccessToken()
        try await store.insertAccessToken(AccessTokenRecord(
            sha256: HubTokens.sha256(access), clientID: client.id, subject: HubPrincipal.clientSubject(client.id),
            family: nil, expiresMs: now + Int64(settings.accessTTL) * 1000))
        return TokenResponse(accessToken: access, expiresIn: settings.accessTTL, refreshToken: nil)
    }

    /// An access and refresh token for an account, in a new refresh family, issued to `client`.
    public func issuePair(client: ClientRecord, subject: String) async throws -> TokenResponse {
        try await issuePair(clientID: client.id, subject: subject)
    }

    /// An access and refresh token for an account, in a new refresh family, issued to `clientID`.
    public func issuePair(clientID: String, subject: String) async throws -> TokenResponse {
        let now = clock()
        let family = HubTokens.newID(prefix: "f_")
        let access = HubTokens.newAccessToken(), refresh = HubTokens.newRefreshToken()
        try await store.insertRefreshToken(RefreshTokenRecord(
            sha256: HubTokens.sha256(refresh), family: family, clientID: clientID, subject: subject,
            expiresMs: now + Int64(settings.refreshTTL) * 1000))
        try await store.insertAccessToken(AccessTokenRecord(
            sha256: HubTokens.sha256(access), clientID: clientID, subject: subject, family: family,
            expiresMs: now + Int64(settings.accessTTL) * 1000))
        return TokenResponse(accessToken: access, expiresIn: settings.accessTTL, refreshToken: refresh)
    }

    // MARK: revocation (RFC 7009)

    /// Revokes `token` if it is one of this client's; unknown tokens are fine (200 all the same).
    public func revoke(authorization: String?, form: FormBody, ip: String) async throws {
        let client = try await authenticateClient(authorization: authorization, form: form, ip: ip)
        guard let token = form["token"] else { throw OAuthError(.invalidRequest, "token is missing") }
        let hash = HubTokens.sha256(token)
        let refreshFirst = form["token_type_hint"] != "access_token"
        for kind in refreshFirst ? [0, 1] : [1, 0] {
            if kind == 0, let r = try await store.refreshToken(sha256: hash) {
                if r.clientID == client.id { try await store.revokeFamily(r.family) }
                return
            }
            if kind == 1, let a = try await store.accessToken(sha256: hash) {
                if a.clientID == client.id { try await store.revokeAccessToken(sha256: hash) }
                return
            }
        }
    }

    // MARK: Bearer tokens (RFC 6750)

    /// Why a Bearer token was refused.
    public enum BearerFailure: Error, Equatable, Sendable {
        case missing
        case invalid(String)
    }

    /// The principal of an `Authorization` header value, or why not. One indexed query, no cache.
    public func principal(authorization: String?) async throws -> Result<HubPrincipal, BearerFailure> {
        guard let header = authorization else { return .failure(.missing) }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .failure(.missing) }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.utf8.count <= 512 else { return .failure(.invalid("malformed token")) }
        return try await principal(bearer: token)
    }

    /// The principal of a bare Bearer token value, or why not.
    public func principal(bearer token: String) async throws -> Result<HubPrincipal, BearerFailure> {
        guard let rec = try await store.accessToken(sha256: HubTokens.sha256(token)) else {
            return .failure(.invalid("unknown token"))
        }
        if rec.revoked { return .failure(.invalid("token revoked")) }
        if rec.expiresMs <= clock() { return .failure(.invalid("token expired")) }
        return .success(HubPrincipal(subject: rec.subject, clientID: rec.clientID))
    }

    /// A bcrypt hash of a random password at the configured cost, verified against for unknown usernames
    /// (made on the first call, under the lock, so every caller waits for the one hash).
    func decoyHash() -> String {
        decoy.withLock { made in
            if let made { return made }
            let hash = PasswordHashing.prefix
                + Bcrypt.hash(HubTokens.base64url(HubTokens.randomBytes(16)), cost: settings.bcryptCost)
            made = hash
            return hash
        }
    }
}
