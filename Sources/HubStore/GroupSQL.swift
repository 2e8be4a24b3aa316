// The small SQL surface the groups store needs, over SQLite (sqlite-nio) and PostgreSQL (postgres-nio):
// transactions, integer and text binds, rows read by position. Statements are written once with
// PostgreSQL's `$n` placeholders; SQLite gets them as `?n` (numbered, so reuse and order both work).

import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SQLiteNIO

/// A bound value.
public enum GroupSQLValue: Sendable, Hashable {
    case int(Int64)
    case text(String)
}

/// One result row, read by column position.
public struct GroupSQLRow: Sendable {
    let cells: [GroupSQLValue?]

    /// An integer column (SQL NULL reads as 0).
    public func int(_ i: Int) -> Int64 {
        switch cells[i] {
        case .int(let v): v
        case .text(let s): Int64(s) ?? 0
        case nil: 0
        }
    }

    /// A text column, nil for SQL NULL.
    public func text(_ i: Int) -> String? {
        switch cells[i] {
        case .text(let s): s
        case .int(let v): String(v)
        case nil: nil
        }
    }
}

/// Statements inside one transaction.
public protocol GroupSQLTransaction: Sendable {
    /// Runs a statement and returns its rows (`$n` placeholders).
    func rows(_ sql: String, _ binds: [GroupSQLValue]) async throws -> [GroupSQLRow]
}

extension GroupSQLTransaction {
    /// Runs a statement, ignoring rows.
    public func run(_ sql: String, _ binds: [GroupSQLValue] = []) async throws {
        _ = try await rows(sql, binds)
    }
}

/// The engine under the groups store.
public protocol GroupSQLEngine: Sendable {
    /// `true` for PostgreSQL (several nodes may share it).
    var isShared: Bool { get }
    /// Runs `body` in one transaction (committed when it returns, rolled back when it throws).
    func transaction<T: Sendable>(_ body: @Sendable (any GroupSQLTransaction) async throws -> T) async throws -> T
    /// Closes the connections.
    func close() async
}

// MARK: - SQLite

/// SQLite through one connection; transactions are serialised by an async lock (a single writer).
public final class GroupSQLiteEngine: GroupSQLEngine {
    let connection: SQLiteConnection
    let lock = GroupAsyncLock()
    public var isShared: Bool { false }

    /// Opens (creating) the database file at `path`, in WAL mode.
    public init(path: String) async throws {
        connection = try await SQLiteConnection.open(storage: path == ":memory:" ? .memory : .file(path: path))
        _ = try await connection.query("PRAGMA journal_mode=WAL", [])
        _ = try await connection.query("PRAGMA synchronous=NORMAL", [])
        _ = try await connection.query("PRAGMA busy_timeout=5000", [])
    }

    struct Tx: GroupSQLTransaction {
        let connection: SQLiteConnection
        func rows(_ sql: String, _ binds: [GroupSQLValue]) async throws -> [GroupSQLRow] {
            let data: [SQLiteData] = binds.map {
                switch $0 {
                case .int(let v): .integer(Int(v))
                case .text(let s): .text(s)
                }
            }
            return try await connection.query(sqliteText(sql), data).map { row in
                GroupSQLRow(cells: row.columns.map { col in
                    switch col.data {
                    case .integer(let v): .int(Int64(v))
                    case .float(let d): .int(Int64(d))
                    case .text(let s): .text(s)
                    case .blob(let b): .text(String(buffer: b))
                    case .null: nil
                    }
                })
            }
        }
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any GroupSQLTransaction) async throws -> T) async throws -> T {
        try await lock.withLock {
            let tx = Tx(connection: connection)
            try await tx.run("BEGIN IMMEDIATE")
            do {
                let v = try await body(tx)
                try await tx.run("COMMIT")
                return v
            } catch {
                try? await tx.run("ROLLBACK")
                throw error
            }
        }
    }

    public func close() async { try? await connection.close() }
}

/// `$12` -> `?12`.
func sqliteText(_ sql: String) -> String {
    String(sql.map { $0 == "$" ? "?" : $0 })
}

/// A FIFO async lock (an actor holding waiting continuations).
public actor GroupAsyncLock {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init() {}

    func acquire() async {
        if !busy { busy = true; return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` holding the lock.
    nonisolated func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        do {
            let v = try await body()
            await release()
            return v
        } catch {
            await release()
            throw error
        }
    }
}

// MARK: - PostgreSQL

/// PostgreSQL through a pooled `PostgresClient` (whose `run()` the owner must keep running).
public final class GroupPostgresEngine: GroupSQLEngine {
    /// The pool; run it with `client.run()` in a task or service.
    public let client: PostgresClient
    let logger: Logger
    public var isShared: Bool { true }

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    struct Tx: GroupSQLTransaction {
        let connection: PostgresConnection
        let logger: Logger
        func rows(_ sql: String, _ binds: [GroupSQLValue]) async throws -> [GroupSQLRow] {
            var b = PostgresBindings()
            for v in binds {
                switch v {
                case .int(let i): b.append(i)
                case .text(let s): b.append(s)
                }
            }
            let seq = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: b), logger: logger)
            var out: [GroupSQLRow] = []
            for try await row in seq {
                var cells: [GroupSQLValue?] = []
                for cell in row {
                    if cell.bytes == nil { cells.append(nil); continue }
                    switch cell.dataType {
                    case .int2, .int4, .int8:
                        cells.append(.int(try cell.decode(Int64.self)))
                    case .bool:
                        cells.append(.int(try cell.decode(Bool.self) ? 1 : 0))
                    default:
                        cells.append(.text(try cell.decode(String.self)))
                    }
                }
                out.append(GroupSQLRow(cells: cells))
            }
            return out
        }
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any GroupSQLTransaction) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await client.withConnection { conn in
                    let tx = Tx(connection: conn, logger: logger)
                    try await tx.run("BEGIN")
                    do {
                        let v = try await body(tx)
                        try await tx.run("COMMIT")
                        return v
                    } catch {
                        try? await tx.run("ROLLBACK")
                        throw error
                    }
                }
            } catch let error as PSQLError where attempt < 3 && Self.retryable(error) {
                attempt += 1
            }
        }
    }

    /// Deadlocks and serialisation failures are retried.
    static func retryable(_ error: PSQLError) -> Bool {
        guard let code = error.serverInfo?[.sqlState] else { return false }
        return code == "40P01" || code == "40001"
    }

    public func close() async {}
}
