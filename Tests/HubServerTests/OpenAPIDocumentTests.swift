import Foundation
import HubCore
import HubServer
import Testing

/// Keeps docs/openapi.yaml true: it is the text served, its operations are the routes served (and the
/// other way round), and its limits are the ones the validators use (`HubCore.Limits`).
@Suite struct OpenAPIDocumentTests {
    /// `(METHOD, path)` of every operation under `paths:` (a line scan of the document's fixed layout).
    static func documentedOperations(_ yaml: String) -> Set<String> {
        var ops = Set<String>(), path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("components:") { break }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") { path = String(line.dropFirst(2).dropLast()) }
            for m in ["get", "put", "post", "delete", "patch", "head", "options"] where line == "    \(m):" {
                if let p = path { ops.insert("\(m.uppercased()) \(p)") }
            }
        }
        return ops
    }

    /// The groups side's REST routes (hub-groups' GroupRoutes), documented here but registered by its plugin;
    /// an operation in this set that becomes served by the router below fails the test, so the list cannot go stale.
    static let groupsSide: Set<String> = [
        "GET /v1/groups/{group}/members", "GET /v1/groups/{group}/posts", "POST /v1/groups/{group}/posts",
        "GET /v1/groups/{group}/posts/{pid}", "DELETE /v1/groups/{group}/posts/{pid}", "PUT /v1/users/me/userload",
    ]

    @Test func docsFileIsTheServedDocument() throws {
        let file = try String(contentsOfFile: HubProcess.packageRoot + "/docs/openapi.yaml", encoding: .utf8)
        #expect(file == OpenAPIDocument.yaml + "\n", "docs/openapi.yaml differs from OpenAPIDocument.yaml")
    }

    @Test func operationsAreTheRoutesServed() async throws {
        let h = try await Harness.make()
        let table = HubApp.router(context: h.context).table
        try await h.store.close()
        let served = Set(table.all.filter(\.documented).map(\.description))
        let documented = Self.documentedOperations(OpenAPIDocument.yaml)
        #expect(documented.count >= 10)
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented))")
        let missing = documented.subtracting(served)
        #expect(missing.subtracting(Self.groupsSide).isEmpty, "documented but not served: \(missing.subtracting(Self.groupsSide))")
        #expect(served.intersection(Self.groupsSide).isEmpty, "groups routes now served here: drop them from groupsSide")
        // The OAuth endpoints are served and described by the oauth2 security scheme, not as operations.
        #expect(table.all.contains { $0.description == "POST /oauth/token" && !$0.documented })
        #expect(table.all.contains { $0.description == "POST /oauth/revoke" && !$0.documented })
        #expect(OpenAPIDocument.yaml.contains("tokenUrl: /oauth/token"))
    }

    @Test func limitsAreTheValidators() {
        let doc = OpenAPIDocument.yaml
        #expect(doc.contains("pattern: \"\(Limits.namePattern)\""))
        #expect(doc.contains("pattern: \"\(Limits.usernamePattern)\""))
        #expect(doc.contains("pattern: \"\(Limits.codePattern)\""))
        #expect(doc.contains("minLength: \(Limits.passwordMinLength)\n      maxLength: \(Limits.passwordMaxLength)"))
        #expect(doc.contains("contact: {type: string, minLength: 1, maxLength: \(Limits.contactMaxLength)}"))
        #expect(doc.contains("schema: {type: integer, minimum: \(Limits.minLimit), maximum: \(Limits.maxLimit), default: \(Limits.defaultLimit)}"))
        #expect(doc.contains("schema: {type: integer, minimum: 0, maximum: \(Limits.maxSkip), default: 0}"))
    }

    @Test func parserSeesOperations() {
        let ops = Self.documentedOperations("paths:\n  /a/{x}:\n    get:\n      x: 1\n    delete:\n  /b:\n    post:\ncomponents:\n  /c:\n    get:\n")
        #expect(ops == ["GET /a/{x}", "DELETE /a/{x}", "POST /b"])
    }
}
