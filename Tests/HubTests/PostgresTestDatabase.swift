import Foundation
import HubCore
import HubStore
import Testing

/// The PostgreSQL cluster of the tests: `HUB_TEST_POSTGRES_URL` (scripts/hub-postgres.sh start prints
/// one). The PostgreSQL tests carry `.enabled(if: PostgresPeer.enabled, PostgresPeer.missing)`: skipped,
/// with the reason shown, where it is not set, unless `SWIFTMODEM_REQUIRE_PEERS=1` (scripts/test.sh in
/// CI) requires every peer; then they run and fail naming it. (This target does not depend on
/// ProcessTestSupport, whose `Peer` decides the same way for the other targets.)
enum PostgresPeer {
    /// The cluster's URL, or nil when `HUB_TEST_POSTGRES_URL` is not set.
    static var url: String? { ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } }
    /// Whether every missing peer is a failure (`SWIFTMODEM_REQUIRE_PEERS=1`).
    static var required: Bool { ProcessInfo.processInfo.environment["SWIFTMODEM_REQUIRE_PEERS"] == "1" }
    /// Whether the PostgreSQL tests run: the cluster is there, or required.
    static var enabled: Bool { url != nil || required }
    /// The skip's reason.
    static let missing: Comment = "no PostgreSQL cluster: set HUB_TEST_POSTGRES_URL (bash scripts/hub-postgres.sh start prints it)"

    /// The URL; throws naming the variable when it is not set.
    static func requireURL() throws -> String {
        guard let url else {
            throw PostgresPeerMissing(description: "HUB_TEST_POSTGRES_URL is not set (bash scripts/hub-postgres.sh start prints it)"
                                      + (required ? "; SWIFTMODEM_REQUIRE_PEERS=1 requires every peer" : ""))
        }
        return url
    }
}

/// The tests' PostgreSQL cluster is not named.
struct PostgresPeerMissing: Error, CustomStringConvertible {
    let description: String
}

/// `HUB_TEST_POSTGRES_URL` with a new, empty database of its own (named `prefix` and random letters), so
/// that tests never see each other's rows nor each other's hub nodes.
func freshPostgresDatabase(prefix: String) async throws -> String {
    let base = try PostgresPeer.requireURL()
    let admin = try await PostgresEngine.open(url: base)
    let name = prefix + HubTokens.base32(HubTokens.randomBytes(8)).lowercased()
    try await admin.query("CREATE DATABASE \(name)", [])
    try await admin.close()
    var c = try #require(URLComponents(string: base))
    c.path = "/" + name
    return try #require(c.string)
}
