import Foundation
import HubClient
import HubTestSupport
import ProcessTestSupport
import Testing

/// The people's commands as processes (`modem-hub login`, `join`, `listen`, `post`, `unpost`, ...) against
/// a hub running in this process, and `modem hub` forwarding to them.
@Suite struct ClientCLITests {
    static var hubBuilt: Peer {
        .executable(TestProcess.hubBinary, name: "the built modem-hub (\(TestProcess.hubBinary))", remedy: "swift build --product modem-hub, or set HUB_BINARY")
    }

    struct Session {
        let hub: LiveHub
        let config: String
        var env: [String: String] { ["XDG_CONFIG_HOME": config] }
        func run(_ args: [String], timeout: Double = 60) async throws -> ProcessResult {
            try await TestProcess.run(TestProcess.hubBinary, args, env: env, timeout: timeout)
        }
        var loginFile: String { config + "/swiftmodem/hub-client.json" }
        func stored() throws -> HubJSON { try HubJSON(parsing: String(contentsOfFile: loginFile, encoding: .utf8)) }
    }

    static func session(_ hub: LiveHub) throws -> Session {
        Session(hub: hub, config: try TestProcess.tempDir() + "/config")
    }

    static func lines(_ text: String) throws -> [HubJSON] {
        try text.split(separator: "\n").map { try HubJSON(parsing: String($0)) }
    }

    @Test("login keeps a 0600 file and prints no secret; post, listen and join print seed events; unpost; posts; members",
          .requires(hubBuilt))
    func clientCredentialsCommands() async throws {
        try await HubClientTests.withHub { hub in
            let s = try Self.session(hub)
            let notYet = try await s.run(["post", "g", "p0"])
            #expect(notYet.status == 1 && notYet.stderrText.contains("not logged in"), "\(notYet)")

            let secretFile = try TestProcess.tempDir() + "/secret"
            try (hub.plain.secret + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
            let login = try await s.run(["login", "--hub", hub.base, "--client-id", hub.plain.id, "--client-secret-file", secretFile])
            #expect(login.status == 0, "\(login)")
            let mode = try FileManager.default.attributesOfItem(atPath: s.loginFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let token = try #require(try s.stored()["credentials"]?["client"]?["accessToken"]?.stringValue)
            for text in [login.stdoutText, login.stderrText] {
                #expect(!text.contains(hub.plain.secret) && !text.contains(token))
            }

            let posted = try await s.run(["post", "g", "p1", "--json", #"{"k":"v","n":1}"#])
            #expect(posted.status == 0, "\(posted)")
            let echo = try #require(try Self.lines(posted.stdoutText).first)
            #expect(echo["type"] == "post" && echo["pid"] == "p1" && echo["pidload"] == ["k": "v", "n": 1])

            // join: its own presence, the kept post, then a post made meanwhile by another client.
            async let joined = s.run(["join", "g", "--count", "3", "--seconds", "30", "--hello"], timeout: 60)
            // Another program of the same OAuth client: over REST both act as that client's own user.
            let other = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
            try await other.authenticateClientCredentials()
            let restUser = try await other.me().user
            // The post comes once the join is in: the joining process shows online in the group (REST).
            let joinedBy = ContinuousClock.now + .seconds(60)
            while try await !other.members(group: "g").items.contains(where: { $0.timestamp == 0 }) {
                try #require(ContinuousClock.now < joinedBy, "waited 60 s for `modem-hub join g` to show online in g")
                try await Task.sleep(for: .milliseconds(20))
            }
            try await other.post(group: "g", pid: "p2", pidload: ["from": "other"])
            let j = try await joined
            #expect(j.status == 0, "\(j)")
            let events = try Self.lines(j.stdoutText)
            let me = try #require(events.first { $0["type"] == "hello" }?["user"]?.stringValue)
            #expect(events.contains { $0["type"] == "user" && $0["user"] == .string(me) && $0["group"] == "g" && $0["timestamp"] == 0 })
            #expect(events.contains { $0["type"] == "post" && $0["pid"] == "p1" && $0["user"] == .string(restUser) })
            #expect(events.contains { $0["type"] == "post" && $0["pid"] == "p2" && $0["pidload"] == ["from": "other"] })
            #expect(try s.stored()["deviceID"]?.stringValue == me)

            // listen with the kept device id: the same user, and it is not a member.
            let l = try await s.run(["listen", "g", "--count", "2", "--hello", "--seconds", "30"])
            #expect(l.status == 0, "\(l)")
            #expect(try Self.lines(l.stdoutText).first == ["type": "hello", "user": .string(me)])

            let un = try await s.run(["unpost", "g", "p1"])
            #expect(un.status == 0, "\(un)")
            let listed = try await s.run(["posts", "g"])
            #expect(try Self.lines(listed.stdoutText).compactMap { $0["pid"]?.stringValue } == ["p2"])
            let members = try await s.run(["members", "g"])
            let m = try Self.lines(members.stdoutText)
            #expect(m.count == 1 && m.first?["user"] == .string(me) && (m.first?["timestamp"]?.int64Value ?? 0) > 0, "\(members)")

            let bad = try await s.run(["post", "g", "p3", "--json", "[1]"])
            #expect(bad.status == 64 && bad.stderrText.contains("--json"))
            let stranger = try HubClient(baseURL: hub.base, clientID: hub.pw.id, clientSecret: hub.pw.secret)
            try await stranger.authenticateClientCredentials()
            try await stranger.post(group: "g", pid: "p9", pidload: [:])
            let notMine = try await s.run(["unpost", "g", "p9"])
            #expect(notMine.status == 1 && notMine.stderrText.contains("403"), "\(notMine)")

            let out = try await s.run(["logout"])
            #expect(out.status == 0, "\(out)")
            #expect(throws: (any Error).self, "the login file (with the client secret) outlived logout") { try s.stored() }
            // After logout: told to log in, in the tool's words (not the library's method names).
            let who = try await s.run(["whoami"])
            #expect(who.status == 1 && who.stderrText.contains("not logged in") && who.stderrText.contains("modem-hub login"), "\(who)")
            #expect(!who.stderrText.contains("authenticate"), "\(who)")
        }
    }

    @Test("login as an account (password grant): whoami names it",
          .requires(hubBuilt))
    func accountLogin() async throws {
        try await HubClientTests.withHub { hub in
            let s = try Self.session(hub)
            let dir = try TestProcess.tempDir()
            try hub.pw.secret.write(toFile: dir + "/secret", atomically: true, encoding: .utf8)
            try LiveHub.alicePassword.write(toFile: dir + "/pw", atomically: true, encoding: .utf8)
            let login = try await s.run(["login", "--hub", hub.base, "--client-id", hub.pw.id, "--client-secret-file", dir + "/secret",
                                         "--user", "alice", "--password-file", dir + "/pw"])
            #expect(login.status == 0 && login.stdoutText.contains("account alice"), "\(login)")
            #expect(!login.stdoutText.contains(LiveHub.alicePassword))
            let who = try await s.run(["whoami"])
            let j = try #require(try Self.lines(who.stdoutText).first)
            #expect(j["name"] == "alice" && j["kind"] == "account", "\(who)")
            let badLogin = try await s.run(["login", "--hub", "http://127.0.0.1:1", "--client-id", "x", "--client-secret-file", dir + "/secret"])
            #expect(badLogin.status == 1 && badLogin.stderrText.contains("cannot reach"), "\(badLogin)")
        }
    }

    /// A folder with a copy of the built `modem` and nothing else (or what `extra` adds).
    static func lonelyModem() throws -> String {
        let dir = try TestProcess.tempDir()
        try FileManager.default.copyItem(atPath: TestProcess.modemBinary, toPath: dir + "/modem")
        return dir
    }

    static var modemBuilt: Peer {
        .executable(TestProcess.modemBinary, name: "the built modem (\(TestProcess.modemBinary))", remedy: "swift build --product modem, or set MODEM_BINARY")
    }

    @Test("modem hub without modem-hub beside it or on PATH says how to build it",
          .requires(modemBuilt))
    func modemHubAbsent() async throws {
        let dir = try Self.lonelyModem()
        let o = try await TestProcess.run(dir + "/modem", ["hub", "login"], env: ["PATH": "/usr/bin:/bin"])
        #expect(o.status != 0)
        #expect(o.stderrText.contains("swift build --product modem-hub"), "\(o)")
    }

    @Test("modem hub ARGS runs modem-hub ARGS beside it (arguments, output and exit status are modem-hub's)",
          .requires(modemBuilt, hubBuilt))
    func modemHubForwards() async throws {
        let dir = try Self.lonelyModem()
        try "#!/bin/sh\necho \"args:$*\"\nexit 7\n".write(toFile: dir + "/modem-hub", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir + "/modem-hub")
        let o = try await TestProcess.run(dir + "/modem", ["hub", "post", "g", "p", "--json", "{\"a b\":1}"], env: ["PATH": "/usr/bin:/bin"])
        #expect(o.status == 7)
        #expect(o.stdoutText == "args:post g p --json {\"a b\":1}\n", "\(o)")

        // The real one beside the built modem (the two may come from different builds: put them side by
        // side): a people's command end to end.
        let pair = try Self.lonelyModem()
        try FileManager.default.createSymbolicLink(atPath: pair + "/modem-hub", withDestinationPath: TestProcess.hubBinary)
        let modem = pair + "/modem"
        try await HubClientTests.withHub { hub in
            let s = try Self.session(hub)
            let secret = try TestProcess.tempDir() + "/secret"
            try hub.plain.secret.write(toFile: secret, atomically: true, encoding: .utf8)
            let login = try await TestProcess.run(modem, ["hub", "login", "--hub", hub.base, "--client-id", hub.plain.id,
                                                                            "--client-secret-file", secret], env: s.env)
            #expect(login.status == 0, "\(login)")
            let who = try await TestProcess.run(modem, ["hub", "whoami"], env: s.env)
            #expect(who.status == 0 && who.stdoutText.contains(hub.plain.id), "\(who)")
        }
    }
}
