// REST for groups (the hub API's conventions, JSend): members and posts as paginated lists, posts made
// and removed by their author, the caller's userload. Payloads are answered as their exact text.

import Foundation
import HubCore
import HubStore
import Hummingbird
import NIOCore

/// A JSend answer of the groups routes (`JSend.encode`: payloads are placed as their exact text).
public struct GroupJSend: Sendable {
    /// `{"data":DATA,"status":"success"}`
    public static func success<Payload: Encodable>(_ data: Payload, status: HTTPResponse.Status = .ok,
                                                   headers: HTTPFields = [:]) -> Response {
        response(status, JSend.success(data), headers)
    }

    /// `{"data":[...],"limit":L,"more":B,"status":"success"}`
    public static func list<Item: Encodable>(_ items: [Item], limit: Int, more: Bool) -> Response {
        response(.ok, JSend.list(limit: limit, more: more, items: items), [:])
    }

    /// `{"data":{["field":F,]"message":M},"status":"fail"}`
    public static func fail(_ status: HTTPResponse.Status, _ message: String, field: String? = nil) -> Response {
        response(status, JSend.fail(message, field: field), [:])
    }

    /// `{"message":M,"status":"error"}`
    public static func error(_ message: String) -> Response {
        response(.internalServerError, JSend.error(message), [:])
    }

    static func response(_ status: HTTPResponse.Status, _ text: String, _ headers: HTTPFields) -> Response {
        var h = headers
        h[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A member as `GET /v1/groups/{group}/members` lists it.
struct MemberItem: Encodable {
    let user: String
    let timestamp: Int64
    let userload: JSONObjectText

    init(_ m: MemberPresence) {
        user = m.user
        timestamp = m.timestamp
        userload = m.userload
    }
}

/// A post as the posts routes answer it (the socket's `post` event without `type`).
struct PostItem: Encodable {
    let group: String
    let pid: String
    let pidload: JSONObjectText
    let timestamp: Int64
    let user: String

    init(_ p: GroupPost) {
        group = p.group
        pid = p.pid
        pidload = p.pidload
        timestamp = p.timestamp
        user = p.user
    }
}

/// The answer of `PUT /v1/users/me/userload`.
struct UserloadItem: Encodable {
    let user: String
    let userload: JSONObjectText
}

/// Limits of the REST lists.
public enum GroupListLimits {
    public static let defaultLimit = Limits.defaultLimit
    public static let maxLimit = Limits.maxLimit
}

/// The groups routes on the hub's router (the Bearer middleware has set the principal).
public struct GroupRoutes: Sendable {
    let hub: GroupHub
    typealias Context = HubRequestContext

    public init(hub: GroupHub) {
        self.hub = hub
    }

    func principal(_ req: Request, _ ctx: Context) throws -> GroupPrincipal {
        let p = try ctx.requirePrincipal()
        return GroupPrincipal(account: p.account, clientID: p.clientID)
    }

    /// Adds GET/POST /v1/groups/{group}/posts, GET/DELETE /v1/groups/{group}/posts/{pid},
    /// GET /v1/groups/{group}/members, PUT /v1/users/me/userload and GET /v1/socket (426 without upgrade).
    public func register(on router: HubRouter) {
        router.add(.get, "/v1/groups/{group}/members") { req, ctx in try await self.answer { try await self.members(req, ctx) } }
        router.add(.get, "/v1/groups/{group}/posts") { req, ctx in try await self.answer { try await self.posts(req, ctx) } }
        router.add(.post, "/v1/groups/{group}/posts") { req, ctx in try await self.answer { try await self.createPost(req, ctx) } }
        router.add(.get, "/v1/groups/{group}/posts/{pid}") { req, ctx in try await self.answer { try await self.getPost(req, ctx) } }
        router.add(.delete, "/v1/groups/{group}/posts/{pid}") { req, ctx in try await self.answer { try await self.deletePost(req, ctx) } }
        router.add(.put, "/v1/users/me/userload") { req, ctx in try await self.answer { try await self.putUserload(req, ctx) } }
        router.add(.get, "/v1/socket", documented: false) { req, ctx in
            _ = try self.principal(req, ctx)
            var r = GroupJSend.fail(.upgradeRequired, "this is a WebSocket: send Connection: Upgrade and Upgrade: websocket")
            r.headers[.upgrade] = "websocket"
            return r
        }
    }

    /// Runs a handler once the groups' store is prepared; an early `GroupRouteFailure` becomes its answer.
    func answer(_ body: () async throws -> Response) async throws -> Response {
        await hub.ready()
        do { return try await body() } catch let f as GroupRouteFailure { return f.response }
    }

    /// A path parameter, percent-decoded and checked as a name.
    static func name(_ ctx: Context, _ key: String) throws(GroupRouteFailure) -> String {
        guard let raw = ctx.parameters.get(key), let value = percentDecoded(raw), PresenceLimits.isValidName(value) else {
            throw GroupRouteFailure(response: GroupJSend.fail(
                .badRequest, "\(key) must be 1-64 of A-Z a-z 0-9 ._~:@!$'()*+,;=- and not . or ..", field: key))
        }
        return value
    }

    /// `limit` and `skip` as the document bounds them (`HubCore.Limits`); out of range -> 400 naming it.
    static func page(_ req: Request) throws(GroupRouteFailure) -> (limit: Int, skip: Int) {
        let q = req.uri.queryParameters
        do {
            let p = try Page(limit: q.get("limit"), skip: q.get("skip"))
            return (p.limit, p.skip)
        } catch {
            throw GroupRouteFailure(response: GroupJSend.fail(.badRequest, error.message, field: error.field))
        }
    }

    func members(_ req: Request, _ ctx: Context) async throws -> Response {
        _ = try principal(req, ctx)
        let g = try Self.name(ctx, "group")
        let (limit, skip) = try Self.page(req)
        let page = try await hub.store.members(group: g, limit: limit, skip: skip)
        return GroupJSend.list(page.items.map(MemberItem.init), limit: limit, more: page.more)
    }

    func posts(_ req: Request, _ ctx: Context) async throws -> Response {
        _ = try principal(req, ctx)
        let g = try Self.name(ctx, "group")
        let (limit, skip) = try Self.page(req)
        let page = try await hub.store.posts(group: g, limit: limit, skip: skip)
        return GroupJSend.list(page.items.map(PostItem.init), limit: limit, more: page.more)
    }

    func getPost(_ req: Request, _ ctx: Context) async throws -> Response {
        _ = try principal(req, ctx)
        let g = try Self.name(ctx, "group")
        let pid = try Self.name(ctx, "pid")
        guard let post = try await hub.store.post(group: g, pid: pid) else {
            return GroupJSend.fail(.notFound, "no post \(pid) in group \(g)")
        }
        return GroupJSend.success(PostItem(post))
    }

    func createPost(_ req: Request, _ ctx: Context) async throws -> Response {
        let who = try principal(req, ctx)
        let g = try Self.name(ctx, "group")
        let members: JSONObjectMembers
        do {
            members = try JSONObjectMembers(parsing: try await StrictJSON.text(req, context: ctx), maxBytes: Limits.maxBodyBytes)
        } catch let e as JSONTextError {
            return GroupJSend.fail(.badRequest, "the body must be a JSON object {pid, pidload}: \(e)")
        }
        if let extra = members.values.keys.first(where: { $0 != "pid" && $0 != "pidload" }) {
            return GroupJSend.fail(.badRequest, "unknown member \(extra)", field: extra)
        }
        guard let pid = members.string("pid"), PresenceLimits.isValidName(pid) else {
            return GroupJSend.fail(.badRequest, "pid must be 1-64 of A-Z a-z 0-9 ._~:@!$'()*+,;=- and not . or ..", field: "pid")
        }
        guard let raw = members.values["pidload"] else { return GroupJSend.fail(.badRequest, "pidload is required", field: "pidload") }
        let load: JSONObjectText
        do { load = try JSONObjectText(validating: raw) } catch {
            return GroupJSend.fail(.badRequest, "pidload must be a JSON object of at most \(PresenceLimits.maxPayloadMembers) members "
                                   + "and \(PresenceLimits.maxPayloadBytes) bytes: \(error)", field: "pidload")
        }
        let post = GroupPost(group: g, pid: pid, user: who.restUser, pidload: load, timestamp: hub.now)
        let started = ContinuousClock.now
        let outcome = try await hub.store.post(post)
        hub.count(outcome, via: "rest")
        switch outcome {
        case .posted(let p, let replaced):
            hub.execute(PresenceRules.actions(for: outcome, by: nil, op: "post"), causedAt: started)
            var headers: HTTPFields = [:]
            headers[.location] = "/v1/groups/\(percentEncoded(g))/posts/\(percentEncoded(pid))"
            return GroupJSend.success(PostItem(p), status: replaced ? .ok : .created, headers: headers)
        case .refused(let why):
            // A bound of the posts kept is storage, not a rate: waiting does not help, so 409 (not 429)
            // naming the bound; nothing kept is evicted.
            if case .tooManyPosts(_, let bound) = why { return GroupJSend.fail(.conflict, why.message, field: bound.name) }
            return GroupJSend.fail(.forbidden, why.message)
        default:
            return GroupJSend.error("unexpected outcome")
        }
    }

    func deletePost(_ req: Request, _ ctx: Context) async throws -> Response {
        let who = try principal(req, ctx)
        let g = try Self.name(ctx, "group")
        let pid = try Self.name(ctx, "pid")
        switch try await hub.store.unpost(group: g, pid: pid, user: who.restUser) {
        case .unposted: return GroupJSend.success(String?.none)
        case .refused(.notAuthor): return GroupJSend.fail(.forbidden, "post \(pid) in group \(g) belongs to another user")
        case .refused(.noSuchPost): return GroupJSend.fail(.notFound, "no post \(pid) in group \(g)")
        default: return GroupJSend.error("unexpected outcome")
        }
    }

    func putUserload(_ req: Request, _ ctx: Context) async throws -> Response {
        let who = try principal(req, ctx)
        let load: JSONObjectText
        do {
            load = try JSONObjectText(validating: try await StrictJSON.text(req, context: ctx))
        } catch let e as JSONTextError {
            return GroupJSend.fail(.badRequest, "the body must be a JSON object of at most \(PresenceLimits.maxPayloadMembers) members "
                                   + "and \(PresenceLimits.maxPayloadBytes) bytes: \(e)")
        }
        let outcome = try await hub.store.update(user: who.restUser, userload: load, now: hub.now)
        hub.execute(PresenceRules.actions(for: outcome, by: nil, op: "update"))
        return GroupJSend.success(UserloadItem(user: who.restUser, userload: load))
    }
}

/// A route's early answer (a 400 for a bad name or page).
public struct GroupRouteFailure: Error, Sendable {
    public let response: Response
}

/// Decodes %XX escapes (Foundation's `removingPercentEncoding`); nil for a malformed escape or invalid UTF-8.
func percentDecoded(_ s: String) -> String? {
    s.removingPercentEncoding
}

/// The unreserved characters of RFC 3986 (section 2.3), which a path segment carries as themselves.
private let unreservedCharacters = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

/// Encodes a name for a path segment: everything but the unreserved characters as %XX (upper-case hex).
func percentEncoded(_ s: String) -> String {
    // Only fails for a string that is not valid Unicode, which a Swift String always is.
    s.addingPercentEncoding(withAllowedCharacters: unreservedCharacters) ?? s
}
