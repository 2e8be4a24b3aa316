import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubStore
import Hummingbird
import HummingbirdTesting
import Testing

/// `/healthz`, `/readyz` and `/metrics` in process (each hub its own metrics registry); the built
/// server with real clients is `HubOpsTests`.
@Suite struct OpsRoutesTests {
    /// The samples of a Prometheus text page: `name{labels}` -> value (a line scan; the process tests
    /// parse with prometheus_client).
    static func samples(_ page: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in page.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else { continue }
            out[String(line[..<space])] = v
        }
        return out
    }

    @Test func healthzAnswersWithoutTokenOrDatabase() async throws {
        let h = try await Harness.make()
        try await h.store.close()   // liveness does not ask the database
        try await h.app().test(.router) { c in
            let a = try await c.call(.get, "/healthz")
            #expect(a.status == 200 && a.text == "ok\n")
            #expect(a[.contentType]?.hasPrefix("text/plain") == true && a[.cacheControl] == "no-store")
        }
    }

    @Test func readyzWaitsForTheGroupsAndNamesWhy() async throws {
        let h = try await Harness.make()
        let groups = GroupsPlugin(nodeName: "ready", heartbeat: .seconds(30))
        try await h.test(.router, plugins: [groups]) { c in
            // The groups' runtime has not started: no tables prepared, no heartbeat.
            let before = try await c.call(.get, "/readyz")
            #expect(before.status == 503)
            #expect(before.json["status"] as? String == "unavailable")
            #expect((before.json["reason"] as? String)?.contains("groups: the tables are not prepared yet") == true, "\(before.text)")
            try await groups.runtime(h.context).start()   // first heartbeat, tables ready
            let after = try await c.call(.get, "/readyz")
            #expect(after.status == 200 && after.text == #"{"status":"ready"}"#, "\(after.text)")
        }
    }

    @Test func readyzSaysTheDatabaseDoesNotAnswer() async throws {
        let h = try await Harness.make()
        try await h.store.close()
        try await h.app().test(.router) { c in
            let a = try await c.call(.get, "/readyz")
            #expect(a.status == 503)
            #expect((a.json["reason"] as? String)?.hasPrefix("database: ") == true, "\(a.text)")
        }
        // The failed query was counted.
        #expect(Self.samples(String(decoding: h.context.metrics.render(), as: UTF8.self))["modemhub_database_errors_total"] ?? 0 >= 1)
    }

    @Test func metricsCountRequestsByRouteTemplateNotPath() async throws {
        let h = try await Harness.make()
        try await h.test(.router, plugins: [GroupsPlugin(nodeName: "m", heartbeat: .seconds(30))]) { c in
            for _ in 0..<3 { _ = try await c.call(.get, "/healthz") }
            #expect(try await c.call(.get, "/no/such/path-\(UUID().uuidString)").status == 404)
            #expect(try await c.call(.get, "/v1/groups/secret-group-name/posts").status == 401)
            let page = try await c.call(.get, "/metrics")
            #expect(page.status == 200 && page[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
            let s = Self.samples(page.text)
            #expect(s[#"modemhub_http_requests_total{method="GET",route="/healthz",status="200"}"#] == 3, "\(page.text)")
            #expect(s[#"modemhub_http_requests_total{method="GET",route="NotFound",status="404"}"#] == 1)
            #expect(s[#"modemhub_http_requests_total{method="GET",route="/v1/groups/{group}/posts",status="401"}"#] == 1)
            #expect(s[#"modemhub_http_request_duration_seconds_count{method="GET",route="/healthz"}"#] == 3)
            // Bounded labels: no raw path, no group name; families present before their first event.
            #expect(!page.text.contains("no/such") && !page.text.contains("secret-group-name"))
            #expect(s[#"modemhub_connections_accepted_total{listener="transit"}"#] == 0)
            #expect(s["modemhub_websocket_connections"] == 0 && s["modemhub_transit_relayed_bytes_total"] == 0)
        }
    }

    @Test func metricsCanBeTurnedOff() async throws {
        let h = try await Harness.make()
        var settings = h.context.settings
        settings.servesMetrics = false
        let context = HubPluginContext(authority: h.authority, store: h.store, settings: settings, logger: h.context.logger)
        let router = HubApp.router(context: context)
        #expect(!router.table.all.contains { $0.path == "/metrics" })
        try await Application(router: router.router).test(.router) { c in
            let metrics = try await c.call(.get, "/metrics"), health = try await c.call(.get, "/healthz")
            #expect(metrics.status == 404 && health.status == 200)
        }
        try await h.store.close()
    }

    @Test func eachHubHasItsOwnRegistry() {
        let a = HubMetrics(), b = HubMetrics()
        a.refused(limit: "max-posts-per-group")
        #expect(Self.samples(String(decoding: a.render(), as: UTF8.self))[#"modemhub_limit_refusals_total{limit="max-posts-per-group"}"#] == 1)
        #expect(Self.samples(String(decoding: b.render(), as: UTF8.self))[#"modemhub_limit_refusals_total{limit="max-posts-per-group"}"#] == nil)
    }
}
