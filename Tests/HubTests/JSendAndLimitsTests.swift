import Foundation
import HubCore
import Testing

@Suite struct JSendTests {
    func parse(_ s: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any])
    }

    @Test func envelopes() throws {
        let ok = try parse(JSend.success(RawJSON(#"{"a":1.50}"#)))
        #expect(ok["status"] as? String == "success")
        #expect(JSend.success(RawJSON(#"{"a":1.50}"#)) == #"{"data":{"a":1.50},"status":"success"}"#)  // raw JSON passes unchanged
        let list = try parse(JSend.list(limit: 25, more: true, items: [1, 2]))
        #expect(list["limit"] as? Int == 25 && list["more"] as? Bool == true && (list["data"] as? [Int]) == [1, 2])
        let fail = try parse(JSend.fail("bad \"x\"", field: "f"))
        #expect(fail["status"] as? String == "fail")
        #expect((fail["data"] as? [String: String]) == ["message": "bad \"x\"", "field": "f"])
        let err = try parse(JSend.error("boom"))
        #expect(err["status"] as? String == "error" && err["message"] as? String == "boom")
    }

    @Test func stringEscapingRoundTrips() throws {
        let nasty = "q\"b\\s/\n\r\t\u{0}\u{1f}\u{2028}é😀'*%"
        let back = try JSONSerialization.jsonObject(with: Data(JSONText.string(nasty).utf8), options: [.fragmentsAllowed])
        #expect(back as? String == nasty)
    }

    /// The one escaper's exact output: RFC 8259's short forms, `\u00XX` for the other controls,
    /// U+2028/U+2029 escaped, everything else (`/` and non-ASCII included) as itself.
    @Test func stringEscapingIsExact() throws {
        #expect(JSONText.string("q\"b\\s/") == #""q\"b\\s/""#)
        #expect(JSONText.string("\u{08}\u{0C}\n\r\t") == #""\b\f\n\r\t""#)
        #expect(JSONText.string("\u{0}\u{1}\u{0B}\u{1F}\u{7F}") == "\"\\u0000\\u0001\\u000b\\u001f\u{7F}\"")
        #expect(JSONText.string("a\u{2028}b\u{2029}c") == #""a\u2028b\u2029c""#)
        #expect(JSONText.string("é😀\u{2027}\u{202A}") == "\"é😀\u{2027}\u{202A}\"")
        // Every control character and both separators round-trip through a JSON parser.
        let all = String(String.UnicodeScalarView((0..<0x20 as Range<UInt32>).compactMap { Unicode.Scalar($0) } + ["\u{2028}", "\u{2029}"]))
        let literal = JSONText.string(all)
        #expect(!literal.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{2028}" || $0 == "\u{2029}" })
        let back = try JSONSerialization.jsonObject(with: Data(literal.utf8), options: [.fragmentsAllowed])
        #expect(back as? String == all)
    }
}

/// `JSend.encode`: Foundation's encoder (keys sorted), held to the one escaper, with raw payloads placed exactly.
@Suite struct JSendEncodingTests {
    struct Item: Encodable {
        let name: String
        let load: RawJSON
        let n: Int
    }

    @Test func envelopesAreExact() {
        #expect(JSend.fail("bad \"x\"", field: "f") == #"{"data":{"field":"f","message":"bad \"x\""},"status":"fail"}"#)
        #expect(JSend.fail("no field") == #"{"data":{"message":"no field"},"status":"fail"}"#)
        #expect(JSend.error("boom") == #"{"message":"boom","status":"error"}"#)
        #expect(JSend.success(String?.none) == #"{"data":null,"status":"success"}"#)
        #expect(JSend.list(limit: 2, more: false, items: [Item(name: "a/b", load: RawJSON(#"{ "x" : [1.0, "\u00e9"] }"#), n: 3)])
                == #"{"data":[{"load":{ "x" : [1.0, "\u00e9"] },"n":3,"name":"a/b"}],"limit":2,"more":false,"status":"success"}"#)
    }

    /// Every string the encoder writes is written as `JSONText.string` writes it.
    @Test func encoderEscapesAsJSONText() {
        var samples = (0..<0x80 as Range<UInt32>).compactMap { Unicode.Scalar($0) }.map { String(Character($0)) }
        samples += ["\u{2028}", "\u{2029}", "a\u{2028}\u{2029}b", "é😀", "\u{FEFF}", "\u{7F}\u{80}\u{9F}", "q\"b\\s/\n\r\t\u{0}\u{1f}"]
        for s in samples {
            #expect(JSend.error(s) == #"{"message":"# + JSONText.string(s) + #","status":"error"}"#, "\(s.unicodeScalars.map(\.value))")
        }
    }

    /// Many raw texts in one answer, and strings that look like the encoder's placeholders.
    @Test func rawTextsAreSplicedInPlace() throws {
        let items = (0..<120).map { Item(name: "\u{0}item \($0):\($0)", load: RawJSON("{\"i\":\($0)}"), n: $0) }
        let text = JSend.list(limit: 120, more: true, items: items)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let data = try #require(object["data"] as? [[String: Any]])
        #expect(data.count == 120)
        for (i, d) in data.enumerated() {
            #expect(d["name"] as? String == "\u{0}item \(i):\(i)" && d["n"] as? Int == i)
            #expect((d["load"] as? [String: Int]) == ["i": i])
        }
    }

    /// `RawJSON` is written only by `JSend.encode`; a plain `JSONEncoder` refuses it.
    @Test func rawJSONNeedsJSendEncode() {
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(RawJSON("{}")) }
    }
}

@Suite struct LimitsTests {
    @Test func names() {
        for ok in ["a", "bars", "it's", "*", "a.b", "x:y@z", "(1)+2;=3", String(repeating: "z", count: 64), "..."] {
            #expect(Limits.isValidName(ok), "\(ok)")
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", "a?b", "a#b", "a%b", String(repeating: "z", count: 65)] {
            #expect(!Limits.isValidName(bad), "\(bad)")
        }
    }

    @Test func pagesParseAndRefuse() throws {
        #expect(try Page(limit: nil, skip: nil) == Page(limit: 25, skip: 0))
        #expect(try Page(limit: "1000", skip: "50") == Page(limit: 1000, skip: 50))
        for (l, s, field) in [("0", nil, "limit"), ("1001", nil, "limit"), ("-1", nil, "limit"), ("x", nil, "limit"),
                              (nil, "-1", "skip"), (nil, "1.5", "skip")] as [(String?, String?, String)] {
            do {
                _ = try Page(limit: l, skip: s)
                Issue.record("accepted \(String(describing: l)) \(String(describing: s))")
            } catch {
                #expect(error.field == field)
            }
        }
    }

    @Test func passwordsCountUnicodeScalars() {
        // JSON Schema's minLength/maxLength count code points; so does the server.
        #expect(Limits.isValidPassword("12345678"))
        #expect(!Limits.isValidPassword("1234567"))
        #expect(Limits.isValidPassword(String(repeating: "é", count: 256)))
        #expect(!Limits.isValidPassword(String(repeating: "a", count: 257)))
    }
}
