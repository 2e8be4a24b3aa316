import HTTPTypes
import Hummingbird
import Synchronization

/// One route: method and path template (`{name}` matches one segment), as in the OpenAPI document.
public struct HubRoute: Sendable, Hashable, CustomStringConvertible {
    public var method: String
    public var path: String
    /// Whether the route belongs in `paths` of docs/openapi.yaml (the OAuth endpoints and the socket are
    /// described elsewhere in it).
    public var documented: Bool
    /// `path` may name parameters as `{name}` or Hummingbird's `:name`; it is kept in the `{name}` form.
    public init(method: String, path: String, documented: Bool = true) {
        self.method = method
        self.path = path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
        self.documented = documented
    }
    public var description: String { "\(method) \(path)" }

    /// Whether `requestPath` (no query) fits the template.
    public func matches(_ requestPath: String) -> Bool {
        HubRoute.matches(template: path, requestPath)
    }

    static func matches(template: String, _ requestPath: String) -> Bool {
        let t = template.split(separator: "/", omittingEmptySubsequences: false)
        let p = requestPath.split(separator: "/", omittingEmptySubsequences: false)
        guard t.count == p.count else { return false }
        for (a, b) in zip(t, p) {
            if a.hasPrefix("{") && a.hasSuffix("}") { if b.isEmpty { return false } } else if a != b { return false }
        }
        return true
    }
}

/// Every route the server answers, for 405 + `Allow` and for the test that keeps the document true.
public final class RouteTable: Sendable {
    private let routes = Mutex<[HubRoute]>([])
    public init() {}
    func add(_ r: HubRoute) { routes.withLock { $0.append(r) } }
    /// Records a route registered on `HubRouter.router` directly (so 405 handling and the document test
    /// know it).
    public func declare(_ method: HTTPRequest.Method, _ path: String, documented: Bool = true) {
        add(HubRoute(method: method.rawValue, path: path, documented: documented))
    }
    /// The routes, in registration order.
    public var all: [HubRoute] { routes.withLock { $0 } }
    /// The methods served on a request path (empty when no template fits).
    public func methods(for path: String) -> [String] {
        var seen: [String] = []
        for r in all where r.matches(path) && !seen.contains(r.method) { seen.append(r.method) }
        return seen
    }
}

/// The hub's router: Hummingbird's, plus the route table. Register every route through `add`.
public final class HubRouter {
    public let router: Router<HubRequestContext>
    public let table: RouteTable

    init(router: Router<HubRequestContext>, table: RouteTable) {
        self.router = router
        self.table = table
    }

    /// Adds a route; `path` uses `{name}` parameters (read them with `context.parameters.get("name")`).
    public func add(_ method: HTTPRequest.Method, _ path: String, documented: Bool = true,
                    _ handler: @escaping @Sendable (Request, HubRequestContext) async throws -> Response) {
        table.add(HubRoute(method: method.rawValue, path: path, documented: documented))
        router.on(RouterPath(path), method: method) { request, context in try await handler(request, context) }
    }
}
