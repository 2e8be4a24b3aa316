// JSON text kept exactly as received: payloads (`userload`, `pidload`) are validated once and never
// re-encoded, so numbers, key order and spacing reach the other clients as the author wrote them.

/// A JSON object kept as its exact text (validated: one object, nothing around it but whitespace).
public struct JSONObjectText: Sendable, Hashable, CustomStringConvertible {
    /// The object's text, exactly as received (surrounding whitespace trimmed).
    public let text: String

    /// The empty object, the userload of a user who never set one.
    public static let empty = JSONObjectText(unchecked: "{}")

    /// Validates `text` as one JSON object of at most `maxBytes` UTF-8 bytes and `maxMembers` members
    /// (the document's `maxProperties`).
    public init(validating text: String, maxBytes: Int = PresenceLimits.maxPayloadBytes,
                maxMembers: Int = PresenceLimits.maxPayloadMembers) throws(JSONTextError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count, maxBytes) }
        var scanner = JSONScanner(bytes, strict: true)
        let range = try scanner.topLevelValue()
        guard bytes[range.lowerBound] == UInt8(ascii: "{") else { throw .notAnObject }
        guard scanner.topLevelMembers <= maxMembers else { throw .tooManyMembers(scanner.topLevelMembers, maxMembers) }
        self.text = String(decoding: bytes[range], as: UTF8.self)
    }

    init(unchecked text: String) { self.text = text }

    /// Text validated before it was stored (a store reading back what it kept); not checked again.
    public init(stored text: String) { self.text = text }

    public var description: String { text }
}

/// Why a JSON text was refused.
public enum JSONTextError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(Int, Int)
    case tooManyMembers(Int, Int)
    case notAnObject
    case tooDeep
    case invalid(String, offset: Int)

    public var description: String {
        switch self {
        case .tooLarge(let n, let max): "JSON text of \(n) bytes is over the limit of \(max)"
        case .tooManyMembers(let n, let max): "a JSON object of \(n) members is over the limit of \(max)"
        case .notAnObject: "a JSON object is required"
        case .tooDeep: "JSON nested more than \(JSONScanner.maxDepth) levels"
        case .invalid(let what, let offset): "invalid JSON at byte \(offset): \(what)"
        }
    }
}

/// A top-level JSON object split into its members, each value kept as its exact text.
public struct JSONObjectMembers: Sendable {
    /// Member name (unescaped) -> the value's exact text.
    public let values: [String: String]

    /// Parses `text`: it must be one JSON object; duplicate names are refused. Numbers are checked
    /// for syntax only: a payload among the values is checked in full by ``JSONObjectText``, so that
    /// its refusal can name the member.
    public init(parsing text: String, maxBytes: Int) throws(JSONTextError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count, maxBytes) }
        var scanner = JSONScanner(bytes)
        values = try scanner.topLevelObjectMembers()
    }

    /// The member's value if it is a JSON string (unescaped).
    public func string(_ name: String) -> String? {
        guard let raw = values[name], raw.utf8.first == UInt8(ascii: "\"") else { return nil }
        var scanner = JSONScanner(Array(raw.utf8))
        return try? scanner.string()
    }
}

/// A strict RFC 8259 scanner over UTF-8 bytes with a nesting limit; it validates and reports ranges.
struct JSONScanner {
    static let maxDepth = 64
    let b: [UInt8]
    var i = 0
    /// Payloads: the text must also read the same in every client's JSON reader, not only be well
    /// formed: numbers fit a 64-bit floating-point value, and no object repeats a member name (readers
    /// disagree on which of two values they keep, so two members could show two clients two values).
    let strict: Bool
    /// Members of the outermost object seen by `value(depth: 0)`.
    var topLevelMembers = 0

    init(_ bytes: [UInt8], strict: Bool = false) {
        b = bytes
        self.strict = strict
    }

    mutating func topLevelValue() throws(JSONTextError) -> Range<Int> {
        skipSpace()
        let start = i
        try value(depth: 0)
        let end = i
        skipSpace()
        guard i == b.count else { throw .invalid("text after the value", offset: i) }
        return start..<end
    }

    mutating func topLevelObjectMembers() throws(JSONTextError) -> [String: String] {
        skipSpace()
        guard i < b.count, b[i] == UInt8(ascii: "{") else { throw .notAnObject }
        i += 1
        var out: [String: String] = [:]
        skipSpace()
        if peek == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skipSpace()
                let nameAt = i
                let name = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let start = i
                try value(depth: 1)
                if out[name] != nil { throw .invalid("duplicate member \"\(name)\"", offset: nameAt) }
                out[name] = String(decoding: b[start..<i], as: UTF8.self)
                skipSpace()
                if peek == UInt8(ascii: ",") { i += 1; continue }
                try expect(UInt8(ascii: "}"))
                break
            }
        }
        skipSpace()
        guard i == b.count else { throw .invalid("text after the object", offset: i) }
        return out
    }

    var peek: UInt8? { i < b.count ? b[i] : nil }

    mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    mutating func expect(_ c: UInt8) throws(JSONTextError) {
        guard peek == c else { throw .invalid("expected '\(Character(Unicode.Scalar(c)))'", offset: i) }
        i += 1
    }

    mutating func value(depth: Int) throws(JSONTextError) {
        guard depth < Self.maxDepth else { throw .tooDeep }
        guard let c = peek else { throw .invalid("unexpected end", offset: i) }
        switch c {
        case UInt8(ascii: "{"):
            i += 1; skipSpace()
            if peek == UInt8(ascii: "}") { i += 1; return }
            var names: Set<String> = []
            while true {
                if depth == 0 { topLevelMembers += 1 }
                skipSpace()
                let nameAt = i
                let name = try string()
                if strict, !names.insert(name).inserted { throw .invalid("duplicate member \"\(name)\"", offset: nameAt) }
                skipSpace()
                try expect(UInt8(ascii: ":")); skipSpace()
                try value(depth: depth + 1); skipSpace()
                if peek == UInt8(ascii: ",") { i += 1; continue }
                try expect(UInt8(ascii: "}")); return
            }
        case UInt8(ascii: "["):
            i += 1; skipSpace()
            if peek == UInt8(ascii: "]") { i += 1; return }
            while true {
                skipSpace(); try value(depth: depth + 1); skipSpace()
                if peek == UInt8(ascii: ",") { i += 1; continue }
                try expect(UInt8(ascii: "]")); return
            }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    mutating func literal(_ word: String) throws(JSONTextError) {
        for c in word.utf8 {
            guard peek == c else { throw .invalid("bad literal", offset: i) }
            i += 1
        }
    }

    mutating func number() throws(JSONTextError) {
        let start = i
        if peek == UInt8(ascii: "-") { i += 1 }
        guard let d = peek, isDigit(d) else { throw .invalid("unexpected character", offset: start) }
        if d == UInt8(ascii: "0") { i += 1 } else { while let x = peek, isDigit(x) { i += 1 } }
        if peek == UInt8(ascii: ".") {
            i += 1
            guard let x = peek, isDigit(x) else { throw .invalid("digit expected", offset: i) }
            while let x = peek, isDigit(x) { i += 1 }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            i += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
            guard let x = peek, isDigit(x) else { throw .invalid("digit expected", offset: i) }
            while let x = peek, isDigit(x) { i += 1 }
        }
        // RFC 8259 leaves the range to implementations; every client reads numbers as IEEE doubles
        // (Foundation's decoders and Python's json refuse or turn into infinity what none holds), so
        // the hub refuses such a number where it enters instead of storing what nobody can read back.
        guard strict else { return }
        guard let value = Double(String(decoding: b[start..<i], as: UTF8.self)), value.isFinite else {
            throw .invalid("number out of range (no 64-bit floating-point value holds it)", offset: start)
        }
    }

    func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// Scans a string literal and returns it unescaped (invalid UTF-8 and lone surrogates refused).
    mutating func string() throws(JSONTextError) -> String {
        try expect(UInt8(ascii: "\""))
        var scalars = String.UnicodeScalarView()
        var runStart = i
        func flush(_ s: inout String.UnicodeScalarView, _ from: Int, _ to: Int, _ b: [UInt8]) throws(JSONTextError) {
            guard from < to else { return }
            guard let piece = String(validating: b[from..<to], as: UTF8.self) else {
                throw .invalid("invalid UTF-8", offset: from)
            }
            s.append(contentsOf: piece.unicodeScalars)
        }
        while true {
            guard let c = peek else { throw .invalid("unterminated string", offset: i) }
            if c == UInt8(ascii: "\"") {
                try flush(&scalars, runStart, i, b)
                i += 1
                return String(scalars)
            }
            if c < 0x20 { throw .invalid("control character in string", offset: i) }
            if c == UInt8(ascii: "\\") {
                try flush(&scalars, runStart, i, b)
                i += 1
                guard let e = peek else { throw .invalid("unterminated escape", offset: i) }
                i += 1
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var v = try hex4()
                    if (0xD800..<0xDC00).contains(v) {
                        guard peek == UInt8(ascii: "\\") else { throw .invalid("lone surrogate", offset: i) }
                        i += 1
                        guard peek == UInt8(ascii: "u") else { throw .invalid("lone surrogate", offset: i) }
                        i += 1
                        let lo = try hex4()
                        guard (0xDC00..<0xE000).contains(lo) else { throw .invalid("bad surrogate pair", offset: i) }
                        v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(v) {
                        throw .invalid("lone surrogate", offset: i)
                    }
                    guard let s = Unicode.Scalar(v) else { throw .invalid("bad escape", offset: i) }
                    scalars.append(s)
                default: throw .invalid("bad escape", offset: i - 1)
                }
                runStart = i
                continue
            }
            i += 1
        }
    }

    mutating func hex4() throws(JSONTextError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let c = peek else { throw .invalid("short \\u escape", offset: i) }
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw .invalid("bad hex digit", offset: i)
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }
}
