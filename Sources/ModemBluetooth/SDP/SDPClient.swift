/// What an ``SDPClient`` wants next, or what it found.
public enum SDPClientStep: Sendable, Hashable {
    /// Send this request PDU on the SDP channel and feed the answer back.
    case send([UInt8])
    /// A matching record names this RFCOMM server channel (1-30).
    case found(channel: UInt8)
    /// No matching record has an RFCOMM channel.
    case notFound
    /// The exchange failed (an error response, a malformed or unexpected answer).
    case failed(String)
}

/// Finds the RFCOMM channel of a service (Serial Port by default) with one Service Search Attribute
/// request, following continuations (Core Vol 3 Part B §4.7). A value: `start()` gives the first
/// request; each answer goes to `received(_:)`, which returns the next step.
public struct SDPClient: Sendable {
    /// The 16-bit UUID searched for.
    public let pattern: UInt16
    /// The attribute IDs asked for.
    public let attributes: [ClosedRange<UInt16>]
    /// The maximum attribute byte count per response we ask for (at least 7).
    public let maximumByteCount: UInt16
    /// The attribute lists of every matching record, once the answer is complete.
    public private(set) var records: [ServiceRecord] = []
    /// The ServiceName of the record the channel came from, if it has one.
    public private(set) var serviceName: String?

    private var transactionID: UInt16 = 0
    private var waiting = false
    private var collected: [UInt8] = []
    private var rounds = 0

    /// Gives up after this many continuations.
    public static let maximumRounds = 256
    /// Gives up when the attribute lists grow past this many bytes.
    public static let maximumBytes = 1 << 20

    /// A client searching for `pattern` (Serial Port), asking for `attributes` (the protocol descriptor
    /// list and the service name; pass `[0x0000...0xFFFF]` for everything) `maximumByteCount` at a time.
    public init(pattern: UInt16 = ServiceRecord.UUID16.serialPort,
                attributes: [ClosedRange<UInt16>] = [ServiceRecord.Attribute.protocolDescriptorList...ServiceRecord.Attribute.protocolDescriptorList,
                                                     ServiceRecord.Attribute.serviceName...ServiceRecord.Attribute.serviceName],
                maximumByteCount: UInt16 = 0xFFFF) {
        self.pattern = pattern
        self.attributes = attributes.isEmpty ? [0x0000...0xFFFF] : attributes
        self.maximumByteCount = max(7, maximumByteCount)
    }

    /// The first request.
    public mutating func start() -> [UInt8] {
        collected = []
        rounds = 0
        records = []
        serviceName = nil
        return request(continuation: [])
    }

    private mutating func request(continuation: [UInt8]) -> [UInt8] {
        transactionID &+= 1
        waiting = true
        return SDPPDU.serviceSearchAttributeRequest(transactionID: transactionID, pattern: [.uuid16(pattern)],
                                                    maximumByteCount: maximumByteCount, attributes: attributes,
                                                    continuation: continuation).bytes
    }

    /// One answer PDU from the server.
    public mutating func received(_ pdu: [UInt8]) -> SDPClientStep {
        guard waiting else { return .failed("SDP answer with no request outstanding") }
        waiting = false
        let answer: SDPPDU
        do {
            answer = try SDPPDU(decoding: pdu)
        } catch {
            return .failed("malformed SDP answer: \(error.reason)")
        }
        switch answer {
        case .errorResponse(_, let code, _):
            return .failed("SDP error response: \(Self.errorText(code))")
        case .serviceSearchAttributeResponse(let transaction, let bytes, let continuation):
            guard transaction == transactionID else {
                return .failed("SDP answer for transaction \(transaction), expected \(transactionID)")
            }
            collected += bytes
            guard collected.count <= Self.maximumBytes else { return .failed("SDP answer larger than \(Self.maximumBytes) bytes") }
            if !continuation.isEmpty {
                rounds += 1
                guard rounds <= Self.maximumRounds else { return .failed("SDP answer still continued after \(Self.maximumRounds) parts") }
                return .send(request(continuation: continuation))
            }
            return finish()
        default:
            return .failed("unexpected SDP answer (PDU ID 0x\(String(answer.pduID, radix: 16)))")
        }
    }

    private mutating func finish() -> SDPClientStep {
        do {
            guard case .sequence(let lists) = try DataElement(decoding: collected) else {
                return .failed("SDP attribute lists: not a sequence")
            }
            records = try lists.map { list throws(MalformedPacket) in try ServiceRecord(attributeList: list) }
        } catch {
            return .failed("malformed SDP attribute lists: \(error.reason)")
        }
        guard let record = records.first(where: { $0.rfcommChannel != nil }), let channel = record.rfcommChannel else {
            return .notFound
        }
        serviceName = record.attributes[ServiceRecord.Attribute.serviceName]?.string
        return .found(channel: channel)
    }

    static func errorText(_ code: UInt16) -> String {
        switch code {
        case 1: return "invalid SDP version"
        case 2: return "invalid service record handle"
        case 3: return "invalid request syntax"
        case 4: return "invalid PDU size"
        case 5: return "invalid continuation state"
        case 6: return "insufficient resources"
        default: return "error 0x\(String(code, radix: 16))"
        }
    }
}
