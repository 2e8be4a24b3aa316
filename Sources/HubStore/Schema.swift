import Logging
/// The hub's schema, one text for both engines (`{blob}` and `{serial}` are rendered per dialect), applied
/// in numbered migrations recorded in `schema_migrations`. Flags are BIGINT 0/1, times Unix milliseconds.
///
/// These are the accounts side's tables (clients, users, account codes, tokens). The groups side (nodes, presence,
/// members, userloads, posts, devices) creates its own tables in `GroupSchema` (GroupStore.swift).
public enum HubSchema {
    /// One migration: a version, a name, and its statements (each run on its own; no `;` lists).
    public struct Migration: Sendable {
        public let version: Int64
        public let name: String
        public let statements: [String]
        public init(version: Int64, name: String, statements: [String]) {
            self.version = version
            self.name = name
            self.statements = statements
        }
    }

    /// Every migration, in order. Add new ones at the end with the next version.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "initial", statements: [
            """
            CREATE TABLE clients(id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, secret_sha256 {blob} NOT NULL,
              password_grant BIGINT NOT NULL, created_ms BIGINT NOT NULL)
            """,
            """
            CREATE TABLE users(id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, password_bcrypt TEXT NOT NULL,
              contact TEXT, confirmed BIGINT NOT NULL, created_ms BIGINT NOT NULL)
            """,
            """
            CREATE TABLE pending_codes(user_name TEXT NOT NULL, purpose TEXT NOT NULL, code_sha256 {blob} NOT NULL,
              expires_ms BIGINT NOT NULL, tries BIGINT NOT NULL, PRIMARY KEY(user_name, purpose))
            """,
            """
            CREATE TABLE access_tokens(sha256 {blob} PRIMARY KEY, client_id TEXT NOT NULL, subject TEXT NOT NULL,
              family TEXT, expires_ms BIGINT NOT NULL, revoked BIGINT NOT NULL)
            """,
            "CREATE INDEX access_tokens_family ON access_tokens(family)",
            "CREATE INDEX access_tokens_expires ON access_tokens(expires_ms)",
            """
            CREATE TABLE refresh_tokens(sha256 {blob} PRIMARY KEY, family TEXT NOT NULL, client_id TEXT NOT NULL,
              subject TEXT NOT NULL, expires_ms BIGINT NOT NULL, used BIGINT NOT NULL, revoked BIGINT NOT NULL)
            """,
            "CREATE INDEX refresh_tokens_family ON refresh_tokens(family)",
            "CREATE INDEX refresh_tokens_subject ON refresh_tokens(subject)",
        ]),
        // Names that differ only in case are one account (AccountName.key), and codes belong to an
        // account's id, not to a name as typed (issue 32). Existing rows: a pending account that shares its
        // key with a confirmed one (or with a newer pending one) goes; two confirmed accounts of one key
        // keep the oldest on the key, the others get a key no valid name has (`key#id`: they keep their
        // data, and an operator renames them). Codes move to their account when the name matched exactly;
        // the rest (at most 15 minutes old) are dropped.
        Migration(version: 2, name: "account-name-key", statements: [
            "ALTER TABLE users ADD COLUMN name_key TEXT",
            """
            DELETE FROM users WHERE confirmed = 0 AND EXISTS (SELECT 1 FROM users o
              WHERE lower(o.name) = lower(users.name) AND o.id <> users.id
                AND (o.confirmed = 1 OR o.created_ms > users.created_ms OR (o.created_ms = users.created_ms AND o.id > users.id)))
            """,
            "UPDATE users SET name_key = lower(name)",
            """
            UPDATE users SET name_key = lower(name) || '#' || id WHERE EXISTS (SELECT 1 FROM users o
              WHERE lower(o.name) = lower(users.name) AND o.id <> users.id
                AND (o.created_ms < users.created_ms OR (o.created_ms = users.created_ms AND o.id < users.id)))
            """,
            "CREATE UNIQUE INDEX users_by_name_key ON users(name_key)",
            """
            CREATE TABLE account_codes(user_id TEXT NOT NULL, purpose TEXT NOT NULL, code_sha256 {blob} NOT NULL,
              expires_ms BIGINT NOT NULL, tries BIGINT NOT NULL, PRIMARY KEY(user_id, purpose))
            """,
            "CREATE INDEX account_codes_expires ON account_codes(expires_ms)",
            """
            INSERT INTO account_codes(user_id, purpose, code_sha256, expires_ms, tries)
              SELECT u.id, p.purpose, p.code_sha256, p.expires_ms, p.tries FROM pending_codes p JOIN users u ON u.name = p.user_name
              WHERE (p.purpose = 'confirm' AND u.confirmed = 0) OR (p.purpose = 'reset' AND u.confirmed = 1)
            """,
            "DROP TABLE pending_codes",
        ]),
    ]

    /// Brings `db` to the newest version: under a lock (SQLite: the write transaction; PostgreSQL: an
    /// advisory lock, so nodes starting together do not race), applies each missing migration in one
    /// transaction. Returns the versions applied now. What a migration did that an operator must see
    /// (accounts migration 2 moved off their name key) goes to `logger`.
    @discardableResult
    public static func migrate(_ db: any SQLDatabase, migrations: [Migration] = HubSchema.migrations,
                               nowMs: Int64, logger: Logger? = nil) async throws -> [Int64] {
        try await db.transaction { tx in
            if tx.dialect == .postgres {
                try await tx.query("SELECT pg_advisory_xact_lock(736110011)", [])
            }
            try await tx.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations(version BIGINT PRIMARY KEY, name TEXT NOT NULL,
                  applied_ms BIGINT NOT NULL)
                """, [])
            let done = Set(try await tx.query("SELECT version FROM schema_migrations", []).compactMap { $0[0].int })
            var applied: [Int64] = []
            for m in migrations.sorted(by: { $0.version < $1.version }) where !done.contains(m.version) {
                for s in m.statements { try await tx.query(s, []) }
                if m.version == 2 { try await reportRenamedAccounts(tx, logger: logger) }
                try await tx.query("INSERT INTO schema_migrations(version, name, applied_ms) VALUES ($1, $2, $3)",
                                   [.int(m.version), .text(m.name), .int(nowMs)])
                applied.append(m.version)
            }
            return applied
        }
    }

    /// Logs each account that migration 2 gave a key no valid name has (`key#id`: another account of the
    /// same name in another case is older), for an operator to rename.
    static func reportRenamedAccounts(_ tx: any SQLExecutor, logger: Logger?) async throws {
        let rows = try await tx.query("SELECT id, name, name_key FROM users WHERE name_key LIKE '%#%' ORDER BY id", [])
        for r in rows {
            logger?.warning("""
                schema migration 2: account \(r[0].text ?? "?") named \(r[1].text ?? "?") shares its name key with an older \
                account and was moved to the key \(r[2].text ?? "?"); it cannot log in by name until an operator renames it
                """)
        }
    }
}
