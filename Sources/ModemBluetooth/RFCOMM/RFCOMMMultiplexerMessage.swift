/// A multiplexer control message, carried in a UIH frame on DLCI 0 (07.10 §5.4.6, RFCOMM §5.5):
/// `type (EA, C/R, 6-bit code), length (EA-coded), values`.
public struct RFCOMMMultiplexerMessage: Sendable, Hashable {
    /// The 6-bit message codes (the type byte is `code << 2 | C/R << 1 | EA`).
    public enum Code: UInt8, Sendable, Hashable, CaseIterable {
        /// Parameter Negotiation (type 0x83 command / 0x81 response).
        case parameterNegotiation = 0x20
        /// Test (0x23 / 0x21).
        case test = 0x08
        /// Flow Control On, all DLCs (0xA3 / 0xA1).
        case flowControlOn = 0x28
        /// Flow Control Off, all DLCs (0x63 / 0x61).
        case flowControlOff = 0x18
        /// Modem Status Command (0xE3 / 0xE1).
        case modemStatus = 0x38
        /// Non Supported Command response (0x11).
        case notSupported = 0x04
        /// Remote Port Negotiation (0x93 / 0x91).
        case remotePortNegotiation = 0x24
        /// Remote Line Status (0x53 / 0x51).
        case remoteLineStatus = 0x14

        /// The type byte for a command (C/R = 1) or a response (C/R = 0).
        public func typeByte(command: Bool) -> UInt8 { rawValue << 2 | (command ? 0x02 : 0) | 0x01 }
    }

    /// What a message says.
    public enum Content: Sendable, Hashable {
        /// PN: the parameters of one DLC.
        case parameterNegotiation(RFCOMMParameters)
        /// Test: bytes the peer echoes.
        case test([UInt8])
        /// FCon: the sender can receive again on every DLC.
        case flowControlOn
        /// FCoff: the sender cannot receive on any DLC (except DLCI 0).
        case flowControlOff
        /// MSC: V.24 signals of a DLC (EA bit 0, FC 1, RTC 2, RTR 3, IC 6, DV 7) and an optional break byte.
        case modemStatus(dlci: UInt8, signals: UInt8, breakSignal: UInt8?)
        /// NSC: the type byte(s) of a command the sender does not know.
        case notSupported(type: [UInt8])
        /// RPN: a query (no settings) or settings for a DLC.
        case remotePortNegotiation(dlci: UInt8, settings: RFCOMMPortSettings?)
        /// RLS: a DLC's line status (overrun, parity, framing errors).
        case remoteLineStatus(dlci: UInt8, status: UInt8)
        /// A message type we do not know: its type byte(s) as received and its values.
        case unknown(type: [UInt8], value: [UInt8])
    }

    /// True for a command (the type byte's C/R bit is 1), false for a response.
    public var isCommand: Bool
    /// The message.
    public var content: Content

    /// Creates a message.
    public init(isCommand: Bool, content: Content) {
        self.isCommand = isCommand
        self.content = content
    }

    /// The DLCI byte of MSC, RPN and RLS: EA = 1, bit 1 = 1, DLCI in bits 2-7.
    static func addressByte(_ dlci: UInt8) -> UInt8 { (dlci & 0x3F) << 2 | 0x03 }

    /// The message's bytes.
    public var encoded: [UInt8] {
        let type: [UInt8]
        let value: [UInt8]
        switch content {
        case .parameterNegotiation(let parameters):
            type = [Code.parameterNegotiation.typeByte(command: isCommand)]
            value = parameters.encoded
        case .test(let bytes):
            type = [Code.test.typeByte(command: isCommand)]
            value = bytes
        case .flowControlOn:
            type = [Code.flowControlOn.typeByte(command: isCommand)]
            value = []
        case .flowControlOff:
            type = [Code.flowControlOff.typeByte(command: isCommand)]
            value = []
        case .modemStatus(let dlci, let signals, let breakSignal):
            type = [Code.modemStatus.typeByte(command: isCommand)]
            value = [Self.addressByte(dlci), signals] + (breakSignal.map { [$0] } ?? [])
        case .notSupported(let unsupported):
            type = [Code.notSupported.typeByte(command: isCommand)]
            value = unsupported
        case .remotePortNegotiation(let dlci, let settings):
            type = [Code.remotePortNegotiation.typeByte(command: isCommand)]
            value = [Self.addressByte(dlci)] + (settings?.encoded ?? [])
        case .remoteLineStatus(let dlci, let status):
            type = [Code.remoteLineStatus.typeByte(command: isCommand)]
            value = [Self.addressByte(dlci), status]
        case .unknown(let unknownType, let unknownValue):
            type = unknownType
            value = unknownValue
        }
        var out = type
        var length = value.count
        repeat {   // EA-coded: 7 bits a byte, least significant first, EA = 1 on the last
            let more = length >> 7
            out.append(UInt8(truncatingIfNeeded: length & 0x7F) << 1 | (more == 0 ? 1 : 0))
            length = more
        } while length > 0
        out.append(contentsOf: value)
        return out
    }

    /// Decodes every message in a DLCI 0 information field (usually one).
    public static func decodeAll(_ bytes: [UInt8]) throws(MalformedPacket) -> [RFCOMMMultiplexerMessage] {
        var reader = ByteReader(bytes, context: "RFCOMM multiplexer message")
        var messages: [RFCOMMMultiplexerMessage] = []
        repeat {
            messages.append(try decode(&reader))
        } while !reader.isAtEnd
        return messages
    }

    /// Decodes one message from `reader`.
    public static func decode(_ reader: inout ByteReader) throws(MalformedPacket) -> RFCOMMMultiplexerMessage {
        var type: [UInt8] = []
        repeat {
            guard type.count < 4 else { throw MalformedPacket("RFCOMM multiplexer message: type longer than 4 bytes") }
            type.append(try reader.u8("type"))
        } while type[type.count - 1] & 0x01 == 0
        var length = 0
        var lengthBytes = 0
        while true {
            guard lengthBytes < 3 else { throw MalformedPacket("RFCOMM multiplexer message: length longer than 3 bytes") }
            let byte = try reader.u8("length")
            length |= Int(byte >> 1) << (7 * lengthBytes)
            lengthBytes += 1
            if byte & 0x01 == 1 { break }
        }
        let value = try reader.bytes(length, "values")
        let isCommand = type[0] & 0x02 != 0
        guard type.count == 1, let code = Code(rawValue: type[0] >> 2) else {
            return RFCOMMMultiplexerMessage(isCommand: isCommand, content: .unknown(type: type, value: value))
        }
        let name = "RFCOMM \(code)"
        var values = ByteReader(value, context: name)
        let content: Content
        switch code {
        case .parameterNegotiation:
            content = .parameterNegotiation(try RFCOMMParameters.decode(value))
        case .test:
            content = .test(value)
        case .flowControlOn:
            content = .flowControlOn
        case .flowControlOff:
            content = .flowControlOff
        case .modemStatus:
            guard value.count == 2 || value.count == 3 else {
                throw MalformedPacket("\(name): \(value.count) value bytes, needs 2 or 3")
            }
            content = .modemStatus(dlci: value[0] >> 2, signals: value[1], breakSignal: value.count == 3 ? value[2] : nil)
        case .notSupported:
            guard !value.isEmpty else { throw MalformedPacket("\(name): no type byte") }
            content = .notSupported(type: value)
        case .remotePortNegotiation:
            guard value.count == 1 || value.count == 8 else {
                throw MalformedPacket("\(name): \(value.count) value bytes, needs 1 or 8")
            }
            let dlci = try values.u8("DLCI") >> 2
            content = .remotePortNegotiation(dlci: dlci, settings: value.count == 8 ? try RFCOMMPortSettings.decode(&values) : nil)
        case .remoteLineStatus:
            guard value.count == 2 else { throw MalformedPacket("\(name): \(value.count) value bytes, needs 2") }
            content = .remoteLineStatus(dlci: value[0] >> 2, status: value[1])
        }
        return RFCOMMMultiplexerMessage(isCommand: isCommand, content: content)
    }
}
