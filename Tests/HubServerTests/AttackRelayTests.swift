import Foundation
import ProcessTestSupport
import Testing

/// Issue 32, defects 4 and 9: the transit relay under the hub's connection guard, and TLS 1.2 at least.
/// End to end against real `modem-hub serve` processes (started by the scripts, on ports the kernel picks):
/// Tests/scripts/attacks/relay.py holds 1,030 pairs, silent and waiting connections from 127.0.0.2 while a
/// pair from 127.0.0.1 is still relayed, and checks the handshake and idle deadlines;
/// Tests/scripts/attacks/tls.py offers TLS 1.0, 1.1, 1.2 and 1.3 with `openssl s_client`.
@Suite struct AttackRelayTests {

    /// Runs `Tests/scripts/attacks/NAME MODEM_HUB EXTRA...` with `python` (python3 from the PATH by default).
    static func script(_ name: String, python: String = "/usr/bin/env", extra: [String] = [], timeout: Double) async throws -> HubProcess.Output {
        let args = (python == "/usr/bin/env" ? ["python3"] : []) + [HubProcess.packageRoot + "/Tests/scripts/attacks/" + name, HubProcess.binary] + extra
        let o = try await HubProcess.run(python, args, timeout: timeout)
        print(o.stdoutText.split(separator: "\n").suffix(12).joined(separator: "\n"))
        return o
    }

    @Test("one address holding 1,030 transit pairs, silent and waiting connections: an honest pair is still relayed",
          .requires(HubProcess.server), .timeLimit(.minutes(5)))
    func relayHeldByOneAddress() async throws {
        let o = try await Self.script("relay.py", timeout: 280)
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }

    @Test("TLS 1.0 and 1.1 are refused, 1.2 (intermediate suites) and 1.3 accepted",
          .requires(HubProcess.server, HubProcess.openssl),
          .timeLimit(.minutes(3)))
    func tlsVersions() async throws {
        let o = try await Self.script("tls.py", timeout: 170)
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}

/// The transit relay's deadlines against a real `modem-hub serve` (Tests/scripts/attacks/relay.py deadlines): a
/// connection that never sends its handshake and a silent joined pair are closed, a pair that talks every
/// 0.2 s is not closed by a 4 s idle deadline. The hub's deadlines run on its wall clock, so this runs in the
/// real-time group, one test at a time.
@Suite struct AttackRelayDeadlinesRealTimeTests {
    @Test("(real time) the transit relay's handshake and idle deadlines close silent connections, not talking pairs",
          .requires(HubProcess.server), .timeLimit(.minutes(3)))
    func deadlines() async throws {
        let o = try await AttackRelayTests.script("relay.py", extra: ["deadlines"], timeout: 170)
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
