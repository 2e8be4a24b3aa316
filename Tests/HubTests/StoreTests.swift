import Foundation
import HubCore
import HubStore
import Logging
import Synchronization
import Testing

/// The store's contract, run on SQLite in a temporary folder and, when `HUB_TEST_POSTGRES_URL` names a
/// server (scripts/hub-postgres.sh start prints one) or `SWIFTMODEM_REQUIRE_PEERS=1` requires it, on
/// PostgreSQL in a fresh schema-less database. Where PostgreSQL is left out, the test
/// `StoreEngineTests.postgresReachable` shows as skipped with the reason.
enum StoreEngines {
    static var all: [String] { PostgresPeer.enabled ? ["sqlite", "postgres"] : ["sqlite"] }

    /// A new empty database of that engine, not migrated.
    static func makeRaw(_ engine: String) async throws -> any SQLDatabase {
        let logger = Logger(label: "test")
        switch engine {
        case "sqlite":
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hubstore-\(UUID().uuidString)")
            return try await SQLiteEngine.open(path: dir.path + "/hub.sqlite", logger: logger)
        default:
            return try await PostgresEngine.open(url: try await freshPostgresDatabase(prefix: "hubtest_"), logger: logger)
        }
    }

    /// A new empty store of that engine.
    static func make(_ engine: String) async throws -> SQLHubStore {
        let logger = Logger(label: "test")
        switch engine {
        case "sqlite":
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hubstore-\(UUID().uuidString)")
            return try await SQLHubStore.open(.sqlite(path: dir.path + "/hub.sqlite"), logger: logger, nowMs: 0)
        default:
            // A fresh database per test so runs never see each other's rows.
            return try await SQLHubStore.open(.postgres(url: try await freshPostgresDatabase(prefix: "hubtest_")), logger: logger, nowMs: 0)
        }
    }
}

@Suite struct StoreTests {
    @Test("a deadlock victim or a serialization failure is a case of its own (retried by case), in the same words")
    func transactionConflictIsACase() {
        let conflict = StoreError.transactionConflict("deadlock detected (in: INSERT INTO members)")
        #expect(conflict.description == "database error: deadlock detected (in: INSERT INTO members)")
        #expect(conflict != StoreError.engine("deadlock detected (in: INSERT INTO members)"))
    }

    func client(_ name: String, grant: Bool = false) -> ClientRecord {
        ClientRecord(id: HubTokens.newID(prefix: "c_"), name: name, secretSHA256: HubTokens.sha256("s-" + name),
                     passwordGrant: grant, createdMs: 5)
    }

    @Test(arguments: StoreEngines.all)
    func migrationsAreRecordedAndIdempotent(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        let again = try await HubSchema.migrate(store.db, nowMs: 1)
        #expect(again.isEmpty)
        let versions = try await store.db.query("SELECT version FROM schema_migrations ORDER BY version", []).map { $0[0].int }
        #expect(versions == HubSchema.migrations.map(\.version))
        try await store.close()
    }

    @Test(arguments: StoreEngines.all)
    func clientsAndUsers(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        let c = client("app", grant: true)
        try await store.createClient(c)
        #expect(try await store.client(id: c.id) == c)
        #expect(try await store.client(id: "nope") == nil)
        await #expect(throws: StoreError.self) { try await store.createClient(client("app")) }

        let u = UserRecord(id: "u_1", name: "it's *", passwordBcrypt: "$2b$x", contact: nil, confirmed: false, createdMs: 7)
        try await store.createUser(u)
        #expect(try await store.user(name: "it's *") == u)
        #expect(try await store.user(name: "it%") == nil)  // names are data, no LIKE
        await #expect(throws: StoreError.self) {
            try await store.createUser(UserRecord(id: "u_2", name: "it's *", passwordBcrypt: "", contact: nil, confirmed: true, createdMs: 0))
        }
        #expect(try await store.confirmUser(id: "u_1"))
        #expect(try await !store.confirmUser(id: "u_1"))  // confirmed already: nothing to do
        #expect(try await !store.confirmUser(id: "u_none"))
        try await store.deletePendingUser(name: "it's *")  // confirmed: kept
        #expect(try await store.user(id: "u_1")?.confirmed == true)
        try await store.setPassword(userID: "u_1", bcrypt: "new")
        #expect(try await store.user(id: "u_1")?.passwordBcrypt == "new")

        try await store.createUser(UserRecord(id: "u_3", name: "pending", passwordBcrypt: "", contact: "c", confirmed: false, createdMs: 0))
        try await store.deletePendingUser(name: "pending")
        #expect(try await store.user(name: "pending") == nil)
        try await store.close()
    }

    @Test(arguments: StoreEngines.all)
    func codesMatchOnceCountTriesAndExpire(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        try await store.createUser(UserRecord(id: "u_al", name: "al", passwordBcrypt: "", contact: "c", confirmed: false, createdMs: 0))
        let good = HubTokens.sha256("12345678"), bad = HubTokens.sha256("00000000")
        #expect(try await store.putCode(userID: "u_al", purpose: "confirm", codeSHA256: good, expiresMs: 1000, nowMs: 0))
        #expect(try await store.checkCode(userID: "u_al", purpose: "reset", codeSHA256: good, nowMs: 0, maxTries: 5) == .none)
        #expect(try await store.checkCode(userID: "u_al", purpose: "confirm", codeSHA256: bad, nowMs: 0, maxTries: 5) == .wrong(triesLeft: 4))
        #expect(try await store.checkCode(userID: "u_al", purpose: "confirm", codeSHA256: good, nowMs: 0, maxTries: 5) == .matched)
        #expect(try await store.checkCode(userID: "u_al", purpose: "confirm", codeSHA256: good, nowMs: 0, maxTries: 5) == .none)

        try await store.putCode(userID: "u_al", purpose: "confirm", codeSHA256: good, expiresMs: 1000, nowMs: 0)
        for left in [2, 1, 0] {
            #expect(try await store.checkCode(userID: "u_al", purpose: "confirm", codeSHA256: bad, nowMs: 0, maxTries: 3) == .wrong(triesLeft: left))
        }
        // Used up: even the right code no longer works.
        #expect(try await store.checkCode(userID: "u_al", purpose: "confirm", codeSHA256: good, nowMs: 0, maxTries: 3) == .none)

        try await store.putCode(userID: "u_al", purpose: "confirm", codeSHA256: good, expiresMs: 1000, nowMs: 0)
        #expect(try await store.checkCode(userID: "u_al", purpose: "confirm", codeSHA256: good, nowMs: 1000, maxTries: 5) == .none)

        // A code is only ever stored for an account that exists.
        #expect(try await !store.putCode(userID: "u_nobody", purpose: "confirm", codeSHA256: good, expiresMs: 1000, nowMs: 0))
        #expect(try await store.codeCount(userID: "u_nobody") == 0)
        try await store.close()
    }

    /// Asking for a new code does not give back the tries of the live one it replaces.
    @Test(arguments: StoreEngines.all)
    func aNewCodeKeepsTheTriesOfTheLiveOne(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        try await store.createUser(UserRecord(id: "u_g", name: "g", passwordBcrypt: "", contact: "c", confirmed: true, createdMs: 0))
        let bad = HubTokens.sha256("00000000")
        try await store.putCode(userID: "u_g", purpose: "reset", codeSHA256: HubTokens.sha256("11111111"), expiresMs: 1000, nowMs: 0)
        #expect(try await store.checkCode(userID: "u_g", purpose: "reset", codeSHA256: bad, nowMs: 10, maxTries: 5) == .wrong(triesLeft: 4))
        #expect(try await store.checkCode(userID: "u_g", purpose: "reset", codeSHA256: bad, nowMs: 10, maxTries: 5) == .wrong(triesLeft: 3))
        try await store.putCode(userID: "u_g", purpose: "reset", codeSHA256: HubTokens.sha256("22222222"), expiresMs: 2000, nowMs: 20)
        #expect(try await store.checkCode(userID: "u_g", purpose: "reset", codeSHA256: bad, nowMs: 30, maxTries: 5) == .wrong(triesLeft: 2))
        // Once the old code has expired, a new one starts afresh.
        try await store.putCode(userID: "u_g", purpose: "reset", codeSHA256: HubTokens.sha256("33333333"), expiresMs: 9000, nowMs: 5000)
        #expect(try await store.checkCode(userID: "u_g", purpose: "reset", codeSHA256: bad, nowMs: 5001, maxTries: 5) == .wrong(triesLeft: 4))
        try await store.close()
    }

    /// Names that differ only in case are one account; a new sign-up replaces a pending one of the same
    /// name together with its codes, so the old code confirms nothing (issue 32: the takeover).
    @Test(arguments: StoreEngines.all)
    func oneAccountPerNameWhateverItsCaseAndCodesGoWithTheirAccount(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        let attackerCode = HubTokens.sha256("13572468")
        try await store.createUser(UserRecord(id: "u_att", name: "ALICE", passwordBcrypt: "a", contact: "attacker", confirmed: false, createdMs: 1))
        try await store.putCode(userID: "u_att", purpose: "confirm", codeSHA256: attackerCode, expiresMs: 10_000, nowMs: 0)
        // Another case of the name is the same name.
        await #expect(throws: StoreError.self) {
            try await store.createUser(UserRecord(id: "u_x", name: "alice", passwordBcrypt: "", contact: nil, confirmed: true, createdMs: 0))
        }
        #expect(try await store.user(name: "aLiCe")?.id == "u_att")

        // The victim's sign-up replaces the pending one: the attacker's account and code are gone.
        try await store.replacePendingUser(UserRecord(id: "u_vic", name: "alice", passwordBcrypt: "v", contact: "victim", confirmed: false, createdMs: 2))
        #expect(try await store.user(id: "u_att") == nil)
        #expect(try await store.codeCount(userID: "u_att") == 0)
        #expect(try await store.user(name: "ALICE")?.id == "u_vic")
        #expect(try await store.user(name: "ALICE")?.name == "alice")
        #expect(try await store.checkCode(userID: "u_vic", purpose: "confirm", codeSHA256: attackerCode, nowMs: 1, maxTries: 5) == .none)
        #expect(try await store.checkCode(userID: "u_att", purpose: "confirm", codeSHA256: attackerCode, nowMs: 1, maxTries: 5) == .none)
        #expect(try await !store.confirmUser(id: "u_att"))
        #expect(try await store.confirmUser(id: "u_vic"))

        // A confirmed account is never replaced.
        await #expect(throws: StoreError.self) {
            try await store.replacePendingUser(UserRecord(id: "u_att2", name: "ALICE", passwordBcrypt: "a", contact: "attacker", confirmed: false, createdMs: 3))
        }
        #expect(try await store.user(name: "alice")?.id == "u_vic")
        try await store.deletePendingUser(name: "ALICE")
        #expect(try await store.user(name: "alice")?.confirmed == true)

        // Deleting a pending account deletes its codes.
        try await store.createUser(UserRecord(id: "u_p", name: "Pending", passwordBcrypt: "", contact: "c", confirmed: false, createdMs: 0))
        try await store.putCode(userID: "u_p", purpose: "confirm", codeSHA256: attackerCode, expiresMs: 10_000, nowMs: 0)
        try await store.deletePendingUser(name: "PENDING")
        #expect(try await store.codeCount(userID: "u_p") == 0)
        try await store.close()
    }

    /// A database made before the name key (version 1) is migrated without losing a confirmed account:
    /// pending duplicates go, confirmed ones keep the oldest on the key, codes move only to the account of
    /// exactly their name.
    @Test(arguments: StoreEngines.all)
    func migrationToOneKeyPerName(_ engine: String) async throws {
        let db = try await StoreEngines.makeRaw(engine)
        try await HubSchema.migrate(db, migrations: Array(HubSchema.migrations.prefix(1)), nowMs: 0)
        let users: [(String, String, Int64, Int64)] = [
            ("u_ALICE", "ALICE", 0, 1), ("u_alice", "alice", 1, 2),      // pending beside confirmed: the pending one goes
            ("u_Bob", "Bob", 1, 1), ("u_bob", "bob", 1, 2),              // two confirmed: the older keeps the key
            ("u_carol", "carol", 0, 1), ("u_CAROL", "CAROL", 0, 2),      // two pending: the newer stays
            ("u_dave", "dave", 1, 1),
        ]
        for (id, name, confirmed, created) in users {
            try await db.query("INSERT INTO users(id, name, password_bcrypt, contact, confirmed, created_ms) VALUES ($1, $2, 'h', NULL, $3, $4)",
                               [.text(id), .text(name), .int(confirmed), .int(created)])
        }
        for (name, purpose) in [("ALICE", "confirm"), ("alice", "reset"), ("CAROL", "confirm"), ("carol", "confirm"), ("dave", "confirm")] {
            try await db.query("INSERT INTO pending_codes(user_name, purpose, code_sha256, expires_ms, tries) VALUES ($1, $2, $3, 99, 0)",
                               [.text(name), .text(purpose), .blob(HubTokens.sha256(name))])
        }
        let log = CapturedLog()
        #expect(try await HubSchema.migrate(db, nowMs: 5, logger: Logger(label: "migration") { _ in log })
                == Array(HubSchema.migrations.dropFirst().map(\.version)))
        // The account moved off its key is logged for the operator, by id and name.
        let lines = log.lines
        #expect(lines.count == 1 && lines[0].contains("u_bob") && lines[0].contains("bob#u_bob"), "\(lines)")
        let store = SQLHubStore(db: db)
        #expect(try await store.user(name: "Alice")?.id == "u_alice")
        #expect(try await store.user(id: "u_ALICE") == nil)
        #expect(try await store.user(name: "BOB")?.id == "u_Bob")
        #expect(try await store.user(id: "u_bob")?.confirmed == true)  // kept, under a key no valid name has
        #expect(try await store.user(name: "carol")?.id == "u_CAROL")
        #expect(try await store.user(name: "dave")?.id == "u_dave")
        // Codes: only to the account of exactly their name, and of the right state.
        #expect(try await store.codeCount(userID: "u_alice") == 1)
        #expect(try await store.checkCode(userID: "u_alice", purpose: "reset", codeSHA256: HubTokens.sha256("alice"), nowMs: 0, maxTries: 5) == .matched)
        #expect(try await store.checkCode(userID: "u_CAROL", purpose: "confirm", codeSHA256: HubTokens.sha256("CAROL"), nowMs: 0, maxTries: 5) == .matched)
        #expect(try await store.codeCount(userID: "u_dave") == 0)  // a confirm code of a confirmed account
        // One key per name from now on.
        await #expect(throws: StoreError.self) {
            try await store.createUser(UserRecord(id: "u_new", name: "DAVE", passwordBcrypt: "", contact: nil, confirmed: false, createdMs: 9))
        }
        try await store.close()
    }

    @Test(arguments: StoreEngines.all)
    func refreshRotationDetectsReuse(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        let r1 = HubTokens.sha256("r1"), r2 = HubTokens.sha256("r2"), r3 = HubTokens.sha256("r3")
        let a1 = HubTokens.sha256("a1"), a2 = HubTokens.sha256("a2"), a3 = HubTokens.sha256("a3")
        try await store.insertRefreshToken(RefreshTokenRecord(sha256: r1, family: "f", clientID: "c", subject: "u", expiresMs: 10_000))
        try await store.insertAccessToken(AccessTokenRecord(sha256: a1, clientID: "c", subject: "u", family: "f", expiresMs: 10_000))
        func rotate(_ presented: [UInt8], _ client: String, _ next: [UInt8], _ access: [UInt8], now: Int64 = 100) async throws -> RefreshOutcome {
            try await store.rotateRefreshToken(
                presented: presented, clientID: client, nowMs: now,
                next: RefreshTokenRecord(sha256: next, family: "", clientID: client, subject: "", expiresMs: 10_000),
                access: AccessTokenRecord(sha256: access, clientID: client, subject: "", family: nil, expiresMs: 10_000))
        }
        #expect(try await rotate(r1, "other", r2, a2) == .invalid)  // another client's token
        #expect(try await rotate(r1, "c", r2, a2, now: 10_000) == .invalid)  // expired
        #expect(try await rotate(r1, "c", r2, a2) == .rotated(subject: "u", family: "f"))
        #expect(try await store.accessToken(sha256: a2)?.family == "f")
        #expect(try await store.accessToken(sha256: a2)?.subject == "u")
        // The old one again: a replay; the family dies, access tokens included.
        #expect(try await rotate(r1, "c", r3, a3) == .reused)
        #expect(try await store.refreshToken(sha256: r2)?.revoked == true)
        #expect(try await store.accessToken(sha256: a1)?.revoked == true)
        #expect(try await store.accessToken(sha256: a2)?.revoked == true)
        #expect(try await store.accessToken(sha256: a3) == nil)
        #expect(try await rotate(r2, "c", r3, a3) == .invalid)
        #expect(try await rotate(HubTokens.sha256("unknown"), "c", r3, a3) == .invalid)
        try await store.close()
    }

    @Test(arguments: StoreEngines.all)
    func concurrentRotationsOfOneTokenRotateOnce(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        let r = HubTokens.sha256("r")
        try await store.insertRefreshToken(RefreshTokenRecord(sha256: r, family: "f", clientID: "c", subject: "u", expiresMs: 10_000))
        let outcomes = try await withThrowingTaskGroup(of: RefreshOutcome.self) { group in
            for i in 0..<8 {
                group.addTask {
                    try await store.rotateRefreshToken(
                        presented: r, clientID: "c", nowMs: 1,
                        next: RefreshTokenRecord(sha256: HubTokens.sha256("n\(i)"), family: "", clientID: "c", subject: "", expiresMs: 10_000),
                        access: AccessTokenRecord(sha256: HubTokens.sha256("a\(i)"), clientID: "c", subject: "", family: nil, expiresMs: 10_000))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { if case .rotated = $0 { return true } else { return false } }.count == 1)
        #expect(outcomes.filter { $0 == .reused }.count == 7)
        try await store.close()
    }

    @Test(arguments: StoreEngines.all)
    func revocationAndPruning(_ engine: String) async throws {
        let store = try await StoreEngines.make(engine)
        try await store.insertAccessToken(AccessTokenRecord(sha256: HubTokens.sha256("x"), clientID: "c", subject: "u", family: nil, expiresMs: 50))
        #expect(try await store.revokeAccessToken(sha256: HubTokens.sha256("x")))
        #expect(try await !store.revokeAccessToken(sha256: HubTokens.sha256("y")))
        #expect(try await store.accessToken(sha256: HubTokens.sha256("x"))?.revoked == true)

        for (i, f) in ["f1", "f2"].enumerated() {
            try await store.insertRefreshToken(RefreshTokenRecord(sha256: HubTokens.sha256("r\(i)"), family: f, clientID: "c", subject: "u", expiresMs: 500))
            try await store.insertAccessToken(AccessTokenRecord(sha256: HubTokens.sha256("a\(i)"), clientID: "c", subject: "u", family: f, expiresMs: 500))
        }
        try await store.insertRefreshToken(RefreshTokenRecord(sha256: HubTokens.sha256("rv"), family: "fv", clientID: "c", subject: "v", expiresMs: 500))
        try await store.revokeFamilies(subject: "u")
        #expect(try await store.refreshToken(sha256: HubTokens.sha256("r0"))?.revoked == true)
        #expect(try await store.accessToken(sha256: HubTokens.sha256("a1"))?.revoked == true)
        #expect(try await store.refreshToken(sha256: HubTokens.sha256("rv"))?.revoked == false)

        try await store.pruneExpired(nowMs: 100)
        #expect(try await store.accessToken(sha256: HubTokens.sha256("x")) == nil)
        #expect(try await store.refreshToken(sha256: HubTokens.sha256("rv")) != nil)
        try await store.close()
    }
}

@Suite struct DatabaseLocationTests {
    @Test func parses() throws {
        #expect(try DatabaseLocation(parsing: "sqlite:/tmp/x.db") == .sqlite(path: "/tmp/x.db"))
        #expect(try DatabaseLocation(parsing: "sqlite:rel.db") == .sqlite(path: "rel.db"))
        #expect(try DatabaseLocation(parsing: "postgres://u@h:5/d") == .postgres(url: "postgres://u@h:5/d"))
        for bad in ["", "sqlite:", "/tmp/x.db", "mysql://h/d", "postgres://"] {
            #expect(throws: StoreError.self) { try DatabaseLocation(parsing: bad) }
        }
        #expect(DatabaseLocation.postgres(url: "postgres://u:secret@h/d").redacted.contains("secret") == false)
    }

    @Test("a new SQLite database and the folders made for it are the owner's only (it holds password and token hashes)")
    func newDatabaseIsOwnerOnly() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hubperm-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/a/b/hub.sqlite"
        let store = try await SQLHubStore.open(.sqlite(path: path), logger: Logger(label: "test"), nowMs: 0)
        try await store.createUser(UserRecord(id: "u_1", name: "one", passwordBcrypt: "x", contact: nil, confirmed: true, createdMs: 0))
        func mode(_ p: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        for dir in [root + "/a", root + "/a/b"] {
            let m = try mode(dir)
            #expect(m == 0o700, "\(dir): \(String(m, radix: 8))")
        }
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            let m = try mode(file)
            #expect(m == 0o600, "\(file): \(String(m, radix: 8))")
        }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        try await store.close()
    }

    @Test func placeholdersAreRenumberedForSQLite() async throws {
        let db = try await SQLiteEngine.open(path: ":memory:")
        // Out of order and repeated placeholders, and a '$1' inside a literal that must stay text.
        let row = try await db.first("SELECT $2, $1, $2 || '$1'", [.text("a"), .int(7)])
        #expect(row?.values == [.int(7), .text("a"), .text("7$1")])
        try await db.close()
    }
}

/// A log handler that keeps the messages (for tests of what is logged).
final class CapturedLog: LogHandler, @unchecked Sendable {
    private let kept = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var lines: [String] { kept.withLock { $0 } }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        kept.withLock { $0.append(message.description) }
    }
}

/// Makes the PostgreSQL half of the store's contract visible: skipped, with the reason, where there is
/// no cluster (then every `arguments: StoreEngines.all` test ran on SQLite only).
@Suite struct StoreEngineTests {
    @Test("PostgreSQL, the second engine of the store's contract, takes a fresh database (HUB_TEST_POSTGRES_URL)",
          .enabled(if: PostgresPeer.enabled, PostgresPeer.missing))
    func postgresReachable() async throws {
        let db = try await StoreEngines.makeRaw("postgres")
        #expect(try await db.first("SELECT 1 AS one", []) != nil)
        try await db.close()
    }
}
