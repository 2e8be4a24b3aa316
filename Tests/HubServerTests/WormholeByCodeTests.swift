import Foundation
import ProcessTestSupport
import Testing

/// modem-hub's rendezvous and transit relay with `modem` by code (the mailbox and a data connection
/// through the hub, fresh key folders), hostile clients (unknown types, a 1 MB message, allocation
/// floods from one address, half-open transit handshakes) and, with `HUB_TEST_POSTGRES_URL`, two nodes
/// on one PostgreSQL database (stock texts and the mailbox by code across them):
/// Tests/scripts/wormhole_hub.py, with the built `modem` (`MODEM_BINARY`, set by scripts/test.sh).
@Suite struct WormholeByCodeTests {
    static var modem: String {
        ProcessInfo.processInfo.environment["MODEM_BINARY"] ?? HubProcess.packageRoot + "/.build-tests/release/modem"
    }

    @Test(.requires(.executable(modem, name: "the built modem (\(modem))", remedy: "swift build --product modem, or set MODEM_BINARY"),
                    HubProcess.server, HubProcess.wormholeVenv),
          .timeLimit(.minutes(10)))
    func mailboxByCodeHostileClientsAndNodes() async throws {
        var args = try [HubProcess.packageRoot + "/Tests/scripts/wormhole_hub.py", HubProcess.binary, Self.modem, "--venv", TransitRelayTests.wormholeBin()]
        // PostgreSQL too where there is a cluster (required with SWIFTMODEM_REQUIRE_PEERS=1): a fresh
        // database, so the nodes meet only each other's nameplates.
        if let pg = try await HubProcess.freshPostgresDatabase(prefix: "hubwormhole_") {
            args += ["--postgres", pg]
        }
        let o = try await HubProcess.run("/usr/bin/env", ["python3"] + args, timeout: 540)
        print(o.stdoutText.split(separator: "\n").suffix(16).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
