import Testing
import Foundation
import ProcessTestSupport
@testable import ModemPlot

/// The PNG encoder (filters, chunks, zlib compression), checked with a separate decoder and with Python's zlib.
@Suite struct PNGEncoderTests {
    @Test func chunkCRCKnownValues() {
        #expect(PNGEncoder.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(PNGEncoder.crc32([UInt8]()) == 0)
        #expect(PNGEncoder.crc32(Array("IEND".utf8)) == 0xAE42_6082)
        let data = Array("The quick brown fox jumps over the lazy dog".utf8)
        #expect(PNGEncoder.crc32(data) == PNGTestDecoder.crc32(data))
    }

    @Test(arguments: [0, 1, 6, 9] as [Int32])
    func zlibStreamsInflateBack(level: Int32) throws {
        var seeded: UInt64 = 0x1234_5678
        func next() -> UInt8 {
            seeded = seeded &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seeded >> 33)
        }
        let samples: [(String, [UInt8])] = [
            ("empty", []), ("one byte", [42]),
            ("repetitive", Array(String(repeating: "abcabcabd", count: 2000).utf8)),
            ("random", (0..<100_000).map { _ in next() }),
        ]
        for (name, data) in samples {
            let z = PNGEncoder.zlibCompress(data, level: level)
            #expect(try PNGTestDecoder.zlibDecompress(z, size: data.count) == data, "\(name)")
        }
        let repetitive = Array(String(repeating: "0123456789", count: 10_000).utf8)
        if level > 0 { #expect(PNGEncoder.zlibCompress(repetitive, level: level).count < repetitive.count / 20) }
    }

    static func testImage(width: Int, height: Int) -> PNGImage {
        var img = PNGImage(width: width, height: height, background: PNGColor(10, 20, 30))
        var s: UInt64 = 7
        for y in 0..<height {
            for x in 0..<width {
                if (x + y) % 7 == 0 {
                    s = s &* 6_364_136_223_846_793_005 &+ 1
                    img[x, y] = PNGColor(UInt8(truncatingIfNeeded: s >> 40), UInt8(truncatingIfNeeded: s >> 48), UInt8(truncatingIfNeeded: s >> 56))
                } else {
                    img[x, y] = PNGColor(UInt8(x & 0xFF), UInt8(y & 0xFF), UInt8((x * y) & 0xFF))
                }
            }
        }
        img.fill(x: 2, y: 2, width: 5, height: 3, color: .white)
        return img
    }

    @Test(arguments: [0, 6] as [Int32], [(1, 1), (3, 2), (64, 48), (300, 7)])
    func encodedImagesDecodeToTheSamePixels(level: Int32, size: (Int, Int)) throws {
        let img = Self.testImage(width: size.0, height: size.1)
        let file = PNGEncoder.encode(img, text: [("Software", "SwiftModem tests")], level: level)
        let decoded = try PNGTestDecoder.decode(file)
        #expect(decoded.width == size.0 && decoded.height == size.1)
        #expect(decoded.bitDepth == 8 && decoded.colorType == 2 && decoded.interlace == 0)
        #expect(decoded.pixels == img.pixels)
        #expect(decoded.chunks.map(\.type) == ["IHDR", "tEXt", "IDAT", "IEND"])
        #expect(decoded.chunks[1].data == Array("Software".utf8) + [0] + Array("SwiftModem tests".utf8))
        #expect(decoded.chunks[0].data[10] == 0 && decoded.chunks[0].data[11] == 0)  // deflate, adaptive filtering
    }

    @Test func imageDrawingClipsAtTheEdges() {
        var img = PNGImage(width: 4, height: 3)
        img.fill(x: -2, y: -2, width: 4, height: 4, color: .white)
        #expect(img[0, 0] == .white && img[1, 1] == .white && img[2, 2] == .black)
        img[10, 10] = .white            // ignored
        img.horizontalLine(y: 2, from: -5, to: 10, color: PNGColor(1, 2, 3), dash: 1, gap: 1)
        #expect(img[1, 2] == PNGColor(1, 2, 3) && img[0, 2] == .black)
        img.strokeRectangle(x: 0, y: 0, width: 4, height: 3, color: PNGColor(9, 9, 9))
        #expect(img[3, 0] == PNGColor(9, 9, 9) && img[3, 2] == PNGColor(9, 9, 9))
    }

    @Test func writesFilesAndNamesThemInErrors() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("png-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("a.png").path
        let img = Self.testImage(width: 20, height: 10)
        try PNGEncoder.write(img, to: path)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes == PNGEncoder.encode(img))
        let missing = dir.appendingPathComponent("no/such/dir/b.png").path
        do {
            try PNGEncoder.write(img, to: missing)
            Issue.record("writing into a missing directory succeeded")
        } catch let e as PNGWriteError {
            #expect(e.code == ENOENT)
            #expect(e.description.hasPrefix(missing + ": cannot create"))
        }
    }

    /// A second opinion from zlib itself, when Python is around.
    @Test(.requires(.tool("python3")))
    func zlibAgrees() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("png-zlib-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("z.png").path
        let img = Self.testImage(width: 120, height: 40)
        try PNGEncoder.write(img, to: path)
        let script = """
        import sys, zlib, struct
        d = open(sys.argv[1], 'rb').read()
        i, idat = 8, b''
        while i < len(d):
            n, = struct.unpack('>I', d[i:i+4]); t = d[i+4:i+8]
            assert zlib.crc32(d[i+4:i+8+n]) & 0xffffffff == struct.unpack('>I', d[i+8+n:i+12+n])[0]
            if t == b'IDAT': idat += d[i+8:i+8+n]
            i += 12 + n
        print(len(zlib.decompress(idat)))
        """
        let r = try await runProcess(try Peer.tool("python3").path(), ["-c", script, path], timeout: 120)
        #expect(r.succeeded, "\(r)")
        #expect(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == String((120 * 3 + 1) * 40))
    }
}
