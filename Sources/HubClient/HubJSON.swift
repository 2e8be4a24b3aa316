import Foundation

/// A JSON value: the payloads of the hub (`userload`, `pidload`) are free-form JSON objects.
public enum HubJSON: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `null`
    case null
    /// `true` or `false`
    case bool(Bool)
    /// A number without fraction or exponent that fits 64 bits.
    case integer(Int64)
    /// Any other number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([HubJSON])
    /// An object (member order is not kept).
    case object([String: HubJSON])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .integer(i) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([HubJSON].self) { self = .array(a) }
        else if let o = try? c.decode([String: HubJSON].self) { self = .object(o) }
        else { throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a JSON value") }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .integer(let i): try c.encode(i)
        case .number(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// Parses JSON text (any value).
    public init(parsing text: String) throws {
        self = try JSONDecoder().decode(HubJSON.self, from: Data(text.utf8))
    }

    /// Compact JSON text with sorted keys (stable: the same value always gives the same text).
    public var jsonText: String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? e.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    public var description: String { jsonText }

    /// The object's members, or nil when this is not an object.
    public var objectValue: [String: HubJSON]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The string, or nil when this is not a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number as an integer when it is one (integers, and whole doubles in range).
    public var int64Value: Int64? {
        switch self {
        case .integer(let i): return i
        case .number(let d) where d.rounded() == d && abs(d) < 9.2e18: return Int64(d)
        default: return nil
        }
    }

    /// A member of an object (nil for a missing member or a non-object).
    public subscript(key: String) -> HubJSON? { objectValue?[key] }

    /// The value in Foundation's shapes (`NSNull`, `Bool`, `Int64`, `Double`, `String`, `[Any]`,
    /// `[String: Any]`), as `JSONSerialization` would give it: what the delegate facade hands out.
    public var foundationValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return b
        case .integer(let i): return i
        case .number(let d): return d
        case .string(let s): return s
        case .array(let a): return a.map(\.foundationValue)
        case .object(let o): return o.mapValues(\.foundationValue)
        }
    }
}

extension HubJSON: ExpressibleByDictionaryLiteral, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral {
    public init(dictionaryLiteral elements: (String, HubJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: HubJSON...) { self = .array(elements) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(nilLiteral: ()) { self = .null }
}
