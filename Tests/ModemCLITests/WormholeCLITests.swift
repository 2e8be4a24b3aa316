import Foundation
import ProcessTestSupport
import Testing

/// `modem send/receive --wormhole` and `modem mailbox` by code against stock magic-wormhole 0.24, the
/// reference rendezvous server and the reference transit relay, all separate processes from
/// `.build/wormhole-venv` (scripts/wormhole-venv.sh; `WORMHOLE_VENV` names another folder):
/// Tests/scripts/wormhole_modem.py.
@Suite struct WormholeCLITests {
    static let venv = Peer.venv("wormhole", folderVariable: "WORMHOLE_VENV")

    @Test(.requires(venv), .timeLimit(.minutes(10)))
    func againstStockClientsAndReferenceServers() async throws {
        let python = try Self.venv.path()
        let bin = URL(fileURLWithPath: python).deletingLastPathComponent().path
        let r = try await runProcess(python, [Paths.packageRoot + "/Tests/scripts/wormhole_modem.py", bin, try Paths.modem()],
                                     timeout: 540)
        print(r.stdoutText.split(separator: "\n").suffix(24).joined(separator: "\n"))
        #expect(r.status == 0, "\(r.stdoutText.suffix(3000))\(r.stderrText.suffix(2000))")
        #expect(r.stdoutText.contains(" passed, 0 failed"), "\(r.stdoutText.suffix(3000))")
    }

    /// `wss://`: the reference mailbox server behind socat's TLS listener with self-signed certificates
    /// made by `openssl req` in the script's temporary folder: text and files trusted through
    /// SSL_CERT_FILE and --ca; untrusted, wrong host name and wrong IP refused with exit 3 and one line
    /// naming the reason: Tests/scripts/wormhole_wss.py.
    @Test(.requires(venv, .tool("socat"), .tool("openssl")), .timeLimit(.minutes(5)))
    func overTLSWithVerifiedCertificates() async throws {
        let python = try Self.venv.path()
        let bin = URL(fileURLWithPath: python).deletingLastPathComponent().path
        let r = try await runProcess(python, [Paths.packageRoot + "/Tests/scripts/wormhole_wss.py", bin, try Paths.modem()],
                                     timeout: 240)
        print(r.stdoutText.split(separator: "\n").suffix(16).joined(separator: "\n"))
        #expect(r.status == 0, "\(r.stdoutText.suffix(3000))\(r.stderrText.suffix(2000))")
        #expect(r.stdoutText.contains(" passed, 0 failed"), "\(r.stdoutText.suffix(3000))")
    }
}
