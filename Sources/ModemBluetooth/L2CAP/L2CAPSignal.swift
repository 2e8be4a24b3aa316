/// One signalling command as it sits in a C-frame (Core Vol 3 Part A §4): `code u8, identifier u8,
/// length u16 LE, data`. Several commands may share one frame.
public struct L2CAPSignalCommand: Sendable, Hashable {
    /// The command code (0x01 Command Reject … 0x0B Information Response).
    public var code: UInt8
    /// Matches a response to its request; 0 is never valid.
    public var identifier: UInt8
    /// The command's data, `length` bytes.
    public var data: [UInt8]

    /// A raw command.
    public init(code: UInt8, identifier: UInt8, data: [UInt8]) {
        self.code = code
        self.identifier = identifier
        self.data = data
    }

    /// A typed command with its identifier.
    public init(_ signal: L2CAPSignal, identifier: UInt8) {
        self.init(code: signal.code, identifier: identifier, data: signal.data)
    }

    /// The command on the wire.
    public var bytes: [UInt8] {
        var out: [UInt8] = [code, identifier]
        out.appendLE(UInt16(truncatingIfNeeded: data.count))
        out.append(contentsOf: data)
        return out
    }

    /// The typed meaning of the command; throws when a known command's data is too short or its
    /// options are malformed. Unknown codes decode as ``L2CAPSignal/unknown(code:data:)``.
    public func decoded() throws(MalformedPacket) -> L2CAPSignal {
        try L2CAPSignal(code: code, data: data)
    }

    /// Splits a C-frame payload into its commands. Stops at the first command whose header or length
    /// runs past the end and returns that damage with the commands before it.
    public static func split(_ payload: [UInt8]) -> (commands: [L2CAPSignalCommand], damage: MalformedPacket?) {
        var reader = ByteReader(payload, context: "L2CAP signalling")
        var commands: [L2CAPSignalCommand] = []
        while !reader.isAtEnd {
            do {
                let code = try reader.u8("code")
                let identifier = try reader.u8("identifier")
                let length = Int(try reader.u16le("length"))
                let data = try reader.bytes(length, "command data")
                commands.append(L2CAPSignalCommand(code: code, identifier: identifier, data: data))
            } catch {
                return (commands, error)
            }
        }
        return (commands, nil)
    }

    /// Several commands in one C-frame payload.
    public static func join(_ commands: [L2CAPSignalCommand]) -> [UInt8] {
        commands.flatMap(\.bytes)
    }
}

/// The signalling commands of a BR/EDR link (Core Vol 3 Part A §4.1-4.11), typed.
public enum L2CAPSignal: Sendable, Hashable {
    /// 0x01: the peer could not handle a command; `reason` 0 not understood, 1 signalling MTU
    /// exceeded (data: the MTU, u16), 2 invalid CID (data: local CID, remote CID).
    case commandReject(reason: UInt16, data: [UInt8])
    /// 0x02: open a channel to `psm`; `sourceCID` is the requester's end.
    case connectionRequest(psm: UInt16, sourceCID: UInt16)
    /// 0x03: `destinationCID` is the responder's end, `sourceCID` the requester's; result 0 ok,
    /// 1 pending, 2 PSM not supported, 3 security block, 4 no resources, 6 invalid / 7 used source CID.
    case connectionResponse(destinationCID: UInt16, sourceCID: UInt16, result: UInt16, status: UInt16)
    /// 0x04: options for the channel whose end at the receiver is `destinationCID`.
    case configurationRequest(destinationCID: UInt16, continuation: Bool, options: [L2CAPConfigurationOption])
    /// 0x05: the answer; `sourceCID` is the channel's end at the receiver of the response (the
    /// requester); result 0 success, 1 unacceptable parameters, 2 rejected, 3 unknown options, 4 pending.
    case configurationResponse(sourceCID: UInt16, continuation: Bool, result: UInt16, options: [L2CAPConfigurationOption])
    /// 0x06: close the channel; `destinationCID` is the receiver's end, `sourceCID` the sender's.
    case disconnectionRequest(destinationCID: UInt16, sourceCID: UInt16)
    /// 0x07: the answer, with both CIDs copied from the request.
    case disconnectionResponse(destinationCID: UInt16, sourceCID: UInt16)
    /// 0x08: a ping with optional data.
    case echoRequest([UInt8])
    /// 0x09: the answer to a ping.
    case echoResponse([UInt8])
    /// 0x0A: ask for 1 connectionless MTU, 2 extended features, 3 fixed channels.
    case informationRequest(type: UInt16)
    /// 0x0B: the answer; result 0 success, 1 not supported.
    case informationResponse(type: UInt16, result: UInt16, data: [UInt8])
    /// Any other code (LE, AMP, reserved): answered with Command Reject "not understood".
    case unknown(code: UInt8, data: [UInt8])

    /// The command code.
    public var code: UInt8 {
        switch self {
        case .commandReject: return 0x01
        case .connectionRequest: return 0x02
        case .connectionResponse: return 0x03
        case .configurationRequest: return 0x04
        case .configurationResponse: return 0x05
        case .disconnectionRequest: return 0x06
        case .disconnectionResponse: return 0x07
        case .echoRequest: return 0x08
        case .echoResponse: return 0x09
        case .informationRequest: return 0x0A
        case .informationResponse: return 0x0B
        case .unknown(let code, _): return code
        }
    }

    /// True for the commands that expect an answer (requests); responses and rejects never get one.
    public var isRequest: Bool {
        switch self {
        case .connectionRequest, .configurationRequest, .disconnectionRequest, .echoRequest, .informationRequest: return true
        case .unknown(let code, _): return !Self.responseCodes.contains(code)
        default: return false
        }
    }

    /// Codes of responses in the BR/EDR and LE tables: never answered with a Command Reject, even when
    /// unknown here (a reject of a response could loop between two stacks).
    static let responseCodes: Set<UInt8> = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x15, 0x18, 0x19]

    /// The command's data on the wire.
    public var data: [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .commandReject(let reason, let data):
            out.appendLE(reason); out.append(contentsOf: data)
        case .connectionRequest(let psm, let source):
            out.appendLE(psm); out.appendLE(source)
        case .connectionResponse(let destination, let source, let result, let status):
            out.appendLE(destination); out.appendLE(source); out.appendLE(result); out.appendLE(status)
        case .configurationRequest(let destination, let continuation, let options):
            out.appendLE(destination); out.appendLE(UInt16(continuation ? 1 : 0))
            out.append(contentsOf: L2CAPConfigurationOption.encode(options))
        case .configurationResponse(let source, let continuation, let result, let options):
            out.appendLE(source); out.appendLE(UInt16(continuation ? 1 : 0)); out.appendLE(result)
            out.append(contentsOf: L2CAPConfigurationOption.encode(options))
        case .disconnectionRequest(let destination, let source), .disconnectionResponse(let destination, let source):
            out.appendLE(destination); out.appendLE(source)
        case .echoRequest(let data), .echoResponse(let data):
            out = data
        case .informationRequest(let type):
            out.appendLE(type)
        case .informationResponse(let type, let result, let data):
            out.appendLE(type); out.appendLE(result); out.append(contentsOf: data)
        case .unknown(_, let data):
            out = data
        }
        return out
    }

    /// Decodes a command's data for `code`. Fixed fields must be present (extra trailing bytes of a
    /// fixed-size command are ignored, as later versions of the spec may add fields); options must
    /// parse exactly.
    public init(code: UInt8, data: [UInt8]) throws(MalformedPacket) {
        var reader = ByteReader(data, context: "L2CAP signalling command 0x\(String(code, radix: 16))")
        switch code {
        case 0x01:
            self = .commandReject(reason: try reader.u16le("reason"), data: reader.rest())
        case 0x02:
            self = .connectionRequest(psm: try reader.u16le("PSM"), sourceCID: try reader.u16le("source CID"))
        case 0x03:
            self = .connectionResponse(destinationCID: try reader.u16le("destination CID"), sourceCID: try reader.u16le("source CID"),
                                       result: try reader.u16le("result"), status: try reader.u16le("status"))
        case 0x04:
            let destination = try reader.u16le("destination CID")
            let flags = try reader.u16le("flags")
            self = .configurationRequest(destinationCID: destination, continuation: flags & 1 != 0,
                                         options: try L2CAPConfigurationOption.decodeList(reader.rest()))
        case 0x05:
            let source = try reader.u16le("source CID")
            let flags = try reader.u16le("flags")
            let result = try reader.u16le("result")
            self = .configurationResponse(sourceCID: source, continuation: flags & 1 != 0, result: result,
                                          options: try L2CAPConfigurationOption.decodeList(reader.rest()))
        case 0x06:
            self = .disconnectionRequest(destinationCID: try reader.u16le("destination CID"), sourceCID: try reader.u16le("source CID"))
        case 0x07:
            self = .disconnectionResponse(destinationCID: try reader.u16le("destination CID"), sourceCID: try reader.u16le("source CID"))
        case 0x08:
            self = .echoRequest(data)
        case 0x09:
            self = .echoResponse(data)
        case 0x0A:
            self = .informationRequest(type: try reader.u16le("info type"))
        case 0x0B:
            self = .informationResponse(type: try reader.u16le("info type"), result: try reader.u16le("result"), data: reader.rest())
        default:
            self = .unknown(code: code, data: data)
        }
    }
}

/// One configuration option (Core Vol 3 Part A §5): `type u8 (bit 7 = hint), length u8, value`.
public struct L2CAPConfigurationOption: Sendable, Hashable {
    /// The type byte as sent, hint bit included.
    public var type: UInt8
    /// The option's value bytes.
    public var value: [UInt8]

    /// An option with a raw type byte and value.
    public init(type: UInt8, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    /// The type without the hint bit (0x01 MTU, 0x02 flush timeout, 0x03 QoS, 0x04 retransmission and
    /// flow control, 0x05 FCS, 0x06 extended flow spec, 0x07 extended window size).
    public var kind: UInt8 { type & 0x7F }
    /// Hints may be ignored by a receiver that does not know them.
    public var isHint: Bool { type & 0x80 != 0 }

    /// Type 0x01: the MTU the sender of the request can receive.
    public static let mtuType: UInt8 = 0x01
    /// Type 0x04: retransmission and flow control (mode 0 = basic).
    public static let retransmissionType: UInt8 = 0x04

    /// The MTU option.
    public static func mtu(_ mtu: UInt16) -> L2CAPConfigurationOption {
        var value: [UInt8] = []
        value.appendLE(mtu)
        return L2CAPConfigurationOption(type: mtuType, value: value)
    }

    /// The MTU when this is a well-formed MTU option.
    public var mtu: UInt16? {
        guard kind == Self.mtuType, value.count == 2 else { return nil }
        return UInt16(value[0]) | UInt16(value[1]) << 8
    }

    /// Options as they follow a configuration request or response.
    public static func encode(_ options: [L2CAPConfigurationOption]) -> [UInt8] {
        var out: [UInt8] = []
        for option in options {
            out.append(option.type)
            out.append(UInt8(truncatingIfNeeded: option.value.count))
            out.append(contentsOf: option.value.prefix(255))
        }
        return out
    }

    /// Parses options filling `bytes` exactly; throws on a truncated option.
    public static func decodeList(_ bytes: [UInt8]) throws(MalformedPacket) -> [L2CAPConfigurationOption] {
        var reader = ByteReader(bytes, context: "L2CAP configuration options")
        var options: [L2CAPConfigurationOption] = []
        while !reader.isAtEnd {
            let type = try reader.u8("option type")
            let length = Int(try reader.u8("option length"))
            options.append(L2CAPConfigurationOption(type: type, value: try reader.bytes(length, "option value")))
        }
        return options
    }
}
