import HubCore
import Testing

/// A little world: the machine, one router for every connection, and each connection's inbox.
private struct World {
    var machine = PresenceMachine()
    var router = PresenceRouter()
    var inbox: [ConnectionID: [String]] = [:]
    var errors: [ConnectionID: [ClientOpError]] = [:]
    var now: Int64 = 1_409_876_000_000

    mutating func feed(_ input: PresenceInput) {
        now += 1000
        let actions = machine.input(input, now: now)
        for case .error(let c, let e) in actions { errors[c, default: []].append(e) }
        for (conn, event) in router.route(actions) { inbox[conn, default: []].append(event.jsonText) }
        if case .closed(let c) = input { router.remove(c) }
    }

    mutating func connect(_ conn: ConnectionID, user: String, node: String = "n1") {
        feed(.connected(conn, user: user, node: node))
    }

    mutating func send(_ conn: ConnectionID, _ text: String) throws {
        feed(.op(conn, try ClientOp.parse(text)))
    }

    /// Takes and clears what a connection received.
    mutating func take(_ conn: ConnectionID) -> [String] {
        defer { inbox[conn] = [] }
        return inbox[conn] ?? []
    }
}

private func user(_ g: String, _ u: String, _ ts: Int64, _ load: String = "{}") -> String {
    "{\"type\":\"user\",\"group\":\"\(g)\",\"user\":\"\(u)\",\"timestamp\":\(ts),\"userload\":\(load)}"
}

@Suite("Presence machine: seed 001's scenarios")
struct PresenceMachineTests {
    @Test("1 join: both presences broadcast to everyone in the group")
    func join() throws {
        var w = World()
        w.connect("a1", user: "A"); w.connect("b1", user: "B")
        try w.send("a1", #"{"op":"join","group":"GA"}"#)
        #expect(w.take("a1") == [user("GA", "A", 0)])
        try w.send("b1", #"{"op":"join","group":"GA"}"#)
        #expect(w.take("a1") == [user("GA", "B", 0)])
        #expect(w.take("b1") == [user("GA", "A", 0), user("GA", "B", 0)])
    }

    @Test("2 listen: the listener sees everyone and stays invisible")
    func listen() throws {
        var w = World()
        w.connect("a1", user: "A"); w.connect("b1", user: "B")
        try w.send("a1", #"{"op":"join","group":"GA"}"#)
        _ = w.take("a1")
        try w.send("b1", #"{"op":"listen","group":"GA"}"#)
        #expect(w.take("b1") == [user("GA", "A", 0)])
        #expect(w.take("a1").isEmpty)
        // The listener hears later presence too, and is never a member.
        w.connect("c1", user: "C")
        try w.send("c1", #"{"op":"join","group":"GA"}"#)
        #expect(w.take("b1") == [user("GA", "C", 0)])
        #expect(!w.machine.state.snapshot("GA").members.map(\.user).contains("B"))
    }

    @Test("3 disconnect: the last-seen time reaches the group, and newcomers see it")
    func disconnect() throws {
        var w = World()
        w.connect("a1", user: "A"); w.connect("b1", user: "B")
        try w.send("a1", #"{"op":"join","group":"GA"}"#)
        try w.send("b1", #"{"op":"join","group":"GA"}"#)
        _ = w.take("a1")
        w.feed(.closed("b1"))
        let seen = w.now
        #expect(w.take("a1") == [user("GA", "B", seen)])
        w.connect("c1", user: "C")
        try w.send("c1", #"{"op":"listen","group":"GA"}"#)
        #expect(w.take("c1") == [user("GA", "A", 0), user("GA", "B", seen)])
        // Back again: online once more.
        w.connect("b2", user: "B")
        try w.send("b2", #"{"op":"join","group":"GA"}"#)
        #expect(w.take("a1") == [user("GA", "B", 0)])
    }

    @Test("4 update: the new userload reaches every group the user joined, not the others")
    func update() throws {
        var w = World()
        w.connect("a1", user: "A"); w.connect("c1", user: "C"); w.connect("x1", user: "X")
        w.connect("b1", user: "B")
        try w.send("a1", #"{"op":"join","group":"G1"}"#)
        try w.send("c1", #"{"op":"join","group":"G2"}"#)
        try w.send("x1", #"{"op":"join","group":"G3"}"#)
        try w.send("b1", #"{"op":"join","group":"G1"}"#)
        try w.send("b1", #"{"op":"join","group":"G2"}"#)
        _ = w.take("a1"); _ = w.take("c1"); _ = w.take("x1")
        try w.send("b1", #"{"op":"update","userload":{"a": "A", "b":1.25e3}}"#)
        #expect(w.take("a1") == [user("G1", "B", 0, #"{"a": "A", "b":1.25e3}"#)])
        #expect(w.take("c1") == [user("G2", "B", 0, #"{"a": "A", "b":1.25e3}"#)])
        #expect(w.take("x1").isEmpty)
    }

    @Test("5 post: broadcast, kept for newcomers until unposted, only by its author")
    func postUnpost() throws {
        var w = World()
        w.connect("a1", user: "A"); w.connect("b1", user: "B")
        try w.send("a1", #"{"op":"join","group":"GA"}"#)
        try w.send("b1", #"{"op":"join","group":"GA"}"#)
        _ = w.take("a1"); _ = w.take("b1")
        try w.send("a1", #"{"op":"post","group":"GA","pid":"PID","pidload":{"t":1732430000.123456789}}"#)
        let at = w.now
        let post = "{\"type\":\"post\",\"group\":\"GA\",\"pid\":\"PID\",\"pidload\":{\"t\":1732430000.123456789},\"timestamp\":\(at),\"user\":\"A\"}"
        #expect(w.take("a1") == [post])
        #expect(w.take("b1") == [post])
        w.connect("c1", user: "C")
        try w.send("c1", #"{"op":"listen","group":"GA"}"#)
        #expect(w.take("c1") == [user("GA", "A", 0), user("GA", "B", 0), post])
        try w.send("b1", #"{"op":"unpost","group":"GA","pid":"PID"}"#)
        #expect(w.errors["b1"]?.first?.message.contains("another user") == true)
        try w.send("a1", #"{"op":"unpost","group":"GA","pid":"PID"}"#)
        #expect(w.take("b1").isEmpty)
        w.connect("d1", user: "D")
        try w.send("d1", #"{"op":"listen","group":"GA"}"#)
        #expect(w.take("d1") == [user("GA", "A", 0), user("GA", "B", 0)])
    }

    @Test("one online and one offline event per user, however many connections")
    func manyConnections() throws {
        var w = World()
        w.connect("w1", user: "W")
        try w.send("w1", #"{"op":"join","group":"GM"}"#)
        _ = w.take("w1")
        w.connect("k1", user: "K", node: "n1"); w.connect("k2", user: "K", node: "n2")
        try w.send("k1", #"{"op":"join","group":"GM"}"#)
        try w.send("k2", #"{"op":"join","group":"GM"}"#)
        #expect(w.take("w1") == [user("GM", "K", 0)])
        w.feed(.closed("k1"))
        #expect(w.take("w1").isEmpty)
        w.feed(.closed("k2"))
        #expect(w.take("w1") == [user("GM", "K", w.now)])
    }

    @Test("a dead node's users go offline with its last heartbeat; other nodes' users stay")
    func nodeDead() throws {
        var w = World()
        w.connect("w1", user: "W", node: "n1")
        try w.send("w1", #"{"op":"join","group":"GN"}"#)
        w.connect("p1", user: "P", node: "n2"); w.connect("q1", user: "Q", node: "n2")
        w.connect("q2", user: "Q", node: "n1")
        for c in ["p1", "q1", "q2"] { try w.send(c, #"{"op":"join","group":"GN"}"#) }
        _ = w.take("w1")
        w.feed(.nodeDied("n2", lastSeen: 1_700_000_000_000))
        #expect(w.take("w1") == [user("GN", "P", 1_700_000_000_000)])
        #expect(w.machine.state.snapshot("GN").members.map(\.timestamp) == [1_700_000_000_000, 0, 0])
    }

    @Test("leave ends the membership and tells the group once")
    func leave() throws {
        var w = World()
        w.connect("a1", user: "A"); w.connect("b1", user: "B")
        try w.send("a1", #"{"op":"join","group":"GA"}"#)
        try w.send("b1", #"{"op":"join","group":"GA"}"#)
        _ = w.take("a1")
        try w.send("b1", #"{"op":"leave","group":"GA"}"#)
        #expect(w.take("a1") == [user("GA", "B", w.now)])
        try w.send("a1", #"{"op":"post","group":"GA","pid":"p","pidload":{}}"#)
        #expect(w.take("b1").allSatisfy { !$0.contains("\"post\"") })
        #expect(w.machine.state.snapshot("GA").members.map(\.user) == ["A"])
    }

    @Test("bad messages get errors naming the problem")
    func badMessages() {
        let cases: [(String, String)] = [
            (#"{"op":"join"}"#, "\"group\""),
            (#"{"op":"join","group":"a/b"}"#, "\"group\" must be"),
            (#"{"op":"join","group":".."}"#, "\"group\" must be"),
            (#"{"op":"post","group":"g","pid":"p","pidload":[1]}"#, "object"),
            (#"{"op":"fly"}"#, "unknown op"),
            (#"{"op":"join","group":"g","x":1}"#, "unknown member"),
            // Numbers no client can read back (no 64-bit floating-point value holds them): refused in
            // every payload, naming the payload, and the socket stays open.
            (#"{"op":"update","userload":{"n":1e999999}}"#, "\"userload\": invalid JSON at byte 5: number out of range"),
            (#"{"op":"post","group":"g","pid":"p","pidload":{"a":[{"b":-1e400}]}}"#, "\"pidload\": invalid JSON"),
            (#"{"op":"post","group":"g","pid":"p","pidload":{"n":\#(String(repeating: "9", count: 400))}}"#, "number out of range"),
            (#"{"op":"update","userload":{"a":{"x":1,"x":2}}}"#, "duplicate member \"x\""),
        ]
        for (text, fragment) in cases {
            #expect(throws: ClientOpError.self) { try ClientOp.parse(text) }
            do { _ = try ClientOp.parse(text) } catch {
                #expect(error.message.contains(fragment), "\(text): \(error.message)")
                #expect(!error.fatal)
            }
        }
        do { _ = try ClientOp.parse("not json") } catch { #expect(error.fatal) }
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        do { _ = try ClientOp.parse(#"{"op":"update","userload":{"x":\#(deep)}}"#) } catch {
            #expect(error.message.contains("nested"))
        }
    }

    @Test("quotes, wildcards and escapes in names are data, written back as valid JSON")
    func namesAreData() throws {
        var w = World()
        w.connect("a1", user: "u\"*'")
        try w.send("a1", #"{"op":"join","group":"it's*(x)"}"#)
        #expect(w.take("a1") == [#"{"type":"user","group":"it's*(x)","user":"u\"*'","timestamp":0,"userload":{}}"#])
        #expect(try ClientOp.parse(#"{"op":"hello","user":"\u00e9\ud83d\ude00"}"#) == .hello(user: "é😀"))
    }
}
