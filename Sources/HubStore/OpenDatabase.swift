import Foundation
import Logging

/// Where the hub keeps its state, from `--db`: `sqlite:PATH` (the default, embedded) or `postgres://...`.
public enum DatabaseLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    /// Parses a `--db` value. `sqlite:` alone or a bare path is refused: the form must be explicit.
    public init(parsing text: String) throws {
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }  // sqlite:///abs/path
            guard !path.isEmpty else { throw StoreError.badURL("sqlite: needs a path (sqlite:PATH)") }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            _ = try PostgresEngine.configuration(url: text)
            self = .postgres(url: text)
        } else {
            throw StoreError.badURL("'--db' takes sqlite:PATH or postgres://USER@HOST:PORT/DB")
        }
    }

    /// `$XDG_DATA_HOME/swiftmodem/hub.sqlite` (XDG's default `~/.local/share` when unset).
    public static var defaultLocation: DatabaseLocation {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((env["HOME"] ?? NSHomeDirectory()) + "/.local/share")
        return .sqlite(path: base + "/swiftmodem/hub.sqlite")
    }

    /// A description safe for logs (a PostgreSQL password is masked).
    public var redacted: String {
        switch self {
        case .sqlite(let p): return "sqlite:\(p)"
        case .postgres(let u):
            guard var c = URLComponents(string: u) else { return "postgres://?" }
            if c.password != nil { c.password = "***" }
            return c.string ?? "postgres://?"
        }
    }

    /// Opens the database and runs the migrations.
    public func open(logger: Logger, nowMs: Int64) async throws -> any SQLDatabase {
        let db: any SQLDatabase
        switch self {
        case .sqlite(let path): db = try await SQLiteEngine.open(path: path, logger: logger)
        case .postgres(let url): db = try await PostgresEngine.open(url: url, logger: logger)
        }
        do {
            try await HubSchema.migrate(db, nowMs: nowMs, logger: logger)
        } catch {
            try? await db.close()
            throw error
        }
        return db
    }
}
