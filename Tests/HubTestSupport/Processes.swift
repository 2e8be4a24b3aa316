import Foundation
import ProcessTestSupport

/// Commands run as processes by the hub's tests (the built `modem-hub`, `modem`, openssl).
public enum TestProcess {
    /// The package root (three levels above this file).
    public static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// `$HUB_BINARY`, else the debug build (`swift build --build-tests` makes it).
    public static var hubBinary: String {
        ProcessInfo.processInfo.environment["HUB_BINARY"] ?? packageRoot + "/.build/debug/modem-hub"
    }

    /// `$MODEM_BINARY` (scripts/test.sh builds `modem` in the modem's half, `modem-hub` in the hub's),
    /// else the `modem` built beside `hubBinary`.
    public static var modemBinary: String {
        if let path = ProcessInfo.processInfo.environment["MODEM_BINARY"], !path.isEmpty { return path }
        return (hubBinary as NSString).deletingLastPathComponent + "/modem"
    }

    /// Runs a command to completion on the tests' runner (``ProcessTestSupport/runProcess(_:_:stdin:stdout:stderr:environment:workingDirectory:timeout:)``):
    /// the environment with `env`'s changes, standard input /dev/null, standard output and error
    /// captured, SIGKILL after `timeout` seconds (a hang guard; SIGKILL because a child may have
    /// inherited an ignored SIGTERM from the test process). Waiting holds no thread.
    public static func run(_ exe: String, _ args: [String], env: [String: String] = [:], timeout: Double = 60) async throws -> ProcessResult {
        try await runProcess(exe, args, environment: env, timeout: timeout)
    }

    /// A fresh temporary folder.
    public static func tempDir() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("hubclient-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }
}
