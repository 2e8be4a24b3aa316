import Foundation
import ProcessTestSupport
import Testing

/// `modem send/receive --wormhole` and `modem mailbox` by code against stock magic-wormhole 0.24, the
/// reference rendezvous server and the reference transit relay, all separate processes from
/// `.build/wormhole-venv` (scripts/wormhole-venv.sh): Tests/scripts/wormhole_modem.py. Skipped without
/// the venv unless `SWIFTMODEM_REQUIRE_PEERS=1` (CI), where it fails instead.
@Suite struct WormholeCLITests {
    static let bin = (ProcessInfo.processInfo.environment["WORMHOLE_VENV"] ?? Paths.packageRoot + "/.build/wormhole-venv") + "/bin"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: bin + "/wormhole") }
    static var required: Bool { ProcessInfo.processInfo.environment["SWIFTMODEM_REQUIRE_PEERS"] == "1" }

    @Test(.enabled(if: available || required, "no .build/wormhole-venv (scripts/wormhole-venv.sh)"), .timeLimit(.minutes(10)))
    func againstStockClientsAndReferenceServers() async throws {
        let r = try await runProcess(Self.bin + "/python", [Paths.packageRoot + "/Tests/scripts/wormhole_modem.py", Self.bin, try Paths.modem()],
                                     timeout: 540)
        print(r.stdoutText.split(separator: "\n").suffix(24).joined(separator: "\n"))
        #expect(r.status == 0, "\(r.stdoutText.suffix(3000))\(r.stderrText.suffix(2000))")
        #expect(r.stdoutText.contains(" passed, 0 failed"), "\(r.stdoutText.suffix(3000))")
    }
}
