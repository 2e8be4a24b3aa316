import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import SQLiteNIO
import ModemRuntime

/// SQLite through sqlite-nio: one connection (WAL, `synchronous=NORMAL`), every statement and
/// transaction serialised by a FIFO lock; the engine's blocking calls run on NIO's thread pool.
///
/// A transaction that began always ends, even in a cancelled task: sqlite-nio drops the statements of
/// a cancelled task without running them, so the `COMMIT` or `ROLLBACK` of a transaction whose task
/// was cancelled (at a graceful shutdown, say) would never run, the connection would stay inside it,
/// and every later `BEGIN` would fail with "cannot start a transaction within a transaction". They are
/// run whatever the task's state.
public final class SQLiteEngine: SQLDatabase {
    public var dialect: SQLDialect { .sqlite }
    public let failures = DatabaseFailures()
    private let connection: SQLiteConnection
    private let lock = AsyncLock()

    private init(connection: SQLiteConnection) { self.connection = connection }

    /// Opens (creating when missing) the database file at `path`, or an in-memory database for ":memory:".
    /// The parent folder is created when missing. What is created is its owner's only (folders 0700, the
    /// file 0600, and so its WAL and shared-memory files, which SQLite gives the database file's mode):
    /// it holds password and token hashes.
    public static func open(path: String, logger: Logger = Logger(label: "modem-hub.sqlite")) async throws -> SQLiteEngine {
        let storage: SQLiteConnection.Storage
        if path == ":memory:" {
            storage = .memory
        } else {
            let dir = (path as NSString).deletingLastPathComponent
            if !dir.isEmpty {
                try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o700])
            }
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { Glibc.close(fd) }  // a new, empty file: SQLite makes it a database
            storage = .file(path: path)
        }
        let conn: SQLiteConnection
        do { conn = try await SQLiteConnection.open(storage: storage, logger: logger) } catch {
            throw StoreError.engine("cannot open SQLite database \(path): \(error)")
        }
        let engine = SQLiteEngine(connection: conn)
        if path != ":memory:" { _ = try await engine.query("PRAGMA journal_mode=WAL", []) }
        _ = try await engine.query("PRAGMA synchronous=NORMAL", [])
        _ = try await engine.query("PRAGMA busy_timeout=5000", [])
        _ = try await engine.query("PRAGMA foreign_keys=ON", [])
        return engine
    }

    @discardableResult
    public func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await lock.withLock { try await Self.run(connection, sql, binds, failures) }
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await lock.withLock {
            let tx = Transaction(connection: connection, failures: failures)
            _ = try await Self.run(connection, "BEGIN IMMEDIATE", [], failures)
            do {
                let value = try await body(tx)
                try await Self.end(connection, "COMMIT", failures)
                return value
            } catch {
                try? await Self.end(connection, "ROLLBACK", failures)
                throw error
            }
        }
    }

    /// Ends the open transaction (`COMMIT` or `ROLLBACK`) even when the task was cancelled: through
    /// sqlite-nio's future-based call, which runs what it is given (its async call skips the work of a
    /// cancelled task). A failed `COMMIT` leaves the transaction open, so it is rolled back then.
    private static func end(_ connection: SQLiteConnection, _ sql: String, _ failures: DatabaseFailures) async throws {
        do {
            _ = try await connection.query(sql, []).get()
        } catch {
            failures.report(error)
            if sql == "COMMIT" { _ = try? await connection.query("ROLLBACK", []).get() }
            throw Self.mapped(error, sql)
        }
    }

    public func close() async throws {
        try await lock.withLock { try await connection.close() }
    }

    /// The connection inside a transaction: statements go straight through (the lock is already held).
    private struct Transaction: SQLExecutor {
        let connection: SQLiteConnection
        let failures: DatabaseFailures
        var dialect: SQLDialect { .sqlite }
        @discardableResult
        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            try await SQLiteEngine.run(connection, sql, binds, failures)
        }
    }

    /// A SQLite error as the store's (unique-key conflicts apart, the statement's first words named).
    static func mapped(_ error: any Error, _ sql: String) -> any Error {
        guard let error = error as? SQLiteError else { return error }
        if error.reason == .constraintUniqueFailed || error.reason == .constraintPrimaryKeyFailed {
            return StoreError.conflict(error.message)
        }
        return StoreError.engine("\(error.message) (in: \(sql.prefix(48)))")
    }

    static func run(_ connection: SQLiteConnection, _ sql: String, _ binds: [SQLValue], _ failures: DatabaseFailures) async throws -> [SQLRow] {
        let data: [SQLiteData] = binds.map {
            switch $0 {
            case .int(let v): return .integer(SQLiteInt64(v))
            case .text(let s): return .text(s)
            case .blob(let b): return .blob(ByteBuffer(bytes: b))
            case .null: return .null
            }
        }
        let rows: [SQLiteRow]
        do {
            rows = try await connection.query(sqlitePlaceholders(SQLDialect.sqlite.render(sql)), data)
        } catch {
            let e = mapped(error, sql)
            failures.report(e)
            throw e
        }
        return rows.map { row in
            SQLRow(row.columns.map { col in
                switch col.data {
                case .integer(let v): return .int(Int64(v))
                case .float(let d): return .int(Int64(d))
                case .text(let s): return .text(s)
                case .blob(let b): return .blob(Array(b.readableBytesView))
                case .null: return .null
                }
            })
        }
    }
}
