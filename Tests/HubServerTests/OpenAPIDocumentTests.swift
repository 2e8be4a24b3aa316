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

    @Test func docsFileIsTheServedDocument() throws {
        let file = try Data(contentsOf: URL(fileURLWithPath: HubProcess.packageRoot + "/docs/openapi.yaml"))
        #expect(Array(file) == OpenAPIDocument.bytes, "the compiled-in document is not docs/openapi.yaml")
        #expect(Array(OpenAPIDocument.yaml.utf8) == Array(file))
    }

    @Test func operationsAreTheRoutesServed() async throws {
        let h = try await Harness.make()
        // The server as `modem-hub serve` builds it: the hub's routes and the groups plugin's.
        let table = HubApp.router(context: h.context, plugins: [GroupsPlugin(nodeName: "t", heartbeat: .seconds(30))]).table
        try await h.store.close()
        let served = Set(table.all.filter(\.documented).map(\.description))
        let documented = Self.documentedOperations(OpenAPIDocument.yaml)
        #expect(documented.count >= 12)
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented))")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served))")
        #expect(served.contains("PUT /v1/users/me/userload") && served.contains("DELETE /v1/groups/{group}/posts/{pid}"))
        // The socket is served but described in info.description, not under paths.
        #expect(table.all.contains { $0.description == "GET /v1/socket" && !$0.documented })
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
        // Payloads: the validator's member limit is the document's maxProperties, and the text names both limits.
        #expect(doc.contains("Any JSON object of at most \(PresenceLimits.maxPayloadMembers) members and \(PresenceLimits.maxPayloadBytes / 1024) KiB"))
        #expect(doc.contains("maxProperties: \(PresenceLimits.maxPayloadMembers)\n"))
    }

    @Test func parserSeesOperations() {
        let ops = Self.documentedOperations("paths:\n  /a/{x}:\n    get:\n      x: 1\n    delete:\n  /b:\n    post:\ncomponents:\n  /c:\n    get:\n")
        #expect(ops == ["GET /a/{x}", "DELETE /a/{x}", "POST /b"])
    }
}
