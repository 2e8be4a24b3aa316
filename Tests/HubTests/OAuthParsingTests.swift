import Foundation
import HubCore
import Testing

@Suite struct FormBodyTests {
    @Test func decodesPlusAndPercentEscapes() throws {
        let f = try FormBody(parsing: "a=x+y&b=%41%2B%26&c=&d")
        #expect(f["a"] == "x y")
        #expect(f["b"] == "A+&")
        #expect(f["c"] == nil)  // empty counts as absent
        #expect(f["d"] == nil)
        #expect(f.fields["c"] == "")
    }

    @Test func refusesRepeatedParameters() {
        #expect(throws: OAuthError(.invalidRequest, "parameter 'grant_type' is repeated")) {
            try FormBody(parsing: "grant_type=a&grant_type=b")
        }
    }

    @Test(arguments: ["a=%", "a=%4", "a=%zz", "%=1", "a=%ff", "a=%+4", "a=%-1"])
    func refusesMalformedEscapes(_ body: String) {
        #expect(throws: OAuthError.self) { try FormBody(parsing: body) }
    }
}

@Suite struct ClientAuthenticationTests {
    func basic(_ id: String, _ secret: String) -> String {
        "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
    }

    @Test func basicIsDecodedAndFormUnescaped() throws {
        // RFC 6749 2.3.1: id and secret are form-urlencoded before the Basic encoding.
        let c = try OAuthRequestParser.client(authorization: basic("my%3Aid", "s+cr%25t"), form: FormBody(parsing: ""))
        #expect(c == PresentedClient(id: "my:id", secret: "s cr%t", method: .basic))
    }

    @Test func bodyCredentials() throws {
        let c = try OAuthRequestParser.client(authorization: nil, form: FormBody(parsing: "client_id=a&client_secret=b"))
        #expect(c == PresentedClient(id: "a", secret: "b", method: .post))
    }

    @Test func twoMethodsAreInvalidRequest() throws {
        let form = try FormBody(parsing: "client_id=a&client_secret=b")
        #expect(throws: OAuthError.self) { try OAuthRequestParser.client(authorization: basic("a", "b"), form: form) }
        do {
            _ = try OAuthRequestParser.client(authorization: basic("a", "b"), form: form)
        } catch {
            #expect(error.code == .invalidRequest)
        }
    }

    @Test func basicWithTheSameBodyIDIsOneMethod() throws {
        let c = try OAuthRequestParser.client(authorization: basic("a", "b"), form: FormBody(parsing: "client_id=a"))
        #expect(c?.method == .basic)
        #expect(throws: OAuthError.self) {
            try OAuthRequestParser.client(authorization: basic("a", "b"), form: FormBody(parsing: "client_id=z"))
        }
    }

    @Test func noCredentialsAndBearerHeaderAreNoClient() throws {
        #expect(try OAuthRequestParser.client(authorization: nil, form: FormBody(parsing: "")) == nil)
        #expect(try OAuthRequestParser.client(authorization: "Bearer abc", form: FormBody(parsing: "")) == nil)
        #expect(try OAuthRequestParser.client(authorization: nil, form: FormBody(parsing: "client_id=a")) == nil)
    }

    @Test(arguments: ["Basic !!!", "Basic " + Data("nocolon".utf8).base64EncodedString()])
    func malformedBasicIsInvalidRequest(_ header: String) throws {
        do {
            _ = try OAuthRequestParser.client(authorization: header, form: FormBody(parsing: ""))
            Issue.record("accepted \(header)")
        } catch {
            #expect(error.code == .invalidRequest)
        }
    }
}

@Suite struct GrantTests {
    func code(_ body: String) -> OAuthError.Code? {
        do { _ = try OAuthRequestParser.grant(try FormBody(parsing: body)); return nil } catch { return error.code }
    }

    @Test func grantsAreRead() throws {
        #expect(try OAuthRequestParser.grant(FormBody(parsing: "grant_type=client_credentials")) == .clientCredentials)
        #expect(try OAuthRequestParser.grant(FormBody(parsing: "grant_type=password&username=al&password=p+w"))
                == .password(username: "al", password: "p w"))
        #expect(try OAuthRequestParser.grant(FormBody(parsing: "grant_type=refresh_token&refresh_token=r&scope=hub"))
                == .refreshToken("r"))
    }

    @Test func errorTable() {
        #expect(code("") == .invalidRequest)
        #expect(code("grant_type=") == .invalidRequest)
        #expect(code("grant_type=foo") == .unsupportedGrantType)
        #expect(code("grant_type=authorization_code") == .unsupportedGrantType)
        #expect(code("grant_type=password&password=x") == .invalidRequest)
        #expect(code("grant_type=password&username=x") == .invalidRequest)
        #expect(code("grant_type=refresh_token") == .invalidRequest)
        #expect(code("grant_type=client_credentials&scope=admin") == .invalidScope)
        #expect(code("grant_type=client_credentials&scope=hub+admin") == .invalidScope)
        #expect(code("grant_type=client_credentials&scope=hub") == nil)
    }

    @Test func statusesAndChallenges() {
        #expect(OAuthError(.invalidClient, "x").status == 401)
        #expect(OAuthError(.invalidClient, "x").wwwAuthenticate == "Basic realm=\"modem-hub\"")
        for c in [OAuthError.Code.invalidRequest, .invalidGrant, .unauthorizedClient, .unsupportedGrantType, .invalidScope] {
            #expect(OAuthError(c, "x").status == 400)
            #expect(OAuthError(c, "x").wwwAuthenticate == nil)
        }
        let limited = OAuthError.tooManyAttempts(retryAfter: 0)
        #expect(limited.status == 429)
        #expect(limited.retryAfter == 1)
        #expect(limited.code == .invalidRequest)
    }
}

@Suite struct TokenTests {
    @Test func tokensHavePrefixesAndEntropy() {
        let a = HubTokens.newAccessToken(), b = HubTokens.newAccessToken()
        #expect(a.hasPrefix("mha_") && a.count == 4 + 43)
        #expect(a != b)
        #expect(HubTokens.newRefreshToken().hasPrefix("mhr_"))
        #expect(HubTokens.newClientSecret().hasPrefix("mhs_"))
        let id = HubTokens.newID(prefix: "c_")
        #expect(id.count == 2 + 26 && id.dropFirst(2).allSatisfy { $0.isLowercase || $0.isNumber })
        let code = HubTokens.newCode()
        #expect(Limits.isValidCode(code))
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 31, 32, 33])
    func base64urlMatchesFoundation(_ n: Int) {
        let bytes = HubTokens.randomBytes(n)
        let expected = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(HubTokens.base64url(bytes) == expected)
    }

    @Test func base32KnownVectors() {
        // RFC 4648 section 10, lowercased, no padding.
        #expect(HubTokens.base32(Array("foobar".utf8)) == "mzxw6ytboi")
        #expect(HubTokens.base32(Array("f".utf8)) == "my")
    }

    @Test func sha256KnownVector() {
        let h = HubTokens.sha256("abc").map { String(format: "%02x", $0) }.joined()
        #expect(h == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
