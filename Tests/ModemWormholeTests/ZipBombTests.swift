import Foundation
@testable import ModemWormhole
import Testing

/// Raw deflate written bit by bit (RFC 1951, fixed Huffman codes), so tests can make archives of any
/// ratio without a compressor.
struct DeflateBits {
    var bytes: [UInt8] = []
    var bit = 0
    mutating func put(_ b: Int) {
        if bit == 0 { bytes.append(0) }
        if b != 0 { bytes[bytes.count - 1] |= UInt8(1 << bit) }
        bit = (bit + 1) & 7
    }
    /// A header field, least significant bit first.
    mutating func value(_ v: Int, _ n: Int) { for i in 0..<n { put(v >> i & 1) } }
    /// A Huffman code, most significant bit first.
    mutating func code(_ c: Int, _ n: Int) { for i in stride(from: n - 1, through: 0, by: -1) { put(c >> i & 1) } }

    /// `count` zero bytes: a literal 0, then matches of 258 bytes at distance 1 (13 bits each, a ratio
    /// of about 159), then literals for the rest.
    static func zeros(_ count: Int) -> [UInt8] {
        var w = DeflateBits()
        w.value(1, 1)  // BFINAL
        w.value(1, 2)  // BTYPE 01: fixed codes
        var left = count
        if left > 0 { w.code(0x30, 8); left -= 1 }  // literal 0
        while left >= 258 {
            w.code(0xC5, 8)  // length code 285: 258 bytes
            w.code(0, 5)  // distance code 0: distance 1
            left -= 258
        }
        for _ in 0..<left { w.code(0x30, 8) }
        w.code(0, 7)  // end of block (256)
        return w.bytes
    }
}

/// One entry of a hand-made zip: its name, method (0 stored, 8 deflated), data as stored, and the
/// size and CRC-32 it declares.
struct ZipSpec {
    var name: String
    var method: UInt16
    var data: [UInt8]
    var size: UInt32
    var crc: UInt32

    static func stored(_ name: String, _ data: [UInt8]) -> ZipSpec {
        ZipSpec(name: name, method: 0, data: data, size: UInt32(data.count), crc: data.withUnsafeBufferPointer { crc32Of($0) })
    }
}

/// A zip of `entries`; with `shared`, every central entry points at the first entry's local header
/// and data (the overlapping zip bomb).
func makeZip(_ entries: [ZipSpec], shared: Bool = false) -> [UInt8] {
    var out: [UInt8] = [], central: [UInt8] = []
    for (i, e) in entries.enumerated() {
        let n = Array(e.name.utf8)
        var here = UInt32(out.count)
        if shared && i > 0 {
            here = 0
        } else {
            out += le32(0x0403_4b50) + le16(20) + le16(0x800) + le16(e.method) + le16(0) + le16(0x21) + le32(e.crc)
                + le32(UInt32(e.data.count)) + le32(e.size) + le16(UInt16(n.count)) + le16(0) + n + e.data
        }
        central += le32(0x0201_4b50) + le16(0x0314) + le16(20) + le16(0x800) + le16(e.method) + le16(0) + le16(0x21) + le32(e.crc)
            + le32(UInt32(e.data.count)) + le32(e.size) + le16(UInt16(n.count)) + le16(0) + le16(0) + le16(0)
            + le16(0) + le32(0o644 << 16) + le32(here) + n
    }
    let cd = UInt32(out.count)
    return out + central + le32(0x0605_4b50) + le16(0) + le16(0) + le16(UInt16(entries.count)) + le16(UInt16(entries.count))
        + le32(UInt32(central.count)) + le32(cd) + le16(0)
}

/// Zip bombs (issue 32, defect 6): the sizes an archive declares are never trusted for memory, the
/// output is inflated in pieces with caps on bytes per entry and in all, on the ratio and on the entry
/// count, and a refusal names its bound and leaves nothing behind.
@Suite struct ZipBombTests {
    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "wormhole-bomb-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Unpacks `bytes` into a new folder; returns the result or the refusal's text, and what is left
    /// in the folder besides the zip itself.
    func unpack(_ bytes: [UInt8], limits: ZipLimits = ZipLimits()) throws -> (Result<ZipReader.Result, WormholeError>, [String], String) {
        let dir = try scratch()
        _ = FileManager.default.createFile(atPath: dir + "/.in.zip", contents: Data(bytes))
        let folder = try WormholeFolder(path: dir)
        let r: Result<ZipReader.Result, WormholeError>
        do throws(WormholeError) {
            r = .success(try ZipReader.unpack(folder: folder, zipPartial: ".in.zip", name: "tree", limits: limits))
        } catch {
            r = .failure(error)
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0 != ".in.zip" }.sorted()
        return (r, left, dir)
    }

    func refusal(_ r: Result<ZipReader.Result, WormholeError>) -> String? {
        if case .failure(let e) = r { return e.description }
        return nil
    }

    @Test("an entry declaring 4 GiB from a few KiB is refused before anything is written or allocated")
    func declaredSizeIsNotTrusted() throws {
        // At da86752 the reader allocated the declared 4 GiB for the entry before inflating it.
        let data = DeflateBits.zeros(1 << 20)
        let zip = makeZip([ZipSpec(name: "bomb.bin", method: 8, data: data, size: 0xFFFF_FFF0, crc: 0)])
        let (r, left, _) = try unpack(zip)
        let why = try #require(refusal(r))
        #expect(why.contains("zip bomb") && why.contains("200 bytes per byte"), "\(why)")
        #expect(left.isEmpty, "left \(left)")
    }

    @Test("an entry that inflates past the size it declares stops there")
    func inflatingPastTheDeclaredSizeStops() throws {
        let zip = makeZip([ZipSpec(name: "small.txt", method: 8, data: DeflateBits.zeros(8 << 20), size: 1000, crc: 0)])
        let (r, left, _) = try unpack(zip)
        let why = try #require(refusal(r))
        #expect(why.contains("more than the 1000 bytes it declares"), "\(why)")
        #expect(left.isEmpty, "left \(left)")
    }

    @Test("the ratio bound: 16 MiB of zeros from 100 KiB passes the default (200), not a bound of 100")
    func ratio() throws {
        let zeros = [UInt8](repeating: 0, count: 16 << 20)
        let crc = zeros.withUnsafeBufferPointer { crc32Of($0) }
        let zip = makeZip([ZipSpec(name: "zeros.bin", method: 8, data: DeflateBits.zeros(zeros.count), size: UInt32(zeros.count), crc: crc)])
        let (ok, _, dir) = try unpack(zip)
        #expect(refusal(ok) == nil)
        #expect((try? FileManager.default.attributesOfItem(atPath: dir + "/tree/zeros.bin")[.size] as? Int) == zeros.count)
        let (r, left, _) = try unpack(zip, limits: ZipLimits(maximumRatio: 100))
        let why = try #require(refusal(r))
        #expect(why.contains("100 bytes per byte of the archive"), "\(why)")
        #expect(left.isEmpty, "left \(left)")
        #expect(try ZipReader.verify(archive: zip).bytes == UInt64(zeros.count))
    }

    @Test("the entry count, bytes per entry and bytes in all are bounds of their own")
    func counts() throws {
        let many = (0..<101).map { ZipSpec.stored("f\($0).txt", [UInt8($0)]) }
        let (r, left, _) = try unpack(makeZip(many), limits: ZipLimits(maximumEntries: 100))
        #expect(refusal(r)?.contains("101 entries, more than the limit of 100") == true, "\(String(describing: refusal(r)))")
        #expect(left.isEmpty)
        let (ok, _, _) = try unpack(makeZip(Array(many.prefix(100))), limits: ZipLimits(maximumEntries: 100))
        #expect(refusal(ok) == nil)

        let (big, left2, _) = try unpack(makeZip([.stored("a", [UInt8](repeating: 1, count: 1001))]), limits: ZipLimits(maximumEntryBytes: 1000))
        #expect(refusal(big)?.contains("limit of 1000 bytes per file") == true, "\(String(describing: refusal(big)))")
        #expect(left2.isEmpty)
        let three = (0..<3).map { ZipSpec.stored("p\($0)", [UInt8](repeating: 2, count: 600)) }
        let (all, left3, _) = try unpack(makeZip(three), limits: ZipLimits(maximumTotalBytes: 1500))
        #expect(refusal(all)?.contains("more than the limit of 1500 bytes") == true, "\(String(describing: refusal(all)))")
        #expect(left3.isEmpty)
    }

    @Test("entries sharing their compressed data (an overlapping bomb) are refused")
    func overlappingEntries() throws {
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let crc = zeros.withUnsafeBufferPointer { crc32Of($0) }
        let one = ZipSpec(name: "a.bin", method: 8, data: DeflateBits.zeros(zeros.count), size: UInt32(zeros.count), crc: crc)
        var entries = [one]
        for i in 1..<8 { var e = one; e.name = "copy\(i).bin"; entries.append(e) }
        // The ratio bound catches it first; raised out of the way, the overlap itself is refused.
        let (byRatio, left1, _) = try unpack(makeZip(entries, shared: true))
        #expect(refusal(byRatio)?.contains("zip bomb") == true, "\(String(describing: refusal(byRatio)))")
        #expect(left1.isEmpty)
        let (r, left, _) = try unpack(makeZip(entries, shared: true), limits: ZipLimits(maximumRatio: 100_000))
        #expect(refusal(r)?.contains("overlap") == true, "\(String(describing: refusal(r)))")
        #expect(left.isEmpty)
    }

    @Test("deflated and stored entries larger than one piece unpack byte-exact")
    func streamsInPieces() throws {
        let zeros = [UInt8](repeating: 0, count: 300_001)
        let crc = zeros.withUnsafeBufferPointer { crc32Of($0) }
        let mixed = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }
        let zip = makeZip([ZipSpec(name: "z/zeros.bin", method: 8, data: DeflateBits.zeros(zeros.count), size: UInt32(zeros.count), crc: crc),
                           .stored("z/mixed.bin", mixed),
                           ZipSpec(name: "z/empty1", method: 8, data: [], size: 0, crc: 0),
                           ZipSpec(name: "z/empty2", method: 8, data: [0x03, 0x00], size: 0, crc: 0)])
        let (r, _, dir) = try unpack(zip)
        guard case .success(let got) = r else { Issue.record("\(String(describing: refusal(r)))"); return }
        #expect(got.files == 4 && got.bytes == 500_001)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/tree/z/zeros.bin")) == Data(zeros))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/tree/z/mixed.bin")) == Data(mixed))
        // A CRC that does not match is still caught after streaming.
        var bad = zip
        bad[Int(u32(zip, zip.count - 22 + 16)) + 16] ^= 1  // the first central entry's CRC-32
        #expect(throws: WormholeError.self) { try ZipReader.verify(archive: bad) }
    }
}
