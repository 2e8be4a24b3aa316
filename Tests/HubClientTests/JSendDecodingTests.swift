import Foundation
import HubClient
import HubTestSupport
import ProcessTestSupport
import Testing

/// Answers the real hub never gives (a JSend `error`, a body that is not JSON, a list without `limit`),
/// from a small Python HTTP server run as a process: HubClient must name each problem.
@Suite struct JSendDecodingTests {
    static let stub = #"""
    import http.server, json
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def send(self, code, body, ctype="application/json"):
            b = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path == "/oauth/token":
                self.send(200, json.dumps({"access_token": "mha_stub", "token_type": "Bearer", "expires_in": 600}))
            else:
                self.send(404, "{}")
        def do_GET(self):
            p = self.path.split("?")[0]
            answers = {
                "/v1/users/me": (500, '{"status":"error","message":"the database is down"}'),
                "/v1/groups/text/posts": (200, "oops, not JSON"),
                "/v1/groups/nolimit/posts": (200, '{"status":"success","data":[]}'),
                "/v1/groups/odd/posts": (200, '{"status":"maybe","data":[]}'),
                "/v1/groups/wrong/posts": (200, '{"status":"success","limit":25,"more":false,"data":[{"pid":1}]}'),
            }
            code, body = answers.get(p, (404, '{"status":"fail","data":{"message":"no such thing"}}'))
            self.send(code, body)
    s = http.server.HTTPServer(("127.0.0.1", 0), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
    """#

    @Test("JSend error, non-JSON, a list without limit, an unknown status and wrong data are errors naming the problem")
    func oddAnswers() async throws {
        let stub = try await ChildProcess("/usr/bin/env", ["python3", "-c", Self.stub], name: "the JSend stub server")
        // SIGKILL: the test process may hand its children an ignored SIGTERM.
        defer { stub.kill() }
        let port = try await stub.announcedNumber(after: "", on: .stdout)
        let c = try HubClient(baseURL: "http://127.0.0.1:\(port)", clientID: "id", clientSecret: "secret")
        try await c.authenticateClientCredentials()
        await #expect(throws: HubClientError.server(status: 500, message: "the database is down")) { try await c.me() }
        for (group, words) in [("text", "not a JSend body"), ("nolimit", "without limit and more"), ("odd", "maybe"), ("wrong", "HubPost")] {
            do {
                _ = try await c.posts(group: group)
                Issue.record("\(group): accepted")
            } catch let HubClientError.unexpectedResponse(status, detail) {
                #expect(status == 200 && detail.contains(words), "\(group): \(detail)")
            }
        }
        do {
            _ = try await c.members(group: "nothing")
            Issue.record("a 404 was accepted")
        } catch let HubClientError.fail(status, message, field) {
            #expect(status == 404 && message == "no such thing" && field == nil)
        }
    }
}
