import Foundation
import HubClient
import HubTestSupport
import Synchronization
import ProcessTestSupport
import Testing

/// HubClient (seed 003's API client) against the whole hub running in this process.
@Suite struct HubClientTests {
    /// Runs `body` with a live hub, stopped afterwards whatever happens.
    static func withHub(_ body: (LiveHub) async throws -> Void) async throws {
        let hub = try await LiveHub.start()
        do { try await body(hub) } catch {
            await hub.stop()
            throw error
        }
        await hub.stop()
    }

    @Test("client credentials: a token, REST calls as the client's user, pagination, JSend fail with the field")
    func clientCredentials() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
            #expect(!c.isClientAuthorized)
            await #expect(throws: HubClientError.notAuthenticated) { try await c.posts(group: "g") }
            let t = try await c.authenticateClientCredentials()
            #expect(t.refreshToken == nil)
            #expect(c.isClientAuthorized && !c.isResourceOwnerAuthorized)
            let me = try await c.me()
            #expect(me.clientID == hub.plain.id)
            #expect(me.kind != "account")

            let empty = try await c.posts(group: "g", limit: 2)
            #expect(empty.items.isEmpty && !empty.more && empty.nextSkip == nil)
            for i in 1...3 {
                let p = try await c.post(group: "g", pid: "p\(i)", pidload: ["n": .integer(Int64(i)), "s": "it's \"quoted\""])
                #expect(p.pid == "p\(i)" && p.user == me.user && p.timestamp > 0)
            }
            let first = try await c.posts(group: "g", limit: 2)
            #expect(first.items.map(\.pid) == ["p1", "p2"] && first.more && first.limit == 2 && first.nextSkip == 2)
            let second = try await c.posts(group: "g", limit: 2, skip: 2)
            #expect(second.items.map(\.pid) == ["p3"] && !second.more)
            #expect(second.items[0].pidload == ["n": 3, "s": "it's \"quoted\""])
            #expect(try await c.post(group: "g", pid: "p2").pidload["n"] == .integer(2))

            try await c.unpost(group: "g", pid: "p2")
            #expect(try await c.posts(group: "g").items.map(\.pid) == ["p1", "p3"])
            do {
                _ = try await c.post(group: "g", pid: "p2")
                Issue.record("an unposted post was found")
            } catch let HubClientError.fail(status, _, _) {
                #expect(status == 404)
            }
            // A name the hub refuses: JSend fail naming the field (percent-encoded, never a path change).
            do {
                _ = try await c.members(group: "a/b")
                Issue.record("a group name with / was accepted")
            } catch let HubClientError.fail(status, _, field) {
                #expect(status == 400 && field == "group")
            }
            try await c.updateUserload(["name": "pat"])
            let members = try await c.members(group: "g")
            #expect(members.items.isEmpty)  // REST posts do not make members
        }
    }

    @Test("resource owner: the password grant, and the RFC's errors as typed errors")
    func resourceOwner() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.pw.id, clientSecret: hub.pw.secret)
            do {
                try await c.authenticateResourceOwner(username: "alice", password: "wrong password!")
                Issue.record("a wrong password was accepted")
            } catch let HubClientError.oauth(status, error, _) {
                #expect(status == 400 && error == "invalid_grant")
            }
            let t = try await c.authenticateResourceOwner(username: "alice", password: LiveHub.alicePassword)
            #expect(t.refreshToken != nil)
            #expect(c.isResourceOwnerAuthorized)
            let me = try await c.me()
            #expect(me.kind == "account" && me.name == "alice")

            let plain = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
            do {
                try await plain.authenticateResourceOwner(username: "alice", password: LiveHub.alicePassword)
                Issue.record("a client without the password grant got one")
            } catch let HubClientError.oauth(status, error, _) {
                #expect(status == 400 && error == "unauthorized_client")
            }
            let wrong = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: "not-the-secret")
            do {
                try await wrong.authenticateClientCredentials()
                Issue.record("a wrong client secret was accepted")
            } catch let HubClientError.oauth(status, error, _) {
                #expect(status == 401 && error == "invalid_client")
            }
        }
    }

    @Test("an expired access token is refreshed once on 401 (the refresh token rotates); oauthError is not called")
    func refreshOn401() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.pw.id, clientSecret: hub.pw.secret)
            let calls = Mutex(0)
            c.oauthError = { _, _ in calls.withLock { $0 += 1 } }
            let first = try await c.authenticateResourceOwner(username: "alice", password: LiveHub.alicePassword)
            hub.clock.advance(seconds: 601)  // past the 600 s access lifetime
            let me = try await c.me()
            #expect(me.name == "alice")
            let now = try #require(c.credentials.resourceOwner)
            #expect(now.accessToken != first.accessToken && now.refreshToken != first.refreshToken)
            #expect(calls.withLock { $0 } == 0)
        }
    }

    @Test("a client token refused with 401 goes to oauthError, whose reauthentication is used for one retry")
    func oauthErrorHandlerReauthenticates() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
            let first = try await c.authenticateClientCredentials()
            hub.clock.advance(seconds: 601)
            // No handler: the call fails naming the problem, and the dead token is forgotten.
            do {
                _ = try await c.me()
                Issue.record("an expired token was accepted")
            } catch let e as HubClientError {
                guard case .invalidToken = e else { Issue.record("got \(e)"); return }
            }
            #expect(!c.isClientAuthorized)

            // The seed's handler: clean up and authenticate again; the failed call is retried with it.
            try await c.authenticateClientCredentials()
            hub.clock.advance(seconds: 601)
            let errors = Mutex<[HubClientError]>([])
            c.oauthError = { client, error in
                errors.withLock { $0.append(error) }
                await client.deauthenticateClient()
                await client.deauthenticateResourceOwner()
                _ = try? await client.authenticateClientCredentials()
            }
            let me = try await c.me()
            #expect(me.clientID == hub.plain.id)
            let seen = errors.withLock { $0 }
            #expect(seen.count == 1)
            if case .invalidToken? = seen.first {} else { Issue.record("the handler got \(seen)") }
            #expect(c.credentials.client?.accessToken != first.accessToken)
        }
    }

    @Test("deauthenticateResourceOwner revokes at the hub: the old tokens are refused and cannot be refreshed")
    func revoke() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.pw.id, clientSecret: hub.pw.secret)
            try await c.authenticateResourceOwner(username: "alice", password: LiveHub.alicePassword)
            let kept = c.credentials
            #expect(await c.deauthenticateResourceOwner())
            #expect(!c.isResourceOwnerAuthorized)
            // Put the revoked tokens back: the hub refuses the access token and the refresh fails too.
            c.restore(kept)
            let called = Mutex(0)
            c.oauthError = { _, _ in called.withLock { $0 += 1 } }
            do {
                _ = try await c.me()
                Issue.record("a revoked token was accepted")
            } catch let e as HubClientError {
                guard case .invalidToken = e else { Issue.record("got \(e)"); return }
            }
            #expect(called.withLock { $0 } == 1)
            #expect(!c.isResourceOwnerAuthorized)

            try await c.authenticateClientCredentials()
            let cc = c.credentials
            #expect(await c.deauthenticateClient())
            c.restore(cc)
            c.oauthError = nil
            await #expect(throws: HubClientError.self) { try await c.me() }
        }
    }

    @Test("the account flow: create, the code out of band, confirm gives tokens; forgot and reset")
    func accountFlow() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
            try await c.authenticateClientCredentials()
            try await c.createAccount(username: "bob", password: "bob's password 1", contact: "bob@example.org")
            do {
                try await c.createAccount(username: "alice", password: "another password", contact: "a@example.org")
                Issue.record("a taken name was accepted")
            } catch let HubClientError.fail(status, _, _) {
                #expect(status == 409)
            }
            await #expect(throws: HubClientError.self) { try await c.confirmRegistration(username: "bob", code: "00000000") }
            let code = try #require(hub.codes.code("confirm", "bob"))
            try await c.confirmRegistration(username: "bob", code: code)
            #expect(c.isResourceOwnerAuthorized)
            #expect(try await c.me().name == "bob")

            try await c.forgotLogin(username: "bob")
            try await c.forgotLogin(username: "nobody")  // same answer: no enumeration
            let reset = try #require(hub.codes.code("reset", "bob"))
            let before = c.credentials.resourceOwner
            try await c.resetPassword(username: "bob", code: reset, newPassword: "bob's new password")
            #expect(c.credentials.resourceOwner != before)
            #expect(try await c.me().name == "bob")
        }
    }

    @Test("isReachable: true for a running hub, false for a closed port and a bad host")
    func reachability() async throws {
        let hub = try await LiveHub.start()
        let c = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
        #expect(await c.isReachable())
        await hub.stop()
        // Where the hub was, a test running alongside may have a hub of its own by now: ask a port
        // that refuses connections for certain.
        let refused = RefusedPort()
        let gone = try HubClient(baseURL: "http://127.0.0.1:\(refused.port)", clientID: hub.plain.id,
                                 clientSecret: hub.plain.secret)
        #expect(await gone.isReachable() == false)
        do {
            try await gone.authenticateClientCredentials()
            Issue.record("a stopped hub answered")
        } catch let e as HubClientError {
            guard case .transport = e else { Issue.record("got \(e)"); return }
        }
        #expect(throws: HubClientError.self) { try HubClient(baseURL: "ftp://x", clientID: "a", clientSecret: "b") }
    }

    @Test("tokens never show in descriptions, mirrors or errors")
    func tokensStayHidden() async throws {
        try await Self.withHub { hub in
            let c = try HubClient(baseURL: hub.base, clientID: hub.pw.id, clientSecret: hub.pw.secret)
            let t = try await c.authenticateResourceOwner(username: "alice", password: LiveHub.alicePassword)
            let refresh = try #require(t.refreshToken)
            var dumped = ""
            dump(c.credentials, to: &dumped)
            for text in ["\(t)", String(reflecting: t), "\(c.credentials)", String(reflecting: c.credentials), dumped] {
                #expect(!text.contains(t.accessToken) && !text.contains(refresh) && !text.contains(hub.pw.secret), "\(text)")
            }
        }
    }
}
