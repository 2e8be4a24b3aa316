import HubCore
import Logging

/// The hub's store over any `SQLDatabase` (SQLite or PostgreSQL): the statements are written once.
/// Other parts of the hub (groups, presence) extend this type in their own files and reach `db`.
public final class SQLHubStore: HubAuthStore {
    /// The database underneath, for extensions and engine-specific work.
    public let db: any SQLDatabase

    /// Wraps an opened, migrated database.
    public init(db: any SQLDatabase) { self.db = db }

    /// Opens `location` and runs the migrations.
    public static func open(_ location: DatabaseLocation, logger: Logger, nowMs: Int64) async throws -> SQLHubStore {
        SQLHubStore(db: try await location.open(logger: logger, nowMs: nowMs))
    }

    /// How long an unconfirmed account is kept (`pruneExpired` deletes it after that, once it has no code).
    public static let pendingLifetimeMs: Int64 = 24 * 3600 * 1000

    /// Closes the database.
    public func close() async throws { try await db.close() }

    // MARK: clients

    public func createClient(_ c: ClientRecord) async throws {
        try await db.query(
            "INSERT INTO clients(id, name, secret_sha256, password_grant, created_ms) VALUES ($1, $2, $3, $4, $5)",
            [.text(c.id), .text(c.name), .blob(c.secretSHA256), .flag(c.passwordGrant), .int(c.createdMs)])
    }

    public func client(id: String) async throws -> ClientRecord? {
        guard let r = try await db.first(
            "SELECT id, name, secret_sha256, password_grant, created_ms FROM clients WHERE id = $1", [.text(id)])
        else { return nil }
        return ClientRecord(id: r[0].text ?? "", name: r[1].text ?? "", secretSHA256: r[2].blob ?? [],
                            passwordGrant: r[3].bool, createdMs: r[4].int ?? 0)
    }

    // MARK: users

    /// Stores a new user under the key of its name (`AccountName.key`); `StoreError.conflict` when an
    /// account of that key or that id exists.
    public func createUser(_ u: UserRecord) async throws {
        try await Self.insert(u, into: db)
    }

    private static func insert(_ u: UserRecord, into x: any SQLExecutor) async throws {
        try await x.query("""
            INSERT INTO users(id, name, name_key, password_bcrypt, contact, confirmed, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, [.text(u.id), .text(u.name), .text(AccountName.key(u.name)), .text(u.passwordBcrypt), .optionalText(u.contact),
                  .flag(u.confirmed), .int(u.createdMs)])
    }

    private static let userColumns = "id, name, password_bcrypt, contact, confirmed, created_ms"
    private static func user(_ r: SQLRow) -> UserRecord {
        UserRecord(id: r[0].text ?? "", name: r[1].text ?? "", passwordBcrypt: r[2].text ?? "",
                   contact: r[3].text, confirmed: r[4].bool, createdMs: r[5].int ?? 0)
    }

    /// The account named `name`, whatever the case of its letters: names that differ only in case are
    /// one name, one key (`AccountName.key`), unique in the table.
    public func user(name: String) async throws -> UserRecord? {
        try await db.first("SELECT \(Self.userColumns) FROM users WHERE name_key = $1",
                           [.text(AccountName.key(name))]).map(Self.user)
    }

    public func user(id: String) async throws -> UserRecord? {
        try await db.first("SELECT \(Self.userColumns) FROM users WHERE id = $1", [.text(id)]).map(Self.user)
    }

    public func replacePendingUser(_ u: UserRecord) async throws {
        try await db.transaction { tx in
            let key: [SQLValue] = [.text(AccountName.key(u.name))]
            try await tx.query("DELETE FROM account_codes WHERE user_id IN (SELECT id FROM users WHERE name_key = $1 AND confirmed = 0)", key)
            try await tx.query("DELETE FROM users WHERE name_key = $1 AND confirmed = 0", key)
            try await Self.insert(u, into: tx)
        }
    }

    public func deletePendingUser(name: String) async throws {
        try await db.transaction { tx in
            let key: [SQLValue] = [.text(AccountName.key(name))]
            try await tx.query("DELETE FROM account_codes WHERE user_id IN (SELECT id FROM users WHERE name_key = $1 AND confirmed = 0)", key)
            try await tx.query("DELETE FROM users WHERE name_key = $1 AND confirmed = 0", key)
        }
    }

    public func confirmUser(id: String) async throws -> Bool {
        try await db.transaction { tx in
            let done = try await tx.query("UPDATE users SET confirmed = 1 WHERE id = $1 AND confirmed = 0 RETURNING id", [.text(id)])
            try await tx.query("DELETE FROM account_codes WHERE user_id = $1 AND purpose = 'confirm'", [.text(id)])
            return done.count == 1
        }
    }

    public func setPassword(userID: String, bcrypt: String) async throws {
        try await db.query("UPDATE users SET password_bcrypt = $1 WHERE id = $2", [.text(bcrypt), .text(userID)])
    }

    // MARK: codes

    @discardableResult
    public func putCode(userID: String, purpose: String, codeSHA256: [UInt8], expiresMs: Int64, nowMs: Int64) async throws -> Bool {
        // Only for an account that exists (a code never outlives or precedes its account); the tries of a
        // live code of the same purpose carry over to its replacement.
        !(try await db.query("""
            INSERT INTO account_codes(user_id, purpose, code_sha256, expires_ms, tries)
              SELECT id, $2, $3, $4, 0 FROM users WHERE id = $1
            ON CONFLICT (user_id, purpose) DO UPDATE SET code_sha256 = excluded.code_sha256, expires_ms = excluded.expires_ms,
              tries = CASE WHEN account_codes.expires_ms > $5 THEN account_codes.tries ELSE 0 END
            RETURNING user_id
            """, [.text(userID), .text(purpose), .blob(codeSHA256), .int(expiresMs), .int(nowMs)])).isEmpty
    }

    public func checkCode(userID: String, purpose: String, codeSHA256: [UInt8], nowMs: Int64,
                          maxTries: Int) async throws -> CodeOutcome {
        try await db.transaction { tx in
            let key: [SQLValue] = [.text(userID), .text(purpose)]
            guard let r = try await tx.first(
                "SELECT code_sha256, expires_ms, tries FROM account_codes WHERE user_id = $1 AND purpose = $2", key)
            else { return .none }
            let stored = r[0].blob ?? []
            let tries = Int(r[2].int ?? 0)
            if (r[1].int ?? 0) <= nowMs || tries >= maxTries {
                try await tx.query("DELETE FROM account_codes WHERE user_id = $1 AND purpose = $2", key)
                return .none
            }
            if constantTimeEqual(stored, codeSHA256) {
                try await tx.query("DELETE FROM account_codes WHERE user_id = $1 AND purpose = $2", key)
                return .matched
            }
            let left = maxTries - tries - 1
            if left <= 0 {
                try await tx.query("DELETE FROM account_codes WHERE user_id = $1 AND purpose = $2", key)
            } else {
                try await tx.query("UPDATE account_codes SET tries = tries + 1 WHERE user_id = $1 AND purpose = $2", key)
            }
            return .wrong(triesLeft: max(0, left))
        }
    }

    public func codeCount(userID: String) async throws -> Int {
        Int(try await db.first("SELECT count(*) FROM account_codes WHERE user_id = $1", [.text(userID)])?[0].int ?? 0)
    }

    // MARK: tokens

    public func insertAccessToken(_ t: AccessTokenRecord) async throws {
        try await Self.insert(t, into: db)
    }

    private static func insert(_ t: AccessTokenRecord, into x: any SQLExecutor) async throws {
        try await x.query(
            "INSERT INTO access_tokens(sha256, client_id, subject, family, expires_ms, revoked) VALUES ($1, $2, $3, $4, $5, $6)",
            [.blob(t.sha256), .text(t.clientID), .text(t.subject), .optionalText(t.family), .int(t.expiresMs), .flag(t.revoked)])
    }

    private static func insert(_ t: RefreshTokenRecord, into x: any SQLExecutor) async throws {
        try await x.query("""
            INSERT INTO refresh_tokens(sha256, family, client_id, subject, expires_ms, used, revoked)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, [.blob(t.sha256), .text(t.family), .text(t.clientID), .text(t.subject), .int(t.expiresMs),
                  .flag(t.used), .flag(t.revoked)])
    }

    public func accessToken(sha256: [UInt8]) async throws -> AccessTokenRecord? {
        guard let r = try await db.first(
            "SELECT sha256, client_id, subject, family, expires_ms, revoked FROM access_tokens WHERE sha256 = $1",
            [.blob(sha256)])
        else { return nil }
        return AccessTokenRecord(sha256: r[0].blob ?? [], clientID: r[1].text ?? "", subject: r[2].text ?? "",
                                 family: r[3].text, expiresMs: r[4].int ?? 0, revoked: r[5].bool)
    }

    @discardableResult
    public func revokeAccessToken(sha256: [UInt8]) async throws -> Bool {
        !(try await db.query("UPDATE access_tokens SET revoked = 1 WHERE sha256 = $1 RETURNING client_id",
                             [.blob(sha256)])).isEmpty
    }

    public func insertRefreshToken(_ t: RefreshTokenRecord) async throws {
        try await Self.insert(t, into: db)
    }

    public func refreshToken(sha256: [UInt8]) async throws -> RefreshTokenRecord? {
        guard let r = try await db.first(
            "SELECT sha256, family, client_id, subject, expires_ms, used, revoked FROM refresh_tokens WHERE sha256 = $1",
            [.blob(sha256)])
        else { return nil }
        return RefreshTokenRecord(sha256: r[0].blob ?? [], family: r[1].text ?? "", clientID: r[2].text ?? "",
                                  subject: r[3].text ?? "", expiresMs: r[4].int ?? 0, used: r[5].bool, revoked: r[6].bool)
    }

    public func rotateRefreshToken(presented: [UInt8], clientID: String, nowMs: Int64,
                                   next: RefreshTokenRecord, access: AccessTokenRecord) async throws -> RefreshOutcome {
        try await db.transaction { tx in
            // Claim the token atomically: only one caller can flip `used` from 0 to 1.
            let claimed = try await tx.query("""
                UPDATE refresh_tokens SET used = 1
                WHERE sha256 = $1 AND client_id = $2 AND used = 0 AND revoked = 0 AND expires_ms > $3
                RETURNING family, subject
                """, [.blob(presented), .text(clientID), .int(nowMs)])
            if let row = claimed.first, let family = row[0].text, let subject = row[1].text {
                var n = next
                n.family = family; n.subject = subject; n.clientID = clientID
                var a = access
                a.family = family; a.subject = subject; a.clientID = clientID
                try await Self.insert(n, into: tx)
                try await Self.insert(a, into: tx)
                return .rotated(subject: subject, family: family)
            }
            // Not claimable: a replay of a rotated token of this client revokes its family.
            if let r = try await tx.first(
                "SELECT family, used, revoked FROM refresh_tokens WHERE sha256 = $1 AND client_id = $2",
                [.blob(presented), .text(clientID)]), r[1].bool, let family = r[0].text {
                try await Self.revokeFamily(family, in: tx)
                return .reused
            }
            return .invalid
        }
    }

    private static func revokeFamily(_ family: String, in x: any SQLExecutor) async throws {
        try await x.query("UPDATE refresh_tokens SET revoked = 1 WHERE family = $1", [.text(family)])
        try await x.query("UPDATE access_tokens SET revoked = 1 WHERE family = $1", [.text(family)])
    }

    public func revokeFamily(_ family: String) async throws {
        try await db.transaction { tx in try await Self.revokeFamily(family, in: tx) }
    }

    public func revokeFamilies(subject: String) async throws {
        try await db.transaction { tx in
            try await tx.query("""
                UPDATE access_tokens SET revoked = 1 WHERE family IN (SELECT family FROM refresh_tokens WHERE subject = $1)
                """, [.text(subject)])
            try await tx.query("UPDATE refresh_tokens SET revoked = 1 WHERE subject = $1", [.text(subject)])
        }
    }

    public func pruneExpired(nowMs: Int64) async throws {
        try await db.query("DELETE FROM access_tokens WHERE expires_ms < $1", [.int(nowMs)])
        try await db.query("DELETE FROM refresh_tokens WHERE expires_ms < $1", [.int(nowMs)])
        try await db.query("DELETE FROM account_codes WHERE expires_ms < $1", [.int(nowMs)])
        // Pending sign-ups a day old: their codes are long gone, so nobody can confirm them.
        try await db.query("""
            DELETE FROM users WHERE confirmed = 0 AND created_ms < $1
              AND NOT EXISTS (SELECT 1 FROM account_codes c WHERE c.user_id = users.id)
            """, [.int(nowMs - Self.pendingLifetimeMs)])
    }
}

/// Compares two byte strings in time that depends only on their lengths.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var diff: UInt8 = 0
    for i in 0..<a.count { diff |= a[i] ^ b[i] }
    return diff == 0
}
