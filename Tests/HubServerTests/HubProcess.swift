import Foundation
import HubTestSupport
import Testing

/// Process-level helpers: the built `modem-hub` (on a port the kernel picks), commands run to completion.
enum HubProcess {
    /// The package root (three levels above this file).
    static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// `$HUB_BINARY`, else the debug build beside the tests (`swift build --build-tests` makes it).
    static var binary: String {
        ProcessInfo.processInfo.environment["HUB_BINARY"] ?? packageRoot + "/.build/debug/modem-hub"
    }

    /// The Python of the peers' venv: `$HUB_VENV/bin/python`, else `.build/hub-venv` (scripts/hub-venv.sh).
    static var python: String {
        (ProcessInfo.processInfo.environment["HUB_VENV"] ?? packageRoot + "/.build/hub-venv") + "/bin/python"
    }

    /// Whether the peer tests are required (CI): they then run and fail when something is missing.
    static var peersRequired: Bool { ProcessInfo.processInfo.environment["SWIFTMODEM_REQUIRE_HUB_PEERS"] == "1" }

    /// Whether the peer tests can run (the venv and the built server exist); with
    /// `SWIFTMODEM_REQUIRE_HUB_PEERS=1` (CI) they run and fail when either is missing rather than skip.
    static var peersAvailable: Bool {
        (FileManager.default.isExecutableFile(atPath: python) && FileManager.default.isExecutableFile(atPath: binary))
            || peersRequired
    }

    /// Whether the multi-node peer tests can run: the peers and `HUB_TEST_POSTGRES_URL`
    /// (scripts/hub-postgres.sh start); required, like the peers, in CI.
    static var postgresPeersAvailable: Bool {
        (peersAvailable && ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] != nil) || peersRequired
    }

    typealias Output = TestProcess.Output

    /// Runs a command to completion (bounded by `timeout` seconds, then killed), blocking the caller's
    /// thread (HubTestSupport's `TestProcess.run` is the one that holds no thread of the pool).
    static func run(_ exe: String, _ args: [String], env: [String: String] = [:], timeout: Double = 120) throws -> Output {
        try TestProcess.runBlocking(exe, args, env: env, timeout: timeout)
    }

    /// Runs a command to completion with its output (stdout and stderr) going to the file `log`, bounded
    /// by `timeout` seconds (then SIGTERM, and SIGKILL 5 s later); returns the exit status (or signal).
    /// Waited for on a thread of its own, never holding a thread of the test process's concurrency pool.
    static func runLogged(_ exe: String, _ args: [String], log: String, env: [String: String] = [:],
                          cwd: String? = nil, timeout: Double) async throws -> Int32 {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return await withCheckedContinuation { continuation in
            Thread {
                let deadline = Date().addingTimeInterval(timeout)
                while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
                if p.isRunning {
                    p.terminate()
                    let hard = Date().addingTimeInterval(5)
                    while p.isRunning && Date() < hard { Thread.sleep(forTimeInterval: 0.05) }
                    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
                }
                p.waitUntilExit()
                try? handle.close()
                continuation.resume(returning: p.terminationStatus)
            }.start()
        }
    }

    /// A client-credentials access token from a running server (curl, HTTP Basic).
    static func ccToken(_ base: String, _ client: (id: String, secret: String)) throws -> String {
        let o = try run("/usr/bin/curl", ["-s", "-u", "\(client.id):\(client.secret)", "-d", "grant_type=client_credentials", base + "/oauth/token"],
                        timeout: 20)
        let json = try JSONSerialization.jsonObject(with: Data(o.stdout.utf8)) as? [String: Any]
        guard let token = json?["access_token"] as? String else { throw HubProcessError("no token from \(base): \(o.stdout) \(o.stderr)") }
        return token
    }

    /// `HUB_TEST_POSTGRES_URL` with a new, empty database of its own (so runs never see each other's rows).
    static func freshPostgresDatabase(prefix: String) throws -> String? {
        guard let base = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] else { return nil }
        let name = prefix + UUID().uuidString.prefix(8).lowercased()
        let created = try run("/usr/bin/env", ["psql", base, "-qc", "CREATE DATABASE \(name)"], timeout: 30)
        guard created.status == 0 else { throw HubProcessError("CREATE DATABASE \(name): \(created.stderr)") }
        guard var c = URLComponents(string: base) else { throw HubProcessError("HUB_TEST_POSTGRES_URL is not a URL") }
        c.path = "/" + name
        return c.string
    }

    /// A running `modem-hub serve` on a port the kernel picked (`--listen 127.0.0.1:0`); stopped with
    /// SIGTERM by `stop()`.
    final class Server {
        let process: Process
        let port: Int
        let scheme: String
        let logPath: String
        var base: String { "\(scheme)://127.0.0.1:\(port)" }

        /// Starts the server and waits for its `modem-hub: listening on 127.0.0.1:PORT` line (written once
        /// it accepts connections), which names the port. The wait is a hang guard (`timeout` seconds).
        init(db: String, extra: [String] = [], tls: Bool = false, caFile: String? = nil, dir: String, timeout: Double = 120) throws {
            scheme = tls ? "https" : "http"
            let logPath = dir + "/hub.\(UUID().uuidString.prefix(8)).log"
            self.logPath = logPath
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: HubProcess.binary)
            process.arguments = ["serve", "--listen", "127.0.0.1:0", "--db", db] + extra
            process.standardOutput = log
            process.standardError = log
            try process.run()
            self.process = process
            try? log.close()
            let marker = "modem-hub: listening on 127.0.0.1:"
            let deadline = Date().addingTimeInterval(timeout)
            var announced: Int?
            while announced == nil {
                // Whole lines only: a line still being written could show part of the port.
                let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                let whole = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                if let line = whole.first(where: { $0.hasPrefix(marker) }) {
                    announced = Int(line.dropFirst(marker.count))
                    if announced == nil { break }
                    continue
                }
                guard process.isRunning, Date() < deadline else { break }
                Thread.sleep(forTimeInterval: 0.02)
            }
            guard let listening = announced else {
                let running = process.isRunning
                if running { process.terminate() }
                process.waitUntilExit()
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                throw HubProcessError(running ? "waited \(timeout) s for modem-hub's '\(marker)PORT' line; log: \(log)"
                                              : "modem-hub exited (status \(process.terminationStatus)) before its '\(marker)PORT' line; log: \(log)")
            }
            port = listening
            // Listening: the metadata answers at once, and its issuer names the port the kernel picked.
            var args = ["-sf", "\(base)/.well-known/oauth-authorization-server"]
            if let ca = caFile { args = ["--cacert", ca] + args }
            let metadata = try HubProcess.run("/usr/bin/curl", args, timeout: 60)
            let issuer = (try? JSONSerialization.jsonObject(with: Data(metadata.stdout.utf8)) as? [String: Any])?["issuer"] as? String
            guard metadata.status == 0, issuer == base else {
                stop()
                throw HubProcessError("modem-hub on \(port): metadata \(metadata.status) with issuer \(issuer ?? "none") (\(base) expected): \(metadata.stderr) \(self.log())")
            }
        }

        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// SIGTERM and wait (a graceful stop); returns the exit status.
        @discardableResult func stop() -> Int32 {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    /// `modem-hub client add NAME [--password-grant]`: the printed id and secret.
    static func addClient(_ name: String, passwordGrant: Bool, db: String) throws -> (id: String, secret: String) {
        let o = try run(binary, ["client", "add", name, "--db", db] + (passwordGrant ? ["--password-grant"] : []))
        let lines = o.stdout.split(separator: "\n").map(String.init)
        guard o.status == 0, lines.count == 2, lines[0].hasPrefix("client_id="), lines[1].hasPrefix("client_secret=") else {
            throw HubProcessError("client add: \(o.status) \(o.stdout) \(o.stderr)")
        }
        return (String(lines[0].dropFirst("client_id=".count)), String(lines[1].dropFirst("client_secret=".count)))
    }

    static func tempDir() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("hubproc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }
}

struct HubProcessError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
