/// JSON text built by hand where raw JSON must pass through unchanged (a stored `pidload` is sent back
/// exactly as received), with correct string escaping.
public enum JSONText {
    /// `s` as a JSON string literal.
    public static func string(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
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

/// The hub API's response envelope, which is JSend's shape: `success` with `data`, `fail` with `data`
/// (a client error: `message` and perhaps `field`), `error` with `message` (a server error); lists add
/// `limit` and `more`.
public enum JSend {
    /// `{"status":"success","data":DATA}` with `data` raw JSON.
    public static func success(_ data: String) -> String {
        JSONText.object([("status", JSONText.string("success")), ("data", data)])
    }

    /// `{"status":"success","limit":L,"more":B,"data":[...]}` with raw JSON items.
    public static func list(limit: Int, more: Bool, items: [String]) -> String {
        JSONText.object([("status", JSONText.string("success")), ("limit", String(limit)),
                         ("more", JSONText.bool(more)), ("data", JSONText.array(items))])
    }

    /// `{"status":"fail","data":{"message":...,"field"?:...}}`.
    public static func fail(_ message: String, field: String? = nil) -> String {
        var d: [(String, String)] = [("message", JSONText.string(message))]
        if let f = field { d.append(("field", JSONText.string(f))) }
        return JSONText.object([("status", JSONText.string("fail")), ("data", JSONText.object(d))])
    }

    /// `{"status":"error","message":...}`.
    public static func error(_ message: String) -> String {
        JSONText.object([("status", JSONText.string("error")), ("message", JSONText.string(message))])
    }
}
