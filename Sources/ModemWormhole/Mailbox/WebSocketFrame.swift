/// One WebSocket frame (RFC 6455 section 5.2), unmasked.
public struct WebSocketFrame: Sendable, Equatable {
    /// Whether it is the last frame of its message.
    public var fin: Bool
    /// The opcode: 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong.
    public var opcode: UInt8
    /// The payload (unmasked).
    public var payload: [UInt8]

    /// Creates a frame.
    public init(fin: Bool, opcode: UInt8, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }

    /// The frame on the wire: masked with `mask` (a client's frames must be), else unmasked.
    public func encoded(mask: [UInt8]?) -> [UInt8] {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | (opcode & 0x0F)]
        let n = payload.count, m: UInt8 = mask == nil ? 0 : 0x80
        if n < 126 {
            frame.append(m | UInt8(n))
        } else if n <= 0xFFFF {
            frame += [m | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            frame.append(m | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8(truncatingIfNeeded: UInt64(n) >> UInt64(shift))) }
        }
        guard let mask, mask.count == 4 else { return frame + payload }
        frame += mask
        var masked = payload
        for i in masked.indices { masked[i] ^= mask[i & 3] }
        return frame + masked
    }
}

/// Cuts WebSocket frames out of received bytes, as a value (the driver does the reading): reserved
/// bits, control frames over 125 bytes or fragmented, and frames over ``maximumPayload`` are errors.
public struct WebSocketFrameDecoder: Sendable {
    /// The largest payload accepted.
    public let maximumPayload: Int
    private var buffer: [UInt8] = []
    private var start = 0

    /// A decoder with nothing buffered.
    public init(maximumPayload: Int) { self.maximumPayload = maximumPayload }

    /// Bytes buffered and not yet a whole frame.
    public var bufferedCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func feed(_ bytes: some Collection<UInt8>) {
        if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or nil until more bytes come.
    /// - Throws: ``WormholeError`` (`.server`) for a frame no server may send.
    public mutating func next() throws(WormholeError) -> WebSocketFrame? {
        let b = buffer, s = start
        guard b.count - s >= 2 else { return nil }
        let fin = b[s] & 0x80 != 0
        let opcode = b[s] & 0x0F
        if b[s] & 0x70 != 0 { throw WormholeError(.server, "the server sent a frame with reserved bits set") }
        let masked = b[s + 1] & 0x80 != 0
        var length = UInt64(b[s + 1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard b.count - s >= 4 else { return nil }
            length = UInt64(b[s + 2]) << 8 | UInt64(b[s + 3])
            offset = 4
        } else if length == 127 {
            guard b.count - s >= 10 else { return nil }
            length = b[(s + 2)..<(s + 10)].reduce(0) { $0 << 8 | UInt64($1) }
            offset = 10
        }
        if opcode >= 8 && (length > 125 || !fin) { throw WormholeError(.server, "the server sent a bad control frame") }
        guard length <= UInt64(maximumPayload) else {
            throw WormholeError(.server, "the server sent a frame of \(length) bytes (at most \(maximumPayload))")
        }
        let maskLength = masked ? 4 : 0
        let total = offset + maskLength + Int(length)
        guard b.count - s >= total else { return nil }
        var payload = Array(b[(s + offset + maskLength)..<(s + total)])
        if masked {
            let key = Array(b[(s + offset)..<(s + offset + 4)])
            for i in payload.indices { payload[i] ^= key[i & 3] }
        }
        start += total
        if start > 65_536 { buffer.removeFirst(start); start = 0 }
        return WebSocketFrame(fin: fin, opcode: opcode, payload: payload)
    }
}
