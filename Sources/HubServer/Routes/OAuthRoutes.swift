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
                    authorization: request.headers[.authorization], form: form, ip: ClientAddress.limitKey(context.remoteIP))
                return jsonResponse(.ok, JSend.encode(answer))
            } catch let e as OAuthError {
                return errorResponse(e)
            }
        }
        router.add(.post, "/oauth/revoke", documented: false) { request, context in
            do {
                let form = try await formBody(request, context: context)
                try await authority.revoke(authorization: request.headers[.authorization], form: form, ip: ClientAddress.limitKey(context.remoteIP))
                var h = HTTPFields()
                h[.cacheControl] = "no-store"
                h[HTTPField.Name("Pragma")!] = "no-cache"
                return Response(status: .ok, headers: h)
            } catch let e as OAuthError {
                return errorResponse(e)
            }
        }
        router.add(.get, "/.well-known/oauth-authorization-server") { _, _ in
            var r = jsonResponse(.ok, JSend.encode(ServerMetadata(issuer: issuer())))
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
        let body = ErrorBody(error: e.code.rawValue, error_description: e.description)
        var r = jsonResponse(HTTPResponse.Status(code: e.status), JSend.encode(body))
        if let w = e.wwwAuthenticate { r.headers[.wwwAuthenticate] = w }
        if let s = e.retryAfter { r.headers[.retryAfter] = String(s) }
        return r
    }

    /// An error answer (RFC 6749 section 5.2).
    struct ErrorBody: Encodable {
        let error: String
        let error_description: String
    }

    /// The authorization server's metadata (RFC 8414 section 2).
    struct ServerMetadata: Encodable {
        let issuer: String
        let token_endpoint: String
        let revocation_endpoint: String
        let grant_types_supported = ["client_credentials", "password", "refresh_token"]
        let token_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post"]
        let revocation_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post"]
        let response_types_supported: [String] = []
        let scopes_supported = [OAuthRequestParser.scope]
        let service_documentation: String

        init(issuer base: String) {
            issuer = base
            token_endpoint = base + "/oauth/token"
            revocation_endpoint = base + "/oauth/revoke"
            service_documentation = base + "/openapi.yaml"
        }
    }
}
