import Foundation
import ProcessTestSupport
import Testing

/// Seed 001's five scenarios (join, listen, disconnect, update, post/unpost) driven by WebSocket clients
/// in another language: Tests/scripts/hub_ws_scenarios.py with Python `websockets`, against the built
/// `modem-hub` on one node (SQLite), and, when HUB_TEST_POSTGRES_URL names a cluster
/// (scripts/hub-postgres.sh), on two nodes sharing PostgreSQL. The SIGKILLed node and the 20 kill-and-restart
/// cycles ("offline on the survivor within two heartbeats": a real-time figure) are `HubNodesRealTimeTests`.
@Suite(.serialized) struct WebSocketScenarioTests {
    @Test(.requires(HubProcess.venv, HubProcess.server), .timeLimit(.minutes(6)))
    func seedScenariosFromPython() async throws {
        var args = [HubProcess.packageRoot + "/Tests/scripts/hub_ws_scenarios.py", HubProcess.binary, "--dir", try HubProcess.tempDir()]
        // The kill (a real-time figure) is HubNodesRealTimeTests' own.
        // A database of its own: its nodes' sweeps must not meet other tests' rows on the shared one.
        if let pg = try await HubProcess.freshPostgresDatabase(prefix: "hubws_") { args += ["--pg", pg, "--kills", "0"] }
        // The run takes minutes; waiting for it holds no thread of the test process's small concurrency pool.
        let o = try await HubProcess.run(HubProcess.python, args, timeout: 330)
        print(o.stdoutText.split(separator: "\n").suffix(3).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
