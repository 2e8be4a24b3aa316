import Foundation

/// An independent, minimal PNG reader for the tests: chunk walking with a bitwise CRC-32, a zlib
/// reader with its own Adler-32, an inflater for stored and fixed-Huffman blocks, and the inverse
/// of the five scanline filters. Written from RFC 1950/1951 and the PNG specification, sharing no
/// code with the encoder under test.
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

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for x in bytes {
            a = (a + UInt32(x)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
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
    static func zlibDecompress(_ z: [UInt8]) throws -> [UInt8] {
        guard z.count >= 6 else { throw Failure("zlib stream too short") }
        guard z[0] & 0x0F == 8, z[0] >> 4 <= 7 else { throw Failure("not deflate / window too large") }
        guard (UInt32(z[0]) << 8 | UInt32(z[1])) % 31 == 0 else { throw Failure("bad FCHECK") }
        guard z[1] & 0x20 == 0 else { throw Failure("preset dictionary not expected") }
        var reader = BitReader(bytes: z, position: 2)
        let data = try inflate(&reader)
        let p = reader.alignedPosition
        guard p + 4 <= z.count else { throw Failure("missing Adler-32") }
        guard be32(z, p) == adler32(data) else { throw Failure("bad Adler-32") }
        guard p + 4 == z.count else { throw Failure("junk after the zlib stream") }
        return data
    }

    struct BitReader {
        let bytes: [UInt8]
        var position: Int
        var bit = 0

        mutating func read() throws -> Int {
            guard position < bytes.count else { throw Failure("out of data") }
            let v = Int(bytes[position] >> UInt8(bit)) & 1
            bit += 1
            if bit == 8 { bit = 0; position += 1 }
            return v
        }

        /// `count` bits, least significant first.
        mutating func bits(_ count: Int) throws -> Int {
            var v = 0
            for i in 0..<count { v |= try read() << i }
            return v
        }

        mutating func alignToByte() {
            if bit != 0 { bit = 0; position += 1 }
        }

        var alignedPosition: Int { bit == 0 ? position : position + 1 }
    }

    static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                           2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// Raw DEFLATE with stored and fixed-Huffman blocks (dynamic blocks are refused: the encoder
    /// under test never makes them).
    static func inflate(_ r: inout BitReader) throws -> [UInt8] {
        var out: [UInt8] = []
        var final = false
        while !final {
            final = try r.read() == 1
            let type = try r.bits(2)
            switch type {
            case 0:
                r.alignToByte()
                let p = r.position
                guard p + 4 <= r.bytes.count else { throw Failure("truncated stored header") }
                let len = Int(r.bytes[p]) | Int(r.bytes[p + 1]) << 8
                let nlen = Int(r.bytes[p + 2]) | Int(r.bytes[p + 3]) << 8
                guard len == (~nlen & 0xFFFF) else { throw Failure("LEN/NLEN mismatch") }
                guard p + 4 + len <= r.bytes.count else { throw Failure("truncated stored block") }
                out += r.bytes[(p + 4)..<(p + 4 + len)]
                r.position = p + 4 + len
            case 1:
                while true {
                    let sym = try fixedLiteral(&r)
                    if sym < 256 {
                        out.append(UInt8(sym))
                    } else if sym == 256 {
                        break
                    } else {
                        let li = sym - 257
                        guard li < 29 else { throw Failure("bad length symbol \(sym)") }
                        let length = lengthBase[li] + (try r.bits(lengthExtra[li]))
                        var dcode = 0
                        for _ in 0..<5 { dcode = dcode << 1 | (try r.read()) }
                        guard dcode < 30 else { throw Failure("bad distance code \(dcode)") }
                        let distance = distBase[dcode] + (try r.bits(distExtra[dcode]))
                        guard distance <= out.count else { throw Failure("distance \(distance) beyond \(out.count) bytes") }
                        let start = out.count - distance
                        for k in 0..<length { out.append(out[start + k]) }
                    }
                }
            default:
                throw Failure("block type \(type) not supported by the test inflater")
            }
        }
        return out
    }

    static func fixedLiteral(_ r: inout BitReader) throws -> Int {
        var code = 0
        for _ in 0..<7 { code = code << 1 | (try r.read()) }
        if code <= 23 { return 256 + code }
        code = code << 1 | (try r.read())
        if (48...191).contains(code) { return code - 48 }
        if (192...199).contains(code) { return 280 + code - 192 }
        code = code << 1 | (try r.read())
        if (400...511).contains(code) { return 144 + code - 400 }
        throw Failure("bad fixed Huffman code")
    }

    /// Decodes an 8-bit RGB, non-interlaced PNG to its pixels.
    static func decode(_ file: [UInt8]) throws -> Image {
        let cs = try chunks(file)
        let ihdr = cs[0].data
        guard ihdr.count == 13 else { throw Failure("IHDR must be 13 bytes") }
        let width = Int(be32(ihdr, 0)), height = Int(be32(ihdr, 4))
        let idat = cs.filter { $0.type == "IDAT" }.flatMap(\.data)
        let raw = try zlibDecompress(idat)
        guard ihdr[8] == 8, ihdr[9] == 2, ihdr[12] == 0 else { throw Failure("only 8-bit RGB, no interlace") }
        let stride = width * 3
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
