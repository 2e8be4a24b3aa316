import Foundation
import HubCore
import HubStore
import Testing

/// `HUB_TEST_POSTGRES_URL` with a new, empty database of its own (named `prefix` and random letters), so
/// that tests never see each other's rows nor each other's hub nodes.
func freshPostgresDatabase(prefix: String) async throws -> String {
    let base = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"] ?? ""
    let admin = try await PostgresEngine.open(url: base)
    let name = prefix + HubTokens.base32(HubTokens.randomBytes(8)).lowercased()
    try await admin.query("CREATE DATABASE \(name)", [])
    try await admin.close()
    var c = try #require(URLComponents(string: base))
    c.path = "/" + name
    return try #require(c.string)
}
