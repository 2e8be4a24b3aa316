// The `--db` choice of the groups store: SQLite file or PostgreSQL URL, and a scoped PostgreSQL store.

import Logging
import PostgresNIO

/// Where the groups state lives.
public enum GroupDatabase: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(host: String, port: Int, user: String, password: String?, database: String)

    /// Parses `sqlite:PATH` or `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`.
    public init(parsing text: String) throws(GroupDatabaseError) {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw GroupDatabaseError(text: "sqlite: needs a path") }
            self = .sqlite(path: path)
            return
        }
        var rest: Substring
        if text.hasPrefix("postgres://") { rest = text.dropFirst("postgres://".count) }
        else if text.hasPrefix("postgresql://") { rest = text.dropFirst("postgresql://".count) }
        else { throw GroupDatabaseError(text: "--db must be sqlite:PATH or postgres://USER@HOST:PORT/DB") }
        var user = "postgres"
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let cred = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = cred.firstIndex(of: ":") {
                user = String(cred[..<colon])
                password = String(cred[cred.index(after: colon)...]).removingPercentEncodingLite
            } else {
                user = String(cred)
            }
        }
        var database = user
        if let slash = rest.firstIndex(of: "/") {
            let db = rest[rest.index(after: slash)...].prefix { $0 != "?" }
            if !db.isEmpty { database = String(db) }
            rest = rest[..<slash]
        }
        var host = String(rest)
        var port = 5432
        if let colon = rest.lastIndex(of: ":") {
            guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
                throw GroupDatabaseError(text: "bad port in --db")
            }
            port = p
            host = String(rest[..<colon])
        }
        guard !host.isEmpty else { throw GroupDatabaseError(text: "--db postgres:// needs a host") }
        self = .postgres(host: host, port: port, user: user, password: password, database: database)
    }
}

/// A `--db` value that could not be used.
public struct GroupDatabaseError: Error, Sendable, CustomStringConvertible {
    public var text: String
    public var description: String { text }
}

extension String {
    /// Decodes %XX escapes (passwords in URLs).
    var removingPercentEncodingLite: String {
        var out: [UInt8] = []
        var it = Array(utf8)[...]
        while let c = it.popFirst() {
            if c == UInt8(ascii: "%"), it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v); it = it.dropFirst(2)
            } else {
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}


/// Runs `body` with a groups store on the PostgreSQL database at `url` (the pool runs meanwhile).
public func withPostgresStore<T: Sendable>(url: String, logger: Logger = Logger(label: "hub.groups"),
                                           _ body: (SQLGroupStore) async throws -> T) async throws -> T {
    guard case .postgres(let host, let port, let user, let password, let db) = try GroupDatabase(parsing: url) else {
        throw GroupDatabaseError(text: "not a postgres:// URL")
    }
    let client = PostgresClient(
        configuration: .init(host: host, port: port, username: user, password: password, database: db, tls: .disable),
        backgroundLogger: logger)
    let task = Task { await client.run() }
    defer { task.cancel() }
    let store = try await SQLGroupStore(engine: GroupPostgresEngine(client: client, logger: logger))
    return try await body(store)
}
