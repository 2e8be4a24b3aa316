import Foundation
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Why the Bumble peer could not be used. `unavailable` means this machine lacks it (no venv, no
/// Bumble): tests turn it into a skip (`try Test.cancel(...)`); `failed` is a real failure.
public enum BumblePeerError: Error, CustomStringConvertible, Sendable {
    /// No Python venv with Bumble here (skip, unless `SWIFTMODEM_REQUIRE_BUMBLE=1`).
    case unavailable(String)
    /// The peer started but misbehaved (no READY in time, exited, bad READY line).
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let m): return "the Bumble peer is not available: \(m)"
        case .failed(let m): return "the Bumble peer failed: \(m)"
        }
    }
}

/// The project's Bumble peer (`scripts/bt-peer.py`, docs/bluetooth-plan.md section 14) as a child
/// process on the tests' runner (``ProcessTestSupport/ChildProcess``): started with `--port 0` (the
/// script picks a free port and names it in its READY line), its output collected as it comes,
/// terminated when stopped or released.
///
/// The Python is `$SWIFTMODEM_BT_PYTHON`, else `<package root>/.build/bt-venv/bin/python` (made by
/// `scripts/bt-venv.sh`). When it is missing, ``start(_:readyTimeout:)`` throws
/// ``BumblePeerError/unavailable(_:)``, or ``BumblePeerError/failed(_:)`` when
/// `SWIFTMODEM_REQUIRE_BUMBLE=1` says the peer must be there (CI).
public final class BumblePeer {
    /// The TCP port of controller A (our host's H4 transport).
    public let port: UInt16
    /// The TCP port of controller B with `--expose-b`.
    public let portB: UInt16?
    /// Controller A's BD_ADDR ("00:1B:DC:00:00:0A").
    public let hostAddress: String
    /// The address the checks connect to ("00:1B:DC:00:00:0B").
    public let deviceAddress: String
    /// Where the Bumble echo device lives with `--expose-b` (its own controller).
    public let echoAddress: String?
    /// The peer's process id.
    public let pid: Int32

    private let process: ChildProcess

    /// The package root, from this file's path (`<root>/Tests/ModemTestSupport/BumblePeer.swift`).
    public static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Whether the environment demands the peer (`SWIFTMODEM_REQUIRE_BUMBLE=1`, set by `scripts/test.sh` in CI).
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["SWIFTMODEM_REQUIRE_BUMBLE"] == "1" }

    /// The Python to run the peer with: `$SWIFTMODEM_BT_PYTHON`, else the package's venv.
    public static var python: String {
        if let env = ProcessInfo.processInfo.environment["SWIFTMODEM_BT_PYTHON"], !env.isEmpty { return env }
        return packageRoot + "/.build/bt-venv/bin/python"
    }

    /// Starts `scripts/bt-peer.py --port 0` plus `arguments` (e.g. `["--extra-devices", "2"]`) and
    /// waits for its READY line (which names the ports it got); `readyTimeout` seconds is a hang guard,
    /// far above the second or two Python and Bumble take to start on a busy machine.
    public static func start(_ arguments: [String] = [], readyTimeout: Double = 120) async throws(BumblePeerError) -> BumblePeer {
        let python = Self.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw unavailable("no Python at \(python); run scripts/bt-venv.sh (needs python3-venv) or set SWIFTMODEM_BT_PYTHON")
        }
        let script = packageRoot + "/scripts/bt-peer.py"
        let process: ChildProcess
        do {
            process = try await ChildProcess(python, ["-u", script, "--port", "0"] + arguments, name: "the Bumble peer")
        } catch {
            throw unavailable("cannot run \(python): \(error)")
        }
        let found = await process.waitFor(.stdout, timeout: readyTimeout) { text in
            lines(text, ended: false).contains { $0.hasPrefix("READY ") }
        }
        guard found, let ready = lines(process.stdoutText, ended: false).first(where: { $0.hasPrefix("READY ") }) else {
            let running = process.endedAt == nil
            process.stop(SIGTERM, timeout: 2)
            let errors = lines(process.stderrText, ended: true).suffix(15).joined(separator: "\n")
            if !running, errors.contains("No module named") {
                throw unavailable("\(python) has no Bumble (run scripts/bt-venv.sh):\n\(errors)")
            }
            throw .failed(running ? "no READY line within \(readyTimeout) s; stderr:\n\(errors)"
                                  : "exited (status \(process.status)) before READY; stderr:\n\(errors)")
        }
        var fields: [String: String] = [:]
        for part in ready.split(separator: " ").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        guard let port = fields["port"].flatMap({ UInt16($0) }), let host = fields["host_addr"],
              let device = fields["device_addr"] else {
            process.stop(SIGTERM, timeout: 2)
            throw .failed("a READY line without port, host_addr or device_addr: \(ready)")
        }
        return BumblePeer(process: process, port: port, portB: fields["port_b"].flatMap { UInt16($0) },
                          hostAddress: host, deviceAddress: device, echoAddress: fields["echo_addr"])
    }

    private init(process: ChildProcess, port: UInt16, portB: UInt16?, hostAddress: String,
                 deviceAddress: String, echoAddress: String?) {
        self.process = process
        self.port = port
        self.portB = portB
        self.hostAddress = hostAddress
        self.deviceAddress = deviceAddress
        self.echoAddress = echoAddress
        self.pid = process.pid
    }

    deinit { stop() }

    /// Every stdout line so far (READY, PEER-LINK, PEER-RFCOMM, PEER-ANSWER, ...).
    public var lines: [String] { Self.lines(process.stdoutText, ended: process.endedAt != nil) }

    /// Every stderr line so far (Bumble's warnings; everything with `--verbose`).
    public var errorLines: [String] { Self.lines(process.stderrText, ended: process.endedAt != nil) }

    /// Waits for a stdout line starting with `prefix` (the event: woken by each new output); returns the
    /// first such line, or nil after `timeout` seconds (a hang guard: give one far above the expected wait).
    public func waitForLine(startingWith prefix: String, timeout: Double) async -> String? {
        _ = await process.waitFor(.stdout, timeout: timeout) { text in
            Self.lines(text, ended: false).contains { $0.hasPrefix(prefix) }
        }
        return lines.first { $0.hasPrefix(prefix) }
    }

    /// Ends the peer (SIGTERM, then SIGKILL after 2 s) and waits for it.
    public func stop() { process.stop(SIGTERM, timeout: 2) }

    /// The whole lines of `text`; the last, unfinished one too once the stream `ended`.
    private static func lines(_ text: String, ended: Bool) -> [String] {
        var parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let last = parts.removeLast()
        if ended && !last.isEmpty { parts.append(last) }
        return parts
    }

    private static func unavailable(_ message: String) -> BumblePeerError {
        isRequired ? .failed(message + " (SWIFTMODEM_REQUIRE_BUMBLE=1)") : .unavailable(message)
    }
}
