/// A small DEFLATE (RFC 1951) compressor inside a zlib wrapper (RFC 1950), enough for PNG images:
/// greedy LZ77 over a 32 KiB window with hash chains, coded with the fixed Huffman tables, falling
/// back to stored blocks when that would be smaller.
public enum PNGDeflate {
    /// How to code the data.
    public enum Mode: Sendable {
        /// Stored (uncompressed) blocks of at most 65535 bytes.
        case stored
        /// LZ77 with the fixed Huffman codes (one block), or stored blocks if those are smaller.
        case fixedHuffman
    }

    /// A complete zlib stream: header, DEFLATE data, Adler-32 of the uncompressed data.
    public static func zlibStream(_ data: [UInt8], mode: Mode = .fixedHuffman) -> [UInt8] {
        var body: [UInt8]
        var header: [UInt8]
        switch mode {
        case .stored:
            body = storedBlocks(data)
            header = [0x78, 0x01]       // 32 KiB window, "fastest" level hint; 0x7801 % 31 == 0
        case .fixedHuffman:
            let fixed = fixedHuffmanBlock(data)
            let stored = data.count + 5 * max(1, (data.count + 65534) / 65535)
            if fixed.count < stored {
                body = fixed
                header = [0x78, 0x9C]   // default level hint; 0x789C % 31 == 0
            } else {
                body = storedBlocks(data)
                header = [0x78, 0x01]
            }
        }
        let adler = PNGChecksums.adler32(data)
        var out = header
        out.reserveCapacity(header.count + body.count + 4)
        out += body
        out += [UInt8(adler >> 24), UInt8(adler >> 16 & 0xFF), UInt8(adler >> 8 & 0xFF), UInt8(adler & 0xFF)]
        return out
    }

    /// Raw DEFLATE stored blocks (the last one final), at most 65535 bytes each.
    public static func storedBlocks(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 5 * (data.count / 65535 + 1))
        var start = 0
        repeat {
            let n = min(65535, data.count - start)
            let final: UInt8 = start + n == data.count ? 1 : 0
            out.append(final)           // BFINAL, BTYPE=00, padding to the byte
            out += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[start..<(start + n)]
            start += n
        } while start < data.count
        return out
    }

    /// One final raw DEFLATE block with the fixed Huffman codes.
    public static func fixedHuffmanBlock(_ data: [UInt8]) -> [UInt8] {
        var w = BitWriter()
        w.write(1, count: 1)            // BFINAL
        w.write(1, count: 2)            // BTYPE = 01 (fixed Huffman)
        let n = data.count
        let windowSize = 32768, minMatch = 3, maxMatch = 258, maxChain = 48
        let hashBits = 15
        var head = [Int32](repeating: -1, count: 1 << hashBits)
        var prev = [Int32](repeating: -1, count: windowSize)
        @inline(__always) func hash(_ i: Int) -> Int {
            let v = Int(data[i]) << 16 | Int(data[i + 1]) << 8 | Int(data[i + 2])
            return (v &* 2_654_435_761) >> (32 - hashBits) & ((1 << hashBits) - 1)
        }
        @inline(__always) func insert(_ i: Int) {
            guard i + minMatch <= n else { return }
            let h = hash(i)
            prev[i & (windowSize - 1)] = head[h]
            head[h] = Int32(i)
        }
        var i = 0
        while i < n {
            var bestLength = 0, bestDistance = 0
            if i + minMatch <= n {
                var candidate = Int(head[hash(i)])
                var chain = maxChain
                let limit = min(maxMatch, n - i)
                while candidate >= 0 && i - candidate <= windowSize - 1 && chain > 0 {
                    if data[candidate + bestLength] == data[i + bestLength] || bestLength == 0 {
                        var l = 0
                        while l < limit && data[candidate + l] == data[i + l] { l += 1 }
                        if l > bestLength {
                            bestLength = l
                            bestDistance = i - candidate
                            if l == limit { break }
                        }
                    }
                    let next = Int(prev[candidate & (windowSize - 1)])
                    if next >= candidate { break }
                    candidate = next
                    chain -= 1
                }
            }
            if bestLength >= minMatch {
                writeLength(bestLength, &w)
                writeDistance(bestDistance, &w)
                for j in i..<(i + bestLength) { insert(j) }
                i += bestLength
            } else {
                writeLiteral(Int(data[i]), &w)
                insert(i)
                i += 1
            }
        }
        writeLiteral(256, &w)           // end of block
        return w.finish()
    }

    // MARK: Fixed Huffman coding (RFC 1951 section 3.2.6)

    private static func writeLiteral(_ symbol: Int, _ w: inout BitWriter) {
        switch symbol {
        case 0...143: w.writeHuffman(0x30 + symbol, length: 8)
        case 144...255: w.writeHuffman(0x190 + symbol - 144, length: 9)
        case 256...279: w.writeHuffman(symbol - 256, length: 7)
        default: w.writeHuffman(0xC0 + symbol - 280, length: 8)
        }
    }

    private static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                            35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                             3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                              257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                              8193, 12289, 16385, 24577]
    private static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                               7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    private static func writeLength(_ length: Int, _ w: inout BitWriter) {
        var code = lengthBase.count - 1
        while lengthBase[code] > length { code -= 1 }
        writeLiteral(257 + code, &w)
        if lengthExtra[code] > 0 { w.write(UInt32(length - lengthBase[code]), count: lengthExtra[code]) }
    }

    private static func writeDistance(_ distance: Int, _ w: inout BitWriter) {
        var code = distanceBase.count - 1
        while distanceBase[code] > distance { code -= 1 }
        w.writeHuffman(code, length: 5)
        if distanceExtra[code] > 0 { w.write(UInt32(distance - distanceBase[code]), count: distanceExtra[code]) }
    }

    /// Packs bits least significant first, as DEFLATE does.
    private struct BitWriter {
        var bytes: [UInt8] = []
        var buffer: UInt64 = 0
        var used = 0

        /// Writes the low `count` bits of `value`, least significant first (extra bits, headers).
        mutating func write(_ value: UInt32, count: Int) {
            buffer |= UInt64(value & ((1 << count) - 1)) << UInt64(used)
            used += count
            while used >= 8 {
                bytes.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                used -= 8
            }
        }

        /// Writes a Huffman code, most significant bit first.
        mutating func writeHuffman(_ code: Int, length: Int) {
            var reversed = 0
            for b in 0..<length where code & (1 << b) != 0 { reversed |= 1 << (length - 1 - b) }
            write(UInt32(reversed), count: length)
        }

        mutating func finish() -> [UInt8] {
            if used > 0 { bytes.append(UInt8(buffer & 0xFF)) }
            buffer = 0
            used = 0
            return bytes
        }
    }
}
