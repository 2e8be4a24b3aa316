import Foundation
import HTTPTypes
import HubCore
import HubServer
import Hummingbird
import HummingbirdTesting
import Testing

/// Seed 003's account flow and the JSend rules of `/v1`.
@Suite struct AccountFlowTests {
    @Test func createConfirmLoginForgetReset() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let cc = try await c.ccToken(h)
            let created = try await c.json(.post, "/v1/accounts", token: cc,
                                           #"{"username":"bob","password":"s3cret-pass","contact":"+31 6 1234"}"#)
            #expect(created.status == 202 && created.jsendStatus == "success" && created.data["pending"] as? Bool == true)
            let code = try #require(h.sender.code("confirm", "bob"))
            #expect(code.count == 8)

            // Not confirmed yet: no password grant.
            let early = try await c.form("/oauth/token", "grant_type=password&username=bob&password=s3cret-pass",
                                         auth: Harness.basic(h.pw.id, h.pw.secret))
            #expect(early.status == 400 && early.error == "invalid_grant")

            let wrongCode = code == "00000000" ? "11111111" : "00000000"
            let wrong = try await c.json(.post, "/v1/accounts/confirm", token: cc, #"{"username":"bob","code":"\#(wrongCode)"}"#)
            #expect(wrong.status == 404 && wrong.jsendStatus == "fail")
            let ok = try await c.json(.post, "/v1/accounts/confirm", token: cc, #"{"username":"bob","code":"\#(code)"}"#)
            #expect(ok.status == 200 && ok.jsendStatus == "success")
            #expect(ok.data["token_type"] as? String == "Bearer")
            let access = try #require(ok.data["access_token"] as? String)
            let refresh = try #require(ok.data["refresh_token"] as? String)
            let me = try await c.json(.get, "/v1/users/me", token: access)
            #expect(me.data["kind"] as? String == "account" && me.data["name"] as? String == "bob")
            // The code is used up.
            #expect(try await c.json(.post, "/v1/accounts/confirm", token: cc, #"{"username":"bob","code":"\#(code)"}"#).status == 404)
            // Taken now.
            let taken = try await c.json(.post, "/v1/accounts", token: cc, #"{"username":"bob","password":"another-pass","contact":"x"}"#)
            #expect(taken.status == 409 && taken.jsendStatus == "fail")
            // Names that differ only in case are one name.
            let shouted = try await c.json(.post, "/v1/accounts", token: cc, #"{"username":"BOB","password":"another-pass","contact":"x"}"#)
            #expect(shouted.status == 409 && shouted.jsendStatus == "fail", "\(shouted.status) \(shouted.text)")

            // Forgot: 202 for anyone; a code only for real accounts.
            #expect(try await c.json(.post, "/v1/accounts/forgot", token: cc, #"{"username":"nobody"}"#).status == 202)
            #expect(h.sender.code("reset", "nobody") == nil)
            #expect(try await c.json(.post, "/v1/accounts/forgot", token: cc, #"{"username":"bob"}"#).status == 202)
            let reset = try #require(h.sender.code("reset", "bob"))
            let r = try await c.json(.post, "/v1/accounts/reset", token: cc,
                                     #"{"username":"bob","code":"\#(reset)","password":"brand-new-pass"}"#)
            #expect(r.status == 200 && r.data["access_token"] is String)
            // The reset revoked the old refresh family; the new password works.
            let old = try await c.form("/oauth/token", "grant_type=refresh_token&refresh_token=\(refresh)", auth: Harness.basic(h.plain.id, h.plain.secret))
            #expect(old.status == 400 && old.error == "invalid_grant")
            let login = try await c.form("/oauth/token", "grant_type=password&username=bob&password=brand-new-pass",
                                         auth: Harness.basic(h.pw.id, h.pw.secret))
            #expect(login.status == 200)
        }
    }

    @Test func strictBodies() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let cc = try await c.ccToken(h)
            let cases: [(String, Int, String?)] = [
                (#"{"username":"bob","password":"s3cret-pass","contact":"x","extra":1}"#, 400, "extra"),
                (#"{"username":"bob","password":"s3cret-pass"}"#, 400, "contact"),
                (#"{"username":"bob","password":12345678,"contact":"x"}"#, 400, "password"),
                (#"{"username":"b o b","password":"s3cret-pass","contact":"x"}"#, 400, "username"),
                (#"{"username":"bob","password":"short","contact":"x"}"#, 400, "password"),
                (#"[1,2]"#, 400, nil),
                (#"{"username":"#, 400, nil),
            ]
            for (body, status, field) in cases {
                let a = try await c.json(.post, "/v1/accounts", token: cc, body)
                #expect(a.status == status, "\(body): \(a.text)")
                #expect(a.jsendStatus == "fail")
                if let field { #expect(a.data["field"] as? String == field, "\(body)") }
            }
            let form = try await c.call(.post, "/v1/accounts", headers: [.authorization: "Bearer " + cc, .contentType: "text/plain"],
                                        body: "x")
            #expect(form.status == 415 && form.jsendStatus == "fail")
        }
    }

    @Test func clientTokensActAsTheClientsUser() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let me = try await c.json(.get, "/v1/users/me", token: try await c.ccToken(h))
            #expect(me.data["user"] as? String == "client:\(h.plain.id)")
            #expect(me.data["kind"] as? String == "client")
        }
    }
}

@Suite struct JSendRulesTests {
    @Test func unknownPathsMethodsAndHugeBodies() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let cc = try await c.ccToken(h)
            let missing = try await c.json(.get, "/v1/no/such/thing", token: cc)
            #expect(missing.status == 404 && missing.jsendStatus == "fail" && missing.data["message"] is String)
            let method = try await c.json(.delete, "/v1/users/me", token: cc)
            #expect(method.status == 405 && method[.allow] == "GET" && method.jsendStatus == "fail")
            let accountsGet = try await c.json(.get, "/v1/accounts", token: cc)
            #expect(accountsGet.status == 405 && accountsGet[.allow] == "POST")
            // 10 MB: 413, JSend.
            let big = "{\"username\":\"" + String(repeating: "a", count: 10_000_000) + "\"}"
            let a = try await c.json(.post, "/v1/accounts", token: cc, big)
            #expect(a.status == 413 && a.jsendStatus == "fail")
        }
    }

    @Test func tooLargeWithoutContentLengthIsStillRefused() async throws {
        let h = try await Harness.make()
        try await h.test(.live) { c in
            let cc = try await c.ccToken(h)
            let big = "{\"username\":\"" + String(repeating: "a", count: 2_000_000) + "\"}"
            let a = try await c.json(.post, "/v1/accounts/forgot", token: cc, big)
            #expect(a.status == 413 && a.jsendStatus == "fail")
        }
    }

    @Test func openAPIIsServed() async throws {
        let h = try await Harness.make()
        try await h.test(.router) { c in
            let doc = try await c.call(.get, "/openapi.yaml")
            // What the route answers is docs/openapi.yaml byte for byte.
            let file = try Data(contentsOf: URL(fileURLWithPath: HubProcess.packageRoot + "/docs/openapi.yaml"))
            #expect(doc.status == 200 && Array(doc.text.utf8) == Array(file))
            #expect(doc[.contentType] == "application/yaml")
        }
    }
}
