// Several hub nodes on one PostgreSQL database share the rendezvous: the database holds every
// nameplate and mailbox (the tables WormholePersister writes on SQLite, one JSON body per record), and
// each request runs in one transaction under the application's advisory lock: the records it needs are
// read fresh, the same rules as on one node (WormholeRendezvous) are applied to them, and what changed
// is written back before the answer. A mailbox that got a message is announced on the groups' bus
// (PostgreSQL NOTIFY on `hub_groups`, tagged `~wormhole`, sent inside the transaction so it arrives at
// commit); every node that has listeners of that mailbox reads it again and gives them what is new.
// Memory keeps only the mailboxes this node's clients have open.

import Foundation
import HubStore
import Logging

/// The rendezvous of one node when the truth is a database shared by several.
public actor WormholeShared {
    let db: any SQLDatabase
    let rendezvous: WormholeRendezvous
    let bus: PostgresGroupBus
    let origin = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let logger: Logger
    private var ready = false
    /// One request at a time on this node (the actor is reentrant across the transaction's awaits).
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// The bus's tag for the rendezvous's notifications.
    static let tag = "wormhole"

    /// Shares `rendezvous` through `db`, announcing changes on `bus`.
    public init(db: any SQLDatabase, rendezvous: WormholeRendezvous, bus: PostgresGroupBus, logger: Logger) {
        self.db = db
        self.rendezvous = rendezvous
        self.bus = bus
        self.logger = logger
    }

    /// Creates the tables when missing and starts taking the other nodes' notifications (once).
    public func ensureReady() async {
        if ready { return }
        ready = true
        for table in ["wormhole_nameplates", "wormhole_mailboxes"] {
            do {
                try await db.query("CREATE TABLE IF NOT EXISTS \(table) (app TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (app, id))", [])
            } catch {
                logger.error("wormhole: cannot create \(table): \(error)")
            }
        }
        let me = origin
        bus.addHandler(tag: Self.tag) { [weak self] payload in
            let f = payload.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 3, f[0] != me, let self else { return }
            await self.remoteChange(app: f[1], mailbox: f[2])
        }
    }

    /// What a request reads before it runs.
    public struct Scope: Sendable {
        var nameplates: [String] = []
        var allNameplates = false
        var mailboxes: [String] = []
        var countNameplates = false
        /// The client's address, whose holdings over the whole database the bounds per address count.
        var address: String? = nil
        /// Whether the request may create a nameplate (allocate, claim): only then are the address's
        /// nameplates counted (a scan of `wormhole_nameplates`); its mailboxes and bytes always are.
        var addressNameplates = true
    }

    /// Runs `op` on fresh copies of the records in `scope` (and the mailboxes of those nameplates),
    /// in one transaction under the application's lock; writes what it changed and announces changed
    /// mailboxes, then forgets what no local listener needs.
    /// - Throws: the op's ``RendezvousRefusal``, or one naming a database failure.
    public func perform<T: Sendable>(app: String, _ scope: Scope,
                                     _ op: @escaping @Sendable () throws(RendezvousRefusal) -> T) async throws(RendezvousRefusal) -> T {
        await ensureReady()
        await acquire()
        defer { releaseTurn() }
        let rendezvous = self.rendezvous, origin = self.origin, bus = self.bus
        let maximum = rendezvous.maximumNameplates
        let outcome: Result<(T, [String], [String]), RendezvousRefusal>
        do {
            outcome = try await db.transaction { tx in
                try await tx.query("SELECT CAST(pg_advisory_xact_lock(hashtext($1)) AS TEXT)", [.text("wormhole:" + app)])
                var records: [WormholeRendezvous.Change] = []
                var plates = scope.nameplates
                if scope.allNameplates {
                    plates = try await tx.query("SELECT id FROM wormhole_nameplates WHERE app = $1", [.text(app)]).compactMap { $0[0].text }
                }
                var boxes = scope.mailboxes
                for p in plates {
                    let body = try await tx.first("SELECT body FROM wormhole_nameplates WHERE app = $1 AND id = $2", [.text(app), .text(p)])?[0].text
                    records.append(.init(record: .init(kind: .nameplate, app: app, key: p), body: body))
                }
                // Nameplates this memory knows but the database does not: gone.
                if scope.allNameplates {
                    for p in rendezvous.nameplates(app: app) where !plates.contains(p) {
                        records.append(.init(record: .init(kind: .nameplate, app: app, key: p), body: nil))
                    }
                }
                rendezvous.refresh(records)
                for p in plates { if let m = rendezvous.mailbox(app: app, nameplate: p), !boxes.contains(m) { boxes.append(m) } }
                var boxRecords: [WormholeRendezvous.Change] = []
                for m in boxes {
                    let body = try await tx.first("SELECT body FROM wormhole_mailboxes WHERE app = $1 AND id = $2", [.text(app), .text(m)])?[0].text
                    boxRecords.append(.init(record: .init(kind: .mailbox, app: app, key: m), body: body))
                }
                rendezvous.refresh(boxRecords)
                _ = rendezvous.takeChanges()  // a clean slate: only the op's changes are written
                if scope.countNameplates,
                   let n = try await tx.first("SELECT CAST(COUNT(*) AS TEXT) FROM wormhole_nameplates", [])?[0].text, let count = Int(n), count >= maximum {
                    return .failure(RendezvousRefusal.serverFull("the server has no room for another nameplate"))
                }
                // What the client's address holds over every application and node (the records keep who made them).
                if let address = scope.address {
                    // A plain text match first (cheap) picks the records that name the address at all.
                    let mention = "%\"" + address + "\"%"
                    func number(_ sql: String) async throws -> Int {
                        Int(try await tx.first(sql, [.text(address), .text(mention)])?[0].text ?? "0") ?? 0
                    }
                    // Each is a scan of its table (no index on who made a record): the nameplates only when
                    // the request may create one; the mailboxes and the bytes in one pass.
                    let plates = scope.addressNameplates
                        ? try await number("SELECT CAST(COUNT(*) AS TEXT) FROM wormhole_nameplates WHERE body LIKE $2 AND CAST(body AS json)->>'by' = $1")
                        : 0
                    let row = try await tx.first("""
                        SELECT CAST(COUNT(*) FILTER (WHERE CAST(body AS json)->>'by' = $1) AS TEXT),
                               CAST(COALESCE(SUM(CAST(CAST(body AS json)->'charges'->>CAST($1 AS TEXT) AS bigint)), 0) AS TEXT)
                        FROM wormhole_mailboxes WHERE body LIKE $2
                        """, [.text(address), .text(mention)])
                    let boxes = Int(row?[0].text ?? "0") ?? 0, bytes = Int(row?[1].text ?? "0") ?? 0
                    rendezvous.setHoldingInAll(of: address, nameplates: plates, mailboxes: boxes, bytes: bytes)
                }
                defer { if let address = scope.address { rendezvous.forgetHoldingElsewhere(of: address) } }
                let result: Result<T, RendezvousRefusal>
                do throws(RendezvousRefusal) { result = .success(try op()) } catch { result = .failure(error) }
                let changes = rendezvous.takeChanges().changes
                var changedBoxes: [String] = []
                for c in changes where c.record.app == app {
                    let table = c.record.kind == .nameplate ? "wormhole_nameplates" : "wormhole_mailboxes"
                    if let body = c.body {
                        try await tx.query("INSERT INTO \(table) (app, id, body) VALUES ($1, $2, $3) ON CONFLICT (app, id) DO UPDATE SET body = excluded.body",
                                           [.text(app), .text(c.record.key), .text(body)])
                    } else {
                        try await tx.query("DELETE FROM \(table) WHERE app = $1 AND id = $2", [.text(app), .text(c.record.key)])
                    }
                    if c.record.kind == .mailbox {
                        changedBoxes.append(c.record.key)
                        try await bus.notify(tag: Self.tag, payload: origin + "\u{1F}" + app + "\u{1F}" + c.record.key, on: tx)
                    }
                }
                for c in changes where c.record.kind == .nameplate && !plates.contains(c.record.key) { plates.append(c.record.key) }
                return result.map { ($0, plates, boxes + changedBoxes) }
            }
        } catch {
            logger.error("wormhole: database: \(error)")
            throw RendezvousRefusal.databaseFailed
        }
        let (value, plates, boxes) = try outcome.get()
        rendezvous.forget(app: app, nameplates: plates, mailboxes: boxes)
        return value
    }

    private func acquire() async {
        if busy { await withCheckedContinuation { waiting.append($0) } } else { busy = true }
    }

    private func releaseTurn() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Another node changed a mailbox: read it again when someone here listens to it (in turn with
    /// this node's requests, so an older read never overwrites a newer one).
    func remoteChange(app: String, mailbox: String) async {
        guard rendezvous.hasListeners(app: app, mailbox: mailbox) else { return }
        await acquire()
        defer { releaseTurn() }
        do {
            let body = try await db.first("SELECT body FROM wormhole_mailboxes WHERE app = $1 AND id = $2", [.text(app), .text(mailbox)])?[0].text
            rendezvous.refresh([.init(record: .init(kind: .mailbox, app: app, key: mailbox), body: body)])
            _ = rendezvous.takeChanges()
        } catch {
            logger.warning("wormhole: cannot read mailbox after a notification: \(error)")
        }
    }

    /// Drops nameplates and mailboxes nobody touched for the rendezvous's idle time.
    public func expire(now: Double) async {
        let cutoff = now - rendezvous.idleSeconds
        for table in ["wormhole_nameplates", "wormhole_mailboxes"] {
            _ = try? await db.query("DELETE FROM \(table) WHERE CAST(CAST(body AS json)->>'touched' AS double precision) < CAST($1 AS double precision)",
                                   [.text(String(cutoff))])
        }
    }
}
