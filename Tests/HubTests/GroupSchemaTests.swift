import HubStore
import Testing

/// `GroupSchema.relations` is what lets a restarting node skip the DDL: it must name exactly what the
/// statements create.
@Suite("Group schema")
struct GroupSchemaTests {
    @Test("the relations list names every table and index the statements create")
    func relationsMatchStatements() async throws {
        let store = try await openSQLiteGroupStore(path: ":memory:")
        let hubTables = try await openSQLiteGroupStoreBaseline()
        let rows = try await store.db.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'", [])
        try await store.db.close()
        let created = Set(rows.compactMap { $0[0].text }).subtracting(hubTables)
        #expect(created == Set(GroupSchema.relations))
    }

    /// The relations of the hub's own migrations (accounts, tokens, ...), which are not the groups'.
    private func openSQLiteGroupStoreBaseline() async throws -> Set<String> {
        let db = try await SQLiteEngine.open(path: ":memory:")
        try await HubSchema.migrate(db, nowMs: 0)
        let rows = try await db.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'", [])
        try await db.close()
        return Set(rows.compactMap { $0[0].text })
    }
}
