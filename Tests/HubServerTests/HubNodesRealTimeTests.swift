import Foundation
import ProcessTestSupport
import Testing

/// Two `modem-hub` nodes on one PostgreSQL database (`--heartbeat 1`), one of them SIGKILLed: its users
/// must go offline on the survivor within two heartbeats. That bound is a real-time figure (a node's
/// heartbeat and sweep loops against the wall clock), so these tests live in a `...RealTimeTests` suite:
/// scripts/test.sh runs them in a group of their own, one at a time, never sharing the cores with other
/// tests. Everything else in the scripts waits for events with hang guards only.
@Suite(.serialized) struct HubNodesRealTimeTests {
    /// The groups API's disconnect across nodes: 3 users on node 2, node 2 SIGKILLed, the watcher on node 1 told
    /// they went offline within two heartbeats; no ghost stays online; the post made before is kept
    /// (Tests/scripts/hub_ws_scenarios.py --only-kills).
    @Test("a killed node's users offline on the survivor within two heartbeats (real time)",
          .requires(HubProcess.venv, HubProcess.server, HubProcess.postgres),
          .timeLimit(.minutes(5)))
    func killedNodeUsersGoOffline() async throws {
        let db = try #require(try await HubProcess.freshPostgresDatabase(prefix: "hubkill1_"), "HUB_TEST_POSTGRES_URL is not set")
        let dir = try HubProcess.tempDir()
        let log = dir + "/kill.log"
        let status = try await HubProcess.runLogged(HubProcess.python, [
            HubProcess.packageRoot + "/Tests/scripts/hub_ws_scenarios.py", HubProcess.binary, "--pg", db, "--kills", "1",
            "--only-kills", "--dir", dir,
        ], log: log, timeout: 240)
        let out = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        print(out.split(separator: "\n").filter { $0.hasPrefix("ok   kill") || $0.hasPrefix("FAIL") || $0.contains(" passed, ") }.joined(separator: "\n"))
        #expect(status == 0, "\(out.suffix(4000))")
        #expect(out.contains(" passed, 0 failed"), "\(out.suffix(4000))")
    }

    /// 8 kill-and-restart cycles of node 2 of two PostgreSQL nodes (`--heartbeat 1`) with Python
    /// WebSocket clients on both: Tests/scripts/hub_ws_kill_cycles.py (what it checks is in its header).
    /// The acceptance check hub-nodes runs 20; here each cycle is about 1.9 s of the test command's
    /// real-time tail, where nothing else runs, so the suite keeps enough of them to repeat a restart.
    @Test("8 kill-and-restart cycles: offline within two heartbeats, no ghosts, posts kept (real time)",
          .requires(HubProcess.venv, HubProcess.server, HubProcess.postgres),
          .timeLimit(.minutes(5)))
    func killRestartCycles() async throws {
        let db = try #require(try await HubProcess.freshPostgresDatabase(prefix: "hubkill_"), "HUB_TEST_POSTGRES_URL is not set")
        let dir = try HubProcess.tempDir()
        let log = dir + "/kill-cycles.log"
        let status = try await HubProcess.runLogged(HubProcess.python, [
            HubProcess.packageRoot + "/Tests/scripts/hub_ws_kill_cycles.py", HubProcess.binary, "--pg", db, "--cycles", "8", "--dir", dir,
        ], log: log, timeout: 240)
        let out = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        print(out.split(separator: "\n").filter { $0.hasPrefix("ok   8 ") || $0.hasPrefix("FAIL") || $0.contains(" passed, ") }.joined(separator: "\n"))
        #expect(status == 0, "\(out.suffix(4000))")
        #expect(out.contains(" passed, 0 failed"), "\(out.suffix(4000))")
    }
}
