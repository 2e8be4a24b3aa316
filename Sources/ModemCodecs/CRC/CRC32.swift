/// CRC-32 (ISO-HDLC, the CRC of Ethernet, zlib and PNG), the integrity check of ``LinkFrame``.
///
/// Parameters (Rocksoft notation): width 32, polynomial 0x04C11DB7 processed reflected (0xEDB88320),
/// initial value 0xFFFFFFFF, input and output reflected, final XOR 0xFFFFFFFF. The check value of
/// the ASCII bytes `"123456789"` is 0xCBF43926. Incremental: feed bytes in any pieces.
public struct CRC32: Sendable, Hashable {
    private static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The running register (not yet complemented).
    public private(set) var register: UInt32 = 0xFFFF_FFFF

    /// Creates a CRC over no bytes yet.
    public init() {}

    /// The CRC of the bytes fed so far.
    public var value: UInt32 { ~register }

    /// Feeds `bytes` into the CRC.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var r = register
        Self.table.withUnsafeBufferPointer { t in
            for b in bytes { r = t[Int((r ^ UInt32(b)) & 0xFF)] ^ (r >> 8) }
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
