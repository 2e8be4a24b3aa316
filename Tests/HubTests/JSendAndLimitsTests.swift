import Foundation
import HubCore
import Testing

@Suite struct JSendTests {
    func parse(_ s: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any])
    }

    @Test func envelopes() throws {
        let ok = try parse(JSend.success(#"{"a":1.50}"#))
        #expect(ok["status"] as? String == "success")
        #expect(JSend.success(#"{"a":1.50}"#).contains(#""data":{"a":1.50}"#))  // raw JSON passes unchanged
        let list = try parse(JSend.list(limit: 25, more: true, items: ["1", "2"]))
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
