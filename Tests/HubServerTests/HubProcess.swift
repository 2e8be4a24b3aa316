import Foundation
import HubTestSupport
import ProcessTestSupport
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

    // The process-level tests' peers, for their traits: `.requires(HubProcess.venv, HubProcess.server)`
    // skips a test, with the reason shown, where one is missing, and fails it with
    // `SWIFTMODEM_REQUIRE_PEERS=1` (scripts/test.sh in CI).

    /// bcrypt at its lowest cost for the servers and `user add` of these tests (each bcrypt at the default
    /// cost 12 takes about a second in the debug build); the default cost is checked on its own
    /// (`PeerInteropTests.passwordsAreStoredAtTheConfiguredCost`).
    static let testBcrypt = ["--bcrypt-cost", "4"]

    /// The built server (``binary``).
    static var server: Peer {
        .executable(binary, name: "the built modem-hub (\(binary))", remedy: "swift build --product modem-hub, or set HUB_BINARY")
    }

    /// The peers' Python venv (``python``): the OAuth2 and WebSocket clients, schemathesis.
    static var venv: Peer { Peer.venv("hub", folderVariable: "HUB_VENV") }

    /// The PostgreSQL cluster of the multi-node tests: `HUB_TEST_POSTGRES_URL`.
    static var postgres: Peer {
        .environment("HUB_TEST_POSTGRES_URL", name: "a PostgreSQL cluster", remedy: "bash scripts/hub-postgres.sh start prints it")
    }

    /// Stock magic-wormhole 0.24 with its reference servers (`.build/wormhole-venv`, scripts/wormhole-venv.sh;
    /// `WORMHOLE_VENV` names another folder): its python.
    static var wormholeVenv: Peer { Peer.venv("wormhole", folderVariable: "WORMHOLE_VENV") }

    /// OpenSSL's command line at `/usr/bin/openssl`.
    static var openssl: Peer { .executable("/usr/bin/openssl", name: "openssl", remedy: "apt-get install openssl") }

    typealias Output = ProcessResult

    /// Runs a command to completion (bounded by `timeout` seconds, then killed) on the tests' runner.
    static func run(_ exe: String, _ args: [String], env: [String: String] = [:], timeout: Double = 120) async throws -> Output {
        try await TestProcess.run(exe, args, env: env, timeout: timeout)
    }

    /// Runs a command to completion with its output (stdout and stderr) going to the file `log`, bounded
    /// by `timeout` seconds (then SIGTERM, and SIGKILL 5 s later); returns the exit status (or signal).
    static func runLogged(_ exe: String, _ args: [String], log: String, env: [String: String] = [:],
                          cwd: String? = nil, timeout: Double) async throws -> Int32 {
        let child = try await ChildProcess(exe, args, environment: env, workingDirectory: cwd, stdout: .file(log), stderr: .file(log))
        if await child.wait(timeout: timeout) { return child.status }
        child.signal(SIGTERM)
        if await child.wait(timeout: 5) { return child.status }
        child.signal(SIGKILL)
        _ = await child.wait(timeout: 60)
        return child.status
    }

    /// A client-credentials access token from a running server (curl, HTTP Basic).
    static func ccToken(_ base: String, _ client: (id: String, secret: String)) async throws -> String {
        let o = try await run("/usr/bin/curl", ["-s", "-u", "\(client.id):\(client.secret)", "-d", "grant_type=client_credentials", base + "/oauth/token"],
                        timeout: 20)
        let json = try JSONSerialization.jsonObject(with: Data(o.stdoutText.utf8)) as? [String: Any]
        guard let token = json?["access_token"] as? String else { throw HubProcessError("no token from \(base): \(o.stdoutText) \(o.stderrText)") }
        return token
    }

    /// `HUB_TEST_POSTGRES_URL` with a new, empty database of its own (so runs never see each other's rows);
    /// nil without the variable, unless `SWIFTMODEM_REQUIRE_PEERS=1` requires it (then this throws naming it).
    static func freshPostgresDatabase(prefix: String) async throws -> String? {
        guard let base = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] else {
            if Peer.areRequired { throw PeerMissing(peer: postgres) }
            return nil
        }
        let name = prefix + UUID().uuidString.prefix(8).lowercased()
        let created = try await run("/usr/bin/env", ["psql", base, "-qc", "CREATE DATABASE \(name)"], timeout: 30)
        guard created.status == 0 else { throw HubProcessError("CREATE DATABASE \(name): \(created.stderrText)") }
        guard var c = URLComponents(string: base) else { throw HubProcessError("HUB_TEST_POSTGRES_URL is not a URL") }
        c.path = "/" + name
        return c.string
    }

    /// A running `modem-hub serve` on a port the kernel picked (`--listen 127.0.0.1:0`); stopped with
    /// SIGTERM by `stop()`, killed when dropped.
    final class Server {
        let process: ChildProcess
        let port: Int
        let scheme: String
        var base: String { "\(scheme)://127.0.0.1:\(port)" }

        /// Starts the server and waits for its `modem-hub: listening on 127.0.0.1:PORT` line on standard
        /// error (written once it accepts connections), which names the port. The wait is a hang guard
        /// (`timeout` seconds).
        init(db: String, extra: [String] = [], tls: Bool = false, caFile: String? = nil, dir: String, timeout: Double = 120) async throws {
            scheme = tls ? "https" : "http"
            process = try await ChildProcess(HubProcess.binary, ["serve", "--listen", "127.0.0.1:0", "--db", db] + HubProcess.testBcrypt + extra,
                                             name: "modem-hub")
            let marker = "modem-hub: listening on 127.0.0.1:"
            do {
                port = try await process.announcedNumber(after: marker, timeout: timeout)
            } catch {
                process.stop(SIGTERM)
                throw HubProcessError("\(error)")
            }
            // Listening: the metadata answers at once, and its issuer names the port the kernel picked.
            var args = ["-sf", "\(base)/.well-known/oauth-authorization-server"]
            if let ca = caFile { args = ["--cacert", ca] + args }
            let metadata = try await HubProcess.run("/usr/bin/curl", args, timeout: 60)
            let issuer = (try? JSONSerialization.jsonObject(with: Data(metadata.stdoutText.utf8)) as? [String: Any])?["issuer"] as? String
            guard metadata.status == 0, issuer == base else {
                stop()
                throw HubProcessError("modem-hub on \(port): metadata \(metadata.status) with issuer \(issuer ?? "none") (\(base) expected): \(metadata.stderrText) \(self.log())")
            }
        }

        /// What it wrote so far (standard output, then standard error).
        func log() -> String { process.stdoutText + process.stderrText }

        /// SIGTERM and wait for the end (a graceful stop; SIGKILL after a 60 s hang guard), blocking
        /// the caller (for `defer`). The exit status may not be read yet when this returns: a test that
        /// checks it uses ``stopAndWait()``.
        func stop() {
            process.stop(SIGTERM)
        }

        /// SIGTERM, then waits until the child is reaped and its exit status known (SIGKILL after a
        /// 60 s hang guard); returns the exit status.
        func stopAndWait() async -> Int32 {
            process.signal(SIGTERM)
            if await !process.wait(timeout: 60) {
                process.signal(SIGKILL)
                _ = await process.wait(timeout: 60)
            }
            return process.status
        }
    }

    /// `modem-hub client add NAME [--password-grant]`: the printed id and secret.
    static func addClient(_ name: String, passwordGrant: Bool, db: String) async throws -> (id: String, secret: String) {
        let o = try await run(binary, ["client", "add", name, "--db", db] + (passwordGrant ? ["--password-grant"] : []))
        let lines = o.stdoutText.split(separator: "\n").map(String.init)
        guard o.status == 0, lines.count == 2, lines[0].hasPrefix("client_id="), lines[1].hasPrefix("client_secret=") else {
            throw HubProcessError("client add: \(o.status) \(o.stdoutText) \(o.stderrText)")
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
