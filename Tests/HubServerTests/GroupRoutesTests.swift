import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubStore
import Hummingbird
import HummingbirdTesting
import Testing

/// The groups REST routes in process (REST only: no sockets, so nothing here can wait on a peer):
/// members and posts as seed 003's paginated lists, posts made and removed by their author only,
/// the caller's userload, names with quotes, `%27`, `%2A` and wildcards as plain data, and the
/// Bearer, size and method refusals on these routes. Membership is made through the node's
/// `GroupHub` (what a socket's `join` calls), since REST has no join.
@Suite struct GroupRoutesTests {
    /// Three users: two clients' own users (client tokens) and the account alice (password grant).
    struct Users {
        var plain: String, pw: String, alice: String
        var plainUser: String, pwUser: String
    }

    func users(_ c: any TestClientProtocol, _ h: Harness) async throws -> Users {
        let pwCC = try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.pw.id, h.pw.secret))
        let alice = try await c.form("/oauth/token", "grant_type=password&username=alice&password=correct%20horse%20battery",
                                     auth: Harness.basic(h.pw.id, h.pw.secret))
        return Users(plain: try await c.ccToken(h), pw: try #require(pwCC.json["access_token"] as? String),
                     alice: try #require(alice.json["access_token"] as? String),
                     plainUser: "client:\(h.plain.id)", pwUser: "client:\(h.pw.id)")
    }

    /// The groups plugin on the harness's store, its tables made and its node registered (what the
    /// runtime's service does at start; no heartbeat loop runs here).
    static func plugin(_ h: Harness) async throws -> GroupsPlugin {
        let plugin = GroupsPlugin(nodeName: "t", heartbeat: .seconds(30))
        try await plugin.runtime(h.context).start()
        return plugin
    }

    static func items(_ a: Answer) -> [[String: Any]] { a.json["data"] as? [[String: Any]] ?? [] }

    @Test func postsArePagedInOrderAndExactlyOnce() async throws {
        let h = try await Harness.make()
        let plugin = try await Self.plugin(h)
        try await h.test(.router, plugins: [plugin]) { c in
            let u = try await users(c, h)
            let empty = try await c.json(.get, "/v1/groups/pages/posts", token: u.plain)
            #expect(empty.status == 200 && empty.jsendStatus == "success" && empty.json["limit"] as? Int == 25
                    && empty.json["more"] as? Bool == false && Self.items(empty).isEmpty, "\(empty.text)")
            for i in 0..<60 {
                let p = try await c.json(.post, "/v1/groups/pages/posts", token: u.plain, "{\"pid\":\"p\(i < 10 ? "0" : "")\(i)\",\"pidload\":{\"i\":\(i)}}")
                #expect(p.status == 201, "\(p.text)")
            }
            var seen: [String] = []
            var shape: [String] = []
            for skip in [0, 25, 50] {
                let page = try await c.json(.get, "/v1/groups/pages/posts?limit=25&skip=\(skip)", token: u.plain)
                let items = Self.items(page)
                shape.append("\(page.jsendStatus ?? "-") \(page.json["limit"] as? Int ?? -1) \(page.json["more"] as? Bool ?? true) \(items.count)")
                seen += items.compactMap { $0["pid"] as? String }
                for item in items {
                    #expect(Set(item.keys) == ["group", "pid", "pidload", "timestamp", "user"], "\(item)")
                    #expect(item["user"] as? String == u.plainUser && item["group"] as? String == "pages")
                }
            }
            #expect(shape == ["success 25 true 25", "success 25 true 25", "success 25 false 10"])
            #expect(seen.sorted() == (0..<60).map { "p\($0 < 10 ? "0" : "")\($0)" })
            // The default page is 25; limit 1000 is accepted; a skip past the end is an empty last page.
            #expect(Self.items(try await c.json(.get, "/v1/groups/pages/posts", token: u.plain)).count == 25)
            let all = try await c.json(.get, "/v1/groups/pages/posts?limit=1000", token: u.plain)
            #expect(Self.items(all).count == 60 && all.json["more"] as? Bool == false)
            let past = try await c.json(.get, "/v1/groups/pages/posts?skip=60", token: u.plain)
            #expect(past.status == 200 && Self.items(past).isEmpty && past.json["more"] as? Bool == false)
            // Out-of-range or malformed paging: 400 JSend fail naming the parameter.
            for (q, field) in [("limit=0", "limit"), ("limit=1001", "limit"), ("limit=-1", "limit"), ("limit=x", "limit"),
                               ("skip=-1", "skip"), ("skip=1.5", "skip"), ("skip=\(Limits.maxSkip + 1)", "skip")] {
                let bad = try await c.json(.get, "/v1/groups/pages/posts?\(q)", token: u.plain)
                #expect(bad.status == 400 && bad.jsendStatus == "fail" && bad.data["field"] as? String == field, "\(q): \(bad.status) \(bad.text)")
                let badMembers = try await c.json(.get, "/v1/groups/pages/members?\(q)", token: u.plain)
                #expect(badMembers.status == 400 && badMembers.jsendStatus == "fail", "members \(q): \(badMembers.text)")
            }
        }
    }

    /// The post flood (issue 32): a new post over a bound of the posts kept is refused with 409 naming
    /// the bound (storage, not a rate: no Retry-After), nothing kept is evicted, and a replacement of
    /// one's own post or an unpost still works.
    @Test func postsOverTheBoundsAreRefusedNotEvicted() async throws {
        let h = try await Harness.make()
        var settings = h.context.settings
        settings.groups.posts = PostBounds(perUserPerGroup: 3, perGroup: 5)
        let context = HubPluginContext(authority: h.context.authority, store: h.context.store, settings: settings, logger: h.context.logger)
        let plugin = GroupsPlugin(nodeName: "t", heartbeat: .seconds(30))
        try await plugin.runtime(context).start()   // the runtime (and its bounds) is made once, here
        try await h.test(.router, plugins: [plugin]) { c in
            let u = try await users(c, h)
            func post(_ token: String, _ pid: String, _ v: Int = 0) async throws -> Answer {
                try await c.json(.post, "/v1/groups/full/posts", token: token, "{\"pid\":\"\(pid)\",\"pidload\":{\"v\":\(v)}}")
            }
            for i in 0..<3 { #expect(try await post(u.plain, "a\(i)").status == 201) }
            let mine = try await post(u.plain, "a3")
            let fail = mine.json["data"] as? [String: Any]
            #expect(mine.status == 409 && mine.jsendStatus == "fail" && fail?["field"] as? String == "max-posts-per-user-per-group"
                    && (fail?["message"] as? String)?.contains("3 posts") == true, "\(mine.text)")
            #expect(try await post(u.plain, "a1", 2).status == 200, "a replacement takes no new place")
            let b0 = try await post(u.pw, "b0"), b1 = try await post(u.pw, "b1")
            #expect(b0.status == 201 && b1.status == 201)
            let full = try await post(u.alice, "c0")
            #expect(full.status == 409 && (full.json["data"] as? [String: Any])?["field"] as? String == "max-posts-per-group", "\(full.text)")
            let kept = Self.items(try await c.json(.get, "/v1/groups/full/posts", token: u.plain)).compactMap { $0["pid"] as? String }
            #expect(kept.sorted() == ["a0", "a1", "a2", "b0", "b1"], "nothing evicted")
            #expect(try await c.json(.delete, "/v1/groups/full/posts/b0", token: u.pw).status == 200)
            #expect(try await post(u.alice, "c0").status == 201, "an unpost frees a place")
        }
    }

    @Test func postKeepsItsPayloadAndOnlyTheAuthorDeletesIt() async throws {
        let h = try await Harness.make()
        let plugin = try await Self.plugin(h)
        try await h.test(.router, plugins: [plugin]) { c in
            let u = try await users(c, h)
            // The payload comes back as its exact text (number spelling, escapes, member order).
            let load = "{\"z\":1732430000.123456,\"a\":\"\\u00e9\\\"\",\"n\":[1e3,null,true]}"
            let made = try await c.json(.post, "/v1/groups/g1/posts", token: u.alice, "{\"pid\":\"P1\",\"pidload\":\(load)}")
            #expect(made.status == 201 && made[.location] == "/v1/groups/g1/posts/P1", "\(made.status) \(made.text)")
            #expect(made.text.contains("\"pidload\":\(load)"), "\(made.text)")
            #expect(made.data["user"] as? String == "u_alice" && (made.data["timestamp"] as? Int ?? 0) > 0)
            let got = try await c.json(.get, "/v1/groups/g1/posts/P1", token: u.plain)
            #expect(got.status == 200 && got.text.contains("\"pidload\":\(load)") && got.data["pid"] as? String == "P1")
            // Another user cannot replace or delete it: 403, and the post is unchanged.
            let steal = try await c.json(.post, "/v1/groups/g1/posts", token: u.plain, "{\"pid\":\"P1\",\"pidload\":{}}")
            #expect(steal.status == 403 && steal.jsendStatus == "fail", "\(steal.status) \(steal.text)")
            let del = try await c.json(.delete, "/v1/groups/g1/posts/P1", token: u.plain)
            #expect(del.status == 403 && del.jsendStatus == "fail" && del.data["message"] is String, "\(del.status) \(del.text)")
            let delClient = try await c.json(.delete, "/v1/groups/g1/posts/P1", token: u.pw)  // alice's client, not alice
            #expect(delClient.status == 403)
            #expect(try await c.json(.get, "/v1/groups/g1/posts/P1", token: u.plain).text.contains(load))
            // The author replaces it (200), then deletes it; it is gone (404), and a second delete is 404.
            let again = try await c.json(.post, "/v1/groups/g1/posts", token: u.alice, "{\"pid\":\"P1\",\"pidload\":{\"v\":2}}")
            #expect(again.status == 200 && again.text.contains("{\"v\":2}"), "\(again.status) \(again.text)")
            let mine = try await c.json(.delete, "/v1/groups/g1/posts/P1", token: u.alice)
            #expect(mine.status == 200 && mine.jsendStatus == "success", "\(mine.status) \(mine.text)")
            let gone = try await c.json(.get, "/v1/groups/g1/posts/P1", token: u.alice)
            #expect(gone.status == 404 && gone.jsendStatus == "fail")
            #expect(try await c.json(.delete, "/v1/groups/g1/posts/P1", token: u.alice).status == 404)
            #expect(Self.items(try await c.json(.get, "/v1/groups/g1/posts", token: u.alice)).isEmpty)
            // A payload of 64 members is a payload; 65 is over the document's maxProperties.
            func members(_ n: Int) -> String { "{" + (0..<n).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}" }
            #expect(try await c.json(.post, "/v1/groups/g1/posts", token: u.alice, "{\"pid\":\"m64\",\"pidload\":\(members(64))}").status == 201)
            let m65 = try await c.json(.post, "/v1/groups/g1/posts", token: u.alice, "{\"pid\":\"m65\",\"pidload\":\(members(65))}")
            #expect(m65.status == 400 && m65.data["field"] as? String == "pidload", "\(m65.status) \(m65.text)")
            #expect(try await c.json(.put, "/v1/users/me/userload", token: u.alice, members(64)).status == 200)
            #expect(try await c.json(.put, "/v1/users/me/userload", token: u.alice, members(65)).status == 400)
            #expect(try await c.json(.delete, "/v1/groups/g1/posts/m64", token: u.alice).status == 200)
            // Bad bodies: 400 JSend fail naming the member where there is one.
            for (body, field) in [("{\"pid\":\"a/b\",\"pidload\":{}}", "pid"), ("{\"pid\":\"..\",\"pidload\":{}}", "pid"),
                                  ("{\"pid\":\"ok\",\"pidload\":[1]}", "pidload"), ("{\"pid\":\"ok\"}", "pidload"),
                                  ("{\"pid\":\"ok\",\"pidload\":{},\"x\":1}", "x"), ("{\"pidload\":{}}", "pid"),
                                  ("{\"pid\":\"ok\",\"pidload\":{\"x\":\"\(String(repeating: "y", count: 20_000))\"}}", "pidload"),
                                  // Numbers that no 64-bit floating-point value holds: no client could read them back.
                                  ("{\"pid\":\"ok\",\"pidload\":{\"n\":1e999999}}", "pidload"),
                                  ("{\"pid\":\"ok\",\"pidload\":{\"a\":[-1e400]}}", "pidload"),
                                  // A member name twice: readers keep different ones (Foundation the first, Python the last).
                                  ("{\"pid\":\"ok\",\"pidload\":{\"a\":1,\"a\":2}}", "pidload"),
                                  ("{\"pid\":\"ok\",\"pidload\":{\"o\":{\"b\":1,\"\\u0062\":2}}}", "pidload"),
                                  ("[]", nil), ("not json", nil), ("", nil)] as [(String, String?)] {
                let bad = try await c.json(.post, "/v1/groups/g1/posts", token: u.alice, body)
                #expect(bad.status == 400 && bad.jsendStatus == "fail" && bad.data["field"] as? String == field,
                        "\(body.prefix(40)): \(bad.status) \(bad.text.prefix(200))")
            }
        }
    }

    @Test func membersListPresenceAndTheUserloadOfEach() async throws {
        let h = try await Harness.make()
        let plugin = try await Self.plugin(h)
        let hub = plugin.runtime(h.context).hub
        try await h.test(.router, plugins: [plugin]) { c in
            let u = try await users(c, h)
            // The userload answer names the acting user: a client token acts as the client's user.
            let put = try await c.json(.put, "/v1/users/me/userload", token: u.plain, "{\"mood\":\"\\\"quoted\\\"\",\"n\":1.50}")
            #expect(put.status == 200 && put.data["user"] as? String == u.plainUser, "\(put.status) \(put.text)")
            #expect(put.text.contains("\"userload\":{\"mood\":\"\\\"quoted\\\"\",\"n\":1.50}"), "\(put.text)")
            // Two members through the node (what a socket's join does); one then disconnects.
            let c1 = hub.newConnectionID(), c2 = hub.newConnectionID()
            await hub.perform(.join(group: "room"), conn: c1, user: u.plainUser)
            await hub.perform(.join(group: "room"), conn: c2, user: "u_alice")
            await hub.closed(c2)
            let m = try await c.json(.get, "/v1/groups/room/members", token: u.pw)
            let items = Self.items(m)
            #expect(m.status == 200 && m.json["limit"] as? Int == 25 && m.json["more"] as? Bool == false && items.count == 2, "\(m.text)")
            let byUser = Dictionary(items.map { ($0["user"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            #expect(byUser[u.plainUser]?["timestamp"] as? Int == 0, "online member has timestamp 0: \(m.text)")
            #expect((byUser["u_alice"]?["timestamp"] as? Int ?? 0) > 0, "offline member has a last-seen time: \(m.text)")
            #expect(m.text.contains("\"userload\":{\"mood\":\"\\\"quoted\\\"\",\"n\":1.50}"), "\(m.text)")
            #expect(Set(items.first?.keys.map { $0 } ?? []) == ["user", "timestamp", "userload"])
            // A new userload shows in the listing; a bad one is refused and leaves the old in place.
            #expect(try await c.json(.put, "/v1/users/me/userload", token: u.plain, "{}").status == 200)
            let after = try await c.json(.get, "/v1/groups/room/members", token: u.pw)
            #expect(after.text.contains("\"timestamp\":0,\"user\":\"\(u.plainUser)\",\"userload\":{}"), "\(after.text)")
            for body in ["[]", "\"x\"", "{", "", "{\"x\":\"\(String(repeating: "y", count: 20_000))\"}", "{\"n\":1e999999}",
                         "{\"n\":\(String(repeating: "9", count: 400))}", "{\"k\":1,\"k\":1}"] {
                let bad = try await c.json(.put, "/v1/users/me/userload", token: u.plain, body)
                #expect(bad.status == 400 && bad.jsendStatus == "fail", "\(body.prefix(20)): \(bad.status) \(bad.text.prefix(200))")
            }
            // Paging of members: limit 1 gives one member and more.
            let first = try await c.json(.get, "/v1/groups/room/members?limit=1", token: u.pw)
            #expect(Self.items(first).count == 1 && first.json["more"] as? Bool == true && first.json["limit"] as? Int == 1)
            let second = try await c.json(.get, "/v1/groups/room/members?limit=1&skip=1", token: u.pw)
            #expect(Self.items(second).count == 1 && second.json["more"] as? Bool == false)
            // A group nobody joined is an empty list, not 404.
            let none = try await c.json(.get, "/v1/groups/nobody/members", token: u.pw)
            #expect(none.status == 200 && Self.items(none).isEmpty)
            await hub.closed(c1)
        }
    }

    @Test func quotesWildcardsAndEscapesInNamesAreJustData() async throws {
        let h = try await Harness.make()
        let plugin = try await Self.plugin(h)
        try await h.test(.router, plugins: [plugin]) { c in
            let u = try await users(c, h)
            // Path form -> the name it stands for. `'` and `*` written plainly or as %27 / %2A are the same name.
            let names: [(path: String, name: String)] = [
                ("it%27s", "it's"), ("O'Brien';--", "O'Brien';--"), ("%2A", "*"), ("*", "*"), ("a_c", "a_c"), ("abc", "abc"),
                ("(x)", "(x)"), ("a+b", "a+b"), ("a%2Bb", "a+b"), ("1=1", "1=1"), ("x;DROP", "x;DROP"), ("~:@!$,", "~:@!$,"),
            ]
            for (i, n) in names.enumerated() {
                let p = try await c.json(.post, "/v1/groups/\(n.path)/posts", token: u.alice, "{\"pid\":\"n\(i)\",\"pidload\":{}}")
                #expect(p.status == 201 || p.status == 200, "\(n.path): \(p.status) \(p.text)")
                #expect(p.data["group"] as? String == n.name, "\(n.path) is the group \(n.name): \(p.text)")
            }
            func pids(_ path: String) async throws -> Set<String> {
                let a = try await c.json(.get, "/v1/groups/\(path)/posts?limit=1000", token: u.alice)
                #expect(a.status == 200, "\(path): \(a.text)")
                return Set(Self.items(a).compactMap { $0["pid"] as? String })
            }
            // Each name holds exactly its own posts: `*` matches nothing else, `_` is not a one-character
            // wildcard, a quote does not end anything.
            #expect(try await pids("*") == ["n2", "n3"])
            #expect(try await pids("%2a") == ["n2", "n3"])
            #expect(try await pids("a_c") == ["n4"])
            #expect(try await pids("abc") == ["n5"])
            #expect(try await pids("it's") == ["n0"])
            #expect(try await pids("O%27Brien%27%3B--") == ["n1"])
            #expect(try await pids("a%2bb") == ["n7", "n8"])
            #expect(try await pids("nothing") == [])
            // The Location of a post names it percent-encoded; following it finds the post.
            let made = try await c.json(.post, "/v1/groups/it's/posts", token: u.alice, "{\"pid\":\"q'*\",\"pidload\":{}}")
            let loc = try #require(made[.location])
            #expect(loc == "/v1/groups/it%27s/posts/q%27%2A", "\(loc)")
            #expect(try await c.json(.get, loc, token: u.alice).data["pid"] as? String == "q'*")
            #expect(try await c.json(.delete, "/v1/groups/it's/posts/q'%2a", token: u.alice).status == 200)
            // Names that are not names: 400 naming the parameter, never another group.
            for bad in ["a%2Fb", "..", "%2E%2E", ".", "a%22b", "a%25", "%zz", "%", "%+4", "a%00b", "%C3%A9", String(repeating: "x", count: 65),
                        "it%2527s"] {
                let a = try await c.json(.get, "/v1/groups/\(bad)/posts", token: u.alice)
                #expect(a.status == 400 && a.jsendStatus == "fail" && a.data["field"] as? String == "group", "\(bad): \(a.status) \(a.text)")
                let p = try await c.json(.delete, "/v1/groups/g/posts/\(bad)", token: u.alice)
                #expect(p.status == 400 && p.data["field"] as? String == "pid", "pid \(bad): \(p.status) \(p.text)")
            }
        }
    }

    @Test func refusalsOnTheGroupsRoutes() async throws {
        let h = try await Harness.make()
        let plugin = try await Self.plugin(h)
        try await h.test(.router, plugins: [plugin]) { c in
            let u = try await users(c, h)
            let routes: [(HTTPRequest.Method, String, String?)] = [
                (.get, "/v1/groups/g/members", nil), (.get, "/v1/groups/g/posts", nil),
                (.post, "/v1/groups/g/posts", "{\"pid\":\"p\",\"pidload\":{}}"), (.get, "/v1/groups/g/posts/p", nil),
                (.delete, "/v1/groups/g/posts/p", nil), (.put, "/v1/users/me/userload", "{}"), (.get, "/v1/socket", nil),
            ]
            // No token, a forged one, a revoked one, an expired one: 401 with WWW-Authenticate, JSend fail.
            let revoked = try await c.ccToken(h)
            #expect(try await c.form("/oauth/revoke", "token=\(revoked)", auth: Harness.basic(h.plain.id, h.plain.secret)).status == 200)
            for (method, path, body) in routes {
                for token in [nil, "mha_" + HubTokens.base64url(HubTokens.randomBytes(32)), revoked] as [String?] {
                    let a = try await c.json(method, path, token: token, body)
                    #expect(a.status == 401 && a.jsendStatus == "fail", "\(method) \(path): \(a.status) \(a.text)")
                    #expect(a[.wwwAuthenticate]?.hasPrefix("Bearer realm=\"modem-hub\"") == true, "\(method) \(path)")
                }
            }
            // 10 MB bodies: 413 JSend fail, with or without a token.
            let big = "{\"pid\":\"p\",\"pidload\":{\"x\":\"" + String(repeating: "a", count: 10_000_000) + "\"}}"
            for (path, method) in [("/v1/groups/g/posts", HTTPRequest.Method.post), ("/v1/users/me/userload", .put)] {
                let a = try await c.json(method, path, token: u.plain, big)
                #expect(a.status == 413 && a.jsendStatus == "fail", "\(path): \(a.status) \(a.text.prefix(200))")
            }
            // Methods the document does not list: 405 with Allow.
            let put = try await c.json(.put, "/v1/groups/g/posts", token: u.plain, "{}")
            #expect(put.status == 405 && put.jsendStatus == "fail" && put[.allow] == "GET, POST", "\(put.status) \(put[.allow] ?? "")")
            let getLoad = try await c.json(.get, "/v1/users/me/userload", token: u.plain)
            #expect(getLoad.status == 405 && getLoad[.allow] == "PUT")
            // The socket path without an upgrade: 426 JSend fail.
            let sock = try await c.json(.get, "/v1/socket", token: u.plain)
            #expect(sock.status == 426 && sock.jsendStatus == "fail" && sock[.upgrade] == "websocket")
            // Only JSON bodies are accepted.
            let form = try await c.call(.post, "/v1/groups/g/posts", headers: [.authorization: "Bearer " + u.plain,
                                                                              .contentType: "text/plain"], body: "{\"pid\":\"p\",\"pidload\":{}}")
            #expect(form.status == 415 && form.jsendStatus == "fail", "\(form.status) \(form.text)")
        }
    }
}
