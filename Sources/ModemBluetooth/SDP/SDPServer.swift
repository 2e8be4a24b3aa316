/// An SDP server as a pure function of request bytes (Core Vol 3 Part B §4): answers Service Search,
/// Service Attribute and Service Search Attribute requests from a fixed set of records.
///
/// Long answers are split to honour the request's maximum count or byte count and our L2CAP channel's
/// peer MTU; the continuation state we hand out is 8 bytes, `offset u32, checksum u32` (FNV-1a of the
/// whole answer), so the server keeps no state between requests and can tell a stale or forged state
/// (error 5). Errors: 3 bad syntax (also unknown or response PDU IDs), 4 a parameter length that does
/// not match the PDU, 2 an unknown record handle, 5 a bad continuation state.
public struct SDPServer: Sendable {
    /// The records served, searched in this order.
    public var records: [ServiceRecord]
    /// The largest SDU the client's L2CAP end accepts (its MTU); every response fits it.
    public var mtu: Int

    /// Error codes of the Error Response (§4.4.1).
    public enum ErrorCode {
        /// Invalid/unsupported SDP version.
        public static let invalidVersion: UInt16 = 0x0001
        /// Invalid service record handle.
        public static let invalidRecordHandle: UInt16 = 0x0002
        /// Invalid request syntax.
        public static let invalidSyntax: UInt16 = 0x0003
        /// Invalid PDU size.
        public static let invalidPDUSize: UInt16 = 0x0004
        /// Invalid continuation state.
        public static let invalidContinuationState: UInt16 = 0x0005
        /// Insufficient resources to satisfy the request.
        public static let insufficientResources: UInt16 = 0x0006
    }

    /// A server for `records`, answering within `mtu` bytes (at least 48, the L2CAP minimum).
    public init(records: [ServiceRecord], mtu: Int = Int(L2CAP.defaultMTU)) {
        self.records = records
        self.mtu = max(mtu, Int(L2CAP.minimumMTU))
    }

    private static let stateLength = 8

    /// The response PDU to one request PDU.
    public func respond(to request: [UInt8]) -> [UInt8] {
        let transaction: UInt16 = request.count >= 3 ? UInt16(request[1]) << 8 | UInt16(request[2]) : 0
        func error(_ code: UInt16) -> [UInt8] {
            SDPPDU.errorResponse(transactionID: transaction, code: code, info: []).bytes
        }
        guard request.count >= 5 else { return error(ErrorCode.invalidPDUSize) }
        guard Int(UInt16(request[3]) << 8 | UInt16(request[4])) == request.count - 5 else { return error(ErrorCode.invalidPDUSize) }
        guard let pdu = try? SDPPDU(decoding: request) else { return error(ErrorCode.invalidSyntax) }
        switch pdu {
        case .serviceSearchRequest(_, let pattern, let maximum, let state):
            guard maximum > 0 else { return error(ErrorCode.invalidSyntax) }
            let handles = Array(matching(pattern).compactMap(\.handle).prefix(Int(maximum)))
            var encoded: [UInt8] = []
            for handle in handles { encoded.appendBE(handle) }
            guard let start = Self.offset(from: state, total: handles.count, checking: encoded) else {
                return error(ErrorCode.invalidContinuationState)
            }
            let room = max(1, (mtu - 5 - 4 - 1 - Self.stateLength) / 4)
            let end = min(handles.count, start + room)
            let next = end < handles.count ? Self.state(offset: end, of: encoded) : []
            return SDPPDU.serviceSearchResponse(transactionID: transaction, totalCount: UInt16(handles.count),
                                                handles: Array(handles[start..<end]), continuation: next).bytes
        case .serviceAttributeRequest(_, let handle, let maximum, let attributes, let state):
            guard maximum >= 7 else { return error(ErrorCode.invalidSyntax) }
            guard let record = records.first(where: { $0.handle == handle }) else { return error(ErrorCode.invalidRecordHandle) }
            return part(of: record.attributeList(attributes).bytes, maximum: maximum, state: state, transaction: transaction) {
                .serviceAttributeResponse(transactionID: transaction, attributeBytes: $0, continuation: $1)
            }
        case .serviceSearchAttributeRequest(_, let pattern, let maximum, let attributes, let state):
            guard maximum >= 7 else { return error(ErrorCode.invalidSyntax) }
            let lists = matching(pattern).map { $0.attributeList(attributes) }.filter { $0.elements?.isEmpty == false }
            return part(of: DataElement.sequence(lists).bytes, maximum: maximum, state: state, transaction: transaction) {
                .serviceSearchAttributeResponse(transactionID: transaction, attributeBytes: $0, continuation: $1)
            }
        case .errorResponse, .serviceSearchResponse, .serviceAttributeResponse, .serviceSearchAttributeResponse:
            return error(ErrorCode.invalidSyntax)
        }
    }

    /// The records holding every UUID of `pattern`.
    private func matching(_ pattern: [DataElement]) -> [ServiceRecord] {
        let uuids = pattern.compactMap(\.uuid)
        return records.filter { record in uuids.allSatisfy { record.contains(uuid: $0) } }
    }

    /// One response's share of `whole`, starting where `state` says.
    private func part(of whole: [UInt8], maximum: UInt16, state: [UInt8], transaction: UInt16,
                      make: ([UInt8], [UInt8]) -> SDPPDU) -> [UInt8] {
        guard let start = Self.offset(from: state, total: whole.count, checking: whole) else {
            return SDPPDU.errorResponse(transactionID: transaction, code: ErrorCode.invalidContinuationState, info: []).bytes
        }
        let room = max(1, min(Int(maximum), mtu - 5 - 2 - 1 - Self.stateLength))
        let end = min(whole.count, start + room)
        let next = end < whole.count ? Self.state(offset: end, of: whole) : []
        return make(Array(whole[start..<end]), next).bytes
    }

    private static func state(offset: Int, of whole: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.appendBE(UInt32(offset))
        out.appendBE(checksum(whole))
        return out
    }

    /// The start offset a continuation state names: 0 for none, nil when it is not one of ours for
    /// this answer.
    private static func offset(from state: [UInt8], total: Int, checking whole: [UInt8]) -> Int? {
        if state.isEmpty { return 0 }
        guard state.count == stateLength else { return nil }
        var reader = ByteReader(state)
        guard let offset = try? reader.u32be(), let sum = try? reader.u32be(),
              sum == checksum(whole), offset > 0, Int(offset) < total else { return nil }
        return Int(offset)
    }

    /// FNV-1a, 32 bits.
    private static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.reduce(UInt32(0x811C_9DC5)) { ($0 ^ UInt32($1)) &* 0x0100_0193 }
    }
}
