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
}
