import Foundation

/// A JSON value as a Sendable tree, for the wormhole's messages (parsed and written with Foundation's
/// JSONSerialization; objects written with sorted keys).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text (a document of at most `maximumBytes`).
    public static func parse(_ bytes: [UInt8], maximumBytes: Int = 1 << 20) -> JSONValue? {
        guard bytes.count <= maximumBytes,
              let any = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else { return nil }
        return JSONValue(any: any)
    }

    /// Parses JSON text.
    public static func parse(_ text: String) -> JSONValue? { parse(Array(text.utf8)) }

    init?(any: Any) {
        switch any {
        case is NSNull: self = .null
        case let n as NSNumber: self = .number(n.doubleValue)  // true and false read as 1 and 0
        case let s as String: self = .string(s)
        case let a as [Any]:
            var out: [JSONValue] = []
            for e in a { guard let v = JSONValue(any: e) else { return nil }; out.append(v) }
            self = .array(out)
        case let d as [String: Any]:
            var out: [String: JSONValue] = [:]
            for (k, e) in d { guard let v = JSONValue(any: e) else { return nil }; out[k] = v }
            self = .object(out)
        default: return nil
        }
    }

    var any: Any {
        switch self {
        case .null: NSNull()
        case .bool(let b): b
        case .number(let n): n == n.rounded() && abs(n) < 9e15 ? Int64(n) as Any : n as Any
        case .string(let s): s
        case .array(let a): a.map(\.any)
        case .object(let o): o.mapValues(\.any)
        }
    }

    /// Compact JSON text (object keys sorted).
    public var text: String {
        guard let data = try? JSONSerialization.data(withJSONObject: any, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The text's UTF-8 bytes.
    public var bytes: [UInt8] { Array(text.utf8) }

    /// A member of an object (nil for anything else or a missing key).
    public subscript(_ key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The string, if this is one.
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    /// The number, if this is one.
    public var number: Double? { if case .number(let n) = self { n } else { nil } }
    /// The array, if this is one.
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// The object, if this is one.
    public var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// The number as an exact non-negative integer, if it is one.
    public var count: UInt64? {
        guard let n = number, n >= 0, n == n.rounded(), n < 9.007e15 else { return nil }
        return UInt64(n)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral,
                     ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements, uniquingKeysWith: { $1 })) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
