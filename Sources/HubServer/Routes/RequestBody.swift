import Foundation
import HubCore
import Hummingbird
import NIOCore

/// Strict JSON bodies for `/v1`: `application/json`, at most 1 MiB, one object whose keys are all known
/// (`additionalProperties: false`) and whose required members are present and strings.
public enum StrictJSON {
    /// The body as raw text, after the media-type check (415 otherwise) and the size limit (413).
    public static func text(_ request: Request, context: HubRequestContext) async throws -> String {
        let type = request.headers[.contentType]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/json" else {
            throw HubAPIError.unsupportedMediaType("the body must be application/json")
        }
        let buffer = try await request.body.collect(upTo: context.maxUploadSize)
        guard let text = buffer.getString(at: buffer.readerIndex, length: buffer.readableBytes),
              text.utf8.count == buffer.readableBytes
        else { throw HubAPIError.badRequest("the body is not UTF-8") }
        return text
    }

    /// Reads an object of string members: every key in `required` ∪ `optional`, no other key.
    public static func strings(_ request: Request, context: HubRequestContext,
                               required: [String], optional: [String] = []) async throws -> [String: String] {
        try strings(text: try await text(request, context: context), required: required, optional: optional)
    }

    /// The pure half of `strings`, for tests.
    public static func strings(text: String, required: [String], optional: [String] = []) throws -> [String: String] {
        let any: Any
        do { any = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) } catch {
            throw HubAPIError.badRequest("the body is not valid JSON")
        }
        guard let object = any as? [String: Any] else { throw HubAPIError.badRequest("the body must be a JSON object") }
        let known = Set(required + optional)
        if let extra = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw HubAPIError.badRequest("unknown member '\(extra.prefix(64))'", field: String(extra.prefix(64)))
        }
        var out: [String: String] = [:]
        for (k, v) in object {
            guard let s = v as? String, !(v is NSNumber) else {
                throw HubAPIError.badRequest("'\(k)' must be a string", field: k)
            }
            out[k] = s
        }
        for k in required where out[k] == nil { throw HubAPIError.badRequest("'\(k)' is required", field: k) }
        return out
    }
}
