import Foundation
import Testing

/// The built `modem-hub` as a process, against independent OAuth2 clients in Python (requests-oauthlib's
/// backend and legacy application clients, authlib): Tests/scripts/hub_oauth_clients.py. Also the CLI's
/// exact output and exit codes, TLS, and a graceful stop on SIGTERM.
@Suite(.serialized) struct PeerInteropTests {
    static let script = HubProcess.packageRoot + "/Tests/scripts/hub_oauth_clients.py"

    func prepare(_ dir: String) throws -> (db: String, plain: (id: String, secret: String), pw: (id: String, secret: String)) {
        let db = "sqlite:\(dir)/hub.sqlite"
        let plain = try HubProcess.addClient("plain", passwordGrant: false, db: db)
        let pw = try HubProcess.addClient("pw", passwordGrant: true, db: db)
        try Data("correct horse battery".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        let u = try HubProcess.run(HubProcess.binary, ["user", "add", "alice", "--password-file", dir + "/pw", "--db", db])
        #expect(u.status == 0, "\(u.stderr)")
        return (db, plain, pw)
    }

    @Test(.enabled(if: HubProcess.peersAvailable, "no .build/hub-venv (scripts/hub-venv.sh)"))
    func oauthClientsOverHTTP() throws {
        let dir = try HubProcess.tempDir()
        let (db, plain, pw) = try prepare(dir)
        let server = try HubProcess.Server(db: db, dir: dir)
        let o = try HubProcess.run(HubProcess.python, [Self.script, server.base, plain.id, plain.secret, pw.id, pw.secret,
                                                       "alice", "correct horse battery"])
        #expect(server.stop() == 0, "graceful stop on SIGTERM")
        #expect(o.status == 0, "\(o.stdout)\(o.stderr)")
        #expect(o.stdout.contains(" passed, 0 failed"), "\(o.stdout)")
        // Nothing secret reached the log: no client secret, token, or password.
        let log = server.log()
        for secret in [plain.secret, pw.secret, "correct horse battery", "mha_", "mhr_"] {
            #expect(!log.contains(secret), "log holds a secret: \(secret.prefix(6))…")
        }
        #expect(log.contains("POST /oauth/token 200"))
    }

    @Test(.enabled(if: HubProcess.peersAvailable, "no .build/hub-venv (scripts/hub-venv.sh)"))
    func oauthClientsOverTLS() throws {
        let dir = try HubProcess.tempDir()
        let (db, plain, pw) = try prepare(dir)
        // A throwaway self-signed certificate for 127.0.0.1, trusted by the clients through the bundle.
        let cert = dir + "/cert.pem", key = dir + "/key.pem"
        let ssl = try HubProcess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-addext", "basicConstraints=critical,CA:TRUE"])
        try #require(ssl.status == 0, "\(ssl.stderr)")
        let server = try HubProcess.Server(db: db, extra: ["--tls-cert", cert, "--tls-key", key], tls: true, caFile: cert, dir: dir)
        let o = try HubProcess.run(HubProcess.python, [Self.script, server.base, plain.id, plain.secret, pw.id, pw.secret,
                                                       "alice", "correct horse battery", cert])
        server.stop()
        #expect(o.status == 0, "\(o.stdout)\(o.stderr)")
        #expect(o.stdout.contains(" passed, 0 failed"), "\(o.stdout)")
    }

    @Test(.enabled(if: HubProcess.peersAvailable && ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] != nil,
                   "needs .build/hub-venv and HUB_TEST_POSTGRES_URL (scripts/hub-postgres.sh start)"))
    func oauthClientsOnPostgreSQL() async throws {
        // A fresh database on the test cluster, so earlier runs' clients and users do not collide.
        let base = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"]!
        let name = "hubpeer_" + UUID().uuidString.prefix(8).lowercased()
        let created = try HubProcess.run("/usr/bin/env", ["psql", base, "-qc", "CREATE DATABASE \(name)"])
        try #require(created.status == 0, "\(created.stderr)")
        var c = try #require(URLComponents(string: base))
        c.path = "/" + name
        let db = try #require(c.string)
        let dir = try HubProcess.tempDir()
        let plain = try HubProcess.addClient("plain", passwordGrant: false, db: db)
        let pw = try HubProcess.addClient("pw", passwordGrant: true, db: db)
        try Data("correct horse battery".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        #expect(try HubProcess.run(HubProcess.binary, ["user", "add", "alice", "--password-file", dir + "/pw", "--db", db]).status == 0)
        // Two nodes on one database: a token from one is good on the other, a revocation on one is seen by both.
        let n1 = try HubProcess.Server(db: db, extra: ["--node", "n1"], dir: dir)
        let n2 = try HubProcess.Server(db: db, extra: ["--node", "n2"], dir: dir)
        let o = try HubProcess.run(HubProcess.python, [Self.script, n1.base, plain.id, plain.secret, pw.id, pw.secret,
                                                       "alice", "correct horse battery"])
        #expect(o.status == 0, "\(o.stdout)\(o.stderr)")
        let tok = try HubProcess.run("/usr/bin/curl", ["-s", "-u", "\(plain.id):\(plain.secret)", "-d", "grant_type=client_credentials",
                                                       n1.base + "/oauth/token"])
        let token = try #require((try JSONSerialization.jsonObject(with: Data(tok.stdout.utf8)) as? [String: Any])?["access_token"] as? String)
        func me(_ server: HubProcess.Server) throws -> String {
            try HubProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(token)",
                                                 server.base + "/v1/users/me"]).stdout
        }
        #expect(try me(n2) == "200")
        _ = try HubProcess.run("/usr/bin/curl", ["-s", "-u", "\(plain.id):\(plain.secret)", "-d", "token=\(token)", n2.base + "/oauth/revoke"])
        #expect(try me(n1) == "401")
        n1.stop()
        n2.stop()
    }

    @Test func cliOutputAndExitCodes() throws {
        let dir = try HubProcess.tempDir()
        let db = "sqlite:\(dir)/hub.sqlite"
        let add = try HubProcess.run(HubProcess.binary, ["client", "add", "app", "--db", db])
        #expect(add.status == 0)
        let lines = add.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty, "exactly two lines: \(add.stdout)")
        #expect(lines[0].hasPrefix("client_id=c_") && lines[1].hasPrefix("client_secret=mhs_"))
        #expect(try HubProcess.run(HubProcess.binary, ["client", "add", "app", "--db", db]).status == 1)  // name taken
        try Data("pw-without-newline".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        #expect(try HubProcess.run(HubProcess.binary, ["user", "add", "carol", "--password-file", dir + "/pw", "--db", db]).status == 0)
        #expect(try HubProcess.run(HubProcess.binary, ["user", "add", "carol", "--password-file", dir + "/pw", "--db", db]).status == 1)
        let badDB = try HubProcess.run(HubProcess.binary, ["client", "add", "x", "--db", "mysql://h/d"])
        #expect(badDB.status == 64 && badDB.stderr.contains("--db"))
        #expect(try HubProcess.run(HubProcess.binary, ["user", "add", "dave", "--password-file", dir + "/missing", "--db", db]).status == 64)
        #expect(try HubProcess.run(HubProcess.binary, ["serve", "--listen", "nonsense", "--db", db]).status == 64)
        #expect(try HubProcess.run(HubProcess.binary, ["serve", "--tls-cert", dir + "/pw", "--db", db]).status == 64)
        #expect(try HubProcess.run(HubProcess.binary, ["serve", "--no-such-option"]).status == 64)
    }
}
