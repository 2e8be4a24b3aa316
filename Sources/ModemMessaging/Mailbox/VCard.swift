/// A vCard 4.0 (RFC 6350) contact card, validated: the mailbox's contact exchange (the mailbox API's
/// `BumpContact`) carries one of these. ``VCard/parse(_:)`` accepts exactly one card and refuses
/// anything the RFC's grammar does not allow, naming the line and the problem; ``serialized()``
/// writes a card that ``VCard/parse(_:)`` reads back to the same properties.
///
/// What is checked: size (at most ``maximumSize`` bytes), UTF-8, line endings (CRLF; a bare LF is
/// accepted), unfolding (a line break followed by one space or tab continues the line), `BEGIN:VCARD`
/// first, `VERSION:4.0` as the next property, at least one `FN`, `END:VCARD` last and nothing but
/// line breaks after it, group and property names (`1*(ALPHA / DIGIT / "-")`), parameters
/// (`name=value[,value]`, values plain or in double quotes, no control characters), values (no control
/// characters but tab), and the cardinality of the properties RFC 6350 allows at most once.
public struct VCard: Sendable, Equatable, CustomStringConvertible {
    /// The largest card accepted, in bytes of UTF-8 (64 KiB).
    public static let maximumSize = 65_536

    /// One parameter of a property (`TYPE=work,voice`).
    public struct Parameter: Sendable, Equatable {
        /// The name as written (compare case-insensitively).
        public var name: String
        /// The values, without quotes; RFC 6868's `^n`, `^^` and `^'` are decoded.
        public var values: [String]
        /// Creates a parameter.
        public init(name: String, values: [String]) {
            self.name = name
            self.values = values
        }
    }

    /// One content line (`[group.]NAME[;PARAM=...]:value`), unfolded.
    public struct Property: Sendable, Equatable {
        /// The group prefix, if any (`item1` in `item1.EMAIL`).
        public var group: String?
        /// The property name, upper-cased (names are case-insensitive).
        public var name: String
        /// The parameters in the order written.
        public var parameters: [Parameter]
        /// The raw value (text escapes such as `\,` are kept; see ``VCard/unescapeText(_:)``).
        public var value: String
        /// Creates a property; the name is upper-cased.
        public init(group: String? = nil, name: String, parameters: [Parameter] = [], value: String) {
            self.group = group
            self.name = name.uppercased()
            self.parameters = parameters
            self.value = value
        }
    }

    /// The properties between `BEGIN:VCARD` and `END:VCARD`, `VERSION` first.
    public private(set) var properties: [Property]

    /// The first `FN` (formatted name), with text escapes decoded.
    public var formattedName: String {
        VCard.unescapeText(properties.first { $0.name == "FN" }?.value ?? "")
    }

    /// All properties with this name (case-insensitive).
    public func properties(named name: String) -> [Property] {
        let wanted = name.uppercased()
        return properties.filter { $0.name == wanted }
    }

    /// A card with `VERSION:4.0`, the formatted name and the further properties given (which must
    /// keep the rules: the result is validated by writing and parsing it).
    public init(formattedName: String, more: [Property] = []) throws(VCardError) {
        var all = [Property(name: "VERSION", value: "4.0"), Property(name: "FN", value: VCard.escapeText(formattedName))]
        all += more
        let candidate = VCard(unchecked: all)
        self = try VCard.parse(candidate.serialized())
    }

    private init(unchecked properties: [Property]) {
        self.properties = properties
    }

    public var description: String { "vCard \(formattedName)" }

    // MARK: Text escapes (RFC 6350 section 3.4)

    /// Escapes a text value: backslash, comma, semicolon and line breaks.
    public static func escapeText(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case ",": out += "\\,"
            case ";": out += "\\;"
            case "\n": out += "\\n"
            case "\r": continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Decodes a text value's escapes (`\\`, `\,`, `\;`, `\n` or `\N`); other backslashes are kept.
    public static func unescapeText(_ text: String) -> String {
        var out = ""
        var escaping = false
        for scalar in text.unicodeScalars {
            if escaping {
                switch scalar {
                case "n", "N": out += "\n"
                case "\\", ",", ";": out.unicodeScalars.append(scalar)
                default: out += "\\"; out.unicodeScalars.append(scalar)
                }
                escaping = false
            } else if scalar == "\\" {
                escaping = true
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if escaping { out += "\\" }
        return out
    }

    // MARK: Writing

    /// The card as text: CRLF line ends, lines folded at 75 bytes (never inside a UTF-8 sequence).
    public func serialized() -> String {
        var out = "BEGIN:VCARD\r\n"
        for property in properties {
            var line = ""
            if let group = property.group { line += group + "." }
            line += property.name
            for parameter in property.parameters {
                line += ";" + parameter.name + "=" + parameter.values.map(VCard.writeParameterValue).joined(separator: ",")
            }
            line += ":" + property.value
            out += VCard.fold(line)
        }
        out += "END:VCARD\r\n"
        return out
    }

    /// The card as UTF-8 bytes (what a CONTACT record carries).
    public var bytes: [UInt8] { Array(serialized().utf8) }

    private static func writeParameterValue(_ value: String) -> String {
        var encoded = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "^": encoded += "^^"
            case "\n": encoded += "^n"
            case "\"": encoded += "^'"
            default: encoded.unicodeScalars.append(scalar)
            }
        }
        let needsQuotes = encoded.unicodeScalars.contains { $0 == ":" || $0 == ";" || $0 == "," }
        return needsQuotes ? "\"" + encoded + "\"" : encoded
    }

    private static func fold(_ line: String) -> String {
        var out = ""
        var count = 0
        var limit = 75
        for character in line.unicodeScalars {
            let size = String(character).utf8.count
            if count + size > limit {
                out += "\r\n "
                count = 0
                limit = 74  // the leading space counts
            }
            out.unicodeScalars.append(character)
            count += size
        }
        return out + "\r\n"
    }

    // MARK: Parsing

    /// Parses and validates one card from UTF-8 bytes.
    public static func parse(_ bytes: [UInt8]) throws(VCardError) -> VCard {
        guard bytes.count <= maximumSize else {
            throw VCardError(line: 0, message: "the card is \(bytes.count) bytes, over the limit of \(maximumSize)")
        }
        guard !bytes.isEmpty else { throw VCardError(line: 0, message: "the card is empty") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw VCardError(line: 0, message: "the card is not valid UTF-8")
        }
        return try parseText(text)
    }

    /// Parses and validates one card from text.
    public static func parse(_ text: String) throws(VCardError) -> VCard {
        try parse(Array(text.utf8))
    }

    private static func parseText(_ text: String) throws(VCardError) -> VCard {
        let lines = try unfold(Array(text.utf8))
        // Trailing empty lines (line breaks after END) are allowed; nothing else after END.
        var end = lines.count
        while end > 0, lines[end - 1].bytes.isEmpty { end -= 1 }
        guard end > 0 else { throw VCardError(line: 0, message: "the card is empty") }
        let first = lines[0]
        guard first.bytes.caseInsensitiveEquals("BEGIN:VCARD") else {
            throw VCardError(line: first.number, message: "the first line must be BEGIN:VCARD")
        }
        let last = lines[end - 1]
        guard end >= 2, last.bytes.caseInsensitiveEquals("END:VCARD") else {
            throw VCardError(line: last.number, message: "the last line must be END:VCARD")
        }
        var properties: [Property] = []
        for line in lines[1..<(end - 1)] {
            guard !line.bytes.isEmpty else { throw VCardError(line: line.number, message: "empty line inside the card") }
            let property = try parseContentLine(line)
            if property.name == "BEGIN" || property.name == "END" {
                throw VCardError(line: line.number, message: "\(property.name) inside the card (one card only, no nesting)")
            }
            if properties.isEmpty {
                guard property.name == "VERSION" else {
                    throw VCardError(line: line.number, message: "VERSION must follow BEGIN:VCARD")
                }
                guard property.value == "4.0", property.group == nil, property.parameters.isEmpty else {
                    throw VCardError(line: line.number, message: "VERSION must be 4.0, found \"\(property.value)\"")
                }
            } else if property.name == "VERSION" {
                throw VCardError(line: line.number, message: "VERSION appears more than once")
            }
            properties.append(property)
        }
        guard !properties.isEmpty else { throw VCardError(line: last.number, message: "VERSION must follow BEGIN:VCARD") }
        guard properties.contains(where: { $0.name == "FN" }) else {
            throw VCardError(line: last.number, message: "the card has no FN (formatted name) property")
        }
        for name in atMostOnce {
            let count = properties.count { $0.name == name }
            if count > 1 { throw VCardError(line: 0, message: "\(name) may appear at most once, found \(count)") }
        }
        if let kind = properties.first(where: { $0.name == "KIND" })?.value, kind.isEmpty {
            throw VCardError(line: 0, message: "KIND is empty")
        }
        return VCard(unchecked: properties)
    }

    /// Properties RFC 6350 section 6 gives cardinality `*1` (outside ALTID alternatives, which a
    /// contact exchange does not need).
    private static let atMostOnce = ["KIND", "N", "BDAY", "ANNIVERSARY", "GENDER", "PRODID", "REV", "UID"]

    private struct Line {
        var number: Int
        var bytes: [UInt8]
    }

    /// Splits at CRLF or LF and joins folded lines. A bare CR is refused.
    private static func unfold(_ bytes: [UInt8]) throws(VCardError) -> [Line] {
        var lines: [Line] = []
        var current: [UInt8] = []
        var currentNumber = 1
        var physical = 1
        var index = 0
        var atLineStart = false
        while index < bytes.count {
            let byte = bytes[index]
            if atLineStart {
                atLineStart = false
                if byte == 0x20 || byte == 0x09 {
                    // A fold: the break and this one white space character vanish.
                    index += 1
                    continue
                }
                lines.append(Line(number: currentNumber, bytes: current))
                current = []
                currentNumber = physical
            }
            if byte == 0x0D {
                guard index + 1 < bytes.count, bytes[index + 1] == 0x0A else {
                    throw VCardError(line: physical, message: "a carriage return not followed by a line feed")
                }
                index += 2
                physical += 1
                atLineStart = true
                continue
            }
            if byte == 0x0A {
                index += 1
                physical += 1
                atLineStart = true
                continue
            }
            current.append(byte)
            index += 1
        }
        // The final line may lack its line break.
        lines.append(Line(number: currentNumber, bytes: current))
        return lines
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    private static func parseContentLine(_ line: Line) throws(VCardError) -> Property {
        let bytes = line.bytes
        var index = 0
        func fail(_ message: String) -> VCardError { VCardError(line: line.number, message: message) }

        func readName() -> String {
            let start = index
            while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        var group: String?
        var name = readName()
        guard !name.isEmpty else { throw fail("a property name is missing or has a character outside A-Z, 0-9 and -") }
        if index < bytes.count, bytes[index] == 0x2E {  // "."
            index += 1
            group = name
            name = readName()
            guard !name.isEmpty else { throw fail("a property name must follow the group \"\(group ?? "")\"") }
        }
        var parameters: [Parameter] = []
        while index < bytes.count, bytes[index] == 0x3B {  // ";"
            index += 1
            let parameterName = readName()
            guard !parameterName.isEmpty else { throw fail("a parameter name of \(name) is missing or malformed") }
            guard index < bytes.count, bytes[index] == 0x3D else {  // "="
                throw fail("the parameter \(parameterName) of \(name) has no \"=\"")
            }
            index += 1
            var values: [String] = []
            while true {
                var raw: [UInt8] = []
                if index < bytes.count, bytes[index] == 0x22 {  // quoted
                    index += 1
                    while index < bytes.count, bytes[index] != 0x22 {
                        if isControl(bytes[index]) { throw fail("a control character in the parameter \(parameterName)") }
                        raw.append(bytes[index])
                        index += 1
                    }
                    guard index < bytes.count else { throw fail("an unterminated quoted value in the parameter \(parameterName)") }
                    index += 1
                } else {
                    while index < bytes.count, bytes[index] != 0x3B, bytes[index] != 0x3A, bytes[index] != 0x2C {
                        let byte = bytes[index]
                        if isControl(byte) { throw fail("a control character in the parameter \(parameterName)") }
                        if byte == 0x22 { throw fail("a double quote inside the unquoted value of \(parameterName)") }
                        raw.append(byte)
                        index += 1
                    }
                }
                values.append(decodeCaret(String(decoding: raw, as: UTF8.self)))
                if index < bytes.count, bytes[index] == 0x2C {
                    index += 1
                    continue
                }
                break
            }
            if parameterName.uppercased() == "VALUE" || parameterName.uppercased() == "PREF" {
                guard values.count == 1, !values[0].isEmpty else { throw fail("the parameter \(parameterName) needs one value") }
            }
            if parameterName.uppercased() == "PREF" {
                guard let pref = Int(values[0]), (1...100).contains(pref) else {
                    throw fail("PREF must be an integer from 1 to 100, found \"\(values[0])\"")
                }
            }
            parameters.append(Parameter(name: parameterName, values: values))
        }
        guard index < bytes.count, bytes[index] == 0x3A else {
            throw fail("\(name) is not followed by \":\" (or a parameter is malformed)")
        }
        index += 1
        let valueBytes = bytes[index...]
        if let bad = valueBytes.first(where: isControl) {
            throw fail("a control character (0x\(String(bad, radix: 16))) in the value of \(name)")
        }
        let property = Property(group: group, name: name, parameters: parameters, value: String(decoding: valueBytes, as: UTF8.self))
        if property.name == "FN", unescapeText(property.value).allSatisfy(\.isWhitespace) {
            throw fail("FN is empty")
        }
        return property
    }

    /// RFC 6868 parameter value encoding: `^n` newline, `^^` caret, `^'` double quote.
    private static func decodeCaret(_ text: String) -> String {
        guard text.contains("^") else { return text }
        var out = ""
        var caret = false
        for scalar in text.unicodeScalars {
            if caret {
                switch scalar {
                case "n": out += "\n"
                case "^": out += "^"
                case "'": out += "\""
                default: out += "^"; out.unicodeScalars.append(scalar)
                }
                caret = false
            } else if scalar == "^" {
                caret = true
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if caret { out += "^" }
        return out
    }
}

/// Why a vCard was refused: the line (1-based, 0 for the whole card) and the problem.
public struct VCardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The physical line where the problem starts, or 0 when it concerns the whole card.
    public var line: Int
    /// What is wrong.
    public var message: String
    /// Creates an error.
    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { line > 0 ? "vCard line \(line): \(message)" : "vCard: \(message)" }
}

extension Array where Element == UInt8 {
    fileprivate func caseInsensitiveEquals(_ text: String) -> Bool {
        let other = Array(text.utf8)
        guard count == other.count else { return false }
        for (a, b) in zip(self, other) where a != b {
            let lowerA = (a >= 0x41 && a <= 0x5A) ? a + 32 : a
            let lowerB = (b >= 0x41 && b <= 0x5A) ? b + 32 : b
            if lowerA != lowerB { return false }
        }
        return true
    }
}
