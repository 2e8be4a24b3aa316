import ModemMessaging
import Testing

/// Received names are cut in bytes of UTF-8 (the file system's encoding: 255 per component), on a
/// character boundary, keeping the extension (issue 32, defect 10).
@Suite("Names cut in bytes")
struct NameBytesTests {
    static func isPrefix(_ a: String, of b: String) -> Bool { b.unicodeScalars.starts(with: a.unicodeScalars) }

    @Test("300 bytes of 3-byte characters with an extension: at most 255 bytes, whole characters, the extension kept")
    func multiByteWithExtension() throws {
        let stem = String(repeating: "日本語", count: 34)  // 102 characters, 306 bytes
        let cut = NameCleaner.cut(stem + ".txt")
        #expect(cut.utf8.count <= 255 && cut.utf8.count > 240, "\(cut.utf8.count) bytes")
        #expect(cut.hasSuffix(".txt"))
        #expect(Self.isPrefix(String(cut.dropLast(4)), of: stem))
        #expect(try NameCleaner.clean(stem + ".txt") == cut)
        #expect(NameCleaner.candidate(cut, attempt: 7).utf8.count <= 255)
        #expect(NameCleaner.candidate(cut, attempt: 7).hasSuffix(" (7).txt"))
    }

    @Test("4-byte characters, a character of many combining marks, and smaller budgets")
    func oddCharacters() {
        let emoji = String(repeating: "🦊", count: 80)  // 320 bytes
        #expect(NameCleaner.cut(emoji).utf8.count == 252)  // 63 foxes: the 64th would pass 255
        let marks = "e" + String(repeating: "\u{301}", count: 200)  // one character of 401 bytes
        let cut = NameCleaner.cut(marks)
        #expect(!cut.isEmpty && cut.utf8.count <= 255 && Self.isPrefix(cut, of: marks))
        #expect(NameCleaner.cut(emoji, maximumBytes: 200).utf8.count == 200)
        #expect(NameCleaner.cut("é" + emoji, maximumBytes: 5) == "é")
        #expect(NameCleaner.cut("short.txt") == "short.txt")
    }

    @Test("text for a bounded wire field (a session's user name, a refusal's words) is cut between scalars, never inside one")
    func wireFieldPrefix() {
        let name = String(repeating: "a", count: 63) + "é"   // 65 bytes: the 64-byte field would split the é
        let cut = NameCleaner.utf8Prefix(name, maximumBytes: 64)
        #expect(cut == String(repeating: "a", count: 63))
        #expect(String(validating: Array(cut.utf8), as: UTF8.self) != nil)
        #expect(NameCleaner.utf8Prefix("🦊🦊", maximumBytes: 7) == "🦊")
        #expect(NameCleaner.utf8Prefix("short", maximumBytes: 64) == "short")
        #expect(NameCleaner.utf8Prefix("🦊", maximumBytes: 0).isEmpty)
    }
}
