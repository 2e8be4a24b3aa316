import Foundation
import HubCore
import HubStore
import Testing

/// The SQL store must give the same outcomes as the pure machine's state for any sequence of
/// operations: random sequences run through both (SQLite always; PostgreSQL when HUB_TEST_POSTGRES_URL
/// names a database, e.g. from scripts/hub-postgres.sh).
@Suite("Presence store against the pure machine")
struct PresenceStoreTests {
    struct Rng {
        var s: UInt64
        mutating func next(_ n: Int) -> Int {
            s &+= 0x9E37_79B9_7F4A_7C15
            var z = s
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
    }

    /// Runs `steps` random operations on both and compares every outcome.
    func differential(_ store: any GroupStore, seed: UInt64, steps: Int, prefix: String) async throws {
        var model = PresenceState()
        var rng = Rng(s: seed)
        let users = ["u1", "u2", "u3", "u4"].map { prefix + $0 }
        let groups = ["ga", "gb", "gc"].map { prefix + $0 }
        let nodes = ["n1", "n2"].map { prefix + $0 }
        var live: [(conn: String, user: String, node: String)] = []
        var next = 0
        var now: Int64 = 1_700_000_000_000
        for step in 0..<steps {
            now += 1000
            if live.count < 2 || rng.next(8) == 0 {
                next += 1
                let c = (prefix + "c\(next)", users[rng.next(users.count)], nodes[rng.next(nodes.count)])
                live.append(c)
                model.connect(c.0, user: c.1, node: c.2)
                continue
            }
            let i = rng.next(live.count)
            let (conn, user, node) = live[i]
            let g = groups[rng.next(groups.count)]
            let expected: PresenceOutcome
            let got: PresenceOutcome
            let what: String
            switch rng.next(20) {
            case 0..<6:
                what = "join"
                expected = model.join(conn, group: g, now: now)
                got = try await store.join(conn: conn, instance: node, group: g, user: user, now: now)
            case 6..<8:
                what = "listen"
                expected = model.listen(group: g)
                got = try await store.listen(group: g)
            case 8..<10:
                what = "leave"
                expected = model.leave(conn, group: g, now: now)
                got = try await store.leave(conn: conn, group: g, user: user, now: now)
            case 10..<13:
                what = "post"
                let p = GroupPost(group: g, pid: "p\(rng.next(3))", user: user, pidload: try JSONObjectText(validating: "{\"s\":\(step)}"), timestamp: now)
                expected = model.post(p)
                got = try await store.post(p)
            case 13:
                what = "unpost"
                let pid = "p\(rng.next(3))"
                expected = model.unpost(group: g, pid: pid, user: user)
                got = try await store.unpost(group: g, pid: pid, user: user)
            case 14..<16:
                what = "update"
                let load = try JSONObjectText(validating: "{\"v\": \(step)}")
                expected = model.update(user: user, userload: load)
                got = try await store.update(user: user, userload: load, now: now)
            case 16..<19:
                what = "close"
                live.remove(at: i)
                expected = model.close(conn, now: now)
                got = try await store.close(conn: conn, now: now)
            default:
                what = "node dead"
                live.removeAll { $0.node == node }
                expected = model.nodeDied(node, lastSeen: now)
                got = try await store.removeNode(instance: node, now: now)
            }
            #expect(got == expected, "step \(step) \(what) on \(conn) in \(g)")
            if got != expected { return }
        }
        for g in groups {
            let page = try await store.members(group: g, limit: 1000, skip: 0)
            #expect(page.items == model.snapshot(g).members)
            let posts = try await store.posts(group: g, limit: 1000, skip: 0)
            #expect(posts.items == model.snapshot(g).posts)
        }
    }

    @Test("SQLite gives the machine's outcomes for 400 random operations")
    func sqlite() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try await openSQLiteGroupStore(path: dir.appendingPathComponent("hub.sqlite").path)
        for seed in 1...3 as ClosedRange<UInt64> {
            try await differential(store, seed: seed, steps: 400, prefix: "s\(seed)")
        }
        try await store.db.close()
    }

    @Test("pages of members and posts: limit, skip, more")
    func pages() async throws {
        let store = try await openSQLiteGroupStore(path: ":memory:")
        for i in 0..<7 {
            _ = try await store.post(GroupPost(group: "g", pid: "p\(i)", user: "u", pidload: .empty, timestamp: Int64(100 + i)))
            _ = try await store.join(conn: "c\(i)", instance: "n", group: "g", user: "u\(i)", now: 5)
        }
        let p1 = try await store.posts(group: "g", limit: 3, skip: 0)
        let p3 = try await store.posts(group: "g", limit: 3, skip: 6)
        #expect(p1.items.map(\.pid) == ["p0", "p1", "p2"] && p1.more)
        #expect(p3.items.map(\.pid) == ["p6"] && !p3.more)
        let m = try await store.members(group: "g", limit: 7, skip: 0)
        #expect(m.items.count == 7 && !m.more && m.items.allSatisfy(\.isOnline))
        try await store.db.close()
    }

    @Test("a sweep marks only stale instances' users offline, with their last heartbeat")
    func sweep() async throws {
        let store = try await openSQLiteGroupStore(path: ":memory:")
        try await store.heartbeat(instance: "old", name: "n2", now: 1_000)
        try await store.heartbeat(instance: "me", name: "n1", now: 5_000)
        _ = try await store.join(conn: "old/1", instance: "old", group: "g", user: "a", now: 900)
        _ = try await store.join(conn: "me/1", instance: "me", group: "g", user: "b", now: 900)
        let none = try await store.sweep(me: "me", staleBefore: 500, sameName: nil, now: 6_000)
        #expect(none == .wentOffline([]))
        let gone = try await store.sweep(me: "me", staleBefore: 2_000, sameName: nil, now: 6_000)
        #expect(gone == .wentOffline([MemberPresence(group: "g", user: "a", timestamp: 1_000, userload: .empty)]))
        let m = try await store.members(group: "g", limit: 10, skip: 0)
        #expect(m.items.map(\.timestamp) == [1_000, 0])
        try await store.db.close()
    }

    @Test("PostgreSQL gives the machine's outcomes (HUB_TEST_POSTGRES_URL)",
          .enabled(if: ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] != nil))
    func postgres() async throws {
        // A database of its own: a hub node of another test on the cluster's shared database would sweep
        // this test's presences (their instances have no live node row) offline at its own time.
        let base = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] ?? ""
        let admin = try await PostgresEngine.open(url: base)
        let name = "hubpresence_" + HubTokens.base32(HubTokens.randomBytes(8)).lowercased()
        try await admin.query("CREATE DATABASE \(name)", [])
        try await admin.close()
        var c = try #require(URLComponents(string: base))
        c.path = "/" + name
        let url = try #require(c.string)
        try await withPostgresGroupStore(url: url) { store in
            let prefix = "t\(UInt32.random(in: 0...UInt32.max))"
            try await differential(store, seed: 7, steps: 300, prefix: prefix)
        }
    }
}
