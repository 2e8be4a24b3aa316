import Foundation
import HubCore
import HubServer
import HubStore
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import HummingbirdWebSocket
import Logging
import Testing
import WSClient

/// One WebSocket client in a test: what it received, and a queue of what to send.
private final class Peer: Sendable {
    let received = AsyncStream<String>.makeStream()
    let outgoing = AsyncStream<String>.makeStream()

    func send(_ text: String) { outgoing.continuation.yield(text) }
    func close() { outgoing.continuation.finish() }

    /// Runs the socket until `close()`.
    func run(_ client: some TestClientProtocol, token: String) async throws {
        var config = WebSocketClientConfiguration()
        config.additionalHeaders[.authorization] = "Bearer \(token)"
        try await client.ws("/v1/socket", configuration: config) { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { g in
                g.addTask {
                    for try await m in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let t) = m { self.received.continuation.yield(t) }
                    }
                    self.received.continuation.finish()
                }
                for await t in self.outgoing.stream { try await outbound.write(.text(t)) }
                try await outbound.close(.normalClosure, reason: nil)
                try await g.waitForAll()
            }
        }
    }
}

/// Reads the next `n` frames (or fewer if the socket ends) as JSON objects.
private func next(_ it: inout AsyncStream<String>.Iterator, _ n: Int) async -> [[String: AnyHashable]] {
    var out: [[String: AnyHashable]] = []
    while out.count < n, let t = await it.next() {
        if let o = try? JSONSerialization.jsonObject(with: Data(t.utf8)) as? [String: AnyHashable] { out.append(o) }
    }
    return out
}

@Suite("Groups over /v1/socket and REST, in process")
struct GroupSocketTests {
    /// An app with the groups on SQLite in a temporary folder; tokens "alice" and "bob" are accounts,
    /// "c1" a client token.
    func withApp(_ body: @Sendable (any TestClientProtocol, GroupHub) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groups-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let db = try await SQLiteEngine.open(path: dir.appendingPathComponent("hub.sqlite").path)
        try await HubSchema.migrate(db, nowMs: 0)
        let runtime = try await GroupRuntime.open(db: db, nodeName: "t", heartbeat: .seconds(1), logger: logger)
        let auth: GroupAuthenticator = { token in
            switch token {
            case "alice", "bob": GroupPrincipal(account: token, clientID: "app")
            case "c1": GroupPrincipal(account: nil, clientID: "app")
            default: nil
            }
        }
        let router = Router()
        GroupRoutes<BasicRequestContext>(hub: runtime.hub) { req, _ in
            guard let t = GroupSocketUpgrade.bearerToken(req.headers[.authorization]), let p = await auth(t) else {
                throw HTTPError(.unauthorized)
            }
            return p
        }.add(to: router)
        let app = Application(router: router, server: GroupSocketUpgrade.serverBuilder(hub: runtime.hub, authenticate: auth),
                              services: [runtime], logger: logger)
        do {
            try await app.test(.live) { client in try await body(client, runtime.hub) }
        } catch {
            try? await db.close()
            throw error
        }
        try await db.close()
    }

    @Test("join: both see each other online; a REST post reaches both; a disconnect gives last seen")
    func joinPostDisconnect() async throws {
        try await withApp { client, _ in
            let a = Peer(), b = Peer()
            try await withThrowingTaskGroup(of: Void.self) { g in
                g.addTask { try await a.run(client, token: "alice") }
                var ai = a.received.stream.makeAsyncIterator()
                a.send(#"{"op":"hello"}"#)
                #expect(await next(&ai, 1) == [["type": "hello", "user": "alice"]])
                a.send(#"{"op":"join","group":"G"}"#)
                #expect(await next(&ai, 1) == [["type": "user", "group": "G", "user": "alice", "timestamp": 0, "userload": [String: AnyHashable]()]])
                g.addTask { try await b.run(client, token: "bob") }
                var bi = b.received.stream.makeAsyncIterator()
                b.send(#"{"op":"hello","user":"bob"}"#)
                b.send(#"{"op":"join","group":"G"}"#)
                let gotB = await next(&bi, 3)
                #expect(gotB.first == ["type": "hello", "user": "bob"])
                #expect(Set(gotB.dropFirst().compactMap { $0["user"] as? String }) == ["alice", "bob"])
                #expect(await next(&ai, 1) == [["type": "user", "group": "G", "user": "bob", "timestamp": 0, "userload": [String: AnyHashable]()]])

                let created = try await client.execute(
                    uri: "/v1/groups/G/posts", method: .post, headers: [.authorization: "Bearer alice"],
                    body: ByteBuffer(string: #"{"pid":"P1","pidload":{"t":1.25}}"#))
                #expect(created.status == .created)
                let pa = await next(&ai, 1), pb = await next(&bi, 1)
                #expect(pa == pb && pa.first?["pid"] as? String == "P1" && pa.first?["user"] as? String == "alice")
                let forbidden = try await client.execute(uri: "/v1/groups/G/posts/P1", method: .delete, headers: [.authorization: "Bearer bob"])
                #expect(forbidden.status == .forbidden)

                b.close()
                let off = await next(&ai, 1)
                #expect(off.first?["user"] as? String == "bob" && (off.first?["timestamp"] as? Int ?? 0) > 0)
                a.close()
                try await g.waitForAll()
            }
        }
    }

    @Test("REST lists are JSend with limit and more; bad limits and names fail")
    func restLists() async throws {
        try await withApp { client, hub in
            for i in 0..<3 {
                _ = try await hub.store.post(GroupPost(group: "it's*", pid: "p\(i)", user: "x", pidload: .empty, timestamp: Int64(i)))
            }
            let r = try await client.execute(uri: "/v1/groups/it%27s*/posts?limit=2", method: .get, headers: [.authorization: "Bearer c1"])
            let o = try JSONSerialization.jsonObject(with: Data(buffer: r.body)) as? [String: Any]
            #expect(o?["status"] as? String == "success" && o?["limit"] as? Int == 2 && o?["more"] as? Bool == true)
            #expect((o?["data"] as? [[String: Any]])?.map { $0["pid"] as? String } == ["p0", "p1"])
            let bad = try await client.execute(uri: "/v1/groups/G/posts?limit=0", method: .get, headers: [.authorization: "Bearer c1"])
            #expect(bad.status == .badRequest)
            let dots = try await client.execute(uri: "/v1/groups/../members", method: .get, headers: [.authorization: "Bearer c1"])
            #expect(dots.status != .ok)
            let none = try await client.execute(uri: "/v1/groups/G/members", method: .get)
            #expect(none.status == .unauthorized)
        }
    }
}
