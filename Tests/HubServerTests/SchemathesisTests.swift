import Foundation
import ProcessTestSupport
import Testing

/// schemathesis (pinned in scripts/hub-venv.sh) against the served `/openapi.yaml` of the built
/// `modem-hub`: every check (`--checks all`), the stateful phase included, with a fixed seed and a
/// bounded number of examples; any failure fails the test. Every `/v1` answer it received (its HAR
/// report holds each request and response) must also be JSend, which schemathesis checks only as far
/// as the document's response schemas reach.
@Suite(.serialized) struct SchemathesisTests {
    /// Examples per operation: enough to reach every response the document declares, small enough for
    /// about a minute on two busy cores.
    static let examples = 12

    @Test(.requires(HubProcess.venv, HubProcess.server),
          .timeLimit(.minutes(5)))
    func noFailuresAndEveryV1AnswerIsJSend() async throws {
        let dir = try HubProcess.tempDir()
        let db = "sqlite:\(dir)/hub.sqlite"
        let client = try await HubProcess.addClient("schemathesis", passwordGrant: false, db: db)
        let server = try await HubProcess.Server(db: db, dir: dir)
        defer { server.stop() }
        let token = try await HubProcess.ccToken(server.base, client)
        let har = dir + "/st.har", log = dir + "/st.log"
        let status = try await HubProcess.runLogged(HubProcess.python, [
            "-m", "schemathesis.cli", "run", server.base + "/openapi.yaml",
            "-H", "Authorization: Bearer \(token)",
            "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
            "--max-examples", String(Self.examples), "--seed", "1", "--workers", "1",
            "--request-timeout", "10", "--generation-database", "none",
            "--report", "har", "--report-har-path", har, "--report-dir", dir,
        ], log: log, env: ["NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"], cwd: dir, timeout: 240)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let summary = output.components(separatedBy: "SUMMARY").last ?? output
        print("schemathesis exit \(status):", summary.split(separator: "\n").filter { !$0.isEmpty }.suffix(14).joined(separator: "\n"))
        #expect(status == 0, "schemathesis failed:\n\(output.suffix(6000))")
        #expect(summary.contains("Stateful") && !summary.contains("❌"), "\(summary)")

        // Every /v1 answer schemathesis saw is JSend: status success|fail (with data) or error (with message);
        // lists carry limit and more.
        let data = try Data(contentsOf: URL(fileURLWithPath: har))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let entries = try #require((root["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        var v1 = 0, bad: [String] = [], statuses: [Int: Int] = [:]
        for e in entries {
            let req = e["request"] as? [String: Any] ?? [:], res = e["response"] as? [String: Any] ?? [:]
            guard let url = (req["url"] as? String).flatMap(URLComponents.init(string:)), url.path.hasPrefix("/v1/") else { continue }
            v1 += 1
            let code = res["status"] as? Int ?? 0
            statuses[code, default: 0] += 1
            let text = (res["content"] as? [String: Any])?["text"] as? String ?? ""
            let body = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            let s = body?["status"] as? String
            let ok: Bool
            switch s {
            case "success", "fail": ok = body?.keys.contains("data") == true
                && (body?["limit"] == nil || (body?["limit"] is Int && body?["more"] is Bool))
            case "error": ok = body?["message"] is String
            default: ok = false
            }
            if !ok { bad.append("\(req["method"] as? String ?? "?") \(url.path) \(code): \(text.prefix(120))") }
        }
        print("schemathesis: \(entries.count) requests, \(v1) under /v1, statuses \(statuses.sorted { $0.key < $1.key })")
        #expect(v1 >= 300, "too few /v1 requests to mean anything: \(v1)")
        #expect(statuses.keys.allSatisfy { $0 < 500 }, "server errors: \(statuses)")
        #expect(bad.isEmpty, "not JSend (\(bad.count)): \(bad.prefix(5))")
        // The run reached the groups routes' successes, not only their refusals.
        #expect((statuses[200] ?? 0) > 50 && (statuses[201] ?? 0) > 5, "\(statuses)")
    }
}
