import HubStore

/// Keeps the rendezvous's nameplates and mailboxes in the hub's database (tables `wormhole_nameplates`
/// and `wormhole_mailboxes`, one JSON body per record), so a hub killed and restarted on the same
/// database carries on: its clients reconnect and find their mailboxes. One writer: changes are taken
/// from the rendezvous and written in order; a client's request is answered once the change it made
/// is written (``flush(upTo:)``).
public actor WormholePersister {
    let db: any SQLDatabase
    let rendezvous: WormholeRendezvous
    private var loaded = false
    private var loading: Task<Void, Never>?
    private var saving = false
    private var savedGeneration = 0
    private var waiters: [(generation: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Creates a persister of `rendezvous` over `db`.
    public init(db: any SQLDatabase, rendezvous: WormholeRendezvous) {
        self.db = db
        self.rendezvous = rendezvous
    }

    /// Creates the tables when missing and restores what they hold (once; later calls wait for it).
    public func ensureLoaded() async {
        if loaded { return }
        if let loading { return await loading.value }
        let task = Task { [db, rendezvous] in
            do {
                for table in ["wormhole_nameplates", "wormhole_mailboxes"] {
                    try await db.query("CREATE TABLE IF NOT EXISTS \(table) (app TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, "
                                       + "PRIMARY KEY (app, id))", [])
                }
                var records: [WormholeRendezvous.Change] = []
                for (table, kind) in [("wormhole_nameplates", WormholeRendezvous.RecordKey.Kind.nameplate),
                                      ("wormhole_mailboxes", .mailbox)] {
                    for row in try await db.query("SELECT app, id, body FROM \(table)", []) {
                        guard case .text(let app) = row[0], case .text(let id) = row[1], case .text(let body) = row[2] else { continue }
                        records.append(.init(record: .init(kind: kind, app: app, key: id), body: body))
                    }
                }
                rendezvous.restore(records)
            } catch {
                // Without its tables the rendezvous still works, in memory.
            }
        }
        loading = task
        await task.value
        loaded = true
        savedGeneration = rendezvous.takeChanges().generation  // what was restored is stored already
    }

    /// Returns once every change up to `generation` is written.
    public func flush(upTo generation: Int) async {
        if savedGeneration >= generation { return }
        if saving {
            await withCheckedContinuation { waiters.append((generation, $0)) }
            return
        }
        saving = true
        while savedGeneration < rendezvous.generation {
            let (g, changes) = rendezvous.takeChanges()
            try? await write(changes)
            savedGeneration = g
            let ready = waiters.filter { $0.generation <= g }
            waiters.removeAll { $0.generation <= g }
            for w in ready { w.continuation.resume() }
        }
        saving = false
        for w in waiters { w.continuation.resume() }
        waiters.removeAll()
    }

    private func write(_ changes: [WormholeRendezvous.Change]) async throws {
        guard !changes.isEmpty else { return }
        try await db.transaction { tx in
            for c in changes {
                let table = c.record.kind == .nameplate ? "wormhole_nameplates" : "wormhole_mailboxes"
                if let body = c.body {
                    try await tx.query("INSERT INTO \(table) (app, id, body) VALUES ($1, $2, $3) "
                                       + "ON CONFLICT (app, id) DO UPDATE SET body = excluded.body",
                                       [.text(c.record.app), .text(c.record.key), .text(body)])
                } else {
                    try await tx.query("DELETE FROM \(table) WHERE app = $1 AND id = $2", [.text(c.record.app), .text(c.record.key)])
                }
            }
        }
    }
}
