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
public final class SQLiteEngine: SQLDatabase {
    public var dialect: SQLDialect { .sqlite }
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
        try await lock.withLock { try await Self.run(connection, sql, binds) }
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await lock.withLock {
            let tx = Transaction(connection: connection)
            _ = try await Self.run(connection, "BEGIN IMMEDIATE", [])
            do {
                let value = try await body(tx)
                _ = try await Self.run(connection, "COMMIT", [])
                return value
            } catch {
                _ = try? await Self.run(connection, "ROLLBACK", [])
                throw error
            }
        }
    }

    public func close() async throws {
        try await lock.withLock { try await connection.close() }
    }

    /// The connection inside a transaction: statements go straight through (the lock is already held).
    private struct Transaction: SQLExecutor {
        let connection: SQLiteConnection
        var dialect: SQLDialect { .sqlite }
        @discardableResult
        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            try await SQLiteEngine.run(connection, sql, binds)
        }
    }

    static func run(_ connection: SQLiteConnection, _ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
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
        } catch let error as SQLiteError {
            if error.reason == .constraintUniqueFailed || error.reason == .constraintPrimaryKeyFailed {
                throw StoreError.conflict(error.message)
            }
            throw StoreError.engine("\(error.message) (in: \(sql.prefix(48)))")
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
