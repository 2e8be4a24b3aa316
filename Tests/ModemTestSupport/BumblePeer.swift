import Foundation
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Why the Bumble peer failed: it did not start (no READY line, exited, a bad READY line). Whether
/// it is installed at all is decided before a test runs, by its trait: `.requires(BumblePeer.venv)`.
public enum BumblePeerError: Error, CustomStringConvertible, Sendable {
    /// The peer could not be started or misbehaved.
    case failed(String)

    public var description: String {
        switch self {
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
/// `scripts/bt-venv.sh`): ``venv``. A test that starts the peer carries the trait
/// `.requires(BumblePeer.venv)`, which skips it, with the reason shown, where the venv is missing (a
/// failure with `SWIFTMODEM_REQUIRE_PEERS=1`); once a test runs, every problem in starting the peer
/// is a failure.
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

    /// The Python environment with Bumble: `$SWIFTMODEM_BT_PYTHON` when set, else the package's
    /// `.build/bt-venv` once `scripts/bt-venv.sh` finished it.
    public static var venv: Peer { Peer.venv("bt", pythonVariable: "SWIFTMODEM_BT_PYTHON") }

    /// Starts `scripts/bt-peer.py --port 0` plus `arguments` (e.g. `["--extra-devices", "2"]`) and
    /// waits for its READY line (which names the ports it got); `readyTimeout` seconds is a hang guard,
    /// far above the second or two Python and Bumble take to start on a busy machine.
    public static func start(_ arguments: [String] = [], readyTimeout: Double = 120) async throws(BumblePeerError) -> BumblePeer {
        let python: String
        do { python = try venv.path() } catch { throw .failed("\(error)") }
        let script = packageRoot + "/scripts/bt-peer.py"
        let process: ChildProcess
        do {
            process = try await ChildProcess(python, ["-u", script, "--port", "0"] + arguments, name: "the Bumble peer")
        } catch {
            throw .failed("cannot run \(python): \(error)")
        }
        let found = await process.waitFor(.stdout, timeout: readyTimeout) { text in
            lines(text, ended: false).contains { $0.hasPrefix("READY ") }
        }
        guard found, let ready = lines(process.stdoutText, ended: false).first(where: { $0.hasPrefix("READY ") }) else {
            let running = process.endedAt == nil
            process.stop(SIGTERM, timeout: 2)
            let errors = lines(process.stderrText, ended: true).suffix(15).joined(separator: "\n")
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

    /// Waits until its stdout lines so far satisfy `condition` (the event: woken by each new output
    /// and by its end); false when they do not within `timeout` seconds (a hang guard) or it ended first.
    public func waitForLines(timeout: Double, _ condition: ([String]) -> Bool) async -> Bool {
        await process.waitFor(.stdout, timeout: timeout) { text in condition(Self.lines(text, ended: false)) }
            || condition(lines)
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
}
