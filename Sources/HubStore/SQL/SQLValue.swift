import Synchronization

/// One value bound to or read from a SQL statement, the same for SQLite and PostgreSQL.
///
/// Flags are stored as integers 0/1 on both engines (no `BOOL` column type) so rows decode alike.
public enum SQLValue: Sendable, Equatable, Hashable {
    case int(Int64)
    case text(String)
    case blob([UInt8])
    case null

    /// An integer column read as `Int64`, nil for anything else.
    public var int: Int64? { if case .int(let v) = self { return v } else { return nil } }
    /// A text column, nil for anything else.
    public var text: String? { if case .text(let v) = self { return v } else { return nil } }
    /// A blob column, nil for anything else.
    public var blob: [UInt8]? { if case .blob(let v) = self { return v } else { return nil } }
    /// An integer flag column: non-zero is true.
    public var bool: Bool { (int ?? 0) != 0 }
    /// Whether the column was SQL NULL.
    public var isNull: Bool { self == .null }

    /// A flag as a bindable integer.
    public static func flag(_ b: Bool) -> SQLValue { .int(b ? 1 : 0) }
    /// An optional text value (nil binds NULL).
    public static func optionalText(_ s: String?) -> SQLValue { s.map(SQLValue.text) ?? .null }
}

/// One result row: the values in select-list order.
public struct SQLRow: Sendable, Equatable {
    /// The column values, in the order of the statement's select list.
    public var values: [SQLValue]

    /// Creates a row from its values.
    public init(_ values: [SQLValue]) { self.values = values }

    /// The value of column `i` (NULL when out of range, so a short row never traps).
    public subscript(_ i: Int) -> SQLValue { i < values.count ? values[i] : .null }
}

/// Which SQL engine a database runs; statements differ only in column types (`{blob}`, `{serial}`).
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres

    /// Replaces the dialect tokens of a portable statement: `{blob}` and `{serial}` (an auto-increment key).
    public func render(_ sql: String) -> String {
        switch self {
        case .sqlite:
            return sql.replacingOccurrences(of: "{blob}", with: "BLOB")
                .replacingOccurrences(of: "{serial}", with: "INTEGER PRIMARY KEY AUTOINCREMENT")
        case .postgres:
            return sql.replacingOccurrences(of: "{blob}", with: "BYTEA")
                .replacingOccurrences(of: "{serial}", with: "BIGSERIAL PRIMARY KEY")
        }
    }
}

/// Errors of the storage layer; engine errors are wrapped with their message (never with bound values).
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// A unique key already exists (a taken name, a duplicate id).
    case conflict(String)
    /// The database URL could not be understood.
    case badURL(String)
    /// The engine failed; the message names the statement's first words, not its values.
    case engine(String)
    /// PostgreSQL chose this transaction as a deadlock's victim or could not serialize it (SQLSTATE
    /// 40P01, 40001): nothing of it was kept, and the same transaction may be run again.
    case transactionConflict(String)

    public var description: String {
        switch self {
        case .conflict(let s): return "already exists: \(s)"
        case .badURL(let s): return "bad database URL: \(s)"
        case .engine(let s), .transactionConflict(let s): return "database error: \(s)"
        }
    }
}

/// Something that runs statements: a database, or one connection inside a transaction.
///
/// Statements are written once with PostgreSQL placeholders `$1`, `$2`, ...; the SQLite engine rewrites
/// them to `?1`, `?2` (numbered, so a placeholder may repeat or appear out of order).
public protocol SQLExecutor: Sendable {
    /// The engine behind this executor.
    var dialect: SQLDialect { get }
    /// Runs one statement and returns every row it produced.
    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

/// A database: statements, transactions, close. `SQLiteEngine` and `PostgresEngine` implement it.
public protocol SQLDatabase: SQLExecutor {
    /// Where the engine reports its failed statements (the hub's metrics count them).
    var failures: DatabaseFailures { get }
    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    /// On SQLite the transaction is `BEGIN IMMEDIATE` (one writer at a time).
    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T
    /// Closes the database; no statement may run afterwards.
    func close() async throws
}

/// Where a database engine reports the statements and transactions that failed in the engine (a lost
/// connection, a full disk, a statement the engine refused): ``StoreError/engine(_:)`` and errors of the
/// engine's own types. Not reported: unique-key conflicts (``StoreError/conflict(_:)``, an answer such
/// as "that name is taken") and the cancellation of the task that ran the statement.
public final class DatabaseFailures: Sendable {
    private let handler = Mutex<(@Sendable () -> Void)?>(nil)

    /// No handler yet.
    public init() {}

    /// Calls `handler` for every failure from now on (nil: none); replaces an earlier handler.
    public func onFailure(_ handler: (@Sendable () -> Void)?) {
        self.handler.withLock { $0 = handler }
    }

    /// Reports `error` if it is a failure of the engine (see the type's description).
    func report(_ error: any Error) {
        switch error {
        case StoreError.conflict, is CancellationError: return
        default: handler.withLock { $0 }?()
        }
    }
}

extension SQLExecutor {
    /// Runs a statement and returns its first row, if any.
    public func first(_ sql: String, _ binds: [SQLValue]) async throws -> SQLRow? {
        try await query(sql, binds).first
    }
}

/// Rewrites `$N` placeholders to SQLite's numbered `?N` (outside single-quoted literals).
func sqlitePlaceholders(_ sql: String) -> String {
    var out = ""
    out.reserveCapacity(sql.utf8.count)
    var inQuote = false
    var it = sql.makeIterator()
    var pending: Character? = nil
    while true {
        let c: Character
        if let p = pending { c = p; pending = nil } else if let n = it.next() { c = n } else { break }
        if c == "'" { inQuote.toggle(); out.append(c); continue }
        if c == "$" && !inQuote {
            var digits = ""
            while let n = it.next() {
                if n.isASCII && n.isNumber { digits.append(n) } else { pending = n; break }
            }
            out.append(digits.isEmpty ? "$" : "?" + digits)
            continue
        }
        out.append(c)
    }
    return out
}
