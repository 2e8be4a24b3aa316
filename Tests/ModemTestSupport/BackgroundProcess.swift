import Foundation
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

/// A listening socket on 127.0.0.1 (a free port), to make a port busy.
public final class TNCTestListener {
    /// The socket.
    public let fd: Int32
    /// Its port.
    public let port: Int
    /// Listens on a free port of 127.0.0.1.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw TestSupportError("cannot listen on 127.0.0.1: errno \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }
    /// Closes the socket.
    public func close() { Glibc.close(fd) }
}

