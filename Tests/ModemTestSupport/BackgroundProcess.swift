import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Shared by the process-level tests (ModemCLITests: the TNC, mailbox, transfer and Bluetooth CLI
// tests); moved here from TNCCLITests.swift.

/// A process running in the background: standard output and error go to files, standard input is
/// /dev/null or a pipe the test writes to.
public final class TNCBackgroundProcess {
    /// The child.
    public let process = Process()
    /// Where its standard output goes.
    public let stdoutPath: String
    /// Where its standard error goes.
    public let stderrPath: String
    private var stdin: Pipe?
    /// An object kept alive as long as this one (e.g. the temporary folder its output files are in).
    public var keepAlive: AnyObject?
    /// When it was started (just before `run()`).
    public private(set) var startedAt = Date()
    fileprivate let ended = ProcessEndTime()

    /// Starts `executable` with `arguments`; its output goes to `NAME.stdout` and `NAME.stderr` in
    /// the folder `directory`.
    public init(_ executable: String, _ arguments: [String], directory: String, name: String, stdinPipe: Bool = false) throws {
        stdoutPath = directory + "/\(name).stdout"
        stderrPath = directory + "/\(name).stderr"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        if stdinPipe {
            let pipe = Pipe()
            stdin = pipe
            process.standardInput = pipe
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        // The end is timed on Foundation's own thread, so a busy test thread does not move it.
        let ended = self.ended
        process.terminationHandler = { _ in ended.mark() }
        startedAt = Date()
        try process.run()
    }

    /// Standard output so far.
    public var stdoutText: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    /// Standard error so far.
    public var stderrText: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    /// The exit status, or -1 while it runs.
    public var status: Int32 { process.isRunning ? -1 : process.terminationStatus }
    /// Whether it exited (not killed by a signal).
    public var exitedNormally: Bool { !process.isRunning && process.terminationReason == .exit }

    /// Writes to its standard input (when started with a pipe).
    public func writeStdin(_ text: String) { stdin?.fileHandleForWriting.write(Data(text.utf8)) }
    /// Closes its standard input.
    public func closeStdin() { try? stdin?.fileHandleForWriting.close(); stdin = nil }
    /// Sends signal `s` while it runs.
    public func signal(_ s: Int32) { if process.isRunning { Glibc.kill(process.processIdentifier, s) } }
    /// Kills it (SIGKILL) and waits for it.
    public func kill() {
        closeStdin()
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits for the process to exit; false if it still runs after `timeout` seconds.
    public func wait(timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning { return false }
        process.waitUntilExit()
        return true
    }

    /// Waits until standard error satisfies `condition`.
    public func waitForStderr(timeout: Double, _ condition: (String) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(stderrText) { return true }
            if !process.isRunning { return condition(stderrText) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(stderrText)
    }

    /// The port a `modem tnc --kiss-port 0` announced on standard error.
    public func listeningPort() async throws -> Int {
        var port: Int?
        _ = await waitForStderr(timeout: 10) { text in
            guard let r = text.range(of: "KISS over TCP on 127.0.0.1:") else { return false }
            port = Int(text[r.upperBound...].prefix { $0.isNumber })
            return port != nil
        }
        guard let port else { throw TestSupportError("modem tnc announced no port: \(stderrText)") }
        return port
    }
}

extension TNCBackgroundProcess {
    /// When it ended (marked by Foundation's termination handler), or nil while it runs.
    public var endedAt: Date? { ended.date }

    /// Seconds from its start to its end, or nil while it runs.
    public var runSeconds: Double? { endedAt.map { $0.timeIntervalSince(startedAt) } }

    private var label: String {
        ([process.executableURL?.lastPathComponent ?? "process"] + (process.arguments ?? [])).joined(separator: " ")
    }

    /// Waits until standard error satisfies `condition`; throws, naming `what` and showing standard
    /// error, when it does not within `timeout` seconds (a hang guard, not a measurement) or the
    /// process ended first without it.
    public func awaitStderr(_ what: String, timeout: Double = 60, _ condition: (String) -> Bool) async throws {
        if await waitForStderr(timeout: timeout, condition) { return }
        let how = process.isRunning ? "within \(timeout) s" : "before it exited (status \(process.terminationStatus))"
        throw TestSupportError("`\(label)`: no \(what) on standard error \(how); standard error:\n\(stderrText.suffix(3000))")
    }

    /// Waits until standard output satisfies `condition` (polled every 20 ms); throws like ``awaitStderr(_:timeout:_:)``.
    public func awaitStdout(_ what: String, timeout: Double = 60, _ condition: (String) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if condition(stdoutText) { return }
            let running = process.isRunning
            if !running { process.waitUntilExit(); if condition(stdoutText) { return } }
            if !running || Date() >= deadline {
                let how = running ? "within \(timeout) s" : "before it exited (status \(process.terminationStatus))"
                throw TestSupportError("`\(label)`: no \(what) on standard output \(how); standard output:\n"
                    + "\(stdoutText.suffix(3000))\nstandard error:\n\(stderrText.suffix(2000))")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for the process to exit; throws, naming `what` it was expected to do, when it still runs
    /// after `timeout` seconds (a hang guard).
    public func awaitExit(_ what: String = "exit", timeout: Double = 60) async throws {
        if await wait(timeout: timeout) { return }
        throw TestSupportError("`\(label)`: no \(what) within \(timeout) s; standard error:\n\(stderrText.suffix(3000))")
    }

    /// The port of the first standard error line that has `prefix` followed by digits (e.g.
    /// `"listening on tcp:127.0.0.1:"`, printed by `modem mailbox|receive --listen tcp:127.0.0.1:0`);
    /// waits for it up to `timeout` seconds (a hang guard), else throws naming what was awaited.
    public func announcedPort(after prefix: String, timeout: Double = 60) async throws -> Int {
        var port: Int?
        try await awaitStderr("line with '\(prefix)PORT'", timeout: timeout) { text in
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
                guard let r = line.range(of: prefix) else { continue }
                let digits = line[r.upperBound...].prefix { $0.isNumber }
                // The whole number: the line may still be half written.
                guard !digits.isEmpty, digits.endIndex < line.endIndex || text.hasSuffix("\n") else { continue }
                port = Int(digits)
                return port != nil
            }
            return false
        }
        return port!
    }

    /// The port `modem mailbox|receive --listen tcp:127.0.0.1:0` got (its `listening on` line).
    public func messagingPort(timeout: Double = 60) async throws -> Int {
        try await announcedPort(after: "listening on tcp:127.0.0.1:", timeout: timeout)
    }

    /// The port `modem tnc --kiss-port 0` got (its `KISS over TCP on` line); like ``listeningPort()``
    /// with a hang guard of `timeout` seconds.
    public func kissPort(timeout: Double = 60) async throws -> Int {
        try await announcedPort(after: "KISS over TCP on 127.0.0.1:", timeout: timeout)
    }
}

/// A moment marked from any thread (a process's end).
private final class ProcessEndTime: Sendable {
    private let when = Mutex<Date?>(nil)
    func mark() { when.withLock { if $0 == nil { $0 = Date() } } }
    var date: Date? { when.withLock { $0 } }
}

/// A TCP socket on a port of 127.0.0.1 that the kernel picks (port 0), listening or only bound.
private func loopbackSocket(listening: Bool) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
        }
    }
    guard fd >= 0, ok else {
        let reason = errno
        if fd >= 0 { Glibc.close(fd) }
        throw TestSupportError("cannot \(listening ? "listen on" : "bind") 127.0.0.1: errno \(reason)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A TCP socket bound to a port of 127.0.0.1 but not listening: while it is open no other process
/// can take the port, and a connection to it is refused (the kernel answers with a reset).
public final class TCPRefusingPort {
    /// The socket.
    public let fd: Int32
    /// Its port.
    public let port: Int
    /// Binds a free port of 127.0.0.1 (port 0: the kernel picks one), without listening.
    public init() throws {
        (fd, port) = try loopbackSocket(listening: false)
    }
    /// Closes the socket.
    public func close() { Glibc.close(fd) }
}

/// A listening socket on 127.0.0.1 (a free port), to make a port busy.
public final class TNCTestListener {
    /// The socket.
    public let fd: Int32
    /// Its port.
    public let port: Int
    /// Listens on a free port of 127.0.0.1.
    public init() throws {
        (fd, port) = try loopbackSocket(listening: true)
    }
    /// Closes the socket.
    public func close() { Glibc.close(fd) }
}

