import Foundation
import Logging
import NIOCore
import PostgresNIO

/// PostgreSQL through postgres-nio's pooled `PostgresClient`, whose `run()` loop the engine keeps in a task
/// from `open` to `close`. Several hub nodes share one database through it.
public final class PostgresEngine: SQLDatabase {
    public var dialect: SQLDialect { .postgres }
    /// Shared with the engines ``derived(asynchronousCommit:minimumConnections:maximumConnections:logger:)`` makes.
    public let failures: DatabaseFailures
    /// The pool, for code that needs PostgreSQL itself (LISTEN needs its own `PostgresConnection`).
    public let client: PostgresClient
    /// The connection settings the pool uses (to open dedicated connections, e.g. for LISTEN).
    public let configuration: PostgresClient.Configuration
    private let runner: Task<Void, Never>
    private let logger: Logger

    /// An engine over `client` (built from `configuration`), whose `run()` loop starts now; no round trip.
    /// Used for a second, small pool beside the main one (the groups' node heartbeat and sweep).
    /// - Parameter failures: where failures are reported (default: a reporter of its own)
    public init(client: PostgresClient, configuration: PostgresClient.Configuration, logger: Logger,
                failures: DatabaseFailures = DatabaseFailures()) {
        self.failures = failures
        self.client = client
        self.configuration = configuration
        self.logger = logger
        self.runner = Task { await client.run() }
    }

    /// Connects to `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (TLS off unless `?sslmode=require`);
    /// fails when the server cannot be reached within `connectTimeout`.
    public static func open(url: String, logger: Logger = Logger(label: "modem-hub.postgres")) async throws -> PostgresEngine {
        let config = try configuration(url: url)
        let engine = PostgresEngine(client: PostgresClient(configuration: config, backgroundLogger: logger),
                                    configuration: config, logger: logger)
        do { _ = try await engine.query("SELECT 1", []) } catch {
            try? await engine.close()
            throw error
        }
        return engine
    }

    /// Parses a `postgres://` (or `postgresql://`) URL into a client configuration.
    public static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let c = URLComponents(string: url), let scheme = c.scheme, ["postgres", "postgresql"].contains(scheme),
              let host = c.host, !host.isEmpty
        else { throw StoreError.badURL("expected postgres://USER@HOST:PORT/DB") }
        let user = c.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = c.password.flatMap { $0.removingPercentEncoding }
        var db = c.path
        if db.hasPrefix("/") { db.removeFirst() }
        let sslRequired = c.queryItems?.contains { $0.name == "sslmode" && $0.value == "require" } ?? false
        var config = PostgresClient.Configuration(
            host: host, port: c.port ?? 5432, username: user, password: password,
            database: db.isEmpty ? user : db,
            tls: sslRequired ? .require(.makeClientConfiguration()) : .disable)
        config.options.maximumConnections = 16
        config.options.connectTimeout = .seconds(5)
        return config
    }

    @discardableResult
    public func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        do {
            return try await Self.run(sql, binds) { try await client.query($0, logger: logger) }
        } catch {
            failures.report(error)
            throw error
        }
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { conn in
                try await body(Connection(connection: conn, logger: logger))
            }
        } catch let error as PostgresTransactionError {
            // Prefer the closure's own error (a StoreError, an OAuth outcome) to the wrapper.
            let e = error.closureError.map { Self.map($0, "transaction") } ?? Self.map(error.commitError ?? error.beginError ?? error, "transaction")
            if error.closureError == nil || e is StoreError { failures.report(e) }
            throw e
        } catch {
            failures.report(error)
            throw error
        }
    }

    public func close() async throws {
        runner.cancel()
        await runner.value
    }

    private struct Connection: SQLExecutor {
        let connection: PostgresConnection
        let logger: Logger
        var dialect: SQLDialect { .postgres }
        @discardableResult
        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            try await PostgresEngine.run(sql, binds) { try await connection.query($0, logger: logger) }
        }
    }

    static func run(_ sql: String, _ binds: [SQLValue],
                    _ send: (PostgresQuery) async throws -> PostgresRowSequence) async throws -> [SQLRow] {
        var b = PostgresBindings(capacity: binds.count)
        for v in binds {
            switch v {
            case .int(let i): b.append(i)
            case .text(let s): b.append(s)
            case .blob(let bytes): b.append(ByteBuffer(bytes: bytes))
            case .null: b.appendNull()
            }
        }
        do {
            let seq = try await send(PostgresQuery(unsafeSQL: SQLDialect.postgres.render(sql), binds: b))
            var rows: [SQLRow] = []
            for try await row in seq {
                var values: [SQLValue] = []
                values.reserveCapacity(row.count)
                for cell in row {
                    values.append(try decode(cell))
                }
                rows.append(SQLRow(values))
            }
            return rows
        } catch {
            throw map(error, sql)
        }
    }

    static func decode(_ cell: PostgresCell) throws -> SQLValue {
        if cell.bytes == nil { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return .int(try cell.decode(Int64.self))
        case .bool: return .int(try cell.decode(Bool.self) ? 1 : 0)
        case .bytea: return .blob(Array(try cell.decode(ByteBuffer.self).readableBytesView))
        default: return .text(try cell.decode(String.self))
        }
    }

    static func map(_ error: any Error, _ sql: String) -> any Error {
        if error is StoreError { return error }
        if let e = error as? PSQLError {
            let state = e.serverInfo?[.sqlState]
            let message = e.serverInfo?[.message] ?? "\(e.code)"
            if state == "23505" { return StoreError.conflict(message) }
            if state == "40P01" || state == "40001" { return StoreError.transactionConflict("\(message) (in: \(sql.prefix(48)))") }
            return StoreError.engine("\(message) (in: \(sql.prefix(48)))")
        }
        return error
    }
}
