/// The two checksums a PNG file needs, written from their definitions: CRC-32 (ISO 3309 / ITU-T
/// V.42, the one of zip and PNG chunks) and Adler-32 (the zlib stream's trailer, RFC 1950).
public enum PNGChecksums {
    /// CRC-32 with the reflected polynomial 0xEDB88320, initial value and final XOR 0xFFFFFFFF.
    /// `crc32("123456789") == 0xCBF43926`.
    /// - Parameters:
    ///   - bytes: the data.
    ///   - previous: the CRC of data before these bytes, to compute it piecewise (0 to start).
    public static func crc32<C: Collection>(_ bytes: C, continuing previous: UInt32 = 0) -> UInt32 where C.Element == UInt8 {
        var c = ~previous
        for b in bytes {
            c = crcTable[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8)
        }
        return ~c
    }

    /// Adler-32: two running sums modulo 65521, `b << 16 | a`. `adler32("Wikipedia") == 0x11E60398`.
    /// - Parameters:
    ///   - bytes: the data.
    ///   - previous: the Adler-32 of data before these bytes (1 to start).
    public static func adler32<C: Collection>(_ bytes: C, continuing previous: UInt32 = 1) -> UInt32 where C.Element == UInt8 {
        let mod: UInt32 = 65521
        var a = previous & 0xFFFF, b = previous >> 16
        var pending = 0
        for byte in bytes {
            a += UInt32(byte)
            b += a
            pending += 1
            // 5552 is the most bytes before b could overflow 32 bits.
            if pending == 5552 {
                a %= mod
                b %= mod
                pending = 0
            }
        }
        return (b % mod) << 16 | (a % mod)
    }

    private static let crcTable: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}
