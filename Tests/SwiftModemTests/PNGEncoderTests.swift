import Testing
import Foundation
@testable import SwiftModem

/// The PNG encoder, its zlib/DEFLATE stream and its checksums, checked with an independent decoder.
@Suite struct PNGEncoderTests {
    @Test func crc32KnownValues() {
        #expect(PNGChecksums.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(PNGChecksums.crc32([UInt8]()) == 0)
        #expect(PNGChecksums.crc32(Array("IEND".utf8)) == 0xAE42_6082)
        // Piecewise equals whole.
        let data = Array("The quick brown fox jumps over the lazy dog".utf8)
        #expect(PNGChecksums.crc32(data) == 0x414F_A339)
        #expect(PNGChecksums.crc32(data[10...], continuing: PNGChecksums.crc32(data[..<10])) == 0x414F_A339)
    }

    @Test func adler32KnownValuesAndLongInputs() {
        #expect(PNGChecksums.adler32(Array("Wikipedia".utf8)) == 0x11E6_0398)
        #expect(PNGChecksums.adler32([UInt8]()) == 1)
        // Long runs of 0xFF exercise the deferred modulo.
        for n in [5551, 5552, 5553, 100_000, 1_000_003] {
            let data = [UInt8](repeating: 0xFF, count: n)
            #expect(PNGChecksums.adler32(data) == PNGTestDecoder.adler32(data), "\(n) bytes")
        }
        let data = (0..<70000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        #expect(PNGChecksums.adler32(data[30000...], continuing: PNGChecksums.adler32(data[..<30000]))
                == PNGTestDecoder.adler32(data))
    }

    static func samples() -> [(String, [UInt8])] {
        var seeded: UInt64 = 0x1234_5678
        func next() -> UInt8 {
            seeded = seeded &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seeded >> 33)
        }
        return [
            ("empty", []),
            ("one byte", [42]),
            ("short text", Array("hello, hello, hello world".utf8)),
            ("repetitive", Array(String(repeating: "abcabcabd", count: 2000).utf8)),
            ("zeros over two stored blocks", [UInt8](repeating: 0, count: 140_000)),
            ("random", (0..<100_000).map { _ in next() }),
            ("long matches at the window's edge", (0..<100_000).map { UInt8(truncatingIfNeeded: ($0 % 32771) &* 7) }),
        ]
    }

    @Test(arguments: [PNGDeflate.Mode.fixedHuffman, .stored])
    func zlibStreamsInflateBack(mode: PNGDeflate.Mode) throws {
        for (name, data) in Self.samples() {
            let z = PNGDeflate.zlibStream(data, mode: mode)
            let back = try PNGTestDecoder.zlibDecompress(z)
            #expect(back == data, "\(name)")
        }
    }

    @Test func fixedHuffmanCompressesRepetitiveDataAndFallsBackForRandomData() throws {
        let repetitive = Array(String(repeating: "0123456789", count: 10_000).utf8)
        #expect(PNGDeflate.zlibStream(repetitive).count < repetitive.count / 20)
        var s: UInt64 = 99
        let random = (0..<50_000).map { _ -> UInt8 in
            s = s &* 6_364_136_223_846_793_005 &+ 1
            return UInt8(truncatingIfNeeded: s >> 33)
        }
        let z = PNGDeflate.zlibStream(random)
        // Stored blocks cost 5 bytes per 65535, plus 6 for the wrapper.
        #expect(z.count <= random.count + 5 + 6)
        #expect(try PNGTestDecoder.zlibDecompress(z) == random)
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

    @Test(arguments: [PNGDeflate.Mode.fixedHuffman, .stored], [(1, 1), (3, 2), (64, 48), (300, 7)])
    func encodedImagesDecodeToTheSamePixels(mode: PNGDeflate.Mode, size: (Int, Int)) throws {
        let img = Self.testImage(width: size.0, height: size.1)
        let file = PNGEncoder.encode(img, text: [("Software", "SwiftModem tests")], mode: mode)
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
    @Test(.enabled(if: SpectrogramTestTools.executable("python3") != nil, "python3 is not installed: skipped"))
    func zlibAgrees() throws {
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
        let p = Process()
        p.executableURL = URL(fileURLWithPath: SpectrogramTestTools.executable("python3")!)
        p.arguments = ["-c", script, path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = Pipe()
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 0)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == String((120 * 3 + 1) * 40))
    }
}
