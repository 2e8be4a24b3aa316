/// JSON text built by hand where raw JSON must pass through unchanged (a stored `pidload` is sent back
/// exactly as received), with correct string escaping.
public enum JSONText {
    /// `s` as a JSON string literal: the hub's one string escaper.
    ///
    /// Per RFC 8259: `"` and `\` are escaped, and so is every control character below U+0020, with the
    /// short forms `\b` `\f` `\n` `\r` `\t` where JSON has one and `\u00XX` (lower-case hex) otherwise.
    /// U+2028 and U+2029 are written `\u2028` and `\u2029`: JSON allows them raw, but JavaScript before
    /// ES2019 ends a string literal at them, so escaping is the safe choice. `/` and every other
    /// character are written as themselves (UTF-8).
    public static func string(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    out += scalar.value < 0x10 ? "\\u000" : "\\u00"
                    out += String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// An object from keys and raw JSON values, in the given order.
    public static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    /// An array of raw JSON values.
    public static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    /// A boolean literal.
    public static func bool(_ b: Bool) -> String { b ? "true" : "false" }
}
