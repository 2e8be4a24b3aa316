import Foundation
import HubStore
import Synchronization
import Testing

/// A transaction whose task is cancelled mid-way (as a graceful shutdown cancels the groups' heartbeat
/// and sweep loops) still ends, whole or not at all, and the next transaction of the database begins.
/// (PostgreSQL's client runs the cancelled task's statements and commits; on SQLite they fail and the
/// transaction is rolled back.) On SQLite
/// sqlite-nio skips the statements of a cancelled task; the engine's ROLLBACK used to be one of them, the
/// connection stayed inside the transaction, and every later BEGIN failed with "cannot start a
/// transaction within a transaction" (the warning a hub's clean stop logged). Failures are reported to
/// `failures`, cancellations are not.
@Suite struct TransactionCancellationTests {
    /// A gate one task waits at until another opens it.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
        func wait() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.open { return true }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }
        func open() { state.withLock { s in s.open = true; return s.waiter.take() }?.resume() }
    }

    @Test(arguments: StoreEngines.all)
    func aCancelledTransactionIsRolledBackAndTheNextBegins(_ engine: String) async throws {
        let db = try await StoreEngines.makeRaw(engine)
        let failed = Mutex(0)
        db.failures.onFailure { failed.withLock { $0 += 1 } }
        try await db.query("CREATE TABLE t (v INTEGER)", [])
        let inside = Gate(), resume = Gate()
        let task = Task {
            try await db.transaction { tx in
                try await tx.query("INSERT INTO t (v) VALUES (1)", [])
                inside.open()
                await resume.wait()
                // The task is cancelled now: this statement (and on SQLite anything else of this task
                // through sqlite-nio's async call) is not run.
                try await tx.query("INSERT INTO t (v) VALUES (2)", [])
            }
        }
        await inside.wait()
        task.cancel()
        resume.open()
        let committed = (try? await task.value) != nil
        if engine == "sqlite" { #expect(!committed, "sqlite-nio runs no statement of a cancelled task") }
        // The next transaction begins, and the cancelled one was kept whole or not at all.
        do {
            try await db.transaction { tx in try await tx.query("INSERT INTO t (v) VALUES (3)", []) }
            let rows = try await db.query("SELECT v FROM t ORDER BY v", [])
            #expect(rows.map { $0[0].int } == (committed ? [1, 2, 3] : [3]))
            #expect(failed.withLock { $0 } == 0, "a cancellation is not a database failure")
        } catch {
            Issue.record("the transaction after the cancelled one failed: \(error)")
        }
        try? await db.query("ROLLBACK", [])   // (only if the engine left one open) so the database closes
        try await db.close()
    }

    @Test func aFailedStatementIsReported() async throws {
        let db = try await StoreEngines.makeRaw("sqlite")
        let failed = Mutex(0)
        db.failures.onFailure { failed.withLock { $0 += 1 } }
        await #expect(throws: StoreError.self) { try await db.query("SELECT * FROM no_such_table", []) }
        try await db.query("CREATE TABLE u (k TEXT PRIMARY KEY)", [])
        try await db.query("INSERT INTO u (k) VALUES ('a')", [])
        await #expect(throws: StoreError.self) { try await db.query("INSERT INTO u (k) VALUES ('a')", []) }
        #expect(failed.withLock { $0 } == 1, "the missing table counts, the unique-key conflict does not")
        try await db.close()
    }
}
