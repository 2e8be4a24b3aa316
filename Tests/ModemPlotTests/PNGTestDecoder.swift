import CZlib
import Foundation

/// A minimal PNG reader for the tests: chunk walking with its own bitwise CRC-32, zlib's inflater,
/// and the inverse of the five scanline filters, written from the PNG specification.
enum PNGTestDecoder {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    struct Chunk {
        var type: String
        var data: [UInt8]
    }

    struct Image {
        var width: Int
        var height: Int
        var bitDepth: UInt8
        var colorType: UInt8
        var interlace: UInt8
        var pixels: [UInt8]
        var chunks: [Chunk]
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) == 1 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
        }
        return ~c
    }

    static func be32(_ d: [UInt8], _ i: Int) -> UInt32 {
        UInt32(d[i]) << 24 | UInt32(d[i + 1]) << 16 | UInt32(d[i + 2]) << 8 | UInt32(d[i + 3])
    }

    /// Splits a PNG file into its chunks, checking the signature, every CRC and the IEND at the end.
    static func chunks(_ file: [UInt8]) throws -> [Chunk] {
        guard file.count >= 8, file[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw Failure("bad signature")
        }
        var out: [Chunk] = []
        var i = 8
        while i < file.count {
            guard i + 12 <= file.count else { throw Failure("truncated chunk header at \(i)") }
            let n = Int(be32(file, i))
            guard i + 12 + n <= file.count else { throw Failure("truncated chunk at \(i)") }
            let typeBytes = Array(file[(i + 4)..<(i + 8)])
            let data = Array(file[(i + 8)..<(i + 8 + n)])
            guard crc32(typeBytes + data) == be32(file, i + 8 + n) else {
                throw Failure("bad CRC in \(String(decoding: typeBytes, as: UTF8.self))")
            }
            out.append(Chunk(type: String(decoding: typeBytes, as: UTF8.self), data: data))
            i += 12 + n
        }
        guard out.first?.type == "IHDR", out.last?.type == "IEND" else { throw Failure("IHDR first and IEND last expected") }
        return out
    }

    /// Checks the zlib wrapper and inflates its DEFLATE data.
    /// Inflates a zlib stream with zlib's `uncompress`, expecting exactly `size` bytes.
    static func zlibDecompress(_ z: [UInt8], size: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size + 1)
        var length = uLong(out.count)
        let rc = out.withUnsafeMutableBufferPointer { o in
            z.withUnsafeBufferPointer { i in uncompress(o.baseAddress, &length, i.baseAddress, uLong(i.count)) }
        }
        guard rc == Z_OK else { throw Failure("zlib uncompress failed: \(rc)") }
        guard Int(length) == size else { throw Failure("inflated \(length) bytes, expected \(size)") }
        return Array(out[0..<size])
    }

    /// Decodes an 8-bit RGB, non-interlaced PNG to its pixels.
    static func decode(_ file: [UInt8]) throws -> Image {
        let cs = try chunks(file)
        let ihdr = cs[0].data
        guard ihdr.count == 13 else { throw Failure("IHDR must be 13 bytes") }
        let width = Int(be32(ihdr, 0)), height = Int(be32(ihdr, 4))
        let idat = cs.filter { $0.type == "IDAT" }.flatMap(\.data)
        guard ihdr[8] == 8, ihdr[9] == 2, ihdr[12] == 0 else { throw Failure("only 8-bit RGB, no interlace") }
        let stride = width * 3
        let raw = try zlibDecompress(idat, size: (stride + 1) * height)
        guard raw.count == (stride + 1) * height else { throw Failure("scanlines: \(raw.count) bytes for \(width)×\(height)") }
        var pixels = [UInt8](repeating: 0, count: stride * height)
        for y in 0..<height {
            let filter = raw[y * (stride + 1)]
            for i in 0..<stride {
                let x = raw[y * (stride + 1) + 1 + i]
                let a = i >= 3 ? Int(pixels[y * stride + i - 3]) : 0
                let b = y > 0 ? Int(pixels[(y - 1) * stride + i]) : 0
                let c = (y > 0 && i >= 3) ? Int(pixels[(y - 1) * stride + i - 3]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c
                    let pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
                    predictor = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c)
                default: throw Failure("bad filter type \(filter)")
                }
                pixels[y * stride + i] = UInt8((Int(x) + predictor) & 0xFF)
            }
        }
        return Image(width: width, height: height, bitDepth: ihdr[8], colorType: ihdr[9], interlace: ihdr[12],
                     pixels: pixels, chunks: cs)
    }
}
