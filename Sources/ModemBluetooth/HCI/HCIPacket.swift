import ModemRuntime
/// One HCI packet (Core Vol 4 Part E §5.4), as it crosses a transport: a command to the controller,
/// ACL or SCO data either way, or an event from the controller. All fields little-endian on the wire.
public enum HCIPacket: Sendable, Hashable {
    /// A command: opcode (OGF << 10 | OCF) and its parameters (at most 255 bytes).
    case command(opcode: UInt16, parameters: [UInt8])
    /// ACL data: the 12-bit connection handle, the packet boundary flag (2 bits: 0b10 first
    /// automatically flushable, 0b01 continuation, 0b00 first non-flushable), the broadcast flag
    /// (2 bits) and the data (at most 65535 bytes).
    case acl(handle: UInt16, boundary: UInt8, broadcast: UInt8, data: [UInt8])
    /// SCO data: the 12-bit connection handle and the data (at most 255 bytes).
    case sco(handle: UInt16, data: [UInt8])
    /// An event: its code and parameters (at most 255 bytes).
    case event(code: UInt8, parameters: [UInt8])

    /// The H4 indicator bytes (Core Vol 4 Part A §2).
    public enum Indicator {
        /// HCI command packet.
        public static let command: UInt8 = 0x01
        /// HCI ACL data packet.
        public static let acl: UInt8 = 0x02
        /// HCI synchronous (SCO) data packet.
        public static let sco: UInt8 = 0x03
        /// HCI event packet.
        public static let event: UInt8 = 0x04
    }

    /// The H4 indicator of this packet.
    public var indicator: UInt8 {
        switch self {
        case .command: return Indicator.command
        case .acl: return Indicator.acl
        case .sco: return Indicator.sco
        case .event: return Indicator.event
        }
    }

    /// The packet as HCI bytes, without the H4 indicator. Oversized payloads are cut to what the
    /// header can describe (255 bytes for commands, events and SCO, 65535 for ACL): a builder's
    /// mistake, never input from the wire.
    public var body: [UInt8] {
        var out: [UInt8] = []
        switch self {
        case let .command(opcode, parameters):
            let p = parameters.prefix(255)
            out.reserveCapacity(3 + p.count)
            out.appendLE(opcode)
            out.append(UInt8(p.count))
            out.append(contentsOf: p)
        case let .acl(handle, boundary, broadcast, data):
            let d = data.prefix(0xFFFF)
            out.reserveCapacity(4 + d.count)
            out.appendLE(handle & 0x0FFF | UInt16(boundary & 0x3) << 12 | UInt16(broadcast & 0x3) << 14)
            out.appendLE(UInt16(d.count))
            out.append(contentsOf: d)
        case let .sco(handle, data):
            let d = data.prefix(255)
            out.appendLE(handle & 0x0FFF)
            out.append(UInt8(d.count))
            out.append(contentsOf: d)
        case let .event(code, parameters):
            let p = parameters.prefix(255)
            out.append(code)
            out.append(UInt8(p.count))
            out.append(contentsOf: p)
        }
        return out
    }

    /// The indicator byte followed by the packet: what goes over a UART, TCP or the user channel.
    public var h4: [UInt8] { [indicator] + body }

    /// Parses one whole H4 packet (indicator + packet, nothing after it).
    public init(h4 bytes: [UInt8]) throws(MalformedPacket) {
        var decoder = H4Decoder()
        let packets: [HCIPacket]
        do {
            packets = try decoder.push(bytes)
        } catch {
            throw error
        }
        guard packets.count == 1, decoder.bufferedByteCount == 0 else {
            throw MalformedPacket("H4 packet: \(bytes.count) bytes do not hold exactly one packet")
        }
        self = packets[0]
    }
}

extension HCIPacket: CustomStringConvertible {
    /// A short line for logs: "command Reset (0x0C03) 0 bytes", "event 0x0E 4 bytes", "ACL 0x0001 PB 2 27 bytes".
    public var description: String {
        switch self {
        case let .command(opcode, parameters):
            return "command \(HCICommand.name(of: opcode)) \(parameters.count) bytes"
        case let .acl(handle, boundary, _, data):
            return "ACL \(HCIFormat.hex16(handle)) PB \(boundary) \(data.count) bytes"
        case let .sco(handle, data):
            return "SCO \(HCIFormat.hex16(handle)) \(data.count) bytes"
        case let .event(code, parameters):
            return "event \(HCIFormat.hex8(code)) \(parameters.count) bytes"
        }
    }
}

/// Hex formatting shared by the HCI messages ("0x13", "0x0C03"), on the runtime's ``Hex``.
enum HCIFormat {
    static func hex8(_ value: UInt8) -> String { "0x" + Hex.digits(value) }
    static func hex16(_ value: UInt16) -> String { "0x" + Hex.digits(value) }
}
