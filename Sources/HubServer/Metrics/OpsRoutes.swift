// What an operator (and a load balancer, an orchestrator, Prometheus) asks the hub: is the process
// serving (`/healthz`), can this node take traffic (`/readyz`), and what has it done (`/metrics`). None
// needs a token, none touches a user's data, and none says anything secret.

import Foundation
import HTTPTypes
import HubCore
import HubStore
import Hummingbird
import NIOCore
import Synchronization

/// `GET /healthz`, `GET /readyz` and `GET /metrics`.
public enum OpsRoutes {
    /// How long `/readyz` waits for the database's answer before it says the database does not answer.
    public static let databaseTimeout: Duration = .seconds(2)
    /// The routes that are probed often: their requests are logged at debug level, not info.
    public static let quietPaths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    static func register(on r: HubRouter, context: HubPluginContext, plugins: [any HubPlugin]) {
        // Liveness: the process serves HTTP. No database, no token: a hub whose database is down is
        // alive (restarting it would not help), only not ready.
        r.add(.get, "/healthz") { _, _ in
            var h = HTTPFields()
            h[.contentType] = "text/plain; charset=utf-8"
            h[.cacheControl] = "no-store"
            return Response(status: .ok, headers: h, body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        // Readiness: the database answers a trivial query and every part of the hub can serve (the
        // groups: their tables prepared, this node's heartbeat current, on PostgreSQL the bus's LISTEN up).
        r.add(.get, "/readyz") { _, _ in
            var reasons: [String] = []
            if let why = await databaseProblem(context.store.db, within: databaseTimeout) { reasons.append(why) }
            for p in plugins {
                if let why = await p.readiness(context: context) { reasons.append(why) }
            }
            return readyAnswer(reasons)
        }
        if context.settings.servesMetrics {
            let metrics = context.metrics
            r.add(.get, "/metrics") { _, _ in
                var h = HTTPFields()
                h[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                h[.cacheControl] = "no-store"
                return Response(status: .ok, headers: h, body: .init(byteBuffer: ByteBuffer(bytes: metrics.render())))
            }
        }
    }

    /// 200 `{"status":"ready"}`, or 503 `{"status":"unavailable","reason":"..."}` naming every reason.
    static func readyAnswer(_ reasons: [String]) -> Response {
        var h = HTTPFields()
        h[.contentType] = "application/json"
        h[.cacheControl] = "no-store"
        if reasons.isEmpty {
            return Response(status: .ok, headers: h, body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ready"}"#)))
        }
        let body = #"{"reason":"# + JSONText.string(reasons.joined(separator: "; ")) + #","status":"unavailable"}"#
        return Response(status: .serviceUnavailable, headers: h, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// Why the database does not serve (`SELECT 1` failed, or gave no answer within `within`), or nil.
    /// The query runs in a task of its own, so a database that hangs makes the probe answer at the
    /// deadline rather than hang with it.
    static func databaseProblem(_ db: any SQLDatabase, within: Duration) async -> String? {
        let first = FirstAnswer()
        let why = await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            first.wait(c)
            first.add(Task {
                do {
                    _ = try await db.query("SELECT 1", [])
                    first.give(nil)
                } catch {
                    first.give("database: \(String(describing: error).prefix(160))")
                }
            })
            first.add(Task {
                try? await Task.sleep(for: within)
                first.give("database: no answer within \(within)")
            })
        }
        first.cancelAll()
        return why
    }

    /// The first of several answers, handed to one waiter; the tasks that race to give it.
    private final class FirstAnswer: Sendable {
        private let state = Mutex<(waiter: CheckedContinuation<String?, Never>?, tasks: [Task<Void, Never>])>((nil, []))
        func wait(_ c: CheckedContinuation<String?, Never>) { state.withLock { $0.waiter = c } }
        func add(_ t: Task<Void, Never>) { state.withLock { $0.tasks.append(t) } }
        func give(_ answer: String?) { state.withLock { $0.waiter.take() }?.resume(returning: answer) }
        /// Cancels whichever is still running (the deadline's sleep, or a query that hangs).
        func cancelAll() { for t in state.withLock({ $0.tasks }) { t.cancel() } }
    }
}
