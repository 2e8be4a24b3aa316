import Foundation
import ProcessTestSupport
import ModemRuntime
import Testing

/// The built `modem-hub` as a process, against independent OAuth2 clients in Python (requests-oauthlib's
/// backend and legacy application clients, authlib): Tests/scripts/hub_oauth_clients.py. Also the CLI's
/// exact output and exit codes, TLS, and a graceful stop on SIGTERM.
@Suite(.serialized) struct PeerInteropTests {
    static let script = HubProcess.packageRoot + "/Tests/scripts/hub_oauth_clients.py"

    func prepare(_ dir: String) async throws -> (db: String, plain: (id: String, secret: String), pw: (id: String, secret: String)) {
        let db = "sqlite:\(dir)/hub.sqlite"
        let plain = try await HubProcess.addClient("plain", passwordGrant: false, db: db)
        let pw = try await HubProcess.addClient("pw", passwordGrant: true, db: db)
        try Data("correct horse battery".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        let u = try await HubProcess.run(HubProcess.binary, ["user", "add", "alice", "--password-file", dir + "/pw", "--db", db] + HubProcess.testBcrypt)
        #expect(u.status == 0, "\(u.stderrText)")
        return (db, plain, pw)
    }

    @Test(.requires(HubProcess.venv, HubProcess.server))
    func oauthClientsOverHTTP() async throws {
        let dir = try HubProcess.tempDir()
        let (db, plain, pw) = try await prepare(dir)
        let server = try await HubProcess.Server(db: db, dir: dir)
        let o = try await HubProcess.run(HubProcess.python, [Self.script, server.base, plain.id, plain.secret, pw.id, pw.secret,
                                                       "alice", "correct horse battery"])
        #expect(await server.stopAndWait() == 0, "graceful stop on SIGTERM")
        #expect(o.status == 0, "\(o.stdoutText)\(o.stderrText)")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText)")
        // Nothing secret reached the log: no client secret, token, or password.
        let log = server.log()
        for secret in [plain.secret, pw.secret, "correct horse battery", "mha_", "mhr_"] {
            #expect(!log.contains(secret), "log holds a secret: \(secret.prefix(6))…")
        }
        #expect(log.contains("POST /oauth/token 200"))
    }

    @Test(.requires(HubProcess.venv, HubProcess.server))
    func oauthClientsOverTLS() async throws {
        let dir = try HubProcess.tempDir()
        let (db, plain, pw) = try await prepare(dir)
        // A throwaway self-signed certificate for 127.0.0.1, trusted by the clients through the bundle.
        let cert = dir + "/cert.pem", key = dir + "/key.pem"
        let ssl = try await HubProcess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-addext", "basicConstraints=critical,CA:TRUE"])
        try #require(ssl.status == 0, "\(ssl.stderrText)")
        let server = try await HubProcess.Server(db: db, extra: ["--tls-cert", cert, "--tls-key", key], tls: true, caFile: cert, dir: dir)
        let o = try await HubProcess.run(HubProcess.python, [Self.script, server.base, plain.id, plain.secret, pw.id, pw.secret,
                                                       "alice", "correct horse battery", cert])
        server.stop()
        #expect(o.status == 0, "\(o.stdoutText)\(o.stderrText)")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText)")
    }

    @Test(.requires(HubProcess.venv, HubProcess.server, HubProcess.postgres))
    func oauthClientsOnPostgreSQL() async throws {
        // A fresh database on the test cluster, so earlier runs' clients and users do not collide.
        let base = try HubProcess.postgres.path()
        let name = "hubpeer_" + UUID().uuidString.prefix(8).lowercased()
        let created = try await HubProcess.run("/usr/bin/env", ["psql", base, "-qc", "CREATE DATABASE \(name)"])
        try #require(created.status == 0, "\(created.stderrText)")
        var c = try #require(URLComponents(string: base))
        c.path = "/" + name
        let db = try #require(c.string)
        let dir = try HubProcess.tempDir()
        let plain = try await HubProcess.addClient("plain", passwordGrant: false, db: db)
        let pw = try await HubProcess.addClient("pw", passwordGrant: true, db: db)
        try Data("correct horse battery".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        #expect(try await HubProcess.run(HubProcess.binary, ["user", "add", "alice", "--password-file", dir + "/pw", "--db", db]
                                         + HubProcess.testBcrypt).status == 0)
        // Two nodes on one database: a token from one is good on the other, a revocation on one is seen by both.
        let n1 = try await HubProcess.Server(db: db, extra: ["--node", "n1"], dir: dir)
        let n2 = try await HubProcess.Server(db: db, extra: ["--node", "n2"], dir: dir)
        let o = try await HubProcess.run(HubProcess.python, [Self.script, n1.base, plain.id, plain.secret, pw.id, pw.secret,
                                                       "alice", "correct horse battery"])
        #expect(o.status == 0, "\(o.stdoutText)\(o.stderrText)")
        let tok = try await HubProcess.run("/usr/bin/curl", ["-s", "-u", "\(plain.id):\(plain.secret)", "-d", "grant_type=client_credentials",
                                                       n1.base + "/oauth/token"])
        let token = try #require((try JSONSerialization.jsonObject(with: Data(tok.stdoutText.utf8)) as? [String: Any])?["access_token"] as? String)
        func me(_ server: HubProcess.Server) async throws -> String {
            try await HubProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(token)",
                                                 server.base + "/v1/users/me"]).stdoutText
        }
        #expect(try await me(n2) == "200")
        _ = try await HubProcess.run("/usr/bin/curl", ["-s", "-u", "\(plain.id):\(plain.secret)", "-d", "token=\(token)", n2.base + "/oauth/revoke"])
        #expect(try await me(n1) == "401")
        // A third process given n1's name while n1 runs: refused (it would sweep n1's users offline at
        // start and the two would flap), exit 1 naming the node. n1 is unharmed.
        let twin = try await HubProcess.run(HubProcess.binary, ["serve", "--listen", "127.0.0.1:0", "--db", db, "--node", "n1"],
                                            timeout: 120)
        #expect(twin.status == 1 && twin.stderrText.contains("another modem-hub node named 'n1' is running"), "\(twin.stderrText)")
        #expect(try await HubProcess.run("/usr/bin/curl", ["-sf", "-o", "/dev/null", n1.base + "/.well-known/oauth-authorization-server"]).status == 0)
        n1.stop()
        n2.stop()
    }

    @Test("passwords are stored at the configured bcrypt cost (12 unless set), and anew at the server's on a login",
          .requires(HubProcess.server))
    func passwordsAreStoredAtTheConfiguredCost() async throws {
        let dir = try HubProcess.tempDir()
        let db = "sqlite:\(dir)/hub.sqlite"
        let pw = try await HubProcess.addClient("pw", passwordGrant: true, db: db)
        try Data("correct horse battery".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        // The cost field of the stored hash: `$hmac-sha256$$2b$12$...`.
        func storedCost() async throws -> String {
            let r = try await HubProcess.run("/usr/bin/python3", ["-c", """
                import sqlite3, sys
                print(sqlite3.connect(sys.argv[1]).execute("SELECT password_bcrypt FROM users").fetchone()[0].split("$")[4])
                """, dir + "/hub.sqlite"])
            return r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for (args, bad) in [(["user", "add", "bob", "--password-file", dir + "/pw", "--db", db, "--bcrypt-cost", "3"], "3"),
                            (["serve", "--db", db, "--bcrypt-cost", "19"], "19")] {
            let r = try await HubProcess.run(HubProcess.binary, args)
            #expect(r.status == 64 && r.stderrText.contains("--bcrypt-cost must be 4 to 18, not \(bad)"), "\(r.stderrText)")
        }
        let add = try await HubProcess.run(HubProcess.binary, ["user", "add", "alice", "--password-file", dir + "/pw", "--db", db])
        #expect(add.status == 0, "\(add.stderrText)")
        #expect(try await storedCost() == "12")
        let server = try await HubProcess.Server(db: db, dir: dir)  // --bcrypt-cost 4 (HubProcess.testBcrypt)
        func login(_ password: String) async throws -> String {
            try await HubProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "\(pw.id):\(pw.secret)",
                                                       "--data-urlencode", "grant_type=password", "--data-urlencode", "username=alice",
                                                       "--data-urlencode", "password=\(password)", server.base + "/oauth/token"]).stdoutText
        }
        #expect(try await login("wrong horse battery") == "400")
        #expect(try await storedCost() == "12", "a failed login changes nothing")
        #expect(try await login("correct horse battery") == "200")
        #expect(try await storedCost() == "04", "a good login stores the hash anew at the server's cost")
        #expect(try await login("correct horse battery") == "200")
        _ = await server.stopAndWait()
    }

    @Test("modem-hub --version prints the version on standard output and exits 0", .requires(HubProcess.server))
    func version() async throws {
        let r = try await HubProcess.run(HubProcess.binary, ["--version"])
        #expect(r.status == 0 && r.stdoutText == SwiftModemVersion.string + "\n", "\(r.stdoutText)\(r.stderrText)")
    }

    @Test func cliOutputAndExitCodes() async throws {
        let dir = try HubProcess.tempDir()
        let db = "sqlite:\(dir)/hub.sqlite"
        let add = try await HubProcess.run(HubProcess.binary, ["client", "add", "app", "--db", db])
        #expect(add.status == 0)
        let lines = add.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty, "exactly two lines: \(add.stdoutText)")
        #expect(lines[0].hasPrefix("client_id=c_") && lines[1].hasPrefix("client_secret=mhs_"))
        #expect(try await HubProcess.run(HubProcess.binary, ["client", "add", "app", "--db", db]).status == 1)  // name taken
        try Data("pw-without-newline".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        #expect(try await HubProcess.run(HubProcess.binary, ["user", "add", "carol", "--password-file", dir + "/pw", "--db", db]).status == 0)
        #expect(try await HubProcess.run(HubProcess.binary, ["user", "add", "carol", "--password-file", dir + "/pw", "--db", db]).status == 1)
        let shouted = try await HubProcess.run(HubProcess.binary, ["user", "add", "CAROL", "--password-file", dir + "/pw", "--db", db])
        #expect(shouted.status == 1 && shouted.stderrText.contains("a user named 'carol' exists"), "\(shouted.stderrText)")
        for badName in ["esc\u{1B}[31mred", "two\nlines", " padded", "tab\tbed", ""] {
            let r = try await HubProcess.run(HubProcess.binary, ["client", "add", badName, "--db", db])
            #expect(r.status == 64 && r.stderrText.contains("printable"), "\(badName.debugDescription): \(r.stderrText)")
        }
        let badDB = try await HubProcess.run(HubProcess.binary, ["client", "add", "x", "--db", "mysql://h/d"])
        #expect(badDB.status == 64 && badDB.stderrText.contains("--db"))
        #expect(try await HubProcess.run(HubProcess.binary, ["user", "add", "dave", "--password-file", dir + "/missing", "--db", db]).status == 64)
        #expect(try await HubProcess.run(HubProcess.binary, ["serve", "--listen", "nonsense", "--db", db]).status == 64)
        #expect(try await HubProcess.run(HubProcess.binary, ["serve", "--tls-cert", dir + "/pw", "--db", db]).status == 64)
        #expect(try await HubProcess.run(HubProcess.binary, ["serve", "--no-such-option"]).status == 64)
        // One server per SQLite database: a second serve on the same file exits 1 naming the lock.
        let first = try await HubProcess.Server(db: db, dir: dir)
        let second = try await HubProcess.run(HubProcess.binary, ["serve", "--listen", "127.0.0.1:0", "--db", db])
        #expect(second.status == 1 && second.stderrText.contains("another modem-hub serve uses"), "\(second.stderrText)")
        // The same file under another name (a symbolic link) is the same database.
        let file = String(db.dropFirst("sqlite:".count))
        let link = dir + "/another-name.db"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        let third = try await HubProcess.run(HubProcess.binary, ["serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + link])
        #expect(third.status == 1 && third.stderrText.contains("another modem-hub serve uses"), "\(third.stderrText)")
        _ = await first.stopAndWait()
        // Durations: one range check where each is parsed (a heartbeat of a microsecond burned a core;
        // --seconds 1e300 crashed after 10 s); a negative value is the option's, not a missing one.
        for heartbeat in ["0.000001", "0", "-1", "1e300", "nan"] {
            let r = try await HubProcess.run(HubProcess.binary, ["serve", "--heartbeat", heartbeat, "--db", db])
            #expect(r.status == 64 && r.stderrText.contains("--heartbeat must be 0.1 to 3600 seconds"), "\(heartbeat): \(r.stderrText)")
        }
        for seconds in ["1e300", "-1", "0"] {
            let r = try await HubProcess.run(HubProcess.binary, ["listen", "g", "--seconds", seconds])
            #expect(r.status == 64 && r.stderrText.contains("--seconds must be more than 0 and at most 31536000"), "\(seconds): \(r.stderrText)")
        }
    }
}
