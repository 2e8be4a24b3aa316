/// An OAuth client as stored: the secret only as its SHA-256.
public struct ClientRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var secretSHA256: [UInt8]
    /// Whether the client may use the resource-owner password grant (`client add --password-grant`).
    public var passwordGrant: Bool
    public var createdMs: Int64
    public init(id: String, name: String, secretSHA256: [UInt8], passwordGrant: Bool, createdMs: Int64) {
        self.id = id; self.name = name; self.secretSHA256 = secretSHA256
        self.passwordGrant = passwordGrant; self.createdMs = createdMs
    }
}

/// A user account: the password only as a bcrypt hash; `confirmed` false while its code is pending.
public struct UserRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var passwordBcrypt: String
    public var contact: String?
    public var confirmed: Bool
    public var createdMs: Int64
    public init(id: String, name: String, passwordBcrypt: String, contact: String?, confirmed: Bool, createdMs: Int64) {
        self.id = id; self.name = name; self.passwordBcrypt = passwordBcrypt
        self.contact = contact; self.confirmed = confirmed; self.createdMs = createdMs
    }
}

/// An access token as stored (by SHA-256). `subject` is the acting user: an account id, or `client:ID`.
public struct AccessTokenRecord: Sendable, Equatable {
    public var sha256: [UInt8]
    public var clientID: String
    public var subject: String
    /// The refresh family it was minted with (revoked with it), nil for client-credentials tokens.
    public var family: String?
    public var expiresMs: Int64
    public var revoked: Bool
    public init(sha256: [UInt8], clientID: String, subject: String, family: String?, expiresMs: Int64, revoked: Bool = false) {
        self.sha256 = sha256; self.clientID = clientID; self.subject = subject
        self.family = family; self.expiresMs = expiresMs; self.revoked = revoked
    }
}

/// A refresh token as stored (by SHA-256); `used` once rotated (a second use revokes the family).
public struct RefreshTokenRecord: Sendable, Equatable {
    public var sha256: [UInt8]
    public var family: String
    public var clientID: String
    public var subject: String
    public var expiresMs: Int64
    public var used: Bool
    public var revoked: Bool
    public init(sha256: [UInt8], family: String, clientID: String, subject: String, expiresMs: Int64,
                used: Bool = false, revoked: Bool = false) {
        self.sha256 = sha256; self.family = family; self.clientID = clientID; self.subject = subject
        self.expiresMs = expiresMs; self.used = used; self.revoked = revoked
    }
}

/// What presenting a refresh token did.
public enum RefreshOutcome: Sendable, Equatable {
    /// The token was live and is now used; the new pair was stored in its family.
    case rotated(subject: String, family: String)
    /// Unknown, expired, revoked or another client's: nothing changed.
    case invalid
    /// Already rotated: a replay. The whole family (refresh and access tokens) is now revoked.
    case reused
}

/// What checking a confirmation or reset code did.
public enum CodeOutcome: Sendable, Equatable {
    /// Matched; the code is consumed.
    case matched
    /// Wrong code; `triesLeft` more attempts before it is deleted.
    case wrong(triesLeft: Int)
    /// No live code for that account and purpose (never sent, expired, used up or consumed).
    case none
}

/// The accounts side of the hub's state: clients, users, tokens (hashed), pending codes.
/// One implementation (`SQLHubStore`) serves SQLite and PostgreSQL.
public protocol HubAuthStore: Sendable {
    /// Stores a new client; `StoreError.conflict` when the name or id exists.
    func createClient(_ client: ClientRecord) async throws
    func client(id: String) async throws -> ClientRecord?

    /// Stores a new user (confirmed or pending) under the key of its name (`AccountName.key`);
    /// `StoreError.conflict` when an account of that key (names that differ only in case) or id exists.
    func createUser(_ user: UserRecord) async throws
    /// The account whose name has the key of `name` (any case), if any.
    func user(name: String) async throws -> UserRecord?
    func user(id: String) async throws -> UserRecord?
    /// Stores a new pending user in place of any pending account of the same key, in one transaction: the
    /// old account and all its codes go (so a code sent for it has no power left). `StoreError.conflict`
    /// when a confirmed account holds the key.
    func replacePendingUser(_ user: UserRecord) async throws
    /// Deletes the unconfirmed account of `name`'s key and its codes; confirmed ones are kept.
    func deletePendingUser(name: String) async throws
    /// Marks the pending account `id` confirmed and drops its confirm code; false (and nothing changed)
    /// when no pending account has that id (gone, replaced, or already confirmed).
    func confirmUser(id: String) async throws -> Bool
    /// Replaces a user's password hash.
    func setPassword(userID: String, bcrypt: String) async throws

    /// Stores a code for the account `userID` and `purpose`, replacing any earlier one; the tries used on
    /// a live earlier code (expiring after `nowMs`) carry over. False when no account has that id.
    @discardableResult
    func putCode(userID: String, purpose: String, codeSHA256: [UInt8], expiresMs: Int64, nowMs: Int64) async throws -> Bool
    /// Checks a code of the account `userID`: consumed on a match; a wrong try counts, and the code is
    /// deleted after `maxTries`.
    func checkCode(userID: String, purpose: String, codeSHA256: [UInt8], nowMs: Int64, maxTries: Int) async throws -> CodeOutcome
    /// How many codes (any purpose, live or not yet pruned) the account `userID` has.
    func codeCount(userID: String) async throws -> Int

    func insertAccessToken(_ token: AccessTokenRecord) async throws
    func accessToken(sha256: [UInt8]) async throws -> AccessTokenRecord?
    /// Revokes one access token; false when unknown.
    @discardableResult func revokeAccessToken(sha256: [UInt8]) async throws -> Bool
    /// Stores the first refresh token of a new family (with the access token minted beside it).
    func insertRefreshToken(_ token: RefreshTokenRecord) async throws
    func refreshToken(sha256: [UInt8]) async throws -> RefreshTokenRecord?
    /// Rotates `presented` (issued to `clientID`) into `next` + `access`, atomically (see `RefreshOutcome`).
    func rotateRefreshToken(presented: [UInt8], clientID: String, nowMs: Int64,
                            next: RefreshTokenRecord, access: AccessTokenRecord) async throws -> RefreshOutcome
    /// Revokes a refresh family: its refresh tokens and every access token minted with it.
    func revokeFamily(_ family: String) async throws
    /// Revokes every refresh family of a subject (after a password reset).
    func revokeFamilies(subject: String) async throws
    /// Deletes tokens and codes that expired before `nowMs`, and pending accounts a day old that have no
    /// code left (rows only grow otherwise).
    func pruneExpired(nowMs: Int64) async throws
}
