#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import NIOCore
import PostgresNIO
import ModemRuntime

/// Wall-clock time in Unix milliseconds (the stored records' age).
private func wallClockMs() -> Int64 { Int64(SystemTime.wallNanoseconds() / 1_000_000) }

extension PostgresEngine {
    /// A second pool beside this one on the same server: its own connection cap and, with
    /// `asynchronousCommit`, commits that do not wait for the WAL flush (`synchronous_commit=off`: a
    /// PostgreSQL crash may lose the last few hundred milliseconds of its writes, never half of one).
    public func derived(asynchronousCommit: Bool, minimumConnections: Int? = nil, maximumConnections: Int? = nil,
                        logger: Logger) -> PostgresEngine {
        var c = configuration
        if asynchronousCommit { c.options.additionalStartupParameters.append(("synchronous_commit", "off")) }
        if let minimumConnections { c.options.minimumConnections = minimumConnections }
        if let maximumConnections { c.options.maximumConnections = maximumConnections }
        return PostgresEngine(client: PostgresClient(configuration: c, backgroundLogger: logger), configuration: c, logger: logger,
                              failures: failures)
    }
}

/// PostgreSQL's LISTEN/NOTIFY on one channel, and the table of payloads too large for a NOTIFY: what
/// carries the hub's events between nodes (`HubServer`'s group bus decides what the payloads say).
///
/// NOTIFY payloads must stay under 8000 bytes and NOTIFY takes a database-wide lock at commit, so the
/// caller batches; a record too large goes into `group_events` and its id travels instead. LISTEN
/// needs a dedicated connection (the pooled client cannot): ``listen(state:_:)`` keeps one, and
/// reconnects.
public final class PostgresNotifications: Sendable {
    /// The channel's name.
    public let channel: String
    let engine: PostgresEngine
    let listenConfiguration: PostgresConnection.Configuration
    let logger: Logger

    /// A channel on `engine`'s pool (NOTIFY, the stored records), LISTENing on a connection of its own
    /// to the same server.
    public init(channel: String, engine: PostgresEngine, logger: Logger) {
        self.channel = channel
        self.engine = engine
        self.logger = logger
        let c = engine.configuration
        listenConfiguration = PostgresConnection.Configuration(
            host: c.host ?? "127.0.0.1", port: c.port ?? 5432, username: c.username, password: c.password,
            database: c.database, tls: .disable)
    }

    /// On one pooled connection: stores each of `records` (its `origin` noted) and sends the payload
    /// `payloadFor(id)` for it, then NOTIFYs `payloads`.
    public func send(_ payloads: [String], storing records: [String], origin: String,
                     payloadFor: @escaping @Sendable (Int64) -> String) async throws {
        let channel = self.channel, logger = self.logger
        try await engine.client.withConnection { conn in
            var all = payloads
            for record in records {
                let rows = try await conn.query(
                    "INSERT INTO group_events(id, body, origin, created_ms) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM group_events), \(record), \(origin), \(Int64(wallClockMs()))) RETURNING id",
                    logger: logger)
                for try await id in rows.decode(Int64.self) { all.append(payloadFor(id)) }
            }
            for p in all {
                _ = try await conn.query("SELECT pg_notify(\(channel), \(p))", logger: logger)
            }
        }
    }

    /// Inside the transaction `tx`: stores each of `records` and NOTIFYs `payloads` and the stored ones'
    /// (PostgreSQL delivers them at commit, in commit order).
    public func send(_ payloads: [String], storing records: [String], origin: String, on tx: any SQLExecutor,
                     payloadFor: (Int64) -> String) async throws {
        var all = payloads
        for record in records {
            let rows = try await tx.query(
                "INSERT INTO group_events(id, body, origin, created_ms) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM group_events), $1, $2, $3) RETURNING id",
                [.text(record), .text(origin), .int(wallClockMs())])
            if let id = rows.first?[0].int { all.append(payloadFor(id)) }
        }
        for p in all {
            try await tx.query("SELECT CAST(pg_notify($1, $2) AS TEXT)", [.text(channel), .text(p)])
        }
    }

    /// A stored record by id.
    public func fetch(_ id: Int64) async throws -> String? {
        let rows = try await engine.client.query("SELECT body FROM group_events WHERE id = \(id)", logger: logger)
        for try await body in rows.decode(String.self) { return body }
        return nil
    }

    /// Deletes stored records older than `seconds`.
    public func prune(olderThan seconds: Int64 = 60) async {
        _ = try? await engine.client.query("DELETE FROM group_events WHERE created_ms < \(Int64(wallClockMs() - seconds * 1000))", logger: logger)
    }

    /// LISTENs until cancelled: every payload to `deliver`, in order; `state(true)` while the LISTEN
    /// is up, `state(false)` when it drops (it reconnects after 0.1 s, doubling to 2 s).
    public func listen(state: @escaping @Sendable (Bool) -> Void, _ deliver: @escaping @Sendable (String) async -> Void) async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                let conn = try await PostgresConnection.connect(configuration: listenConfiguration, id: 1, logger: logger)
                delay = .milliseconds(100)
                do {
                    try await conn.listen(on: channel) { notes in
                        state(true)
                        defer { state(false) }
                        for try await note in notes { await deliver(note.payload) }
                    }
                } catch {
                    logger.warning("notifications: LISTEN on \(channel) ended: \(error)")
                }
                try? await conn.close()
            } catch {
                logger.warning("notifications: cannot connect for LISTEN: \(error)")
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(2))
        }
    }
}
