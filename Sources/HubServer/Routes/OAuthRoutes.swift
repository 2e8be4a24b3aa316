import Foundation
import HTTPTypes
import HubCore
import Hummingbird
import NIOCore

/// `POST /oauth/token`, `POST /oauth/revoke` (RFC 6749, 7009) and `GET /.well-known/oauth-authorization-server`
/// (RFC 8414). Token answers are plain RFC 6749 JSON (not JSend), never cached.
enum OAuthRoutes {
    static func register(on router: HubRouter, authority: HubAuthority, issuer: @escaping @Sendable () -> String) {
        router.add(.post, "/oauth/token", documented: false) { request, context in
            do {
                let form = try await formBody(request, context: context)
                let answer = try await authority.token(
                    authorization: request.headers[.authorization], form: form, ip: context.remoteIP)
                let data = try JSONEncoder().encode(answer)
                return jsonResponse(.ok, String(decoding: data, as: UTF8.self))
            } catch let e as OAuthError {
                return errorResponse(e)
            }
        }
        router.add(.post, "/oauth/revoke", documented: false) { request, context in
            do {
                let form = try await formBody(request, context: context)
                try await authority.revoke(authorization: request.headers[.authorization], form: form, ip: context.remoteIP)
                var h = HTTPFields()
                h[.cacheControl] = "no-store"
                h[HTTPField.Name("Pragma")!] = "no-cache"
                return Response(status: .ok, headers: h)
            } catch let e as OAuthError {
                return errorResponse(e)
            }
        }
        router.add(.get, "/.well-known/oauth-authorization-server") { _, _ in
            let base = issuer()
            let methods = JSONText.array(["\"client_secret_basic\"", "\"client_secret_post\""])
            let body = JSONText.object([
                ("issuer", JSONText.string(base)),
                ("token_endpoint", JSONText.string(base + "/oauth/token")),
                ("revocation_endpoint", JSONText.string(base + "/oauth/revoke")),
                ("grant_types_supported", JSONText.array(["\"client_credentials\"", "\"password\"", "\"refresh_token\""])),
                ("token_endpoint_auth_methods_supported", methods),
                ("revocation_endpoint_auth_methods_supported", methods),
                ("response_types_supported", "[]"),
                ("scopes_supported", JSONText.array([JSONText.string(OAuthRequestParser.scope)])),
                ("service_documentation", JSONText.string(base + "/openapi.yaml")),
            ])
            var r = jsonResponse(.ok, body)
            r.headers[.cacheControl] = "max-age=60"
            return r
        }
    }

    /// The form body: `application/x-www-form-urlencoded` only, at most 1 MiB, each parameter once.
    static func formBody(_ request: Request, context: HubRequestContext) async throws -> FormBody {
        let type = request.headers[.contentType]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else {
            throw OAuthError(.invalidRequest, "the body must be application/x-www-form-urlencoded")
        }
        let buffer = try await request.body.collect(upTo: context.maxUploadSize)
        guard let text = buffer.getString(at: buffer.readerIndex, length: buffer.readableBytes) else {
            throw OAuthError(.invalidRequest, "the body is not text")
        }
        return try FormBody(parsing: text)
    }

    static func jsonResponse(_ status: HTTPResponse.Status, _ body: String) -> Response {
        var h = HTTPFields()
        h[.contentType] = "application/json"
        h[.cacheControl] = "no-store"
        h[HTTPField.Name("Pragma")!] = "no-cache"
        return Response(status: status, headers: h, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func errorResponse(_ e: OAuthError) -> Response {
        let body = JSONText.object([("error", JSONText.string(e.code.rawValue)),
                                    ("error_description", JSONText.string(e.description))])
        var r = jsonResponse(HTTPResponse.Status(code: e.status), body)
        if let w = e.wwwAuthenticate { r.headers[.wwwAuthenticate] = w }
        if let s = e.retryAfter { r.headers[.retryAfter] = String(s) }
        return r
    }
}
