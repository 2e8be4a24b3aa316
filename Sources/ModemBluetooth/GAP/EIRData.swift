/// Extended inquiry response data (Core Vol 3 Part C §8, Core Supplement Part A §1): a run of
/// `[length][type][length - 1 bytes]` structures, a zero length ending it (the rest is padding).
public struct EIRData: Sendable, Hashable {
    /// Data types used here.
    public enum DataType {
        /// Incomplete list of 16-bit service UUIDs.
        public static let incompleteUUID16: UInt8 = 0x02
        /// Complete list of 16-bit service UUIDs.
        public static let completeUUID16: UInt8 = 0x03
        /// Shortened local name.
        public static let shortenedName: UInt8 = 0x08
        /// Complete local name.
        public static let completeName: UInt8 = 0x09
    }

    /// The structures, in order: type and data.
    public var structures: [(type: UInt8, data: [UInt8])]

    /// Parses EIR bytes. A structure that runs past the end is dropped (with everything after it):
    /// EIR comes from the air and is never trusted.
    public init(parsing bytes: [UInt8]) {
        var out: [(type: UInt8, data: [UInt8])] = []
        var i = 0
        while i < bytes.count {
            let length = Int(bytes[i])
            if length == 0 || i + 1 + length > bytes.count { break }
            out.append((bytes[i + 1], Array(bytes[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        structures = out
    }

    /// The local name and whether it is complete (0x09) rather than shortened (0x08); a complete
    /// name wins over a shortened one.
    public var name: (text: String, complete: Bool)? {
        if let s = structures.first(where: { $0.type == DataType.completeName }) {
            return (String(decoding: s.data.prefix { $0 != 0 }, as: UTF8.self), true)
        }
        if let s = structures.first(where: { $0.type == DataType.shortenedName }) {
            return (String(decoding: s.data.prefix { $0 != 0 }, as: UTF8.self), false)
        }
        return nil
    }

    /// The 16-bit service UUIDs of the complete and incomplete lists.
    public var uuid16s: [UInt16] {
        structures.filter { $0.type == DataType.completeUUID16 || $0.type == DataType.incompleteUUID16 }.flatMap { s in
            stride(from: 0, to: s.data.count - 1, by: 2).map { UInt16(s.data[$0]) | UInt16(s.data[$0 + 1]) << 8 }
        }
    }

    // Tuples are neither Equatable nor Hashable: compare the structures field by field.
    public static func == (lhs: EIRData, rhs: EIRData) -> Bool {
        lhs.structures.count == rhs.structures.count
            && zip(lhs.structures, rhs.structures).allSatisfy { $0.type == $1.type && $0.data == $1.data }
    }

    public func hash(into hasher: inout Hasher) {
        for s in structures {
            hasher.combine(s.type)
            hasher.combine(s.data)
        }
    }

    /// EIR bytes with the name (complete, or shortened to fit) and a complete list of 16-bit
    /// UUIDs; at most 240 bytes, unpadded.
    public static func build(name: String, uuid16s: [UInt16] = []) -> [UInt8] {
        var out: [UInt8] = []
        var uuidBytes: [UInt8] = []
        for uuid in uuid16s.prefix(32) { uuidBytes.appendLE(uuid) }
        let roomForName = 240 - 2 - (uuidBytes.isEmpty ? 0 : 2 + uuidBytes.count)
        let full = Array(name.utf8)
        let nameBytes = HCICommand.utf8Prefix(name, maxBytes: roomForName)
        out.append(UInt8(1 + nameBytes.count))
        out.append(nameBytes.count == full.count ? DataType.completeName : DataType.shortenedName)
        out.append(contentsOf: nameBytes)
        if !uuidBytes.isEmpty {
            out.append(UInt8(1 + uuidBytes.count))
            out.append(DataType.completeUUID16)
            out.append(contentsOf: uuidBytes)
        }
        return out
    }
}
