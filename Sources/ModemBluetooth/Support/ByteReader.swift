/// A decoder's input ran out or held something it cannot accept. Decoders throw it; layers above
/// count it (a damaged packet is dropped and counted, never a crash).
public struct MalformedPacket: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong, for logs and counters ("HCI event 0x0E: 3 bytes, needs 4").
    public var reason: String
    /// Creates an error naming the problem.
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Reads fixed-size fields from a byte buffer, checking every length: little-endian (HCI, L2CAP,
/// RFCOMM's PN) and big-endian (SDP) integers, byte runs and addresses.
public struct ByteReader: Sendable {
    /// The bytes being read.
    public let bytes: [UInt8]
    /// The index of the next byte to read.
    public private(set) var offset: Int
    /// What the reader is reading, for error messages ("L2CAP signalling").
    public let context: String

    /// Reads `bytes` from `offset`.
    public init(_ bytes: [UInt8], offset: Int = 0, context: String = "packet") {
        self.bytes = bytes
        self.offset = min(max(0, offset), bytes.count)
        self.context = context
    }

    /// Bytes left to read.
    public var remaining: Int { bytes.count - offset }
    /// True when every byte was read.
    public var isAtEnd: Bool { offset >= bytes.count }

    private func need(_ count: Int, _ what: String) throws(MalformedPacket) {
        guard count >= 0, remaining >= count else {
            throw MalformedPacket("\(context): \(what) needs \(count) bytes, \(remaining) left")
        }
    }

    /// One byte.
    public mutating func u8(_ what: String = "byte") throws(MalformedPacket) -> UInt8 {
        try need(1, what)
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A little-endian 16-bit integer.
    public mutating func u16le(_ what: String = "u16") throws(MalformedPacket) -> UInt16 {
        try need(2, what)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    /// A little-endian 24-bit integer.
    public mutating func u24le(_ what: String = "u24") throws(MalformedPacket) -> UInt32 {
        try need(3, what)
        defer { offset += 3 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    /// A little-endian 32-bit integer.
    public mutating func u32le(_ what: String = "u32") throws(MalformedPacket) -> UInt32 {
        try need(4, what)
        defer { offset += 4 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    /// A big-endian 16-bit integer.
    public mutating func u16be(_ what: String = "u16") throws(MalformedPacket) -> UInt16 {
        try need(2, what)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// A big-endian 32-bit integer.
    public mutating func u32be(_ what: String = "u32") throws(MalformedPacket) -> UInt32 {
        try need(4, what)
        defer { offset += 4 }
        return (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    /// `count` bytes.
    public mutating func bytes(_ count: Int, _ what: String = "bytes") throws(MalformedPacket) -> [UInt8] {
        try need(count, what)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Every byte left.
    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// A BD_ADDR in wire order.
    public mutating func address(_ what: String = "BD_ADDR") throws(MalformedPacket) -> BDAddress {
        BDAddress(wire: try bytes(6, what))
    }

    /// Skips `count` bytes.
    public mutating func skip(_ count: Int, _ what: String = "reserved") throws(MalformedPacket) {
        try need(count, what)
        offset += count
    }
}

/// Appends fixed-size fields to a byte array.
extension Array where Element == UInt8 {
    /// Appends a little-endian 16-bit integer.
    public mutating func appendLE(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }
    /// Appends a little-endian 24-bit integer (the low 24 bits of `value`).
    public mutating func appendLE24(_ value: UInt32) {
        for i in 0..<3 { append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }
    /// Appends a little-endian 32-bit integer.
    public mutating func appendLE(_ value: UInt32) {
        for i in 0..<4 { append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }
    /// Appends a big-endian 16-bit integer.
    public mutating func appendBE(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }
    /// Appends a big-endian 32-bit integer.
    public mutating func appendBE(_ value: UInt32) {
        for i in (0..<4).reversed() { append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }
    /// Appends a BD_ADDR in wire order.
    public mutating func append(address: BDAddress) {
        append(contentsOf: address.wire)
    }
}
