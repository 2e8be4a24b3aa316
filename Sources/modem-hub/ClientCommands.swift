// The people's commands (`modem-hub login`, `join`, `listen`, `post`, ...; `modem hub ...` runs them):
// HubClient on the hub's API, with the login kept in a 0600 file under $XDG_CONFIG_HOME/swiftmodem/.

import ArgumentParser
import Foundation
import HubClient
#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime

/// The login kept between runs: the hub, the OAuth client, the tokens and the device id. Secrets: the
/// file is created 0600 and its contents are never printed.
struct ClientLogin: Codable {
    var hub: String
    var clientID: String
    var clientSecret: String
    /// The account name for a resource-owner login, nil for a client-credentials one.
    var username: String?
    var allowInvalidCertificates: Bool
    var credentials: HubCredentials
    /// The device id the hub gave this client's sockets (client-credentials logins).
    var deviceID: String?

    /// `$XDG_CONFIG_HOME/swiftmodem/hub-client.json` (`~/.config` when unset).
    static var path: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (env["HOME"] ?? NSHomeDirectory()) + "/.config"
        return base + "/swiftmodem/hub-client.json"
    }

    /// The kept login, or nil (silently) when there is none or it cannot be read.
    static func existing() -> ClientLogin? {
        FileManager.default.contents(atPath: path).flatMap { try? JSONDecoder().decode(ClientLogin.self, from: $0) }
    }

    static func load() throws -> ClientLogin {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw fail("not logged in (no \(path)): run `modem-hub login --hub URL --client-id ID --client-secret-file F`", Exit.failure)
        }
        do { return try JSONDecoder().decode(ClientLogin.self, from: data) } catch {
            throw fail("\(path) is not a login file this version reads; log in again", Exit.failure)
        }
    }

    /// Writes the file with mode 0600 (created so, never readable by others in between), atomically.
    func save() throws {
        let p = Self.path
        let dir = (p as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try e.encode(self)
        do throws(AtomicFileError) {
            try AtomicFile.write(Array(data), to: p, mode: .ownerOnly, durability: .synced)
        } catch {
            throw fail(error.description, Exit.failure)
        }
    }

    /// A client with this login's tokens; refreshed or new tokens are saved as they come.
    func makeClient() throws -> HubClient {
        let client: HubClient
        do { client = try HubClient(baseURL: hub, clientID: clientID, clientSecret: clientSecret) } catch {
            throw fail("\(error)", Exit.usage)
        }
        if allowInvalidCertificates { client.allowInvalidCertificates() }
        client.restore(credentials)
        let snapshot = self
        client.onCredentialsChange = { creds in
            var l = snapshot
            l.credentials = creds
            if let latest = ClientLogin.existing() { l.deviceID = latest.deviceID }
            try? l.save()
        }
        // A client-credentials login can always get a new token; an account's needs its password again.
        if username == nil {
            client.oauthError = { c, _ in _ = try? await c.authenticateClientCredentials() }
        }
        return client
    }
}

/// Reads the first line of a secret file (without its newline); the value is never printed.
func readSecretLine(_ path: String, what: String) throws -> String {
    guard let data = FileManager.default.contents(atPath: path) else { throw fail("cannot read \(path)", Exit.usage) }
    guard let text = String(data: data.prefix(4096), encoding: .utf8) else { throw fail("\(what) file is not UTF-8", Exit.usage) }
    var line = String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    if line.hasSuffix("\r") { line.removeLast() }
    guard !line.isEmpty else { throw fail("\(what) file \(path) is empty", Exit.usage) }
    return line
}

/// A `HubClientError` as the command's failure: bad input 64, everything else 1.
func clientFailure(_ error: any Error) -> ExitCode {
    if let e = error as? ExitCode { return e }
    if let e = error as? HubClientError {
        switch e {
        case .invalidArgument: return fail("\(e)", Exit.usage)
        case .fail(let status, _, _) where status == 400: return fail("\(e)", Exit.usage)
        case .notAuthenticated:
            return fail("the login holds no token: log in again (modem-hub login)", Exit.failure)
        case .invalidToken:
            return fail("\(e) (log in again: modem-hub login)", Exit.failure)
        default: return fail("\(e)", Exit.failure)
        }
    }
    return fail("\(error)", Exit.failure)
}

func printLine(_ s: String) {
    FileHandle.standardOutput.write(Data((s + "\n").utf8))
}

/// Runs `body`, mapping hub errors to exit codes.
func withHubClient<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch { throw clientFailure(error) }
}

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log in to a hub (client credentials, or an account with --user) and keep the login in $XDG_CONFIG_HOME/swiftmodem/hub-client.json (mode 0600).")
    @Option(help: "The hub's URL, http(s)://HOST:PORT.") var hub: String
    @Option(name: .customLong("client-id"), help: "The OAuth client id (modem-hub client add).") var clientID: String
    @Option(name: .customLong("client-secret-file"), help: "File whose first line is the client secret (default: $MODEM_HUB_CLIENT_SECRET).")
    var clientSecretFile: String?
    @Option(help: "Log in as this account (password grant; the client must allow it).") var user: String?
    @Option(name: .customLong("password-file"), help: "File whose first line is the account's password (with --user).") var passwordFile: String?
    @Flag(name: .customLong("allow-invalid-certificates"),
          help: "Accept any TLS certificate from the hub (development with a self-signed certificate ONLY; never in production).")
    var allowInvalidCertificates = false

    func run() async throws {
        let secret: String
        if let f = clientSecretFile { secret = try readSecretLine(f, what: "the client secret") }
        else if let s = ProcessInfo.processInfo.environment["MODEM_HUB_CLIENT_SECRET"], !s.isEmpty { secret = s }
        else { throw fail("give --client-secret-file F (or set MODEM_HUB_CLIENT_SECRET)", Exit.usage) }
        guard (user == nil) == (passwordFile == nil) else { throw fail("--user and --password-file go together", Exit.usage) }
        let password = try passwordFile.map { try readSecretLine($0, what: "the password") }
        var login = ClientLogin(hub: hub, clientID: clientID, clientSecret: secret, username: user,
                                allowInvalidCertificates: allowInvalidCertificates, credentials: HubCredentials(), deviceID: nil)
        if let old = ClientLogin.existing(), old.hub == hub, old.clientID == clientID { login.deviceID = old.deviceID }
        let client = try login.makeClient()
        client.onCredentialsChange = nil
        try await withHubClient {
            guard await client.isReachable() else {
                throw HubClientError.transport("no answer from \(hub) (is `modem-hub serve` running there, and its certificate trusted?)")
            }
            if let user, let password {
                try await client.authenticateResourceOwner(username: user, password: password)
            } else {
                try await client.authenticateClientCredentials()
            }
        }
        login.credentials = client.credentials
        try login.save()
        printLine("logged in to \(hub) as \(user.map { "account \($0)" } ?? "client \(clientID)")")
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke the login's tokens at the hub and forget the login (its file, the client secret in it included).")
    func run() async throws {
        let login = try ClientLogin.load()
        let client = try login.makeClient()
        client.onCredentialsChange = nil
        let a = await client.deauthenticateResourceOwner()
        let b = await client.deauthenticateClient()
        // Forgotten here whatever the hub said: the user asked to be logged out on this machine.
        if unlink(ClientLogin.path) != 0 && errno != ENOENT {
            throw fail("cannot remove \(ClientLogin.path): \(String(cString: strerror(errno)))", Exit.failure)
        }
        guard a && b else { throw fail("forgot the login, but the hub did not confirm the tokens' revocation", Exit.failure) }
        printLine("logged out of \(login.hub)")
    }
}

struct WhoAmI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "whoami", abstract: "Who the login acts as (GET /v1/users/me).")
    func run() async throws {
        let client = try ClientLogin.load().makeClient()
        let me = try await withHubClient { try await client.me() }
        let j: HubJSON = ["user": .string(me.user), "kind": .string(me.kind), "name": me.name.map(HubJSON.string) ?? .null,
                          "client_id": .string(me.clientID)]
        printLine(j.jsonText)
    }
}

/// Options of the commands that print a group's events.
struct EventOptions: ParsableArguments {
    @Argument(help: "The groups.") var groups: [String]
    @Option(parsing: .unconditional, help: "Stop after this many events (the hello not counted).") var count: Int?
    @Option(parsing: .unconditional, help: "Stop after this many seconds (at most a year).") var seconds: Double?
    @Flag(name: .customLong("hello"), help: "Also print the hello event (the socket's user id).") var printHello = false

    func validate() throws {
        guard !groups.isEmpty else { throw ValidationError("name at least one group") }
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
        if let seconds, !(seconds > 0 && seconds <= 31_536_000) {
            throw ValidationError("--seconds must be more than 0 and at most 31536000 (a year), not \(seconds)")
        }
    }
}

/// Joins or listens to groups and prints each event as one line of JSON until SIGINT/SIGTERM, `--count`
/// or `--seconds`; a dropped socket ends with exit 1 and the reason.
func followGroups(_ o: EventOptions, join: Bool) async throws {
    var login = try ClientLogin.load()
    let client = try login.makeClient()
    let connection: HubGroupsConnection = try await withHubClient {
        _ = try await client.me()  // refreshes an expired token before the upgrade
        return try await client.connectGroups(user: login.username == nil ? login.deviceID : nil)
    }
    if login.username == nil, login.deviceID != connection.user {
        login = ClientLogin.existing() ?? login
        login.deviceID = connection.user
        try? login.save()
    }
    let stop = StopSignals { Task { await connection.close() } }
    defer { stop.cancel() }
    var timer: Task<Void, Never>?
    if let s = o.seconds {
        timer = Task {
            try? await Task.sleep(for: .milliseconds(Int64(s * 1000)))
            if !Task.isCancelled { await connection.close() }
        }
    }
    defer { timer?.cancel() }
    do {
        for g in o.groups { try join ? connection.join(g) : connection.listen(g) }
        var seen = 0
        for try await event in connection {
            if case .hello = event, !o.printHello { continue }
            printLine(event.json.jsonText)
            if case .hello = event { continue }
            seen += 1
            if let c = o.count, seen >= c { await connection.close(); break }
        }
    } catch {
        await connection.close()
        throw clientFailure(error)
    }
}

/// SIGINT and SIGTERM run `action` once (instead of killing the process).
final class StopSignals {
    private let sources: [any DispatchSourceSignal]
    init(_ action: @escaping @Sendable () -> Void) {
        var made: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler(handler: action)
            s.resume()
            made.append(s)
        }
        sources = made
    }
    func cancel() { sources.forEach { $0.cancel() } }
}

struct Join: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join groups (be seen) and print their presence and posts, one JSON object per line.")
    @OptionGroup var options: EventOptions
    func run() async throws { try await followGroups(options, join: true) }
}

struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Listen to groups (unseen) and print their presence and posts, one JSON object per line.")
    @OptionGroup var options: EventOptions
    func run() async throws { try await followGroups(options, join: false) }
}

struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "post", abstract: "Post PID to GROUP (kept until unposted).")
    @Argument(help: "The group.") var group: String
    @Argument(help: "The post's id.") var pid: String
    @Option(help: "The pidload, a JSON object.") var json: String = "{}"

    func run() async throws {
        guard let load = try? HubJSON(parsing: json), let object = load.objectValue else {
            throw fail("--json must be a JSON object, got '\(json.prefix(80))'", Exit.usage)
        }
        let client = try ClientLogin.load().makeClient()
        let p = try await withHubClient { try await client.post(group: group, pid: pid, pidload: object) }
        printLine(HubGroupEvent.post(p).json.jsonText)
    }
}

struct Unpost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove one's own post PID from GROUP.")
    @Argument(help: "The group.") var group: String
    @Argument(help: "The post's id.") var pid: String
    func run() async throws {
        let client = try ClientLogin.load().makeClient()
        try await withHubClient { try await client.unpost(group: group, pid: pid) }
        printLine("unposted \(pid) from \(group)")
    }
}

struct Members: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a group's members (online: timestamp 0), one JSON object per line.")
    @Argument(help: "The group.") var group: String
    @Option(parsing: .unconditional, help: "Page size (1-1000).") var limit: Int = 100
    func run() async throws {
        let client = try ClientLogin.load().makeClient()
        try await withHubClient {
            var skip: Int? = 0
            while let s = skip {
                let page = try await client.members(group: group, limit: limit, skip: s)
                for m in page.items { printLine(HubJSON(["user": .string(m.user), "timestamp": .integer(m.timestamp), "userload": m.userload]).jsonText) }
                skip = page.nextSkip
            }
        }
    }
}

struct Posts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a group's kept posts, one JSON object per line.")
    @Argument(help: "The group.") var group: String
    @Option(parsing: .unconditional, help: "Page size (1-1000).") var limit: Int = 100
    func run() async throws {
        let client = try ClientLogin.load().makeClient()
        try await withHubClient {
            var skip: Int? = 0
            while let s = skip {
                let page = try await client.posts(group: group, limit: limit, skip: s)
                for p in page.items { printLine(HubGroupEvent.post(p).json.jsonText) }
                skip = page.nextSkip
            }
        }
    }
}

extension HubJSON {
    init(_ members: [String: HubJSON]) { self = .object(members) }
}

/// The people's commands, for the root command's list.
var clientSubcommands: [any ParsableCommand.Type] {
    [
        Login.self, Logout.self, WhoAmI.self, Join.self, Listen.self, PostCommand.self, Unpost.self, Members.self, Posts.self,
    ]
}
