import Foundation
import Synchronization

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

    public struct Output: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs a command to completion (killed after `timeout` seconds), on a thread of its own so that
    /// no thread of the test's concurrency pool is held.
    public static func run(_ exe: String, _ args: [String], env: [String: String] = [:], timeout: Double = 60) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try runBlocking(exe, args, env: env, timeout: timeout) })
            }.start()
        }
    }

    public static func runBlocking(_ exe: String, _ args: [String], env: [String: String], timeout: Double) throws -> Output {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // SIGKILL: a child may have inherited an ignored SIGTERM from the test process.
        let killer = DispatchWorkItem { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        // Read both pipes at once: a child filling one while we wait on the other would stall.
        let errData = Mutex<Data>(Data())
        let done = DispatchSemaphore(value: 0)
        Thread {
            let d = err.fileHandleForReading.readDataToEndOfFile()
            errData.withLock { $0 = d }
            done.signal()
        }.start()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        p.waitUntilExit()
        killer.cancel()
        return Output(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                      stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self))
    }

    /// A fresh temporary folder.
    public static func tempDir() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("hubclient-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }
}
