import Foundation
import HubCore
import HubServer
import HubStore
import HubTestSupport
import Logging
import ModemRuntime
import ProcessTestSupport
import Testing

/// The node service's timers (heartbeat and sweep loops, the twin check at start) and its stored times
/// on one ``StepClock``: each step of the test is a move of the clock, and each wait is for the code to
/// be asleep on it again (an event), so what happens at which time is exact and never the machine's.
@Suite struct GroupNodeClockTests {
    /// Wall-clock milliseconds at the clock's start (what heartbeats and last-seen times are stored as).
    static let t0: Int64 = 1_700_000_000_000
    /// 8 s: beats and sweeps every 2 s, another node is dead 10 s after its last beat, the twin check
    /// looks again every 1 s.
    static let heartbeat = Duration.seconds(8)

    /// What the node asked of its liveness store, in order of completion.
    struct Calls: Sendable, CustomStringConvertible {
        var beats: [Int64] = []
        var sweeps: [(staleBefore: Int64, now: Int64)] = []
        var description: String { "beats \(beats), sweeps \(sweeps)" }
    }

    /// The SQLite groups store, recording heartbeats and sweeps; `shared` makes the node treat it as
    /// several nodes' store (PostgreSQL's staleness and twin check) while the statements stay SQLite's.
    struct RecordingStore: GroupStore {
        let base: SQLGroupStore
        let shared: Bool
        let calls: Observed<Calls>

        var isShared: Bool { shared }
        func heartbeat(instance: String, name: String, now: Int64) async throws -> Bool {
            let had = try await base.heartbeat(instance: instance, name: name, now: now)
            calls.update { $0.beats.append(now) }
            return had
        }
        func sweep(me instance: String, staleBefore: Int64, sameName: String?, now: Int64) async throws -> PresenceOutcome {
            let outcome = try await base.sweep(me: instance, staleBefore: staleBefore, sameName: sameName, now: now)
            calls.update { $0.sweeps.append((staleBefore, now)) }
            return outcome
        }
        func nodeBeats(name: String, except instance: String) async throws -> [(instance: String, heartbeatMs: Int64)] {
            try await base.nodeBeats(name: name, except: instance)
        }
        func removeNode(instance: String, now: Int64) async throws -> PresenceOutcome { try await base.removeNode(instance: instance, now: now) }
        func join(conn: ConnectionID, instance: String, group: String, user: String, now: Int64) async throws -> PresenceOutcome {
            try await base.join(conn: conn, instance: instance, group: group, user: user, now: now)
        }
        func listen(group: String) async throws -> PresenceOutcome { try await base.listen(group: group) }
        func leave(conn: ConnectionID, group: String, user: String, now: Int64) async throws -> PresenceOutcome {
            try await base.leave(conn: conn, group: group, user: user, now: now)
        }
        func update(user: String, userload: JSONObjectText, now: Int64) async throws -> PresenceOutcome {
            try await base.update(user: user, userload: userload, now: now)
        }
        func post(_ post: GroupPost) async throws -> PresenceOutcome { try await base.post(post) }
        func unpost(group: String, pid: String, user: String) async throws -> PresenceOutcome {
            try await base.unpost(group: group, pid: pid, user: user)
        }
        func close(conn: ConnectionID, now: Int64) async throws -> PresenceOutcome { try await base.close(conn: conn, now: now) }
        func members(group: String, limit: Int, skip: Int) async throws -> (items: [MemberPresence], more: Bool) {
            try await base.members(group: group, limit: limit, skip: skip)
        }
        func posts(group: String, limit: Int, skip: Int) async throws -> (items: [GroupPost], more: Bool) {
            try await base.posts(group: group, limit: limit, skip: skip)
        }
        func post(group: String, pid: String) async throws -> GroupPost? { try await base.post(group: group, pid: pid) }
        func members(group: String, after: String?, limit: Int) async throws -> [MemberPresence] {
            try await base.members(group: group, after: after, limit: limit)
        }
        func posts(group: String, after: PostCursor?, limit: Int) async throws -> [GroupPost] {
            try await base.posts(group: group, after: after, limit: limit)
        }
        func allocateDevice(clientID: String, address: String, now: Int64) async throws -> DeviceAllocation {
            try await base.allocateDevice(clientID: clientID, address: address, now: now)
        }
        func deviceClient(_ device: String) async throws -> String? { try await base.deviceClient(device) }
    }

    /// Node `n1` (instance `n1-a`) on a fresh SQLite file, its hub and node service on `clock`.
    struct Node {
        let db: any SQLDatabase
        let groups: SQLGroupStore
        let hub: GroupHub
        let service: GroupNodeService
        let clock: StepClock
        let calls = Observed(Calls())

        init(shared: Bool) async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hubnodeclock-\(UUID().uuidString)")
            var logger = Logger(label: "node-clock")
            logger.logLevel = .error
            db = try await SQLHubStore.open(.sqlite(path: dir.path + "/hub.sqlite"), logger: logger, nowMs: 0).db
            groups = SQLGroupStore(db: db)
            try await groups.prepare()
            clock = StepClock()
            let fanout = GroupFanout()
            hub = GroupHub(store: groups, fanout: fanout, bus: LocalGroupBus(fanout: fanout), instance: "n1-a", nodeName: "n1",
                           logger: logger, clock: GroupClock(timers: TimerClock(clock), originMs: GroupNodeClockTests.t0))
            service = GroupNodeService(hub: hub, liveness: RecordingStore(base: groups, shared: shared, calls: calls),
                                       heartbeat: GroupNodeClockTests.heartbeat, logger: logger)
        }

        /// `user`'s presence in `group`: 0 while online, else last seen (nil: not a member).
        func presence(_ user: String, in group: String) async throws -> Int64? {
            try await groups.members(group: group, limit: 100, skip: 0).items.first { $0.user == user }?.timestamp
        }
    }

    @Test("the heartbeat and the sweep run every quarter heartbeat of the node's clock, and not before")
    func loopsFollowTheClock() async throws {
        let node = try await Node(shared: false)
        let t0 = Self.t0
        try await node.service.start()
        #expect(node.calls.value.beats == [t0])
        #expect(node.calls.value.sweeps.count == 1, "the start-up sweep")
        let running = Task { await node.service.run() }
        try await node.clock.waitForSleepers(2, "both loops asleep")
        #expect(node.clock.state.value.deadlines == [.seconds(2), .seconds(2)])

        // Short of the tick by a millisecond: no loop is woken, so nothing runs.
        node.clock.advance(by: .milliseconds(1_999))
        #expect(node.clock.state.value.deadlines == [.seconds(2), .seconds(2)])
        #expect(node.calls.value.beats == [t0])

        for tick in 1...4 {
            node.clock.advance(by: tick == 1 ? .milliseconds(1) : .seconds(2))
            // Each loop sleeps again only after its beat or sweep: both asleep means both done.
            try await node.clock.waitForSleepers(2, "both loops asleep after tick \(tick)")
            let now = t0 + Int64(tick) * 2_000
            #expect(node.calls.value.beats.last == now)
            #expect(node.calls.value.sweeps.last?.now == now)
            #expect(try await node.groups.nodeBeats(name: "n1", except: "none").map(\.heartbeatMs) == [now], "the node's row")
        }
        #expect(node.calls.value.beats == [t0, t0 + 2_000, t0 + 4_000, t0 + 6_000, t0 + 8_000])
        #expect(node.calls.value.sweeps.count == 5)

        running.cancel()
        await running.value
        try await node.clock.waitForSleepers(0, "the loops' end")
        await node.service.stop()
        try await node.db.close()
    }

    @Test("another node's users go offline at the first sweep past 1.25 heartbeats of the clock after its last beat")
    func staleNodeIsSweptOnTheClock() async throws {
        let node = try await Node(shared: true)
        let t0 = Self.t0
        // Node n2 beat at t0 with bob joined, and then fell silent.
        try await node.groups.heartbeat(instance: "n2-x", name: "n2", now: t0)
        _ = try await node.groups.join(conn: "n2-x/1", instance: "n2-x", group: "g", user: "bob", now: t0)
        try await node.service.start()
        #expect(try await node.presence("bob", in: "g") == 0, "the start-up sweep leaves a node that beat just now")
        let running = Task { await node.service.run() }
        try await node.clock.waitForSleepers(2, "both loops asleep")

        // Sweeps at 2, 4, 6, 8 and 10 s: n2's beat is not older than 10 s (1.25 heartbeats) yet.
        for tick in 1...5 {
            node.clock.advance(by: .seconds(2))
            try await node.clock.waitForSleepers(2, "both loops asleep after tick \(tick)")
            #expect(node.calls.value.sweeps.last?.staleBefore == t0 + Int64(tick) * 2_000 - 10_000)
            #expect(try await node.presence("bob", in: "g") == 0, "bob went offline at \(tick * 2) s")
        }
        // The sweep at 12 s: n2 is dead, and bob was last seen at its last beat.
        node.clock.advance(by: .seconds(2))
        try await node.clock.waitForSleepers(2, "both loops asleep after 12 s")
        #expect(try await node.presence("bob", in: "g") == t0)
        #expect(try await node.groups.nodeBeats(name: "n2", except: "none").isEmpty, "n2's row is gone")

        running.cancel()
        await running.value
        await node.service.stop()
        try await node.db.close()
    }

    @Test("start refuses a live twin (another instance of its name beats again while it watches, 1/8 heartbeat later)")
    func liveTwinIsRefusedOnTheClock() async throws {
        let node = try await Node(shared: true)
        let t0 = Self.t0
        try await node.groups.heartbeat(instance: "n1-twin", name: "n1", now: t0 - 1_000)
        let starting = Task { try await node.service.start() }
        try await node.clock.waitForSleepers(1, "the twin check asleep")
        #expect(node.clock.state.value.deadlines == [.seconds(1)])
        try await node.groups.heartbeat(instance: "n1-twin", name: "n1", now: t0 + 500)
        node.clock.advance(by: .seconds(1))
        do {
            try await starting.value
            Issue.record("started beside a live twin")
        } catch let e as NodeNameInUse {
            #expect(e.instance == "n1-twin")
        }
        #expect(node.calls.value.beats.isEmpty, "a refused node never beat")
        try await node.db.close()
    }

    @Test("start waits out a silent twin for 1.25 heartbeats of the clock after its last beat, then sweeps it")
    func silentTwinIsWaitedOutOnTheClock() async throws {
        let node = try await Node(shared: true)
        let t0 = Self.t0
        // The node's predecessor, killed a moment ago: it beat at t0 with carol joined.
        try await node.groups.heartbeat(instance: "n1-old", name: "n1", now: t0)
        _ = try await node.groups.join(conn: "n1-old/1", instance: "n1-old", group: "g", user: "carol", now: t0)
        let starting = Task { try await node.service.start() }
        // Looks again each second; at 10 s the twin's beat is exactly 1.25 heartbeats old, still watched.
        for second in 1...10 {
            try await node.clock.waitForSleepers(1, "the twin check asleep before \(second) s")
            #expect(node.clock.state.value.deadlines == [.seconds(second)])
            #expect(node.calls.value.beats.isEmpty, "started at \(second - 1) s")
            node.clock.advance(by: .seconds(1))
        }
        try await node.clock.waitForSleepers(1, "the twin check asleep before 11 s")
        #expect(node.calls.value.beats.isEmpty)
        node.clock.advance(by: .seconds(1))
        try await starting.value
        #expect(node.clock.elapsed == .seconds(11))
        #expect(node.calls.value.beats == [t0 + 11_000])
        #expect(try await node.presence("carol", in: "g") == t0, "the start-up sweep took the twin's users offline")
        await node.service.stop()
        try await node.db.close()
    }
}
