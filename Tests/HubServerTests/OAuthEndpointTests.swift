import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubStore
import Hummingbird
import HummingbirdBcrypt
import HummingbirdTesting
import Testing

/// Every row of the OAuth error table (docs/hub-plan.md section 3), status and body, in process.
@Suite struct OAuthEndpointTests {
    @Test func clientCredentialsByBasicAndByBody() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let a = try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.plain.id, h.plain.secret))
            #expect(a.status == 200)
            #expect(a.json["token_type"] as? String == "Bearer")
            #expect(a.json["expires_in"] as? Int == 600)
            #expect(a.json["scope"] as? String == "hub")
            #expect(a.json["refresh_token"] == nil)
            #expect((a.json["access_token"] as? String)?.hasPrefix("mha_") == true)
            #expect(a[.cacheControl] == "no-store")
            #expect(a[HTTPField.Name("Pragma")!] == "no-cache")
            let b = try await c.form("/oauth/token", "grant_type=client_credentials&client_id=\(h.plain.id)&client_secret=\(h.plain.secret)")
            #expect(b.status == 200 && b.json["access_token"] != nil)
            // Basic plus the same client_id in the body is still one method (oauthlib sends it).
            let d = try await c.form("/oauth/token", "grant_type=client_credentials&client_id=\(h.plain.id)",
                                     auth: Harness.basic(h.plain.id, h.plain.secret))
            #expect(d.status == 200)
        }
    }

    @Test func requestErrors() async throws {
        let h = try await Harness.make()
        let auth = Harness.basic(h.plain.id, h.plain.secret)
        try await h.test(.router) { c in
            for (body, code) in [("", "invalid_request"), ("grant_type=client_credentials&grant_type=password", "invalid_request"),
                                 ("grant_type=%zz", "invalid_request"), ("grant_type=foo", "unsupported_grant_type"),
                                 ("grant_type=client_credentials&scope=admin", "invalid_scope"),
                                 ("grant_type=password&username=alice&password=x", "unauthorized_client"),
                                 ("grant_type=refresh_token", "invalid_request"),
                                 ("grant_type=refresh_token&refresh_token=mhr_nope", "invalid_grant")] {
                let a = try await c.form("/oauth/token", body, auth: auth)
                #expect(a.status == 400, "\(body)")
                #expect(a.error == code, "\(body): \(a.text)")
                #expect(a.json["error_description"] is String)
                #expect(a[.cacheControl] == "no-store")
            }
            // Two client authentication methods at once.
            let two = try await c.form("/oauth/token", "grant_type=client_credentials&client_secret=\(h.plain.secret)", auth: auth)
            #expect(two.status == 400 && two.error == "invalid_request")
            // Not a form.
            let json = try await c.call(.post, "/oauth/token", headers: [.contentType: "application/json", .authorization: auth],
                                        body: #"{"grant_type":"client_credentials"}"#)
            #expect(json.status == 400 && json.error == "invalid_request")
        }
    }

    @Test func clientAuthenticationFailures() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            for auth in [Harness.basic(h.plain.id, h.plain.secret + "x"), Harness.basic("c_unknown", "x"), nil, "Bearer abc"] {
                let a = try await c.form("/oauth/token", "grant_type=client_credentials", auth: auth)
                #expect(a.status == 401, "\(String(describing: auth))")
                #expect(a.error == "invalid_client")
                #expect(a[.wwwAuthenticate] == "Basic realm=\"modem-hub\"")
            }
            let body = try await c.form("/oauth/token", "grant_type=client_credentials&client_id=\(h.plain.id)&client_secret=wrong")
            #expect(body.status == 401 && body.error == "invalid_client")
        }
    }

    @Test func passwordGrantRefreshRotationAndReuse() async throws {
        let h = try await Harness.make()
        let auth = Harness.basic(h.pw.id, h.pw.secret)
        try await h.test(.router) { c in
            let bad = try await c.form("/oauth/token", "grant_type=password&username=alice&password=wrong", auth: auth)
            #expect(bad.status == 400 && bad.error == "invalid_grant")
            let nobody = try await c.form("/oauth/token", "grant_type=password&username=nobody&password=wrong", auth: auth)
            #expect(nobody.status == 400 && nobody.error == "invalid_grant")

            let t1 = try await c.form("/oauth/token", "grant_type=password&username=alice&password=correct+horse+battery", auth: auth)
            #expect(t1.status == 200)
            let access1 = try #require(t1.json["access_token"] as? String)
            let refresh1 = try #require(t1.json["refresh_token"] as? String)
            let me = try await c.json(.get, "/v1/users/me", token: access1)
            #expect(me.status == 200 && me.data["user"] as? String == "u_alice" && me.data["kind"] as? String == "account")

            // Another client cannot use alice's refresh token.
            let other = try await c.form("/oauth/token", "grant_type=refresh_token&refresh_token=\(refresh1)",
                                         auth: Harness.basic(h.plain.id, h.plain.secret))
            #expect(other.status == 400 && other.error == "invalid_grant")

            let t2 = try await c.form("/oauth/token", "grant_type=refresh_token&refresh_token=\(refresh1)", auth: auth)
            #expect(t2.status == 200)
            let access2 = try #require(t2.json["access_token"] as? String)
            let refresh2 = try #require(t2.json["refresh_token"] as? String)
            #expect(access2 != access1 && refresh2 != refresh1)

            // The rotated token again: invalid_grant, and the whole family is revoked.
            let replay = try await c.form("/oauth/token", "grant_type=refresh_token&refresh_token=\(refresh1)", auth: auth)
            #expect(replay.status == 400 && replay.error == "invalid_grant")
            let after = try await c.form("/oauth/token", "grant_type=refresh_token&refresh_token=\(refresh2)", auth: auth)
            #expect(after.status == 400 && after.error == "invalid_grant")
            let use = try await c.json(.get, "/v1/users/me", token: access2)
            #expect(use.status == 401 && use[.wwwAuthenticate]?.contains("invalid_token") == true)
        }
    }

    @Test func revocation() async throws {
        let h = try await Harness.make()
        let auth = Harness.basic(h.pw.id, h.pw.secret)
        try await h.test(.router) { c in
            let t = try await c.form("/oauth/token", "grant_type=password&username=alice&password=correct+horse+battery", auth: auth)
            let access = try #require(t.json["access_token"] as? String)
            let refresh = try #require(t.json["refresh_token"] as? String)

            #expect(try await c.form("/oauth/revoke", "token=no-such-token", auth: auth).status == 200)
            let missing = try await c.form("/oauth/revoke", "token_type_hint=access_token", auth: auth)
            #expect(missing.status == 400 && missing.error == "invalid_request")
            let noClient = try await c.form("/oauth/revoke", "token=\(access)")
            #expect(noClient.status == 401 && noClient.error == "invalid_client" && noClient[.wwwAuthenticate] != nil)
            // Another client's revocation of alice's token is accepted (200) but does nothing.
            #expect(try await c.form("/oauth/revoke", "token=\(access)", auth: Harness.basic(h.plain.id, h.plain.secret)).status == 200)
            #expect(try await c.json(.get, "/v1/users/me", token: access).status == 200)

            let r = try await c.form("/oauth/revoke", "token=\(access)&token_type_hint=access_token", auth: auth)
            #expect(r.status == 200 && r.text.isEmpty)
            let use = try await c.json(.get, "/v1/users/me", token: access)
            #expect(use.status == 401)
            #expect(use[.wwwAuthenticate] == "Bearer realm=\"modem-hub\", error=\"invalid_token\", error_description=\"token revoked\"")
            #expect(use.jsendStatus == "fail")

            // Revoking the refresh token (hint or not) kills its family.
            #expect(try await c.form("/oauth/revoke", "token=\(refresh)", auth: auth).status == 200)
            let dead = try await c.form("/oauth/token", "grant_type=refresh_token&refresh_token=\(refresh)", auth: auth)
            #expect(dead.status == 400 && dead.error == "invalid_grant")
        }
    }

    @Test func failedClientAuthenticationIsRateLimitedPerClient() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            for _ in 0..<10 {
                let a = try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.plain.id, "wrong"))
                #expect(a.status == 401)
            }
            let locked = try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.plain.id, h.plain.secret))
            #expect(locked.status == 429 && locked.error == "invalid_request")
            #expect(locked.json["error_description"] as? String == "too many attempts")
            #expect(Int(locked[.retryAfter] ?? "") ?? 0 >= 1)
            // Another client from the same address is not locked out.
            let other = try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.pw.id, h.pw.secret))
            #expect(other.status == 200)
            h.clock.advance(seconds: 61)
            let again = try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.plain.id, h.plain.secret))
            #expect(again.status == 200)
            // Successful client-credentials calls are never limited.
            for _ in 0..<30 {
                #expect(try await c.form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.plain.id, h.plain.secret)).status == 200)
            }
        }
    }

    @Test func passwordFailuresAreRateLimitedPerUsername() async throws {
        let h = try await Harness.make()
        let auth = Harness.basic(h.pw.id, h.pw.secret)
        try await h.test(.router) { c in
            for _ in 0..<5 {
                #expect(try await c.form("/oauth/token", "grant_type=password&username=alice&password=wrong1", auth: auth).status == 400)
            }
            let locked = try await c.form("/oauth/token", "grant_type=password&username=alice&password=correct+horse+battery", auth: auth)
            #expect(locked.status == 429 && locked[.retryAfter] != nil)
            h.clock.advance(seconds: 61)
            #expect(try await c.form("/oauth/token", "grant_type=password&username=alice&password=correct+horse+battery", auth: auth).status == 200)
        }
    }

    /// bcrypt reads 72 bytes and stops at NUL; the hub's pre-hash makes every byte count, and hashes of
    /// the older kind (bcrypt of the password itself) still log in and are stored anew.
    @Test func everyByteOfAPasswordCounts() async throws {
        let h = try await Harness.make()
        let auth = Harness.basic(h.pw.id, h.pw.secret)
        @Sendable func encoded(_ s: String) -> String {
            s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s
        }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        let hundred = String((0..<100).map { alphabet[$0 % alphabet.count] })
        let seventyThree = String(hundred.prefix(73))
        let accounts = [("nul", "a\u{0}bcdefghij"), ("hundred", hundred), ("seventythree", seventyThree)]
        for (name, password) in accounts {
            try await h.store.createUser(UserRecord(id: "u_\(name)", name: name, passwordBcrypt: try await h.authority.hashPassword(password),
                                                    contact: nil, confirmed: true, createdMs: 0))
        }
        // An account whose hash was made before the pre-hash: bcrypt of the password itself.
        let legacy = "legacy password 1"
        try await h.store.createUser(UserRecord(id: "u_legacy", name: "legacy", passwordBcrypt: Bcrypt.hash(legacy, cost: 4),
                                                contact: nil, confirmed: true, createdMs: 0))
        try await h.test(.router) { c in
            func status(_ user: String, _ password: String) async throws -> Int {
                try await c.form("/oauth/token", "grant_type=password&username=\(user)&password=\(encoded(password))", auth: auth).status
            }
            #expect(try await status("nul", "a\u{0}bcdefghij") == 200)
            #expect(try await status("nul", "a") == 400, "the password must not end at its NUL")
            #expect(try await status("hundred", hundred) == 200)
            #expect(try await status("hundred", String(hundred.prefix(72))) == 400, "the first 72 bytes are not the password")
            #expect(try await status("hundred", String(hundred.prefix(72)) + "zzz") == 400)
            #expect(try await status("seventythree", seventyThree) == 200)
            #expect(try await status("seventythree", String(seventyThree.dropLast()) + "!") == 400, "the 73rd character counts")
            h.clock.advance(seconds: 61)
            // The older kind still logs in, and is then stored as the new kind (which still logs in).
            #expect(try await status("legacy", legacy) == 200)
            let stored = try #require(try await h.store.user(name: "legacy")).passwordBcrypt
            #expect(stored.hasPrefix(PasswordHashing.prefix), "\(stored.prefix(16))")
            #expect(try await status("legacy", legacy) == 200)
            #expect(try await status("legacy", "legacy password 2") == 400)
        }
    }

    @Test func metadata() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let m = try await c.call(.get, "/.well-known/oauth-authorization-server")
            #expect(m.status == 200)
            #expect(m.json["issuer"] as? String == "http://127.0.0.1:8080")
            #expect(m.json["token_endpoint"] as? String == "http://127.0.0.1:8080/oauth/token")
            #expect(m.json["revocation_endpoint"] as? String == "http://127.0.0.1:8080/oauth/revoke")
            #expect(m.json["grant_types_supported"] as? [String] == ["client_credentials", "password", "refresh_token"])
            #expect(m.json["token_endpoint_auth_methods_supported"] as? [String] == ["client_secret_basic", "client_secret_post"])
            #expect(m.json["response_types_supported"] as? [String] == [])
            #expect(m.json["scopes_supported"] as? [String] == ["hub"])
            #expect(m.json["revocation_endpoint_auth_methods_supported"] as? [String] == ["client_secret_basic", "client_secret_post"])
            #expect(m.json["service_documentation"] as? String == "http://127.0.0.1:8080/openapi.yaml")
            #expect(m.json.count == 9, "\(m.text)")
        }
    }
}

/// RFC 6750 on `/v1`: missing, malformed, forged, expired and revoked tokens.
@Suite struct BearerTests {
    @Test func refusals() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let none = try await c.json(.get, "/v1/users/me", token: nil)
            #expect(none.status == 401 && none[.wwwAuthenticate] == "Bearer realm=\"modem-hub\"" && none.jsendStatus == "fail")
            let basic = try await c.call(.get, "/v1/users/me", headers: [.authorization: Harness.basic("a", "b")])
            #expect(basic.status == 401 && basic[.wwwAuthenticate] == "Bearer realm=\"modem-hub\"")
            // A query-string token is not accepted (header only).
            let token = try await c.ccToken(h)
            #expect(try await c.json(.get, "/v1/users/me?access_token=\(token)", token: nil).status == 401)
            for forged in ["mha_" + HubTokens.base64url(HubTokens.randomBytes(32)), "x", String(repeating: "a", count: 600)] {
                let a = try await c.json(.get, "/v1/users/me", token: forged)
                #expect(a.status == 401)
                #expect(a[.wwwAuthenticate]?.hasPrefix("Bearer realm=\"modem-hub\", error=\"invalid_token\"") == true)
            }
            #expect(try await c.json(.get, "/v1/users/me", token: token).status == 200)
            h.clock.advance(seconds: 601)
            let expired = try await c.json(.get, "/v1/users/me", token: token)
            #expect(expired.status == 401 && expired[.wwwAuthenticate]?.contains("token expired") == true)
        }
    }
}
