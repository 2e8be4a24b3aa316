/// CRC-32 (ISO-HDLC, the CRC of Ethernet, zlib, PNG and zip): the one CRC-32 of the code base (the
/// channel protocol's frames, the LDPC blocks, PNG chunks, zip entries). zlib's `crc32` is not used:
/// this one needs no C library, so every layer can have it.
///
/// Parameters (Rocksoft notation): width 32, polynomial 0x04C11DB7 processed reflected (0xEDB88320),
/// initial value 0xFFFFFFFF, input and output reflected, final XOR 0xFFFFFFFF. The check value of
/// the ASCII bytes `"123456789"` is 0xCBF43926. Incremental: feed bytes in any pieces. Contiguous
/// input goes eight bytes a step (slicing-by-8).
public struct CRC32: Sendable, Hashable {
    /// Eight tables of 256 entries: table k gives the CRC of a byte followed by k zero bytes.
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 {
                let previous = t[(k - 1) * 256 + i]
                t[k * 256 + i] = t[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return t
    }()

    /// The running register (not yet complemented).
    public private(set) var register: UInt32 = 0xFFFF_FFFF

    /// Creates a CRC over no bytes yet.
    public init() {}

    /// The CRC of the bytes fed so far.
    public var value: UInt32 { ~register }

    /// Feeds `bytes` into the CRC.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done != nil { return }
        var r = register
        Self.tables.withUnsafeBufferPointer { t in
            for b in bytes { r = t[Int((r ^ UInt32(b)) & 0xFF)] ^ (r >> 8) }
        }
        register = r
    }

    /// Feeds the bytes of `buffer` into the CRC.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        var r = register
        let count = buffer.count
        Self.tables.withUnsafeBufferPointer { t in
            var i = 0
            while i + 8 <= count {
                let a = r ^ (UInt32(buffer[i]) | UInt32(buffer[i + 1]) << 8 | UInt32(buffer[i + 2]) << 16 | UInt32(buffer[i + 3]) << 24)
                let b = UInt32(buffer[i + 4]) | UInt32(buffer[i + 5]) << 8 | UInt32(buffer[i + 6]) << 16 | UInt32(buffer[i + 7]) << 24
                r = t[7 * 256 + Int(a & 0xFF)] ^ t[6 * 256 + Int((a >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((a >> 16) & 0xFF)] ^ t[4 * 256 + Int(a >> 24)]
                    ^ t[3 * 256 + Int(b & 0xFF)] ^ t[2 * 256 + Int((b >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((b >> 16) & 0xFF)] ^ t[Int(b >> 24)]
                i += 8
            }
            while i < count {
                r = t[Int((r ^ UInt32(buffer[i])) & 0xFF)] ^ (r >> 8)
                i += 1
            }
        }
        register = r
    }

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var c = CRC32()
        c.update(bytes)
        return c.value
    }
}
