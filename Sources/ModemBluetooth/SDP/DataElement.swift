/// An SDP data element (Core Vol 3 Part B §3): a header byte `type << 3 | size index`, an optional
/// length (size index 5, 6, 7: 1, 2, 4 bytes), then the value, all big-endian.
///
/// Integers and UUIDs keep their width, so an element re-encodes to the bytes it came from; texts,
/// URLs and sequences re-encode with the smallest length field that fits.
public indirect enum DataElement: Sendable, Hashable {
    /// Type 0, nil (size index 0, no value).
    case null
    /// Type 1, unsigned 8-bit integer (size index 0).
    case uint8(UInt8)
    /// Type 1, unsigned 16-bit integer (size index 1).
    case uint16(UInt16)
    /// Type 1, unsigned 32-bit integer (size index 2).
    case uint32(UInt32)
    /// Type 1, unsigned 64-bit integer (size index 3).
    case uint64(UInt64)
    /// Type 1, unsigned 128-bit integer (size index 4).
    case uint128(UInt128)
    /// Type 2, signed 8-bit integer.
    case int8(Int8)
    /// Type 2, signed 16-bit integer.
    case int16(Int16)
    /// Type 2, signed 32-bit integer.
    case int32(Int32)
    /// Type 2, signed 64-bit integer.
    case int64(Int64)
    /// Type 2, signed 128-bit integer.
    case int128(Int128)
    /// Type 3, a 16-bit UUID (an alias in the Bluetooth Base UUID).
    case uuid16(UInt16)
    /// Type 3, a 32-bit UUID (an alias in the Bluetooth Base UUID).
    case uuid32(UInt32)
    /// Type 3, a full 128-bit UUID, as one big-endian number.
    case uuid128(UInt128)
    /// Type 4, a text string: bytes in the encoding the language base attribute names (usually UTF-8).
    case text([UInt8])
    /// Type 5, a boolean (any non-zero byte reads as true).
    case bool(Bool)
    /// Type 6, a data element sequence (DES).
    case sequence([DataElement])
    /// Type 7, a data element alternative (DEA): one of the elements is to be chosen.
    case alternative([DataElement])
    /// Type 8, a URL.
    case url([UInt8])

    /// How deeply sequences and alternatives may nest before decoding refuses (a bound on recursion).
    public static let maximumDepth = 32

    /// The Bluetooth Base UUID 00000000-0000-1000-8000-00805F9B34FB (Core Vol 3 Part B §2.5.1).
    public static let baseUUID: UInt128 = 0x0000_0000_0000_1000_8000_0080_5F9B_34FB

    /// A UTF-8 text element.
    public static func string(_ text: String) -> DataElement { .text(Array(text.utf8)) }

    /// The 128-bit form of a UUID element (16- and 32-bit aliases expanded into the Base UUID).
    public var uuid: UInt128? {
        switch self {
        case .uuid16(let value): return UInt128(value) << 96 | Self.baseUUID
        case .uuid32(let value): return UInt128(value) << 96 | Self.baseUUID
        case .uuid128(let value): return value
        default: return nil
        }
    }

    /// The 128-bit form of a 16-bit UUID alias.
    public static func uuid(_ alias: UInt16) -> UInt128 { DataElement.uuid16(alias).uuid! }

    /// The value of an unsigned integer of up to 64 bits.
    public var unsignedValue: UInt64? {
        switch self {
        case .uint8(let v): return UInt64(v)
        case .uint16(let v): return UInt64(v)
        case .uint32(let v): return UInt64(v)
        case .uint64(let v): return v
        default: return nil
        }
    }

    /// The elements of a sequence or an alternative.
    public var elements: [DataElement]? {
        switch self {
        case .sequence(let e), .alternative(let e): return e
        default: return nil
        }
    }

    /// A text element's bytes decoded as UTF-8 (invalid sequences repaired).
    public var string: String? {
        if case .text(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// True when `uuid` (128-bit form) is this element or inside it, at any depth.
    public func contains(uuid wanted: UInt128) -> Bool {
        if let own = uuid { return own == wanted }
        return elements?.contains { $0.contains(uuid: wanted) } ?? false
    }

    // MARK: encoding

    /// The element on the wire.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// Appends the element to `out`.
    public func encode(into out: inout [UInt8]) {
        func fixed(_ type: UInt8, _ index: UInt8, _ value: some FixedWidthInteger, _ width: Int) {
            out.append(type << 3 | index)
            for i in stride(from: width - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
        }
        func variable(_ type: UInt8, _ body: [UInt8]) {
            if body.count <= 0xFF {
                out.append(type << 3 | 5); out.append(UInt8(body.count))
            } else if body.count <= 0xFFFF {
                out.append(type << 3 | 6); out.appendBE(UInt16(body.count))
            } else {
                out.append(type << 3 | 7); out.appendBE(UInt32(truncatingIfNeeded: body.count))
            }
            out.append(contentsOf: body)
        }
        switch self {
        case .null: out.append(0x00)
        case .uint8(let v): fixed(1, 0, v, 1)
        case .uint16(let v): fixed(1, 1, v, 2)
        case .uint32(let v): fixed(1, 2, v, 4)
        case .uint64(let v): fixed(1, 3, v, 8)
        case .uint128(let v): fixed(1, 4, v, 16)
        case .int8(let v): fixed(2, 0, v, 1)
        case .int16(let v): fixed(2, 1, v, 2)
        case .int32(let v): fixed(2, 2, v, 4)
        case .int64(let v): fixed(2, 3, v, 8)
        case .int128(let v): fixed(2, 4, v, 16)
        case .uuid16(let v): fixed(3, 1, v, 2)
        case .uuid32(let v): fixed(3, 2, v, 4)
        case .uuid128(let v): fixed(3, 4, v, 16)
        case .text(let b): variable(4, b)
        case .bool(let v): out.append(5 << 3); out.append(v ? 1 : 0)
        case .sequence(let e): variable(6, e.flatMap(\.bytes))
        case .alternative(let e): variable(7, e.flatMap(\.bytes))
        case .url(let b): variable(8, b)
        }
    }

    // MARK: decoding

    /// Decodes exactly one element filling `bytes`.
    public init(decoding bytes: [UInt8]) throws(MalformedPacket) {
        var reader = ByteReader(bytes, context: "SDP data element")
        self = try DataElement(reading: &reader)
        guard reader.isAtEnd else {
            throw MalformedPacket("SDP data element: \(reader.remaining) bytes after the element")
        }
    }

    /// Reads one element at the reader's position.
    public init(reading reader: inout ByteReader, depth: Int = 0) throws(MalformedPacket) {
        guard depth <= Self.maximumDepth else {
            throw MalformedPacket("SDP data element: nested deeper than \(Self.maximumDepth)")
        }
        let header = try reader.u8("data element header")
        let type = header >> 3, index = header & 7
        func integer(_ width: Int) throws(MalformedPacket) -> UInt128 {
            try reader.bytes(width, "integer").reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
        }
        func body() throws(MalformedPacket) -> [UInt8] {
            let length: Int
            switch index {
            case 5: length = Int(try reader.u8("length"))
            case 6: length = Int(try reader.u16be("length"))
            case 7: length = Int(try reader.u32be("length"))
            default: throw MalformedPacket("SDP data element type \(type) with size index \(index)")
            }
            return try reader.bytes(length, "data element value")
        }
        func bad() -> MalformedPacket { MalformedPacket("SDP data element type \(type) with size index \(index)") }
        switch (type, index) {
        case (0, 0): self = .null
        case (1, 0): self = .uint8(UInt8(try integer(1)))
        case (1, 1): self = .uint16(UInt16(try integer(2)))
        case (1, 2): self = .uint32(UInt32(try integer(4)))
        case (1, 3): self = .uint64(UInt64(try integer(8)))
        case (1, 4): self = .uint128(try integer(16))
        case (2, 0): self = .int8(Int8(truncatingIfNeeded: try integer(1)))
        case (2, 1): self = .int16(Int16(truncatingIfNeeded: try integer(2)))
        case (2, 2): self = .int32(Int32(truncatingIfNeeded: try integer(4)))
        case (2, 3): self = .int64(Int64(truncatingIfNeeded: try integer(8)))
        case (2, 4): self = .int128(Int128(truncatingIfNeeded: try integer(16)))
        case (3, 1): self = .uuid16(UInt16(try integer(2)))
        case (3, 2): self = .uuid32(UInt32(try integer(4)))
        case (3, 4): self = .uuid128(try integer(16))
        case (4, 5...7): self = .text(try body())
        case (5, 0): self = .bool(try reader.u8("boolean") != 0)
        case (6, 5...7), (7, 5...7):
            var inner = ByteReader(try body(), context: reader.context)
            var elements: [DataElement] = []
            while !inner.isAtEnd { elements.append(try DataElement(reading: &inner, depth: depth + 1)) }
            self = type == 6 ? .sequence(elements) : .alternative(elements)
        case (8, 5...7): self = .url(try body())
        default: throw bad()
        }
    }
}
