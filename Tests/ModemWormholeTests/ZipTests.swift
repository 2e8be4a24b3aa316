import Foundation
@testable import ModemWormhole
import Testing

/// Folders as zips: our writer's archive unpacks to the same tree; archives with unsafe paths are
/// refused whole, leaving nothing behind (neither the entry nor a partial folder).
@Suite struct ZipTests {
    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "wormhole-zip-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A stored zip of `entries` (name, bytes), written by hand.
    func zip(_ entries: [(String, [UInt8])]) -> [UInt8] {
        var out: [UInt8] = [], central: [UInt8] = []
        for (name, data) in entries {
            let n = Array(name.utf8), here = UInt32(out.count)
            let crc = data.withUnsafeBufferPointer { UInt32(crc32Of($0)) }
            out += le32(0x0403_4b50) + le16(20) + le16(0) + le16(0) + le16(0) + le16(0x21) + le32(crc)
                + le32(UInt32(data.count)) + le32(UInt32(data.count)) + le16(UInt16(n.count)) + le16(0) + n + data
            central += le32(0x0201_4b50) + le16(0x0314) + le16(20) + le16(0) + le16(0) + le16(0) + le16(0x21) + le32(crc)
                + le32(UInt32(data.count)) + le32(UInt32(data.count)) + le16(UInt16(n.count)) + le16(0) + le16(0) + le16(0)
                + le16(0) + le32(0o644 << 16) + le32(here) + n
        }
        let cd = UInt32(out.count)
        return out + central + le32(0x0605_4b50) + le16(0) + le16(0) + le16(UInt16(entries.count)) + le16(UInt16(entries.count))
            + le32(UInt32(central.count)) + le32(cd) + le16(0)
    }

    func unpack(_ bytes: [UInt8], into dir: String) throws(WormholeError) -> ZipReader.Result {
        _ = FileManager.default.createFile(atPath: dir + "/.in.zip", contents: Data(bytes))
        return try ZipReader.unpack(folder: try WormholeFolder(path: dir), zipPartial: ".in.zip", name: "tree")
    }

    @Test func writerRoundTrip() throws {
        let src = try scratch(), dst = try scratch()
        try FileManager.default.createDirectory(atPath: src + "/t/sub", withIntermediateDirectories: true)
        try Data("top".utf8).write(to: URL(fileURLWithPath: src + "/t/a.txt"))
        try Data((0..<70_000).map { UInt8($0 & 0xFF) }).write(to: URL(fileURLWithPath: src + "/t/sub/.hidden"))
        let z = try ZipWriter.write(folder: src + "/t")
        defer { unlink(z.path) }
        #expect(z.files == 2 && z.bytes == 70_003)
        let r = try unpack(Array(try Data(contentsOf: URL(fileURLWithPath: z.path))), into: dst)
        #expect(r.name == "tree" && r.files == 2 && r.bytes == 70_003)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dst + "/tree/sub/.hidden")).count == 70_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dst) == ["tree"], "the zip and the partial folder are gone")
    }

    /// A component that a cut to 255 bytes would leave as `..`: two dots and one character of 255 bytes
    /// (a letter and 127 combining marks).
    static let cutToDotDot = ".." + "a" + String(repeating: "\u{301}", count: 127)

    @Test(arguments: ["../evil", "/etc/evil", "a/../../evil", "a//b", "a\\b", "./x", "a/\u{1B}b",
                      "\(cutToDotDot)/\(cutToDotDot)/evil", String(repeating: "d/", count: 65) + "deep"])
    func unsafePathsRefuseTheWholeArchive(name: String) throws {
        let dst = try scratch()
        #expect(throws: WormholeError.self) { try unpack(zip([("ok.txt", Array("fine".utf8)), (name, Array("bad".utf8))]), into: dst) }
        let left = try FileManager.default.contentsOfDirectory(atPath: dst).filter { $0 != ".in.zip" }
        #expect(left.isEmpty, "\(name): left \(left)")
        #expect(!FileManager.default.fileExists(atPath: (dst as NSString).deletingLastPathComponent + "/evil"))
    }

    @Test("folders count: every folder an archive makes counts as an entry and as a block toward the byte bounds")
    func foldersAreCounted() throws {
        // Two entries 60 folders deep each, in separate trees: 120 folders, over a limit of 100 entries.
        let deepA = (0..<60).map { "a\($0)" }.joined(separator: "/") + "/f", deepB = (0..<60).map { "b\($0)" }.joined(separator: "/") + "/f"
        let z = zip([(deepA, Array("x".utf8)), (deepB, Array("y".utf8))])
        #expect(throws: WormholeError.self) { try ZipReader.verify(archive: z, limits: ZipLimits(maximumEntries: 100)) }
        #expect(try ZipReader.verify(archive: z, limits: ZipLimits(maximumEntries: 200)).files == 2)
        // 300 folders of a small archive are 1.2 MB of blocks: over a ratio of 1 past the 1 MiB allowance.
        let many = zip((0..<300).map { ("f\($0)/", []) })
        #expect(throws: WormholeError.self) { try ZipReader.verify(archive: many, limits: ZipLimits(maximumRatio: 1)) }
        #expect(try ZipReader.verify(archive: many).files == 0)
    }

    @Test func badCRCAndTruncationAreRefused() throws {
        var z = zip([("a.txt", Array("hello".utf8))])
        z[30 + 5] ^= 1  // a byte of the data
        #expect(throws: WormholeError.self) { try unpack(z, into: try scratch()) }
        #expect(throws: WormholeError.self) { try unpack(Array(zip([("a.txt", Array("hello".utf8))]).prefix(40)), into: try scratch()) }
        #expect(throws: WormholeError.self) { try unpack(Array("not a zip at all, not at all, no".utf8), into: try scratch()) }
    }
}

func crc32Of(_ b: UnsafeBufferPointer<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in b {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}
