import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubStore
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// A clock the tests move by hand (Unix milliseconds).
final class FakeClock: Sendable {
    private let now = Mutex<Int64>(1_800_000_000_000)
    var ms: Int64 { now.withLock { $0 } }
    func advance(seconds: Int64) { now.withLock { $0 += seconds * 1000 } }
}

/// Codes "delivered out of band", kept for the test to read.
final class CapturingSender: ConfirmationSender {
    private let codes = Mutex<[String: String]>([:])
    func send(code: String, purpose: String, user: String, contact: String?) async {
        codes.withLock { $0["\(purpose):\(user)"] = code }
    }
    func code(_ purpose: String, _ user: String) -> String? { codes.withLock { $0["\(purpose):\(user)"] } }
}

/// A hub on a fresh SQLite file with two clients (one allowed the password grant) and the account alice.
struct Harness: Sendable {
    let store: SQLHubStore
    let authority: HubAuthority
    let clock = FakeClock()
    let sender = CapturingSender()
    let context: HubPluginContext
    let plain: (id: String, secret: String)
    let pw: (id: String, secret: String)
    static let alicePassword = "correct horse battery"

    static func make() async throws -> Harness {
        try await Harness(dummy: ())
    }

    private init(dummy: ()) async throws {
        let logger = Logger(label: "hub-test")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hubserver-\(UUID().uuidString)")
        store = try await SQLHubStore.open(.sqlite(path: dir.path + "/hub.sqlite"), logger: logger, nowMs: 0)
        var a = HubAuthority.Settings()
        a.bcryptCost = 4  // fast in tests; the server uses 12
        let clock = self.clock
        authority = HubAuthority(store: store, settings: a, logger: logger, clock: { clock.ms })
        var settings = HubServerSettings()
        settings.port = 8080
        context = HubPluginContext(authority: authority, store: store, settings: settings, logger: logger)
        var made: [(String, String)] = []
        for (name, grant) in [("plain", false), ("pw", true)] {
            let id = HubTokens.newID(prefix: "c_"), secret = HubTokens.newClientSecret()
            try await store.createClient(ClientRecord(id: id, name: name, secretSHA256: HubTokens.sha256(secret),
                                                      passwordGrant: grant, createdMs: 0))
            made.append((id, secret))
        }
        plain = made[0]
        pw = made[1]
        try await store.createUser(UserRecord(id: "u_alice", name: "alice", passwordBcrypt: try await authority.hashPassword(Self.alicePassword),
                                              contact: nil, confirmed: true, createdMs: 0))
    }

    func app(plugins: [any HubPlugin] = []) -> some ApplicationProtocol {
        Application(router: HubApp.router(context: context, plugins: plugins, sender: sender).router)
    }

    /// Runs `body` against the app (in process or live), with `plugins` (the groups side) registered,
    /// and closes the store afterwards.
    func test(_ kind: TestingSetup, plugins: [any HubPlugin] = [],
              _ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        do {
            try await app(plugins: plugins).test(kind, body)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    static func basic(_ id: String, _ secret: String) -> String {
        "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
    }
}

/// A response taken apart.
struct Answer {
    let status: Int
    let headers: HTTPFields
    let text: String
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
    var error: String? { json["error"] as? String }
    var jsendStatus: String? { json["status"] as? String }
    var data: [String: Any] { json["data"] as? [String: Any] ?? [:] }
    subscript(_ h: HTTPField.Name) -> String? { headers[h] }
}

extension TestClientProtocol {
    func call(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], body: String? = nil) async throws -> Answer {
        try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { r in
            Answer(status: r.status.code, headers: r.headers, text: String(buffer: r.body))
        }
    }

    /// POST a form to the token or revocation endpoint.
    func form(_ uri: String, _ body: String, auth: String? = nil) async throws -> Answer {
        var h: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let auth { h[.authorization] = auth }
        return try await call(.post, uri, headers: h, body: body)
    }

    func json(_ method: HTTPRequest.Method, _ uri: String, token: String?, _ body: String? = nil) async throws -> Answer {
        var h: HTTPFields = [:]
        if body != nil { h[.contentType] = "application/json" }
        if let token { h[.authorization] = "Bearer " + token }
        return try await call(method, uri, headers: h, body: body)
    }

    func ccToken(_ h: Harness) async throws -> String {
        let a = try await form("/oauth/token", "grant_type=client_credentials", auth: Harness.basic(h.plain.id, h.plain.secret))
        return try #require(a.json["access_token"] as? String)
    }
}
