import Foundation
import HubCore
import HubServer
import HubStore
import Logging
import ProcessTestSupport
import Synchronization
import Testing

/// One user id joining from two nodes at once, 100 times (plan section 11): a member watching the group
/// must see exactly one online and one offline event per user, however the two joins and the two
/// closes interleave. On PostgreSQL the two nodes are two `GroupRuntime`s with their own connection
/// pools and LISTEN/NOTIFY buses on one fresh database; on SQLite (one node) the two connections are on
/// the same node. In process, through `GroupHub` (what the socket calls), with bounded waits.
@Suite(.serialized) struct GroupPresenceStressTests {
    /// SQLite, and PostgreSQL where the cluster is there or required (`SWIFTMODEM_REQUIRE_PEERS=1`: then
    /// a missing `HUB_TEST_POSTGRES_URL` fails the PostgreSQL case).
    static var engines: [String] {
        HubProcess.postgres.isAvailable || Peer.areRequired ? ["sqlite", "postgres"] : ["sqlite"]
    }

    final class Watcher: Sendable {
        /// The user events the outbox received, collected as they arrive (each wakes ``wait(seconds:_:)``).
        let log = Observed<[(user: String, timestamp: Int64)]>([])
        let outbox = GroupSocketOutbox()
        let task: Task<Void, Never>

        init(group: String) {
            let log = self.log, outbox = self.outbox
            task = Task {
                // The live events only: a join's history is skipped (its held events still follow).
                while let item = await outbox.next() {
                    let frames: [String]
                    switch item {
                    case .frame(let f): frames = [f]
                    case .history(let g):
                        var r = outbox.release(group: g, sentPosts: [])
                        if case .resync = r { r = outbox.release(group: g, sentPosts: []) }
                        if case .frames(let f) = r { frames = f } else { frames = [] }
                    }
                    for frame in frames {
                        guard let o = (try? JSONSerialization.jsonObject(with: Data(frame.utf8))) as? [String: Any],
                              o["type"] as? String == "user", o["group"] as? String == group,
                              let u = o["user"] as? String, let t = (o["timestamp"] as? NSNumber)?.int64Value else { continue }
                        log.append((user: u, timestamp: t))
                    }
                }
            }
        }

        func count(_ pred: (String, Int64) -> Bool) -> Int { log.value.filter { pred($0.user, $0.timestamp) }.count }

        /// Waits until `pred` holds for the events so far (checked on each event); false when it does
        /// not within `seconds` (a hang guard).
        func wait(seconds: Double, _ pred: ([(user: String, timestamp: Int64)]) -> Bool) async -> Bool {
            await log.wait(timeout: seconds, until: pred) != nil
        }
    }

    /// Opens one store per node (PostgreSQL: a fresh database shared by both; SQLite: one file, one node).
    static func stores(_ engine: String) async throws -> [SQLHubStore] {
        let logger = Logger(label: "stress")
        if engine == "sqlite" {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hubstress-\(UUID().uuidString)")
            return [try await SQLHubStore.open(.sqlite(path: dir.path + "/hub.sqlite"), logger: logger, nowMs: 0)]
        }
        let base = try HubProcess.postgres.path()
        let admin = try await PostgresEngine.open(url: base, logger: logger)
        let name = "hubstress_" + HubTokens.base32(HubTokens.randomBytes(8)).lowercased()
        try await admin.query("CREATE DATABASE \(name)", [])
        try await admin.close()
        var c = try #require(URLComponents(string: base))
        c.path = "/" + name
        let url = try #require(c.string)
        let first = try await SQLHubStore.open(.postgres(url: url), logger: logger, nowMs: 0)
        return [first, try await SQLHubStore.open(.postgres(url: url), logger: logger, nowMs: 0)]
    }

    @Test(.timeLimit(.minutes(3)), arguments: engines)
    func oneUserJoiningFromTwoNodesAtOnce(_ engine: String) async throws {
        let stores = try await Self.stores(engine)
        var logger = Logger(label: "stress")
        logger.logLevel = .warning
        let runtimes = stores.enumerated().map { i, s in
            GroupRuntime(db: s.db, nodeName: "stress\(i)", heartbeat: .seconds(5), logger: logger)
        }
        for r in runtimes { try await r.start() }  // tables and the first heartbeat, before any join
        // run() starts again: its table check finds every table there (start() made them), so it runs no
        // DDL that could deadlock with the joins, and its heartbeat and start-up sweep touch only this
        // node's row and other names' dead nodes. Its LISTEN being up is what the probe below waits for.
        let running = runtimes.map { r in Task { try? await r.run() } }
        let a = runtimes[0].hub, b = runtimes[runtimes.count - 1].hub
        let g = "stress"
        let watcher = Watcher(group: g)
        let wconn = a.newConnectionID()
        a.fanout.add(wconn, outbox: watcher.outbox)
        await a.perform(.join(group: g), conn: wconn, user: "watcher")

        // The bus carries node B's events to node A before the run starts (B's LISTEN and A's are up).
        let probe = b.newConnectionID()
        await b.perform(.join(group: g), conn: probe, user: "probe")
        var crossed = false
        for _ in 0..<60 where !crossed {  // a NOTIFY sent before A's LISTEN was up is lost: say it again
            crossed = await watcher.wait(seconds: 1) { _ in watcher.count { u, t in u == "probe" && t == 0 } > 0 }
            if !crossed { await b.perform(.update(userload: .empty), conn: probe, user: "probe") }
        }
        try #require(crossed, "node B's join never reached node A's watcher (60 tries, 1 s each)")
        await b.closed(probe)
        #expect(await watcher.wait(seconds: 60) { _ in watcher.count { u, t in u == "probe" && t > 0 } == 1 }, "waited 60 s for the probe's offline event")

        let n = 100
        for i in 0..<n {
            let user = "u\(i)"
            let ca = a.newConnectionID(), cb = b.newConnectionID()
            a.fanout.add(ca, outbox: GroupSocketOutbox())
            b.fanout.add(cb, outbox: GroupSocketOutbox())
            async let ja: Void = a.perform(.join(group: g), conn: ca, user: user)
            async let jb: Void = b.perform(.join(group: g), conn: cb, user: user)
            _ = await (ja, jb)
            // Every few rounds the closes also race with the joins' events still in flight.
            if i % 4 != 0 { try await Task.sleep(for: .milliseconds(5)) }
            async let xa: Void = a.closed(ca)
            async let xb: Void = b.closed(cb)
            _ = await (xa, xb)
        }
        let stress: (String) -> Bool = { $0.hasPrefix("u") }
        let complete = await watcher.wait(seconds: 120) { log in
            log.filter { stress($0.user) && $0.timestamp == 0 }.count >= n && log.filter { stress($0.user) && $0.timestamp > 0 }.count >= n
        }
        try await Task.sleep(for: .milliseconds(1500))  // late duplicates would arrive within the bus's batching
        let events = watcher.log.value.filter { stress($0.user) }
        var online: [String: Int] = [:], offline: [String: Int] = [:]
        for e in events {
            if e.timestamp == 0 { online[e.user, default: 0] += 1 } else { offline[e.user, default: 0] += 1 }
        }
        let users = Set((0..<n).map { "u\($0)" })
        #expect(complete, "events missing: \(online.count) online, \(offline.count) offline of \(n)")
        #expect(Set(online.keys) == users && online.values.allSatisfy { $0 == 1 },
                "online events per user: \(online.filter { $0.value != 1 }.prefix(10)), missing \(users.subtracting(online.keys).count)")
        #expect(Set(offline.keys) == users && offline.values.allSatisfy { $0 == 1 },
                "offline events per user: \(offline.filter { $0.value != 1 }.prefix(10)), missing \(users.subtracting(offline.keys).count)")
        // Each user's online event comes before its offline event.
        for u in users.prefix(n) {
            let idx = events.enumerated().filter { $0.element.user == u }
            #expect(idx.count != 2 || (idx[0].element.timestamp == 0 && idx[1].element.timestamp > 0), "\(u): \(idx.map(\.element.timestamp))")
        }
        // The store agrees: every one of them is a member, offline, with a last-seen time.
        let page = try await a.store.members(group: g, limit: 1000, skip: 0)
        let rows = page.items.filter { stress($0.user) }
        #expect(rows.count == n && rows.allSatisfy { $0.timestamp > 0 }, "\(rows.filter { $0.timestamp == 0 }.map(\.user))")

        await a.closed(wconn)
        for t in running { t.cancel() }
        for t in running { await t.value }
        watcher.outbox.finish()
        watcher.task.cancel()
        for s in stores { try await s.close() }
    }
}
