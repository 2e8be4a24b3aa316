import Foundation
import HubCore
import HubServer
import HubStore
import Logging
import Testing

/// A node another node took for dead (its heartbeat late by more than 1.25 heartbeats) loses its
/// presence rows; its next heartbeat finds its node row gone and it joins its sockets' groups again.
@Suite struct GroupReannounceTests {
    @Test("a swept node's heartbeat says so, and reannounce() brings its joined users back online for the others")
    func sweptNodeAnnouncesAgain() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hubreannounce-\(UUID().uuidString)")
        let store = try await SQLHubStore.open(.sqlite(path: dir.path + "/hub.sqlite"), logger: Logger(label: "t"), nowMs: 0)
        var logger = Logger(label: "reannounce")
        logger.logLevel = .warning
        let runtime = GroupRuntime(db: store.db, nodeName: "n1", heartbeat: .seconds(5), logger: logger)
        try await runtime.start()
        let hub = runtime.hub
        let g = "g"
        let watcher = GroupPresenceStressTests.Watcher(group: g)
        let wconn = hub.newConnectionID(), mconn = hub.newConnectionID(), lconn = hub.newConnectionID()
        hub.fanout.add(wconn, outbox: watcher.outbox)
        hub.fanout.add(mconn, outbox: GroupSocketOutbox())
        hub.fanout.add(lconn, outbox: GroupSocketOutbox())
        await hub.perform(.join(group: g), conn: wconn, user: "watcher")
        await hub.perform(.join(group: g), conn: mconn, user: "member")
        await hub.perform(.join(group: g), conn: lconn, user: "leaver")
        await hub.perform(.leave(group: g), conn: lconn, user: "leaver")
        #expect(await watcher.wait(seconds: 60) { _ in watcher.count { u, t in u == "member" && t == 0 } == 1 })

        // Another node sweeps this one (its heartbeat counts as stale) and the member goes offline.
        let groups = SQLGroupStore(db: store.db)
        #expect(try await groups.heartbeat(instance: hub.instance, name: "n1", now: hub.now), "the node row is there after start")
        let swept = try await groups.sweep(me: "other", staleBefore: .max, sameName: nil, now: hub.now)
        hub.execute(PresenceRules.actions(for: swept, by: nil, op: "sweep"))
        #expect(await watcher.wait(seconds: 60) { _ in watcher.count { u, t in u == "member" && t > 0 } == 1 })

        // Its next beat finds the row gone; announcing again brings the member back, once, and not the leaver.
        #expect(try await !groups.heartbeat(instance: hub.instance, name: "n1", now: hub.now))
        await hub.reannounce()
        #expect(await watcher.wait(seconds: 60) { _ in watcher.count { u, t in u == "member" && t == 0 } == 2 })
        let members = try await groups.members(group: g, limit: 10, skip: 0).items
        #expect(members.filter(\.isOnline).map(\.user).sorted() == ["member", "watcher"])
        #expect(watcher.count { u, t in u == "leaver" && t == 0 } == 1, "the leaver came back")
        try await store.db.close()
    }
}
