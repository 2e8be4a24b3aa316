import Foundation
import Testing

/// Seed 001's five scenarios (join, listen, disconnect, update, post/unpost) driven by WebSocket clients
/// in another language: Tests/scripts/hub_ws_scenarios.py with Python `websockets`, against the built
/// `modem-hub` on one node (SQLite), and, when HUB_TEST_POSTGRES_URL names a cluster
/// (scripts/hub-postgres.sh), on two nodes sharing PostgreSQL with a SIGKILLed node; and 20 kill-and-restart
/// cycles (their users go offline on the survivor within two heartbeats, no user stays online who is not
/// connected, posts survive).
@Suite(.serialized) struct WebSocketScenarioTests {
    @Test(.enabled(if: HubProcess.peersAvailable, "no .build/hub-venv (scripts/hub-venv.sh)"), .timeLimit(.minutes(6)))
    func seedScenariosFromPython() async throws {
        var args = [HubProcess.packageRoot + "/Tests/scripts/hub_ws_scenarios.py", HubProcess.binary, "--dir", try HubProcess.tempDir()]
        // One kill here; killRestartCycles does twenty.
        if let pg = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] { args += ["--pg", pg, "--kills", "1"] }
        // Waited for on a thread of its own: the run takes minutes and must not hold a thread of the
        // test process's small concurrency pool.
        let arguments = args
        let o: HubProcess.Output = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try HubProcess.run(HubProcess.python, arguments, timeout: 330) }) }.start()
        }
        print(o.stdout.split(separator: "\n").suffix(3).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdout.suffix(3000))\(o.stderr.suffix(2000))")
        #expect(o.stdout.contains(" passed, 0 failed"), "\(o.stdout.suffix(3000))")
    }

    /// 20 kill-and-restart cycles of node 2 of two PostgreSQL nodes (`--heartbeat 1`) with Python
    /// WebSocket clients on both: Tests/scripts/hub_ws_kill_cycles.py (what it checks is in its header).
    @Test(.enabled(if: HubProcess.postgresPeersAvailable, "needs .build/hub-venv, the built modem-hub and HUB_TEST_POSTGRES_URL"),
          .timeLimit(.minutes(5)))
    func killRestartCycles() async throws {
        let db = try #require(try HubProcess.freshPostgresDatabase(prefix: "hubkill_"), "HUB_TEST_POSTGRES_URL is not set")
        let dir = try HubProcess.tempDir()
        let log = dir + "/kill-cycles.log"
        let status = try await HubProcess.runLogged(HubProcess.python, [
            HubProcess.packageRoot + "/Tests/scripts/hub_ws_kill_cycles.py", HubProcess.binary, "--pg", db, "--cycles", "20", "--dir", dir,
        ], log: log, timeout: 240)
        let out = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        print(out.split(separator: "\n").filter { $0.hasPrefix("ok   20") || $0.hasPrefix("FAIL") || $0.contains(" passed, ") }.joined(separator: "\n"))
        #expect(status == 0, "\(out.suffix(4000))")
        #expect(out.contains(" passed, 0 failed"), "\(out.suffix(4000))")
    }
}
