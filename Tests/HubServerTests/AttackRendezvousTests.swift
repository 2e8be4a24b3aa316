import Foundation
import ProcessTestSupport
import Testing

/// Issue 32, defects 5 and 11: rendezvous storage pinned by one address, and client addresses behind a
/// trusted proxy. End to end against real `modem-hub serve` processes: Tests/scripts/attacks/rendezvous.py
/// (the hub venv's `websockets`) pins nameplates, mailboxes and bytes from 127.0.0.2 and 127.0.0.3, each
/// refused with the protocol's `error`, while an honest exchange from 127.0.0.1 still works; then, with
/// `--trusted-proxy 127.0.0.1`, X-Forwarded-For is believed from the proxy only, over the WebSocket and over
/// HTTP (the sign-up bound per address); with `HUB_TEST_POSTGRES_URL`, the bound per address across two
/// nodes sharing a fresh database. The bounds themselves are tested as values in WormholeRendezvousTests and
/// ConnectionGuardRealTimeTests.
@Suite struct AttackRendezvousTests {
    @Test("nameplates, mailboxes and bytes pinned by one address are refused; X-Forwarded-For only from a trusted proxy",
          .requires(HubProcess.venv, HubProcess.server),
          .timeLimit(.minutes(5)))
    func storagePinnedByOneAddress() async throws {
        var extra: [String] = []
        if let pg = try await HubProcess.freshPostgresDatabase(prefix: "hubattackrdv_") { extra = ["--postgres", pg] }
        let o = try await AttackRelayTests.script("rendezvous.py", python: HubProcess.python, extra: extra, timeout: 280)
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
