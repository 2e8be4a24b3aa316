import Foundation

/// An `application/x-www-form-urlencoded` body (or query string) with each name at most once.
public struct FormBody: Sendable, Equatable {
    /// The decoded pairs, names unique.
    public private(set) var fields: [String: String]

    /// Parses `text`; a repeated parameter is an error (RFC 6749 section 3.2: "parameters MUST NOT be
    /// included more than once"), and so is a malformed percent escape.
    public init(parsing text: String) throws(OAuthError) {
        var fields: [String: String] = [:]
        if !text.isEmpty {
            for part in text.split(separator: "&", omittingEmptySubsequences: true) {
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = FormBody.decode(pieces[0]) else {
                    throw OAuthError(.invalidRequest, "malformed form encoding")
                }
                guard let value = FormBody.decode(pieces.count > 1 ? pieces[1] : "") else {
                    throw OAuthError(.invalidRequest, "malformed form encoding in '\(name)'")
                }
                if fields[name] != nil { throw OAuthError(.invalidRequest, "parameter '\(name)' is repeated") }
                fields[name] = value
            }
        }
        self.fields = fields
    }

    /// The value of `name`; an empty value counts as absent (RFC 6749 section 3.1).
    public subscript(_ name: String) -> String? {
        guard let v = fields[name], !v.isEmpty else { return nil }
        return v
    }

    /// Decodes one form component: `+` is a space, `%XX` a byte (Foundation's `removingPercentEncoding`);
    /// the bytes must be UTF-8.
    public static func decode<S: StringProtocol>(_ s: S) -> String? {
        String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
