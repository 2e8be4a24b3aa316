import Foundation
import Synchronization

/// The hub's response envelope, which is JSend's shape: `success` with `data`, `fail` with `data`
/// (a client error: `message` and perhaps `field`), `error` with `message` (a server error); lists add
/// `limit` and `more`. The envelopes are `Encodable` values written by `JSend.encode` (Foundation's
/// `JSONEncoder`, keys sorted); a payload kept as text (`RawJSON`) is placed in them exactly as it is.
public enum JSend {
    /// `{"data":DATA,"status":"success"}`.
    public struct Success<Payload: Encodable>: Encodable {
        /// Always `"success"`.
        public let status = "success"
        /// What the call answers.
        public let data: Payload

        /// An envelope around `data`.
        public init(data: Payload) { self.data = data }
    }

    /// `{"data":[...],"limit":L,"more":B,"status":"success"}`: one page of a list.
    public struct List<Item: Encodable>: Encodable {
        /// Always `"success"`.
        public let status = "success"
        /// The page size asked for.
        public let limit: Int
        /// Whether items follow this page.
        public let more: Bool
        /// The page's items.
        public let data: [Item]

        /// A page of `data`.
        public init(limit: Int, more: Bool, data: [Item]) {
            self.limit = limit
            self.more = more
            self.data = data
        }
    }

    /// `{"data":{"field"?:F,"message":M},"status":"fail"}`: the client's mistake.
    public struct Fail: Encodable {
        /// The `data` of a fail: what was wrong and, when one parameter was, its name.
        public struct Reason: Encodable, Sendable {
            /// What was wrong.
            public let message: String
            /// The parameter at fault, if one was (absent from the JSON otherwise).
            public let field: String?
        }

        /// Always `"fail"`.
        public let status = "fail"
        /// The reason.
        public let data: Reason

        /// A fail with `message` and perhaps `field`.
        public init(_ message: String, field: String? = nil) { data = Reason(message: message, field: field) }
    }

    /// `{"message":M,"status":"error"}`: the server's failure.
    public struct ServerError: Encodable {
        /// Always `"error"`.
        public let status = "error"
        /// What went wrong.
        public let message: String

        /// An error with `message`.
        public init(_ message: String) { self.message = message }
    }

    /// `{"data":DATA,"status":"success"}`. A `String` is sent as a JSON string; JSON text goes in `RawJSON`.
    public static func success<Payload: Encodable>(_ data: Payload) -> String {
        encode(Success(data: data))
    }

    /// `{"data":[...],"limit":L,"more":B,"status":"success"}`.
    public static func list<Item: Encodable>(limit: Int, more: Bool, items: [Item]) -> String {
        encode(List(limit: limit, more: more, data: items))
    }

    /// `{"data":{"field"?:...,"message":...},"status":"fail"}`.
    public static func fail(_ message: String, field: String? = nil) -> String {
        encode(Fail(message, field: field))
    }

    /// `{"message":...,"status":"error"}`.
    public static func error(_ message: String) -> String {
        encode(ServerError(message))
    }

    /// The hub's JSON encoder (the JSend answers, and the OAuth endpoints' plain RFC 6749/8414 JSON).
    ///
    /// `value` as compact JSON text: each object's members sorted by name (`JSONEncoder` keeps no order
    /// of its own, so the answers are byte-stable this way), strings escaped as
    /// `JSONText.string` escapes them (`/` unescaped, U+2028/U+2029 as `\u2028`/`\u2029`), each
    /// `RawJSON` inside placed as its text. A value that cannot be encoded (a non-finite `Double`) is a
    /// programming error.
    public static func encode<Value: Encodable>(_ value: Value) -> String {
        let splice = RawJSONSplice()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.userInfo[RawJSONSplice.key] = splice
        let bytes: Data
        do {
            bytes = try encoder.encode(value)
        } catch {
            preconditionFailure("JSend.encode: \(error)")
        }
        return splice.finish(bytes)
    }
}

/// A JSON value already held as text (a payload stored as it was received), which `JSend.encode` writes
/// exactly as it is. The text must be one valid JSON value; nothing checks it again here.
public struct RawJSON: Encodable, Sendable, Hashable {
    /// The value's JSON text.
    public let text: String

    /// `text`, one valid JSON value.
    public init(_ text: String) { self.text = text }

    /// Writes a placeholder that `JSend.encode` replaces with `text`; any other encoder is refused.
    public func encode(to encoder: any Encoder) throws {
        guard let splice = encoder.userInfo[RawJSONSplice.key] as? RawJSONSplice else {
            throw EncodingError.invalidValue(text, .init(codingPath: encoder.codingPath,
                                                         debugDescription: "RawJSON is written only by JSend.encode"))
        }
        var container = encoder.singleValueContainer()
        try container.encode(splice.placeholder(for: text))
    }
}

extension JSONObjectText: Encodable {
    /// The object's text, as received (through `JSend.encode`).
    public func encode(to encoder: any Encoder) throws {
        try RawJSON(text).encode(to: encoder)
    }
}

/// One `JSend.encode` call's raw texts. A `RawJSON` is encoded as the string NUL + a token fresh for the
/// call + its index, which `JSONEncoder` writes as `"\u0000TOKEN:N"`; no other string encodes so without
/// knowing the token. `finish` swaps each for its text in one pass and escapes U+2028/U+2029.
final class RawJSONSplice: Sendable {
    static let key = CodingUserInfoKey(rawValue: "HubCore.RawJSONSplice")!

    private let token = UUID().uuidString
    private let texts = Mutex<[String]>([])

    func placeholder(for text: String) -> String {
        let index = texts.withLock { t in
            t.append(text)
            return t.count - 1
        }
        return "\u{0}\(token):\(index)"
    }

    func finish(_ encoded: Data) -> String {
        let raw = texts.withLock { $0 }
        let marker = Array("\"\\u0000\(token):".utf8)
        let input = Array(encoded)
        var out: [UInt8] = []
        out.reserveCapacity(input.count + raw.reduce(0) { $0 + $1.utf8.count })
        var i = 0
        while i < input.count {
            let b = input[i]
            if b == UInt8(ascii: "\""), !raw.isEmpty, input[i...].starts(with: marker) {
                var j = i + marker.count, index = 0
                while j < input.count, let d = Self.digit(input[j]) {
                    index = index * 10 + d
                    j += 1
                }
                if j < input.count, input[j] == UInt8(ascii: "\""), index < raw.count {
                    out.append(contentsOf: raw[index].utf8)
                    i = j + 1
                    continue
                }
            }
            // U+2028 and U+2029 (E2 80 A8/A9) can only be inside strings here: escape them.
            if b == 0xE2, i + 2 < input.count, input[i + 1] == 0x80, input[i + 2] == 0xA8 || input[i + 2] == 0xA9 {
                out.append(contentsOf: (input[i + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                i += 3
                continue
            }
            out.append(b)
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func digit(_ b: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) ? Int(b - UInt8(ascii: "0")) : nil
    }
}
