import Foundation
import ProcessTestSupport
import Testing

/// The hub in production, as an operator runs it: the built `modem-hub serve` with its metrics read by
/// prometheus_client after real traffic (Tests/scripts/hub_ops.py), a clean stop on SIGTERM, and
/// `serve --config FILE` (a TOML file of settings, the command line over it, its errors).
@Suite struct HubOpsTests {
    static let script = HubProcess.packageRoot + "/Tests/scripts/hub_ops.py"

    /// Runs hub_ops.py's `phase` and expects every check of it to pass.
    static func runScript(_ phase: String, extra: [String] = []) async throws {
        let o = try await HubProcess.run(HubProcess.python, [script, HubProcess.binary, phase] + extra, timeout: 280)
        print(o.stdoutText.split(separator: "\n").suffix(6).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(4000))\(o.stderrText.suffix(3000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(4000))\(o.stderrText.suffix(3000))")
    }

    @Test(.requires(HubProcess.venv, HubProcess.server), .timeLimit(.minutes(5)))
    func metricsMoveWithTraffic() async throws {
        try await Self.runScript("metrics")
    }

    @Test(.requires(HubProcess.venv, HubProcess.server), .timeLimit(.minutes(5)))
    func sigtermStopsCleanlyOnSQLite() async throws {
        try await Self.runScript("shutdown")
    }

    @Test(.requires(HubProcess.venv, HubProcess.server, HubProcess.postgres), .timeLimit(.minutes(5)))
    func sigtermStopsCleanlyOnPostgreSQL() async throws {
        let db = try #require(try await HubProcess.freshPostgresDatabase(prefix: "hubops_"))
        try await Self.runScript("shutdown", extra: ["--db", db])
    }

    @Test(.requires(HubProcess.venv, HubProcess.server), .timeLimit(.minutes(5)))
    func stalledClientsDelayTheStopOnlyUntilTheShutdownTimeout() async throws {
        try await Self.runScript("stalled")
    }

    // MARK: - serve --config

    /// A settings file in a new folder; its path.
    static func settingsFile(_ text: String, in dir: String) throws -> String {
        let path = dir + "/hub.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `modem-hub ARGS` run to its end, with no `MODEM_HUB_DB` from the test's environment unless given.
    static func hub(_ args: [String], env: [String: String] = [:]) async throws -> HubProcess.Output {
        try await HubProcess.run(HubProcess.binary, args, env: ["MODEM_HUB_DB": ""].merging(env) { $1 }, timeout: 60)
    }

    /// `modem-hub serve ARGS` until it listens; its port and the process (stopped by the caller).
    static func serve(_ args: [String], env: [String: String] = [:]) async throws -> (ChildProcess, Int) {
        let p = try await ChildProcess(HubProcess.binary, ["serve"] + args, name: "modem-hub",
                                       environment: ["MODEM_HUB_DB": ""].merging(env) { $1 })
        do {
            return (p, try await p.announcedNumber(after: "modem-hub: listening on 127.0.0.1:", timeout: 120))
        } catch {
            p.stop(SIGTERM)
            throw HubProcessError("\(error): \(p.stderrText.suffix(2000))")
        }
    }

    /// The issuer of the metadata the hub on `port` serves.
    static func issuer(port: Int) async throws -> String? {
        let o = try await HubProcess.run("/usr/bin/curl", ["-sf", "http://127.0.0.1:\(port)/.well-known/oauth-authorization-server"], timeout: 60)
        return (try? JSONSerialization.jsonObject(with: Data(o.stdoutText.utf8)) as? [String: Any])?["issuer"] as? String
    }

    @Test(.requires(HubProcess.server), .timeLimit(.minutes(3)))
    func settingsComeFromTheFile() async throws {
        let dir = try HubProcess.tempDir()
        let file = try Self.settingsFile("""
            # modem-hub settings
            listen = "127.0.0.1:0"
            db = "sqlite:\(dir)/from-file.sqlite"
            issuer = "https://hub.example.test"
            heartbeat = 2           # an integer where a number is taken
            head-timeout = 12.5
            log-codes = true
            metrics = false
            trusted-proxy = ["10.0.0.0/8", "192.0.2.1"]
            max-posts-per-group = 500
            """, in: dir)
        let (p, port) = try await Self.serve(["--config", file])
        defer { p.stop(SIGTERM) }
        #expect(FileManager.default.fileExists(atPath: dir + "/from-file.sqlite"), "the file's database was not created")
        #expect(try await Self.issuer(port: port) == "https://hub.example.test")
        // metrics = false: no /metrics.
        let m = try await HubProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/metrics"], timeout: 60)
        #expect(m.stdoutText == "404")
    }

    @Test(.requires(HubProcess.server), .timeLimit(.minutes(3)))
    func theCommandLineWinsOverTheFile() async throws {
        let dir = try HubProcess.tempDir()
        let file = try Self.settingsFile("""
            listen = "127.0.0.1:1"
            db = "sqlite:\(dir)/file.sqlite"
            issuer = "https://from-file.example.test"
            metrics = false
            """, in: dir)
        let (p, port) = try await Self.serve(["--config", file, "--listen", "127.0.0.1:0", "--db", "sqlite:\(dir)/flag.sqlite",
                                              "--issuer", "https://from-flag.example.test", "--metrics"])
        defer { p.stop(SIGTERM) }
        #expect(try await Self.issuer(port: port) == "https://from-flag.example.test")
        #expect(FileManager.default.fileExists(atPath: dir + "/flag.sqlite") && !FileManager.default.fileExists(atPath: dir + "/file.sqlite"))
        let m = try await HubProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/metrics"], timeout: 60)
        #expect(m.stdoutText == "200", "--metrics on the command line over metrics = false")
    }

    @Test(.requires(HubProcess.server), .timeLimit(.minutes(3)))
    func theDatabaseURLMayComeFromTheEnvironment() async throws {
        let dir = try HubProcess.tempDir()
        let file = try Self.settingsFile("listen = \"127.0.0.1:0\"\ndb = \"sqlite:\(dir)/file.sqlite\"\n", in: dir)
        let (p, _) = try await Self.serve(["--config", file], env: ["MODEM_HUB_DB": "sqlite:\(dir)/env.sqlite"])
        p.stop(SIGTERM)
        #expect(FileManager.default.fileExists(atPath: dir + "/env.sqlite") && !FileManager.default.fileExists(atPath: dir + "/file.sqlite"),
                "MODEM_HUB_DB wins over the file's db")
        // Without a file too, and for the other commands that take --db.
        let added = try await Self.hub(["client", "add", "envclient"], env: ["MODEM_HUB_DB": "sqlite:\(dir)/env2.sqlite"])
        #expect(added.status == 0 && FileManager.default.fileExists(atPath: dir + "/env2.sqlite"), "\(added.stderrText)")
    }

    @Test(.requires(HubProcess.server), .timeLimit(.minutes(3)))
    func badSettingsAreRefusedNamingKeyAndFile() async throws {
        let dir = try HubProcess.tempDir()
        let unknown = try Self.settingsFile("listen = \"127.0.0.1:0\"\nlisten-port = 80\n", in: dir)
        let u = try await Self.hub(["serve", "--config", unknown])
        #expect(u.status == 64)
        #expect(u.stderrText.contains("\(unknown): unknown setting 'listen-port'"), "\(u.stderrText)")

        let wrong = try Self.settingsFile("listen = 8080\nheartbeat = \"fast\"\nlog-codes = \"yes\"\ntrusted-proxy = [1]\n", in: dir)
        let w = try await Self.hub(["serve", "--config", wrong])
        #expect(w.status == 64)
        for line in ["\(wrong): 'listen' takes a string, not an integer (8080)", "\(wrong): 'heartbeat' takes a number, not a string (\"fast\")",
                     "\(wrong): 'log-codes' takes true or false", "\(wrong): 'trusted-proxy' takes a string or an array of strings"] {
            #expect(w.stderrText.contains(line), "\(line) not in: \(w.stderrText)")
        }

        let broken = try Self.settingsFile("listen = \"127.0.0.1:0\n", in: dir)
        let b = try await Self.hub(["serve", "--config", broken])
        #expect(b.status == 64 && b.stderrText.contains("\(broken):1:"), "\(b.stderrText)")

        // A value in range is checked as its option is.
        let range = try Self.settingsFile("listen = \"127.0.0.1:0\"\ndb = \"sqlite:\(dir)/r.sqlite\"\nheartbeat = 0\n", in: dir)
        let r = try await Self.hub(["serve", "--config", range])
        #expect(r.status == 64 && r.stderrText.contains("--heartbeat must be 0.1 to 3600 seconds"), "\(r.stderrText)")
    }

    @Test(.requires(HubProcess.server), .timeLimit(.minutes(3)))
    func anUnreadableFileIsExitOne() async throws {
        let dir = try HubProcess.tempDir()
        let missing = dir + "/no-such.toml"
        let m = try await Self.hub(["serve", "--config", missing])
        #expect(m.status == 1)
        #expect(m.stderrText.contains("cannot read the settings file \(missing): No such file or directory"), "\(m.stderrText)")
        let twice = try await Self.hub(["serve", "--config", missing, "--config=\(missing)"])
        #expect(twice.status == 64 && twice.stderrText.contains("--config is given more than once"))
    }

    /// Every option of `serve` is a setting of the file (and of docs/hub-config.example.toml), and every
    /// setting is an option: a file setting each option to a table (a type no setting takes) is refused
    /// key by key as of the wrong type, none as unknown.
    @Test(.requires(HubProcess.server), .timeLimit(.minutes(3)))
    func everyOptionIsASetting() async throws {
        let dump = try await Self.hub(["serve", "--experimental-dump-help"])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdoutText.utf8)) as? [String: Any])
        let command = try #require(root["command"] as? [String: Any])
        var options = Set<String>()
        for arg in command["arguments"] as? [[String: Any]] ?? [] {
            let names = (arg["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }.compactMap { $0["name"] as? String }
            options.formUnion(names)
        }
        // A flag with its inversion is listed under both names (log-codes, no-log-codes): the setting is the first.
        options = options.filter { !($0.hasPrefix("no-") && options.contains(String($0.dropFirst(3)))) }
        options.subtract(["config", "help", "version"])
        #expect(options.count > 40 && options.contains("listen") && options.contains("trusted-proxy") && options.contains("metrics"),
                "\(options.sorted())")

        let dir = try HubProcess.tempDir()
        let file = try Self.settingsFile(options.sorted().map { "\($0) = { x = 1 }" }.joined(separator: "\n") + "\n", in: dir)
        let o = try await Self.hub(["serve", "--config", file])
        #expect(o.status == 64)
        for key in options {
            #expect(o.stderrText.contains("'\(key)' takes "), "\(key) is not a setting of the file: \(o.stderrText.prefix(3000))")
        }
        #expect(!o.stderrText.contains("unknown setting"), "\(o.stderrText.prefix(3000))")

        // The example file names every setting (set or commented out), and the settings it sets are taken.
        let example = try String(contentsOfFile: HubProcess.packageRoot + "/docs/hub-config.example.toml", encoding: .utf8)
        var named = Set<String>(), active: [String] = []
        for line in example.split(separator: "\n") {
            let bare = line.hasPrefix("# ") ? line.dropFirst(2) : line[...]
            guard let eq = bare.range(of: " = "), !bare.hasPrefix("#") else { continue }
            let key = String(bare[..<eq.lowerBound])
            guard key.allSatisfy({ $0.isLowercase || $0 == "-" }) else { continue }
            named.insert(key)
            if !line.hasPrefix("#"), !["listen", "db"].contains(key) { active.append(String(line)) }
        }
        #expect(named == options, "example file vs serve's options: missing \(options.subtracting(named)), extra \(named.subtracting(options))")
        let run = try Self.settingsFile((["listen = \"127.0.0.1:0\"", "db = \"sqlite:\(dir)/example.sqlite\""] + active).joined(separator: "\n"), in: dir)
        let (p, port) = try await Self.serve(["--config", run])
        defer { p.stop(SIGTERM) }
        #expect(port > 0)
    }
}
