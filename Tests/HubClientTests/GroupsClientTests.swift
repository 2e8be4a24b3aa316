import Foundation
import HubClient
import HubTestSupport
import ProcessTestSupport
import Synchronization
import Testing

/// Drains a connection's events into a list the test waits on: each event (and the end) wakes the
/// waits (``ProcessTestSupport/Observed``), whose time limits are hang guards only.
final class Collector: Sendable {
    private let log = Observed<(events: [HubGroupEvent], end: Result<Void, HubClientError>?)>(([], nil))
    private let task: Task<Void, Never>

    init(_ connection: HubGroupsConnection) {
        let log = self.log
        task = Task {
            do {
                for try await e in connection { log.update { $0.events.append(e) } }
                log.update { $0.end = .success(()) }
            } catch let e as HubClientError {
                log.update { $0.end = .failure(e) }
            } catch {
                log.update { $0.end = .failure(.socketClosed("\(error)")) }
            }
        }
    }

    var events: [HubGroupEvent] { log.value.events }
    var end: Result<Void, HubClientError>? { log.value.end }

    /// Waits until `predicate` holds for the events so far; records an issue naming `what` when it
    /// does not within `seconds` (a hang guard).
    @discardableResult
    func wait(_ what: String, seconds: Double = 60, _ predicate: ([HubGroupEvent]) -> Bool) async -> Bool {
        if await log.wait(timeout: seconds, until: { predicate($0.events) }) != nil { return true }
        Issue.record("waited \(seconds) s for \(what); got \(events)")
        return false
    }

    /// Waits until the sequence has ended; nil when it has not within `seconds` (a hang guard).
    func waitEnd(seconds: Double = 60) async -> Result<Void, HubClientError>? {
        await log.wait(timeout: seconds, until: { $0.end != nil })?.end
    }
}

func presence(_ events: [HubGroupEvent], of user: String, in group: String) -> [HubGroupUser] {
    events.compactMap { if case .user(let u) = $0, u.user == user, u.group == group { return u } else { return nil } }
}

func posts(_ events: [HubGroupEvent]) -> [HubPost] {
    events.compactMap { if case .post(let p) = $0 { return p } else { return nil } }
}

/// What a delegate saw in one dictionary (read where it is handed over: the dictionary is not Sendable).
struct SeenDict: Sendable {
    var keys: Set<String>
    var type: String?
    var user: String?
    var group: String?
    var pid: String?
    var timestamp: Int64?
    var pidloadA: String?
}

/// A delegate that keeps what seed 001's `socketReceivedDict` hands it.
final class DictDelegate: HubGroupsDelegate {
    let seen = Observed<[SeenDict]>([])
    let closed = Mutex<(Bool, HubClientError?)>((false, nil))
    func socketReceivedDict(_ dict: [String: Any]) {
        let s = SeenDict(keys: Set(dict.keys), type: dict["type"] as? String, user: dict["user"] as? String,
                         group: dict["group"] as? String, pid: dict["pid"] as? String, timestamp: dict["timestamp"] as? Int64,
                         pidloadA: (dict["pidload"] as? [String: Any])?["a"] as? String)
        seen.append(s)
    }
    func socketDidClose(error: HubClientError?) { closed.withLock { $0 = (true, error) } }
    var dicts: [SeenDict] { seen.value }
}

@Suite struct GroupsClientTests {
    static func client(_ hub: LiveHub) async throws -> HubClient {
        let c = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
        try await c.authenticateClientCredentials()
        return c
    }

    @Test("two clients in one group see each other's presence, posts, updates and the last-seen time; device ids are kept")
    func twoClientsInOneGroup() async throws {
        try await HubClientTests.withHub { hub in
        let a = try await Self.connect(hub), b = try await Self.connect(hub)
        #expect(a.connection.user != b.connection.user)
        #expect(a.events.events.first == .hello(user: a.connection.user))

        try a.connection.join("g")
        await a.events.wait("A's own presence") { !presence($0, of: a.connection.user, in: "g").isEmpty }
        try b.connection.join("g")
        await b.events.wait("B sees A online") { presence($0, of: a.connection.user, in: "g").contains { $0.timestamp == 0 } }
        await a.events.wait("A sees B online") { presence($0, of: b.connection.user, in: "g").contains { $0.timestamp == 0 } }

        try a.connection.post(group: "g", pid: "ride-1", pidload: ["from": "A", "seats": 3])
        await b.events.wait("B gets A's post") { posts($0).contains { $0.pid == "ride-1" } }
        let p = try #require(posts(b.events.events).first { $0.pid == "ride-1" })
        #expect(p.user == a.connection.user && p.group == "g" && p.pidload == ["from": "A", "seats": 3] && p.timestamp > 0)

        try b.connection.update(userload: ["name": "B"])
        await a.events.wait("A sees B's userload") { presence($0, of: b.connection.user, in: "g").contains { $0.userload == ["name": "B"] } }

        // A newcomer who listens gets the kept post and both members, and is not seen.
        let c = try await Self.connect(hub)
        try c.connection.listen("g")
        await c.events.wait("the listener gets the snapshot") { ev in
            posts(ev).contains { $0.pid == "ride-1" } && !presence(ev, of: a.connection.user, in: "g").isEmpty
                && !presence(ev, of: b.connection.user, in: "g").isEmpty
        }
        #expect(presence(a.events.events, of: c.connection.user, in: "g").isEmpty)  // the listener is not seen
        // Unposted: a later newcomer no longer gets it.
        try a.connection.unpost(group: "g", pid: "ride-1")
        // The unpost done (the kept posts over REST no longer hold it) before the newcomer comes.
        let rest = try await Self.client(hub)
        let unposted = ContinuousClock.now + .seconds(60)
        while try await rest.posts(group: "g").items.contains(where: { $0.pid == "ride-1" }) {
            try #require(ContinuousClock.now < unposted, "waited 60 s for the unpost of ride-1 to show over REST")
            try await Task.sleep(for: .milliseconds(20))
        }
        let d = try await Self.connect(hub)
        try d.connection.listen("g")
        await d.events.wait("the second listener's snapshot") { !presence($0, of: b.connection.user, in: "g").isEmpty }
        // A bad name's error event comes after the whole snapshot (one connection's events are in order).
        try d.connection.join("no spaces")
        await d.events.wait("the error event after the second listener's snapshot") { ev in
            ev.contains { if case .error(let op, _) = $0 { return op == "join" } else { return false } }
        }
        #expect(posts(d.events.events).isEmpty)
        await d.connection.close()

        // Leave: A sees E's last-seen time while E stays connected. A bad name: an error event, not a close.
        let e = try await Self.connect(hub)
        try e.connection.join("g")
        await a.events.wait("A sees E online") { presence($0, of: e.connection.user, in: "g").contains { $0.timestamp == 0 } }
        try e.connection.leave("g")
        await a.events.wait("A sees E leave") { presence($0, of: e.connection.user, in: "g").contains { $0.timestamp > 0 } }
        try e.connection.join("no spaces")
        await e.events.wait("an error event for a bad name") { ev in
            ev.contains { if case .error(let op, _) = $0 { return op == "join" } else { return false } }
        }
        #expect(e.events.end == nil)
        await e.connection.close()

        // B goes: A sees B's last-seen time; B's sequence ends without an error.
        let bUser = b.connection.user
        let before = Int64(Date().timeIntervalSince1970 * 1000) - 1000
        await b.connection.close()
        if case .failure(let e)? = await b.events.waitEnd() { Issue.record("close() ended with \(e)") }
        await a.events.wait("A sees B offline") { presence($0, of: bUser, in: "g").contains { $0.timestamp > 0 } }
        let last = try #require(presence(a.events.events, of: bUser, in: "g").last)
        #expect(last.timestamp >= before)
        #expect(throws: HubClientError.self) { try b.connection.join("g") }

        // B comes back with its device id: the same user.
        let again = try await Self.connect(hub, user: bUser)
        #expect(again.connection.user == bUser)
        for x in [a, c, again] { await x.connection.close() }
        }
    }

    @Test("the delegate facade hands out seed 001's dictionaries")
    func delegateFacade() async throws {
        try await HubClientTests.withHub { hub in
        let client = try await Self.client(hub)
        let delegate = DictDelegate()
        let groups = try await HubGroups.connect(client: client, delegate: delegate)
        try groups.join("bars")
        let other = try await Self.connect(hub)
        try other.connection.join("bars")
        try other.connection.post(group: "bars", pid: "PID", pidload: ["a": "A", "b": "B"])
        try await delegate.seen.wait(for: "the post handed to the delegate", hangGuard: 60) { $0.contains { $0.type == "post" } }
        let dicts = delegate.dicts
        #expect(dicts.first?.type == "hello" && dicts.first?.user == groups.user)
        let user = try #require(dicts.first { $0.type == "user" && $0.user == other.connection.user })
        #expect(user.keys == ["type", "group", "user", "timestamp", "userload"])
        #expect(user.group == "bars" && user.timestamp == 0)
        let post = try #require(dicts.first { $0.type == "post" })
        #expect(post.keys == ["type", "group", "pid", "pidload", "timestamp", "user"])
        #expect(post.pid == "PID" && post.user == other.connection.user && post.pidloadA == "A")
        #expect((post.timestamp ?? 0) > 0)
        await groups.close()
        #expect(delegate.closed.withLock { $0.0 && $0.1 == nil })
        await other.connection.close()
        }
    }

    @Test("a connection the hub drops ends the events with an error naming it")
    func droppedConnection() async throws {
        let hub = try await LiveHub.start()
        let a = try await Self.connect(hub)
        try a.connection.join("g")
        await a.events.wait("the join's snapshot") { !presence($0, of: a.connection.user, in: "g").isEmpty }
        await hub.stop()
        guard case .failure(let e)? = await a.events.waitEnd() else {
            Issue.record("the events did not end with an error: \(String(describing: a.events.end))")
            return
        }
        guard case .socketClosed(let why) = e else { Issue.record("got \(e)"); return }
        #expect(!why.isEmpty)
        await a.connection.close()
    }

    @Test("a refused token cannot open the socket; an unknown device id is refused at hello")
    func refusals() async throws {
        try await HubClientTests.withHub { hub in
        await #expect(throws: HubClientError.self) {
            _ = try await HubGroupsConnection.connect(baseURL: hub.base, accessToken: "mha_forged")
        }
        let c = try await Self.client(hub)
        do {
            _ = try await c.connectGroups(user: "d_not-a-device")
            Issue.record("an unknown device id was accepted")
        } catch let e as HubClientError {
            guard case .socketClosed(let why) = e else { Issue.record("got \(e)"); return }
            #expect(why.contains("hello"))
        }
        }
    }

    static func connect(_ hub: LiveHub, user: String? = nil) async throws -> (connection: HubGroupsConnection, events: Collector) {
        let c = try await client(hub)
        let conn = try await c.connectGroups(user: user)
        return (conn, Collector(conn))
    }
}
