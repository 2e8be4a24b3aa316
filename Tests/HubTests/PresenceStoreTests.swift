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

    // MARK: - Bounded posts and paged history (issue 32, the post flood)

    static let smallBounds = PostBounds(perUserPerGroup: 3, perGroup: 5)

    /// New posts over a bound are refused with the bound named, as the machine refuses them; a
    /// replacement takes no new place; nothing kept is evicted; an unpost frees a place.
    func boundedPosts(_ store: SQLGroupStore, prefix: String) async throws {
        var model = PresenceState(postBounds: store.postBounds)
        let g = prefix + "g", other = prefix + "h"
        var t: Int64 = 1_000
        func post(_ user: String, _ pid: String, in group: String? = nil) async throws -> PresenceOutcome {
            t += 1
            let p = GroupPost(group: group ?? g, pid: pid, user: user, pidload: try JSONObjectText(validating: "{\"t\":\(t)}"), timestamp: t)
            let expected = model.post(p)
            let got = try await store.post(p)
            #expect(got == expected, "\(user) \(pid)")
            return got
        }
        for i in 0..<3 {
            if case .posted(_, false) = try await post("a", "a\(i)") {} else { Issue.record("post \(i) of 3 was not stored") }
        }
        #expect(try await post("a", "a3") == .refused(.tooManyPosts(group: g, bound: .perUserPerGroup(3))))
        if case .posted(_, let replaced) = try await post("a", "a1") { #expect(replaced) } else { Issue.record("a replacement at the bound was refused") }
        #expect(try await post("a", "a0", in: other) != .refused(.tooManyPosts(group: other, bound: .perUserPerGroup(3))))
        _ = try await post("b", "b0")
        _ = try await post("b", "b1")
        #expect(try await post("c", "c0") == .refused(.tooManyPosts(group: g, bound: .perGroup(5))))
        #expect(try await post("b", "b2") == .refused(.tooManyPosts(group: g, bound: .perGroup(5))))
        let kept = try await store.posts(group: g, limit: 100, skip: 0).items
        #expect(kept.map(\.pid).sorted() == ["a0", "a1", "a2", "b0", "b1"], "nothing evicted, nothing over")
        #expect(try await store.unpost(group: g, pid: "b0", user: "b") == .unposted(group: g, pid: "b0"))
        _ = model.unpost(group: g, pid: "b0", user: "b")
        if case .posted = try await post("c", "c0") {} else { Issue.record("a place freed by an unpost was not given") }
        #expect(model.snapshot(g).posts == (try await store.posts(group: g, limit: 100, skip: 0).items))
    }

    /// Many new posts at once into one group: exactly the bound is kept (no two take the last place).
    func postsAtOnce(_ store: SQLGroupStore, prefix: String) async throws {
        let g = prefix + "burst"
        let outcomes = try await withThrowingTaskGroup(of: PresenceOutcome.self) { tasks in
            for i in 0..<30 {
                tasks.addTask {
                    try await store.post(GroupPost(group: g, pid: "p\(i)", user: "u\(i % 10)", pidload: .empty, timestamp: Int64(i)))
                }
            }
            return try await tasks.reduce(into: [PresenceOutcome]()) { $0.append($1) }
        }
        let posted = outcomes.filter { if case .posted = $0 { true } else { false } }.count
        let refused = outcomes.filter { if case .refused(.tooManyPosts) = $0 { true } else { false } }.count
        #expect(posted == store.postBounds.perGroup && refused == 30 - posted, "\(posted) posted, \(refused) refused")
        #expect(try await store.posts(group: g, limit: 100, skip: 0).items.count == store.postBounds.perGroup)
    }

    /// Keyset pages (a join's history) give every member and post once, in order, however small the
    /// page and even where posts share a time.
    func historyPages(_ store: SQLGroupStore, prefix: String) async throws {
        let g = prefix + "pages"
        var big = store
        big.postBounds = PostBounds(perUserPerGroup: 100, perGroup: 100)
        for i in 0..<23 {
            _ = try await big.post(GroupPost(group: g, pid: "p\(String(format: "%02d", 22 - i))", user: "u\(i % 4)", pidload: .empty, timestamp: Int64(10 + i / 3)))
        }
        for i in 0..<7 { _ = try await store.join(conn: prefix + "c\(i)", instance: "n", group: g, user: "m\(i)", now: 5) }
        for size in [1, 2, 5, 64] {
            var posts: [GroupPost] = [], cursor: PostCursor?
            while true {
                let page = try await store.posts(group: g, after: cursor, limit: size)
                posts += page
                if page.count < size { break }
                cursor = page.last.map(PostCursor.init(after:))
            }
            #expect(posts == (try await store.posts(group: g, limit: 100, skip: 0).items), "page size \(size)")
            var members: [MemberPresence] = [], after: String?
            while true {
                let page = try await store.members(group: g, after: after, limit: size)
                members += page
                if page.count < size { break }
                after = page.last?.user
            }
            #expect(members == (try await store.members(group: g, limit: 100, skip: 0).items), "page size \(size)")
        }
        // Without the snapshot (how the hub runs), a join still says who came online, and reads no group.
        var lean = store
        lean.snapshotOnJoin = false
        let joined = try await lean.join(conn: prefix + "late", instance: "n", group: g, user: "late", now: 9)
        guard case .joined(_, let snap, let online) = joined else { Issue.record("\(joined)"); return }
        #expect(snap.members.isEmpty && snap.posts.isEmpty)
        #expect(online?.user == "late" && online?.isOnline == true)
    }

    /// One user's posts in all groups together are bounded (a group exists as soon as someone posts to
    /// it): refused naming the bound, as the machine refuses them; a replacement and an unpost as before;
    /// other users unaffected. Then many posts of one user into many groups at once: exactly the bound kept.
    func boundedPerUser(_ base: SQLGroupStore, prefix: String) async throws {
        var store = base
        store.postBounds = PostBounds(perUserPerGroup: 3, perGroup: 5, perUser: 4)
        var model = PresenceState(postBounds: store.postBounds)
        func post(_ user: String, _ pid: String, _ group: String) async throws -> PresenceOutcome {
            let p = GroupPost(group: prefix + group, pid: pid, user: user, pidload: .empty, timestamp: 1)
            let expected = model.post(p)
            let got = try await store.post(p)
            #expect(got == expected, "\(user) \(pid) \(group)")
            return got
        }
        for (pid, g) in [("a0", "g1"), ("a1", "g1"), ("a2", "g1"), ("a3", "g2")] {
            if case .posted(_, false) = try await post("a", pid, g) {} else { Issue.record("\(pid) in \(g) was not stored") }
        }
        let over = PresenceRefusal.tooManyPosts(group: prefix + "g3", bound: .perUser(4))
        #expect(try await post("a", "a4", "g3") == .refused(over))
        #expect(over.message.contains("max-posts-per-user") && PostBound.perUser(4).name == "max-posts-per-user")
        if case .posted(_, true) = try await post("a", "a3", "g2") {} else { Issue.record("a replacement at the bound was refused") }
        if case .posted = try await post("b", "b0", "g3") {} else { Issue.record("another user was refused") }
        #expect(try await store.unpost(group: prefix + "g1", pid: "a0", user: "a") == .unposted(group: prefix + "g1", pid: "a0"))
        _ = model.unpost(group: prefix + "g1", pid: "a0", user: "a")
        if case .posted = try await post("a", "a4", "g3") {} else { Issue.record("a place freed by an unpost was not given") }

        let bounded = store
        let outcomes = try await withThrowingTaskGroup(of: PresenceOutcome.self) { tasks in
            for i in 0..<12 {
                tasks.addTask {
                    try await bounded.post(GroupPost(group: prefix + "many\(i)", pid: "p", user: "c", pidload: .empty, timestamp: Int64(i)))
                }
            }
            return try await tasks.reduce(into: [PresenceOutcome]()) { $0.append($1) }
        }
        let posted = outcomes.filter { if case .posted = $0 { true } else { false } }.count
        let refused = outcomes.filter { if case .refused(.tooManyPosts(_, .perUser(4))) = $0 { true } else { false } }.count
        #expect(posted == 4 && refused == 8, "\(posted) posted, \(refused) refused")
    }

    /// The groups one user is a member of are bounded (a group exists as soon as someone joins it): the
    /// join over the bound is refused naming it, as the machine refuses it, and makes no member row;
    /// rejoining a group one is in takes no new place; leaving frees one; other users unaffected.
    func boundedGroups(_ base: SQLGroupStore, prefix: String) async throws {
        var store = base
        store.postBounds = PostBounds(groupsPerUser: 3)
        var model = PresenceState(postBounds: store.postBounds)
        model.connect(prefix + "a/1", user: "a", node: "n")
        model.connect(prefix + "b/1", user: "b", node: "n")
        func join(_ user: String, _ group: String) async throws -> PresenceOutcome {
            let conn = prefix + user + "/1"
            let expected = model.join(conn, group: prefix + group, now: 7)
            let got = try await store.join(conn: conn, instance: "n", group: prefix + group, user: user, now: 7)
            #expect(got == expected, "\(user) \(group)")
            return got
        }
        for g in ["g1", "g2", "g3"] {
            if case .joined = try await join("a", g) {} else { Issue.record("join of \(g) under the bound was refused") }
        }
        let over = PresenceRefusal.tooManyGroups(group: prefix + "g4", bound: 3)
        #expect(try await join("a", "g4") == .refused(over))
        #expect(over.message.contains("max-groups-per-user"))
        #expect(try await store.members(group: prefix + "g4", limit: 10, skip: 0).items.isEmpty, "a refused join made a member row")
        if case .joined = try await join("a", "g2") {} else { Issue.record("a rejoin at the bound was refused") }
        if case .joined = try await join("b", "g4") {} else { Issue.record("another user was refused") }
        let left = try await store.leave(conn: prefix + "a/1", group: prefix + "g1", user: "a", now: 8)
        #expect(left == model.leave(prefix + "a/1", group: prefix + "g1", now: 8))
        if case .joined = try await join("a", "g4") {} else { Issue.record("a place freed by a leave was not given") }
        #expect(try await join("a", "g5") == .refused(.tooManyGroups(group: prefix + "g5", bound: 3)))
        #expect(PresenceRules.actions(for: .refused(over), by: "c", op: "join")
                == [.error("c", ClientOpError(op: "join", message: over.message, fatal: false))])
    }

    /// New device ids are bounded per address per hour (every address, loopback too) and per client in
    /// all: refused naming the bound, nothing stored; the hour moves on.
    func boundedDevices(_ base: SQLGroupStore, prefix: String) async throws {
        var store = base
        store.deviceBounds = DeviceBounds(perAddressPerHour: 3, perClient: 5)
        let hour = DeviceBounds.windowMs
        var ids: [String] = []
        for _ in 0..<3 {
            guard case .allocated(let id) = try await store.allocateDevice(clientID: prefix + "c", address: "127.0.0.2", now: 1_000) else {
                Issue.record("an allocation under the bound was refused"); return
            }
            ids.append(id)
        }
        #expect(try await store.allocateDevice(clientID: prefix + "c", address: "127.0.0.2", now: 1_000) == .refused(.perAddressPerHour(3)))
        #expect(try await store.allocateDevice(clientID: prefix + "d", address: "127.0.0.2", now: 1_000 + hour - 1) == .refused(.perAddressPerHour(3)),
                "the bound per address counts every client")
        #expect(try await store.deviceClient(ids[0]) == prefix + "c")
        guard case .allocated = try await store.allocateDevice(clientID: prefix + "c", address: "127.0.0.1", now: 1_000) else {
            Issue.record("another address was refused"); return
        }
        // An hour later the address may again; the client then reaches its bound in all.
        guard case .allocated = try await store.allocateDevice(clientID: prefix + "c", address: "127.0.0.2", now: 1_000 + hour) else {
            Issue.record("the hour did not move on"); return
        }
        #expect(try await store.allocateDevice(clientID: prefix + "c", address: "10.0.0.9", now: 1_000 + hour) == .refused(.perClient(5)))
        #expect(DeviceBound.perClient(5).name == "max-devices-per-client" && DeviceBound.perAddressPerHour(3).name == "devices-per-address-per-hour")
    }

    @Test("SQLite: one user's posts in all groups and groups joined bounded; device ids bounded per address per hour and per client")
    func userAndDeviceBoundsSQLite() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("userbounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try await openSQLiteGroupStore(path: dir.appendingPathComponent("hub.sqlite").path)
        try await boundedPerUser(store, prefix: "s")
        try await boundedGroups(store, prefix: "sj")
        try await boundedDevices(store, prefix: "s")
        try await store.db.close()
    }

    @Test("PostgreSQL: one user's posts in all groups and groups joined bounded, also at once from a pool; device ids bounded (HUB_TEST_POSTGRES_URL)",
          .enabled(if: PostgresPeer.enabled, PostgresPeer.missing))
    func userAndDeviceBoundsPostgres() async throws {
        let url = try await freshPostgresDatabase(prefix: "hubuserposts_")
        try await withPostgresGroupStore(url: url) { store in
            try await boundedPerUser(store, prefix: "p")
            try await boundedGroups(store, prefix: "pj")
            try await boundedDevices(store, prefix: "p")
        }
    }

    @Test("SQLite: posts bounded per user per group and per group, refused not evicted; history pages")
    func boundsSQLite() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postbounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try await openSQLiteGroupStore(path: dir.appendingPathComponent("hub.sqlite").path, postBounds: Self.smallBounds)
        try await boundedPosts(store, prefix: "s")
        try await postsAtOnce(store, prefix: "s")
        try await historyPages(store, prefix: "s")
        try await store.db.close()
    }

    @Test("PostgreSQL: posts bounded, also against posts at once from a pool; history pages (HUB_TEST_POSTGRES_URL)",
          .enabled(if: PostgresPeer.enabled, PostgresPeer.missing))
    func boundsPostgres() async throws {
        let url = try await freshPostgresDatabase(prefix: "hubposts_")
        try await withPostgresGroupStore(url: url, postBounds: Self.smallBounds) { store in
            try await boundedPosts(store, prefix: "p")
            try await postsAtOnce(store, prefix: "p")
            try await historyPages(store, prefix: "p")
        }
    }

    @Test("PostgreSQL gives the machine's outcomes (HUB_TEST_POSTGRES_URL)",
          .enabled(if: PostgresPeer.enabled, PostgresPeer.missing))
    func postgres() async throws {
        // A database of its own: a hub node of another test on the cluster's shared database would sweep
        // this test's presences (their instances have no live node row) offline at its own time.
        let url = try await freshPostgresDatabase(prefix: "hubpresence_")
        try await withPostgresGroupStore(url: url) { store in
            let prefix = "t\(UInt32.random(in: 0...UInt32.max))"
            try await differential(store, seed: 7, steps: 300, prefix: prefix)
        }
    }

}
