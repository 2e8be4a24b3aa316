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

    /// Decodes one form component: `+` is a space, `%XX` a byte; the bytes must be UTF-8.
    public static func decode<S: StringProtocol>(_ s: S) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let c = it.next() {
            switch c {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let h = it.next().flatMap(hexValue), let l = it.next().flatMap(hexValue) else { return nil }
                bytes.append(h << 4 | l)
            default: bytes.append(c)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
