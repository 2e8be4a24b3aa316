/// An SDP protocol data unit (Core Vol 3 Part B §4): `PDU ID u8, transaction ID u16, parameter
/// length u16, parameters`, big-endian. Requests end with a continuation state `length u8 (0-16), bytes`.
public enum SDPPDU: Sendable, Hashable {
    /// 0x01: the request failed; code 1 bad version, 2 bad record handle, 3 bad syntax, 4 bad PDU size,
    /// 5 bad continuation state, 6 insufficient resources.
    case errorResponse(transactionID: UInt16, code: UInt16, info: [UInt8])
    /// 0x02: the handles of records containing every UUID of `pattern` (1-12 UUIDs).
    case serviceSearchRequest(transactionID: UInt16, pattern: [DataElement], maximumCount: UInt16, continuation: [UInt8])
    /// 0x03: `totalCount` matching records; `handles` carries this part of them.
    case serviceSearchResponse(transactionID: UInt16, totalCount: UInt16, handles: [UInt32], continuation: [UInt8])
    /// 0x04: attributes of one record, by ID ranges.
    case serviceAttributeRequest(transactionID: UInt16, handle: UInt32, maximumByteCount: UInt16,
                                 attributes: [ClosedRange<UInt16>], continuation: [UInt8])
    /// 0x05: part of the bytes of one attribute list (a DES of ID, value pairs).
    case serviceAttributeResponse(transactionID: UInt16, attributeBytes: [UInt8], continuation: [UInt8])
    /// 0x06: search and attributes in one: the attribute lists of every matching record.
    case serviceSearchAttributeRequest(transactionID: UInt16, pattern: [DataElement], maximumByteCount: UInt16,
                                       attributes: [ClosedRange<UInt16>], continuation: [UInt8])
    /// 0x07: part of the bytes of a DES of attribute lists, one per record.
    case serviceSearchAttributeResponse(transactionID: UInt16, attributeBytes: [UInt8], continuation: [UInt8])

    /// The largest continuation state allowed (§4.3).
    public static let maximumContinuationLength = 16
    /// The most UUIDs a search pattern may hold (§4.5.1).
    public static let maximumPatternCount = 12

    /// The PDU ID.
    public var pduID: UInt8 {
        switch self {
        case .errorResponse: return 0x01
        case .serviceSearchRequest: return 0x02
        case .serviceSearchResponse: return 0x03
        case .serviceAttributeRequest: return 0x04
        case .serviceAttributeResponse: return 0x05
        case .serviceSearchAttributeRequest: return 0x06
        case .serviceSearchAttributeResponse: return 0x07
        }
    }

    /// The transaction ID.
    public var transactionID: UInt16 {
        switch self {
        case .errorResponse(let t, _, _), .serviceSearchRequest(let t, _, _, _), .serviceSearchResponse(let t, _, _, _),
             .serviceAttributeRequest(let t, _, _, _, _), .serviceAttributeResponse(let t, _, _),
             .serviceSearchAttributeRequest(let t, _, _, _, _), .serviceSearchAttributeResponse(let t, _, _):
            return t
        }
    }

    /// An attribute ID list element: single IDs as uint16, ranges as uint32 `low << 16 | high`.
    public static func attributeIDList(_ ranges: [ClosedRange<UInt16>]) -> DataElement {
        .sequence(ranges.map { range in
            range.lowerBound == range.upperBound
                ? .uint16(range.lowerBound)
                : .uint32(UInt32(range.lowerBound) << 16 | UInt32(range.upperBound))
        })
    }

    /// The PDU on the wire.
    public var bytes: [UInt8] {
        var p: [UInt8] = []
        func continuation(_ state: [UInt8]) {
            p.append(UInt8(truncatingIfNeeded: state.count)); p.append(contentsOf: state)
        }
        switch self {
        case .errorResponse(_, let code, let info):
            p.appendBE(code); p.append(contentsOf: info)
        case .serviceSearchRequest(_, let pattern, let maximum, let state):
            DataElement.sequence(pattern).encode(into: &p); p.appendBE(maximum); continuation(state)
        case .serviceSearchResponse(_, let total, let handles, let state):
            p.appendBE(total); p.appendBE(UInt16(truncatingIfNeeded: handles.count))
            for handle in handles { p.appendBE(handle) }
            continuation(state)
        case .serviceAttributeRequest(_, let handle, let maximum, let attributes, let state):
            p.appendBE(handle); p.appendBE(maximum); Self.attributeIDList(attributes).encode(into: &p); continuation(state)
        case .serviceAttributeResponse(_, let data, let state), .serviceSearchAttributeResponse(_, let data, let state):
            p.appendBE(UInt16(truncatingIfNeeded: data.count)); p.append(contentsOf: data); continuation(state)
        case .serviceSearchAttributeRequest(_, let pattern, let maximum, let attributes, let state):
            DataElement.sequence(pattern).encode(into: &p); p.appendBE(maximum); Self.attributeIDList(attributes).encode(into: &p)
            continuation(state)
        }
        var out: [UInt8] = [pduID]
        out.appendBE(transactionID)
        out.appendBE(UInt16(truncatingIfNeeded: p.count))
        return out + p
    }

    /// Decodes one whole PDU. The parameter length must match the bytes; every field must parse and
    /// nothing may follow the continuation state.
    public init(decoding bytes: [UInt8]) throws(MalformedPacket) {
        var header = ByteReader(bytes, context: "SDP PDU")
        let id = try header.u8("PDU ID")
        let transaction = try header.u16be("transaction ID")
        let length = Int(try header.u16be("parameter length"))
        guard header.remaining == length else {
            throw MalformedPacket("SDP PDU: parameter length says \(length) bytes, \(header.remaining) present")
        }
        var r = ByteReader(header.rest(), context: "SDP PDU 0x\(String(id, radix: 16))")
        func continuation() throws(MalformedPacket) -> [UInt8] {
            let count = Int(try r.u8("continuation length"))
            guard count <= Self.maximumContinuationLength else {
                throw MalformedPacket("SDP PDU: continuation state of \(count) bytes (at most 16)")
            }
            return try r.bytes(count, "continuation state")
        }
        switch id {
        case 0x01:
            self = .errorResponse(transactionID: transaction, code: try r.u16be("error code"), info: r.rest())
        case 0x02:
            let pattern = try Self.readPattern(&r)
            let maximum = try r.u16be("maximum record count")
            self = .serviceSearchRequest(transactionID: transaction, pattern: pattern, maximumCount: maximum, continuation: try continuation())
        case 0x03:
            let total = try r.u16be("total record count")
            let current = Int(try r.u16be("current record count"))
            var handles: [UInt32] = []
            for _ in 0..<current { handles.append(try r.u32be("record handle")) }
            self = .serviceSearchResponse(transactionID: transaction, totalCount: total, handles: handles, continuation: try continuation())
        case 0x04:
            let handle = try r.u32be("record handle")
            let maximum = try r.u16be("maximum attribute byte count")
            let attributes = try Self.readAttributeIDs(&r)
            self = .serviceAttributeRequest(transactionID: transaction, handle: handle, maximumByteCount: maximum,
                                            attributes: attributes, continuation: try continuation())
        case 0x05, 0x07:
            let count = Int(try r.u16be("attribute byte count"))
            let data = try r.bytes(count, "attribute bytes")
            let state = try continuation()
            self = id == 0x05 ? .serviceAttributeResponse(transactionID: transaction, attributeBytes: data, continuation: state)
                : .serviceSearchAttributeResponse(transactionID: transaction, attributeBytes: data, continuation: state)
        case 0x06:
            let pattern = try Self.readPattern(&r)
            let maximum = try r.u16be("maximum attribute byte count")
            let attributes = try Self.readAttributeIDs(&r)
            self = .serviceSearchAttributeRequest(transactionID: transaction, pattern: pattern, maximumByteCount: maximum,
                                                  attributes: attributes, continuation: try continuation())
        default:
            throw MalformedPacket("SDP PDU: unknown PDU ID 0x\(String(id, radix: 16))")
        }
        guard r.isAtEnd else { throw MalformedPacket("SDP PDU: \(r.remaining) bytes after the continuation state") }
    }

    private static func readPattern(_ r: inout ByteReader) throws(MalformedPacket) -> [DataElement] {
        guard case .sequence(let uuids) = try DataElement(reading: &r) else {
            throw MalformedPacket("SDP search pattern: not a sequence")
        }
        guard (1...maximumPatternCount).contains(uuids.count), uuids.allSatisfy({ $0.uuid != nil }) else {
            throw MalformedPacket("SDP search pattern: needs 1-12 UUIDs, has \(uuids.count) elements")
        }
        return uuids
    }

    private static func readAttributeIDs(_ r: inout ByteReader) throws(MalformedPacket) -> [ClosedRange<UInt16>] {
        guard case .sequence(let items) = try DataElement(reading: &r), !items.isEmpty else {
            throw MalformedPacket("SDP attribute ID list: not a non-empty sequence")
        }
        var ranges: [ClosedRange<UInt16>] = []
        for item in items {
            switch item {
            case .uint16(let id): ranges.append(id...id)
            case .uint32(let range):
                let low = UInt16(range >> 16), high = UInt16(truncatingIfNeeded: range)
                guard low <= high else { throw MalformedPacket("SDP attribute ID range 0x\(String(range, radix: 16)) runs backwards") }
                ranges.append(low...high)
            default:
                throw MalformedPacket("SDP attribute ID list: \(item) is neither a uint16 ID nor a uint32 range")
            }
        }
        return ranges
    }
}
