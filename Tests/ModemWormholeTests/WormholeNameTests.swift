import Foundation
@testable import ModemWormhole
import Testing

/// Received names over 255 bytes of UTF-8 (multi-byte characters) still make a file: the partial
/// names and a folder's entries are cut in bytes, not characters (issue 32, defect 10).
@Suite struct WormholeNameTests {
    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "wormhole-names-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test("a file offered under a 255-byte name of 3-byte characters is received under it")
    func longFileName() throws {
        // What NameCleaner makes of a longer name: 85 three-byte characters. At da86752 the partial
        // name was `.` + 200 characters (here 255 bytes) + 24, past the 255 a name may have.
        let cleaned = String(repeating: "日", count: 85)
        let folder = try WormholeFolder(path: try scratch())
        let (fd, partial) = try folder.createPartial(for: cleaned)
        #expect(partial.utf8.count <= 255)
        close(fd)
        let name = try folder.putInPlace(partial: partial, cleaned: cleaned, isFolder: false)
        #expect(name == cleaned)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/" + cleaned))
    }

    @Test("a folder of a 255-byte name with an entry of 300 bytes unpacks, the entry cut keeping its extension")
    func longNamesInAFolder() throws {
        let dir = try scratch()
        let entry = String(repeating: "語", count: 100) + ".txt"  // 304 bytes
        let zip = makeZip([.stored("sub/" + entry, Array("hi".utf8))])
        _ = FileManager.default.createFile(atPath: dir + "/.in.zip", contents: Data(zip))
        let name = String(repeating: "日", count: 85)
        let r = try ZipReader.unpack(folder: try WormholeFolder(path: dir), zipPartial: ".in.zip", name: name)
        #expect(r.name == name && r.files == 1)
        let inside = try FileManager.default.contentsOfDirectory(atPath: dir + "/" + name + "/sub")
        #expect(inside.count == 1)
        let got = try #require(inside.first)
        #expect(got.utf8.count <= 255 && got.hasSuffix(".txt") && entry.hasPrefix(String(got.dropLast(4))), "\(got)")
    }
}
