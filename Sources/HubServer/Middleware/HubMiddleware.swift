import Foundation
import HubCore
import Hummingbird
import Logging
import NIOCore

/// Every request, once it is answered (outermost, so the status is the one sent, JSend errors
/// included): counted and timed in the metrics by method, route template and status, and one log line
/// (method, route template, status, milliseconds) at info level, the probes of ``OpsRoutes/quietPaths``
/// (`/healthz`, `/readyz`, `/metrics`, asked every few seconds) at debug level. The route is the template
/// Hummingbird matched (`/v1/groups/{group}/posts`), `NotFound` for a path no route has: never the raw
/// path, so the metric's series stay bounded whatever clients send. Never headers, bodies, query
/// strings, tokens or secrets.
struct RequestObserverMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext
    let metrics: HubMetrics
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let template = context.endpointPath ?? "NotFound"
        do {
            let response = try await next(request, context)
            observe(request, template, response.status.code, start)
            return response
        } catch {
            observe(request, template, (error as? any HTTPResponseError)?.status.code ?? 500, start)
            throw error
        }
    }

    private func observe(_ request: Request, _ template: String, _ status: Int, _ start: ContinuousClock.Instant) {
        let d = ContinuousClock.now - start
        metrics.request(method: request.method.rawValue, route: template, status: status, duration: d)
        let ms = Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
        let level: Logger.Level = OpsRoutes.quietPaths.contains(template) ? .debug : .info
        logger.log(level: level, "\(request.method.rawValue) \(template) \(status) \(String(format: "%.1f", ms)) ms")
    }
}

/// Turns every failure into a JSend answer (`fail` for client errors, `error` for server errors),
/// answers 405 with `Allow` for a known path with another method, and 413 for declared bodies over 1 MiB.
struct JSendErrorMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext
    let table: RouteTable
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let len = request.headers[.contentLength], let n = Int(len), n > Limits.maxBodyBytes {
            return render(.tooLarge)
        }
        do {
            return try await next(request, context)
        } catch let e as HubAPIError {
            if case .internalError = e { logger.error("internal error on \(request.method.rawValue) \(context.endpointPath ?? "?")") }
            return render(e)
        } catch let e as any HTTPResponseError {
            switch e.status {
            case .notFound:
                let allowed = table.methods(for: request.uri.path)
                if !allowed.isEmpty && !allowed.contains(request.method.rawValue) {
                    return render(.methodNotAllowed(allow: allowed))
                }
                return render(.notFound("no such resource"))
            case .contentTooLarge: return render(.tooLarge)
            case .methodNotAllowed: return render(.methodNotAllowed(allow: table.methods(for: request.uri.path)))
            case .unsupportedMediaType: return render(.unsupportedMediaType("unsupported media type"))
            default:
                if e.status.code >= 500 {
                    logger.error("error \(e.status.code) on \(request.method.rawValue) \(context.endpointPath ?? "?")")
                    return render(.internalError("internal error"))
                }
                return render(.badRequest(e.status.reasonPhrase))
            }
        } catch let e as ValidationFailure {
            return render(.badRequest(e.message, field: e.field))
        } catch is DecodingError {
            return render(.badRequest("the body does not match the schema"))
        } catch {
            logger.error("internal error on \(request.method.rawValue) \(context.endpointPath ?? "?"): \(type(of: error))")
            return render(.internalError("internal error"))
        }
    }

    func render(_ e: HubAPIError) -> Response {
        var h = e.headers
        h[.contentType] = "application/json"
        h[.cacheControl] = "no-store"
        return Response(status: e.status, headers: h, body: .init(byteBuffer: ByteBuffer(string: e.body)))
    }
}

/// `/v1` needs a Bearer token (RFC 6750, header only): missing -> 401 with a bare challenge, unknown,
/// expired, revoked or malformed -> 401 `invalid_token`. The principal goes into the context.
struct BearerMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext
    let authority: HubAuthority

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard path == "/v1" || path.hasPrefix("/v1/") else { return try await next(request, context) }
        switch try await authority.principal(authorization: request.headers[.authorization]) {
        case .failure(.missing): throw HubAPIError.unauthorized(nil)
        case .failure(.invalid(let why)): throw HubAPIError.unauthorized(why)
        case .success(let p):
            var c = context
            c.principal = p
            return try await next(request, c)
        }
    }
}

/// JSend success responses.
enum JSendResponse {
    static func make(_ status: HTTPResponse.Status = .ok, _ body: String, headers extra: HTTPFields = [:]) -> Response {
        var h = extra
        h[.contentType] = "application/json"
        h[.cacheControl] = "no-store"
        return Response(status: status, headers: h, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
