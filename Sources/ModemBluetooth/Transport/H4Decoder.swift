/// The H4 framing (Core Vol 4 Part A §2) as a value codec: bytes from a stream in, whole HCI packets
/// out. A stream splits and merges packets at will; the decoder keeps what is not yet whole and takes
/// each packet's length from its header, so its buffer never holds more than one packet
/// (at most 5 + 65535 bytes). An unknown indicator byte means the framing is lost for good: it throws,
/// and the transport gives up.
public struct H4Decoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    /// An empty decoder.
    public init() {}

    /// Bytes received but not yet part of a whole packet.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds bytes and returns every packet they complete, in order.
    /// - Throws: `MalformedPacket` ("H4 framing lost: …") on an indicator that is not 0x01-0x04; the
    ///   packets decoded before it in the same call are lost with it, as the stream is unusable.
    public mutating func push(_ bytes: [UInt8]) throws(MalformedPacket) -> [HCIPacket] {
        buffer.append(contentsOf: bytes)
        var packets: [HCIPacket] = []
        while let (packet, length) = try next() {
            packets.append(packet)
            start += length
        }
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        return packets
    }

    /// The packet at `start` and its H4 length, or nil when it is not whole yet.
    private func next() throws(MalformedPacket) -> (HCIPacket, Int)? {
        let available = buffer.count - start
        guard available >= 1 else { return nil }
        let indicator = buffer[start]
        let headerLength: Int
        switch indicator {
        case HCIPacket.Indicator.command, HCIPacket.Indicator.sco: headerLength = 3
        case HCIPacket.Indicator.acl: headerLength = 4
        case HCIPacket.Indicator.event: headerLength = 2
        default:
            throw MalformedPacket("H4 framing lost: unknown packet indicator \(HCIFormat.hex8(indicator))")
        }
        guard available >= 1 + headerLength else { return nil }
        let h = start + 1
        let payloadLength: Int
        switch indicator {
        case HCIPacket.Indicator.command, HCIPacket.Indicator.sco: payloadLength = Int(buffer[h + 2])
        case HCIPacket.Indicator.acl: payloadLength = Int(buffer[h + 2]) | Int(buffer[h + 3]) << 8
        default: payloadLength = Int(buffer[h + 1])
        }
        let total = 1 + headerLength + payloadLength
        guard available >= total else { return nil }
        let payload = Array(buffer[(h + headerLength)..<(start + total)])
        let packet: HCIPacket
        switch indicator {
        case HCIPacket.Indicator.command:
            packet = .command(opcode: UInt16(buffer[h]) | UInt16(buffer[h + 1]) << 8, parameters: payload)
        case HCIPacket.Indicator.sco:
            packet = .sco(handle: (UInt16(buffer[h]) | UInt16(buffer[h + 1]) << 8) & 0x0FFF, data: payload)
        case HCIPacket.Indicator.acl:
            let word = UInt16(buffer[h]) | UInt16(buffer[h + 1]) << 8
            packet = .acl(handle: word & 0x0FFF, boundary: UInt8((word >> 12) & 0x3), broadcast: UInt8(word >> 14),
                          data: payload)
        default:
            packet = .event(code: buffer[h], parameters: payload)
        }
        return (packet, total)
    }
}
