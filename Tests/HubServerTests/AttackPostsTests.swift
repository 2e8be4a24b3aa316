import Foundation
import HubCore
import HubServer
import HubStore
import Logging
import ProcessTestSupport
import Testing

/// The post flood (issue 32, defect 8): kept posts bounded per user per group and per group (refused,
/// never evicted), and a join that delivers every post that exists as the socket drains, never by
/// overflowing a queue. The outbox as a value, the join in-process (a `GroupRuntime` on SQLite with a
/// writer that reads as slowly as the test likes), and the attack script (Tests/scripts/attacks/posts.py)
/// against a real `modem-hub serve`: flooders from 127.0.0.2, honest joiners from 127.0.0.1; with them, one
/// account's posts in invented groups (`--max-posts-per-user`) and new user ids per address per hour
/// (`--devices-per-address-per-hour`). No result here is decided by wall-clock speed.
@Suite struct AttackPostsTests {
    static func post(_ pid: String, _ n: Int, pad: Int = 0) -> String {
        GroupEvent.post(GroupPost(group: "g", pid: pid, user: "u", pidload: JSONObjectText(stored: "{\"n\":\(n),\"p\":\"\(String(repeating: "x", count: pad))\"}"),
                                  timestamp: Int64(n))).jsonText
    }

    static func user(_ u: String, _ t: Int64) -> String {
        GroupEvent.user(MemberPresence(group: "g", user: u, timestamp: t, userload: .empty)).jsonText
    }

    @Test("held live events: a post the history sent, or a later version of it, is not sent again; presence always is")
    func heldWithoutDuplicates() {
        let a1 = Self.post("a", 1), a2 = Self.post("a", 2), b1 = Self.post("b", 3), x = Self.user("x", 0), y = Self.user("y", 7)
        let held = [a1, x, b1, a2, y]
        #expect(GroupSocketOutbox.withoutDuplicates(held, sentPosts: []) == held)
        // The history read a's second version: both of a's held events are covered.
        #expect(GroupSocketOutbox.withoutDuplicates(held, sentPosts: [a2.hashValue]) == [x, b1, y])
        // It read the first: the second still follows.
        #expect(GroupSocketOutbox.withoutDuplicates(held, sentPosts: [a1.hashValue, b1.hashValue]) == [x, a2, y])
        // A presence event equal to one the history sent is never dropped (it may undo a later one).
        #expect(GroupSocketOutbox.withoutDuplicates([x], sentPosts: [x.hashValue]) == [x])
    }

    @Test("the outbox: live frames bounded in bytes (then closed with a reason), a group's events held during its history, then in order")
    func outboxBoundsAndHolds() async {
        let box = GroupSocketOutbox(limits: GroupSocketLimits(queueBytes: 65536))
        box.beginHistory(group: "g", since: 5)
        box.requestHistory(group: "g")
        let live = Self.post("live", 9)
        #expect(box.deliver(live, group: "g"))
        #expect(box.deliver("{\"other\":1}", group: "h"))
        #expect(await box.next() == .history(group: "g"))
        #expect(box.bytes.held == live.utf8.count)
        #expect(box.release(group: "g", sentPosts: []) == .frames([live]))
        #expect(await box.next() == .frame("{\"other\":1}"))
        // Released: the group's events are queued again.
        #expect(box.deliver(live, group: "g"))
        #expect(await box.next() == .frame(live))
        // A reader too slow for the live traffic: the queue ends at the bound, with the reason.
        let big = Self.post("big", 1, pad: 4000)
        var sent = 0
        while box.send(big) { sent += 1 }
        #expect(sent * big.utf8.count <= 65536 && (sent + 1) * big.utf8.count > 65536)
        #expect(box.closeReason?.contains("max-socket-queue-bytes") == true)
        #expect(await box.next() == nil)
        // Held posts over the bound are dropped (the store keeps them) and the history reads again
        // from the join's time; held presence over the bound closes the socket.
        let held = GroupSocketOutbox(limits: GroupSocketLimits(queueBytes: 65536))
        held.beginHistory(group: "g", since: 5)
        let presence = Self.user("x", 1)
        #expect(held.deliver(presence, group: "g"))
        for _ in 0..<40 { #expect(held.deliver(big, group: "g")) }
        #expect(held.bytes.held <= 65536 && held.closeReason == nil)
        #expect(held.release(group: "g", sentPosts: []) == .resync(since: 5))
        guard case .frames(let kept) = held.release(group: "g", sentPosts: []) else { Issue.record("not released"); return }
        #expect(kept.first == presence && kept.dropFirst().allSatisfy { $0 == big })
        held.beginHistory(group: "g", since: 6)
        let heavy = GroupEvent.user(MemberPresence(group: "g", user: "y", timestamp: 0,
                                                   userload: JSONObjectText(stored: "{\"p\":\"\(String(repeating: "z", count: 4000))\"}"))).jsonText
        while held.deliver(heavy, group: "g") {}
        #expect(held.closeReason?.contains("held during a join") == true)
    }

    /// A node on SQLite with small bounds, not running its services (none are needed here).
    static func runtime(_ settings: GroupSettings) async throws -> (GroupRuntime, SQLHubStore) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("attackposts-\(UUID().uuidString)")
        let store = try await SQLHubStore.open(.sqlite(path: dir.path + "/hub.sqlite"), logger: Logger(label: "t"), nowMs: 0)
        var logger = Logger(label: "attack-posts")
        logger.logLevel = .warning
        let runtime = GroupRuntime(db: store.db, nodeName: "n1", heartbeat: .seconds(5), logger: logger, settings: settings)
        try await runtime.start()
        return (runtime, store)
    }

    @Test("a late joiner gets every kept post (far more bytes than its queue holds) at its own pace, then the live ones, none twice")
    func joinWritesHistoryAsTheSocketDrains() async throws {
        var settings = GroupSettings()
        settings.posts = PostBounds(perUserPerGroup: 2000, perGroup: 2000)
        settings.socket = GroupSocketLimits(queueBytes: 65536)
        let (runtime, store) = try await Self.runtime(settings)
        let hub = runtime.hub
        let g = "flood"
        let pad = String(repeating: "x", count: 300)
        for i in 0..<1500 {
            _ = try await hub.store.post(GroupPost(group: g, pid: String(format: "p%04d", i), user: "poster",
                                                   pidload: try JSONObjectText(validating: "{\"i\":\(i),\"pad\":\"\(pad)\"}"), timestamp: Int64(1000 + i / 7)))
        }
        let poster = hub.newConnectionID(), joiner = hub.newConnectionID()
        hub.fanout.add(poster, outbox: GroupSocketOutbox(limits: hub.socketLimits))
        let box = GroupSocketOutbox(limits: hub.socketLimits)
        hub.fanout.add(joiner, outbox: box)
        await hub.perform(.join(group: g), conn: joiner, user: "reader")

        // The socket's writer, as slow as this test: live posts arrive while the history is written,
        // the second time more bytes of them than the socket may hold (dropped, then read again).
        var got: [String] = []
        var most = 0
        guard case .history(let group)? = await box.next() else { Issue.record("no history asked for"); return }
        let burstLoad = try JSONObjectText(validating: "{\"pad\":\"\(String(repeating: "b", count: 1000))\"}")
        let wrote = await hub.writeJoin(of: group, outbox: box) { text in
            got.append(text)
            most = max(most, box.bytes.queued + box.bytes.held)
            if got.count == 50 || got.count == 1200 {
                let load = try! JSONObjectText(validating: "{\"live\":\(got.count)}")
                await hub.perform(.post(group: g, pid: "p0003", pidload: load), conn: poster, user: "poster")   // a replacement
                if got.count == 50 {
                    await hub.perform(.post(group: g, pid: "live50", pidload: load), conn: poster, user: "poster")
                } else {
                    for k in 0..<80 { await hub.perform(.post(group: g, pid: "burst\(k)", pidload: burstLoad), conn: poster, user: "poster") }
                }
            }
            await Task.yield()
            return true
        }
        #expect(wrote)
        #expect(box.closeReason == nil && !box.isFinished, "the joiner was cut off: \(box.closeReason ?? "")")
        #expect(most <= hub.socketLimits.queueBytes)
        let historyBytes = got.reduce(0) { $0 + $1.utf8.count }
        #expect(historyBytes > 5 * hub.socketLimits.queueBytes, "the history must be far larger than the queue for this test to mean anything")
        #expect(got.count > GroupOutbox.capacity, "more frames than the old 1,024-frame queue held")

        // Every kept post, each ending at its kept version, none twice; members first; history in order.
        let events = got.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let posts = events.filter { $0["type"] as? String == "post" }
        let kept = try await hub.store.posts(group: g, limit: 5000, skip: 0).items
        var last: [String: Int64] = [:]
        var seen = Set<String>()
        var twice = 0
        for p in posts {
            let pid = p["pid"] as? String ?? "", ts = (p["timestamp"] as? NSNumber)?.int64Value ?? -1
            last[pid] = ts
            if !seen.insert("\(pid) \(ts)").inserted { twice += 1 }
        }
        #expect(twice == 0)
        #expect(kept.count == 1581 && Set(last.keys) == Set(kept.map(\.pid)), "\(kept.count) kept, \(last.count) seen")
        #expect(kept.allSatisfy { last[$0.pid] == $0.timestamp }, "a post ended at another version than the kept one")
        #expect(events.first?["type"] as? String == "user")
        let history = posts.prefix(1500).filter { !["p0003", "live50"].contains($0["pid"] as? String) && !(($0["pid"] as? String) ?? "").hasPrefix("burst") }
        let keys = history.map { ((($0["timestamp"] as? NSNumber)?.int64Value ?? 0), $0["pid"] as? String ?? "") }
        #expect(zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }, "history out of order")
        box.finish()
        try await store.close()
    }

    @Test("a socket that reads no live events is closed (1008 reason) at its queue's bound, holding no more than that")
    func slowLiveReaderIsClosedAtTheBound() async throws {
        var settings = GroupSettings()
        settings.socket = GroupSocketLimits(queueBytes: 65536)
        let (runtime, store) = try await Self.runtime(settings)
        let hub = runtime.hub
        let poster = hub.newConnectionID(), reader = hub.newConnectionID()
        hub.fanout.add(poster, outbox: GroupSocketOutbox(limits: hub.socketLimits))
        let box = GroupSocketOutbox(limits: hub.socketLimits)
        hub.fanout.add(reader, outbox: box)
        await hub.perform(.listen(group: "g"), conn: reader, user: "reader")
        guard case .history(let g)? = await box.next() else { Issue.record("no history asked for"); return }
        #expect(await hub.writeJoin(of: g, outbox: box) { _ in true })
        // Now it stops reading; one post replaced again and again (no place taken) fills its queue.
        let load = try JSONObjectText(validating: "{\"pad\":\"\(String(repeating: "y", count: 8000))\"}")
        var posts = 0
        while !box.isFinished && posts < 100 {
            await hub.perform(.post(group: "g", pid: "same", pidload: load), conn: poster, user: "poster")
            #expect(box.bytes.queued <= 65536)
            posts += 1
        }
        #expect(box.isFinished && posts < 20, "\(posts) posts")
        #expect(box.closeReason?.contains("max-socket-queue-bytes") == true)
        try await store.close()
    }

    @Test("the post flood against a real modem-hub serve on SQLite (Tests/scripts/attacks/posts.py)",
          .requires(HubProcess.venv, HubProcess.server),
          .timeLimit(.minutes(30)))
    func attackScriptOverSQLite() async throws {
        try await Self.runAttackScript(["--dir", try HubProcess.tempDir()])
    }

    /// The same flood on PostgreSQL, a case of its own so the parallel hub group runs the two side by side.
    @Test("the post flood against a real modem-hub serve on PostgreSQL (Tests/scripts/attacks/posts.py)",
          .requires(HubProcess.venv, HubProcess.server, HubProcess.postgres),
          .timeLimit(.minutes(30)))
    func attackScriptOverPostgreSQL() async throws {
        let pg = try #require(try await HubProcess.freshPostgresDatabase(prefix: "hubposts_"))
        try await Self.runAttackScript(["--dir", try HubProcess.tempDir(), "--pg", pg])
    }

    static func runAttackScript(_ options: [String]) async throws {
        // A hang guard far above the minute a run takes: the script decides on what arrived.
        let o = try await HubProcess.run(HubProcess.python, [HubProcess.packageRoot + "/Tests/scripts/attacks/posts.py", HubProcess.binary] + options,
                                         timeout: 600)
        print(o.stdoutText.split(separator: "\n").suffix(3).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
