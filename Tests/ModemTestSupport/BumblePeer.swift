import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why the Bumble peer could not be used. `unavailable` means this machine lacks it (no venv, no
/// Bumble): tests turn it into a skip (`throw XCTSkip(error.description)`); `failed` is a real failure.
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
/// process: started with `--port 0` (the script picks a free port and names it in its READY line),
/// its stdout collected line by line, terminated by pid when stopped or released.
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

    private let process: Process
    private let output: PeerOutput

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
    public static func start(_ arguments: [String] = [], readyTimeout: Double = 120) throws(BumblePeerError) -> BumblePeer {
        let python = Self.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw unavailable("no Python at \(python); run scripts/bt-venv.sh (needs python3-venv) or set SWIFTMODEM_BT_PYTHON")
        }
        let script = packageRoot + "/scripts/bt-peer.py"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-u", script, "--port", "0"] + arguments
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw unavailable("cannot run \(python): \(error)") }
        try? stdout.fileHandleForWriting.close()
        try? stderr.fileHandleForWriting.close()

        let output = PeerOutput()
        output.drain(stdout.fileHandleForReading.fileDescriptor, into: \.lines)
        output.drain(stderr.fileHandleForReading.fileDescriptor, into: \.errors)

        let deadline = Date().addingTimeInterval(readyTimeout)
        var ready: String?
        while ready == nil {
            ready = output.lines.first { $0.hasPrefix("READY ") }
            if ready != nil { break }
            if !process.isRunning || Date() > deadline {
                let running = process.isRunning
                terminate(process)
                let errors = output.errors.suffix(15).joined(separator: "\n")
                if !running, errors.contains("No module named") {
                    throw unavailable("\(python) has no Bumble (run scripts/bt-venv.sh):\n\(errors)")
                }
                throw .failed(running ? "no READY line within \(readyTimeout) s; stderr:\n\(errors)"
                                      : "exited (status \(process.terminationStatus)) before READY; stderr:\n\(errors)")
            }
            usleep(20_000)
        }
        var fields: [String: String] = [:]
        for part in ready!.split(separator: " ").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        guard let port = fields["port"].flatMap({ UInt16($0) }), let host = fields["host_addr"],
              let device = fields["device_addr"] else {
            terminate(process)
            throw .failed("a READY line without port, host_addr or device_addr: \(ready!)")
        }
        return BumblePeer(process: process, output: output, port: port, portB: fields["port_b"].flatMap { UInt16($0) },
                          hostAddress: host, deviceAddress: device, echoAddress: fields["echo_addr"])
    }

    private init(process: Process, output: PeerOutput, port: UInt16, portB: UInt16?, hostAddress: String,
                 deviceAddress: String, echoAddress: String?) {
        self.process = process
        self.output = output
        self.port = port
        self.portB = portB
        self.hostAddress = hostAddress
        self.deviceAddress = deviceAddress
        self.echoAddress = echoAddress
        self.pid = process.processIdentifier
    }

    deinit { Self.terminate(process) }

    /// Every stdout line so far (READY, PEER-LINK, PEER-RFCOMM, PEER-ANSWER, ...).
    public var lines: [String] { output.lines }

    /// Every stderr line so far (Bumble's warnings; everything with `--verbose`).
    public var errorLines: [String] { output.errors }

    /// Waits for a stdout line starting with `prefix` (the event), polling every 20 ms; returns the first
    /// such line, or nil after `timeout` seconds (a hang guard: give one far above the expected wait).
    public func waitForLine(startingWith prefix: String, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let line = output.lines.first(where: { $0.hasPrefix(prefix) }) { return line }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    /// Ends the peer (SIGTERM, then SIGKILL after 2 s) and waits for it.
    public func stop() { Self.terminate(process) }

    private static func terminate(_ process: Process) {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    private static func unavailable(_ message: String) -> BumblePeerError {
        isRequired ? .failed(message + " (SWIFTMODEM_REQUIRE_BUMBLE=1)") : .unavailable(message)
    }
}

/// The peer's stdout and stderr lines, filled by one reader thread per pipe.
private final class PeerOutput: Sendable {
    struct Lines: Sendable {
        var lines: [String] = []
        var errors: [String] = []
    }
    private let state = Mutex(Lines())

    var lines: [String] { state.withLock { $0.lines } }
    var errors: [String] { state.withLock { $0.errors } }

    /// Reads `fd` (a dup of it, so the Pipe's own handle may close) until EOF, splitting lines.
    func drain(_ fd: Int32, into keyPath: WritableKeyPath<Lines, [String]> & Sendable) {
        let own = dup(fd)
        guard own >= 0 else { return }
        let thread = Thread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(own, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    state.withLock { $0[keyPath: keyPath].append(line) }
                }
            }
            if !pending.isEmpty {
                let line = String(decoding: pending, as: UTF8.self)
                state.withLock { $0[keyPath: keyPath].append(line) }
            }
            close(own)
        }
        thread.start()
    }
}
