/// Record kinds of data connections (the data-connection API), carried in a ``RecordSession`` (0x20...0x2F).
public enum DataRecordKind {
    public static let offer: UInt8 = 0x20
    public static let answer: UInt8 = 0x21
    public static let end: UInt8 = 0x22
    public static let channelOpen: UInt8 = 0x23
    public static let channelHave: UInt8 = 0x24
    public static let data: UInt8 = 0x25
    public static let channelDone: UInt8 = 0x27
    public static let channelResult: UInt8 = 0x28
    public static let channelClose: UInt8 = 0x29
    public static let progress: UInt8 = 0x2A
}

/// Why a connection or a channel was refused, failed or ended. The raw value is the wire byte.
public enum DataReason: UInt8, Sendable, Equatable, CustomStringConvertible {
    case none = 0
    case declined = 1
    case noSpace = 2
    case metadataTooLarge = 3
    case cancelled = 4
    case badName = 5
    case hashMismatch = 6
    case sessionEnded = 7
    case protocolError = 8
    case tooLarge = 9
    case ioError = 10
    case userEnded = 11
    case peerEnded = 12

    public var description: String {
        switch self {
        case .none: "ok"
        case .declined: "declined"
        case .noSpace: "not enough free space"
        case .metadataTooLarge: "metadata over 4096 bytes"
        case .cancelled: "cancelled"
        case .badName: "unusable file name"
        case .hashMismatch: "hash mismatch"
        case .sessionEnded: "the session ended"
        case .protocolError: "protocol error"
        case .tooLarge: "too large"
        case .ioError: "input/output error"
        case .userEnded: "ended by the user"
        case .peerEnded: "ended by the peer"
        }
    }

    init(wire: UInt8) { self = DataReason(rawValue: wire) ?? .protocolError }
}

/// The kind of a channel inside a data connection.
public enum ChannelKind: UInt8, Sendable, Equatable {
    /// A long-lived channel of blocks (no size, no hash).
    case stream = 1
    /// One in-memory piece of data with a description.
    case blob = 2
    /// A file, read and written in blocks, hashed, resumable.
    case file = 3
}

/// One data-connection record, decoded. Connection and channel numbers are as on the wire: the side
/// that created the connection (channel) sends its number with the top bit clear, the other side sets
/// the top bit when it refers to it (so both sides may create them without colliding).
public enum DataMessage: Sendable, Equatable {
    case offer(conn: UInt32, metadata: [UInt8])
    case answer(conn: UInt32, accept: Bool, reason: DataReason)
    case end(conn: UInt32, reason: DataReason)
    case channelOpen(conn: UInt32, channel: UInt16, kind: ChannelKind, size: UInt64, blockSize: UInt32,
                     fileKey: [UInt8], description: String, name: String)
    case channelHave(conn: UInt32, channel: UInt16, blocks: UInt32, aggregate: [UInt8], bitmap: [UInt8])
    case data(conn: UInt32, channel: UInt16, block: UInt32, offset: UInt32, last: Bool, hash: [UInt8]?,
              bytes: ArraySlice<UInt8>)
    case channelDone(conn: UInt32, channel: UInt16, root: [UInt8])
    case channelResult(conn: UInt32, channel: UInt16, ok: Bool, reason: DataReason, badBlocks: [UInt32])
    case channelClose(conn: UInt32, channel: UInt16, reason: DataReason)
    case progress(conn: UInt32, channel: UInt16, bytes: UInt64)

    /// The largest metadata an offer may carry (the data-connection API: 4 KiB).
    public static let maximumMetadata = 4096
    /// The largest channel description.
    public static let maximumDescription = 1024
    /// The largest file name on the wire (names are cleaned and cut to 255 bytes on receipt).
    public static let maximumName = 4096
    /// Bytes of a DATA header before the hash and the payload.
    public static let dataHeader = 15

    /// The record kind and body of this message.
    public func encoded() -> (kind: UInt8, body: [UInt8]) {
        var w = DataByteWriter()
        switch self {
        case .offer(let conn, let metadata):
            w.u32(conn); w.bytes(metadata)
            return (DataRecordKind.offer, w.out)
        case .answer(let conn, let accept, let reason):
            w.u32(conn); w.u8(accept ? 1 : 0); w.u8(reason.rawValue)
            return (DataRecordKind.answer, w.out)
        case .end(let conn, let reason):
            w.u32(conn); w.u8(reason.rawValue)
            return (DataRecordKind.end, w.out)
        case .channelOpen(let conn, let channel, let kind, let size, let blockSize, let fileKey, let description, let name):
            w.u32(conn); w.u16(channel); w.u8(kind.rawValue); w.u64(size); w.u32(blockSize)
            var key = Array(fileKey.prefix(16)); key += Array(repeating: 0, count: 16 - key.count)
            w.bytes(key)
            let d = Array(description.utf8)
            w.u16(UInt16(min(d.count, 0xFFFF))); w.bytes(d.prefix(0xFFFF))
            w.bytes(Array(name.utf8))
            return (DataRecordKind.channelOpen, w.out)
        case .channelHave(let conn, let channel, let blocks, let aggregate, let bitmap):
            w.u32(conn); w.u16(channel); w.u32(blocks); w.bytes(aggregate); w.bytes(bitmap)
            return (DataRecordKind.channelHave, w.out)
        case .data(let conn, let channel, let block, let offset, let last, let hash, let bytes):
            w.out.reserveCapacity(Self.dataHeader + 32 + bytes.count)
            w.u32(conn); w.u16(channel); w.u32(block); w.u32(offset)
            w.u8((last ? 1 : 0) | (hash != nil ? 2 : 0))
            if let hash { w.bytes(hash) }
            w.out.append(contentsOf: bytes)
            return (DataRecordKind.data, w.out)
        case .channelDone(let conn, let channel, let root):
            w.u32(conn); w.u16(channel); w.bytes(root)
            return (DataRecordKind.channelDone, w.out)
        case .channelResult(let conn, let channel, let ok, let reason, let badBlocks):
            w.u32(conn); w.u16(channel); w.u8(ok ? 1 : 0); w.u8(reason.rawValue)
            let list = badBlocks.prefix(1024)
            w.u16(UInt16(list.count)); for b in list { w.u32(b) }
            return (DataRecordKind.channelResult, w.out)
        case .channelClose(let conn, let channel, let reason):
            w.u32(conn); w.u16(channel); w.u8(reason.rawValue)
            return (DataRecordKind.channelClose, w.out)
        case .progress(let conn, let channel, let bytes):
            w.u32(conn); w.u16(channel); w.u64(bytes)
            return (DataRecordKind.progress, w.out)
        }
    }

    /// Decodes one record body. Returns nil for a kind outside 0x20...0x2F's known set or a body that is
    /// too short, too long or inconsistent (the caller treats it as a protocol error).
    public static func decode(kind: UInt8, body: [UInt8]) -> DataMessage? {
        var r = DataByteReader(body)
        guard let conn = r.u32() else { return nil }
        switch kind {
        case DataRecordKind.offer:
            return .offer(conn: conn, metadata: Array(r.rest()))
        case DataRecordKind.answer:
            guard let a = r.u8(), let reason = r.u8(), r.atEnd else { return nil }
            return .answer(conn: conn, accept: a == 1, reason: DataReason(wire: reason))
        case DataRecordKind.end:
            guard let reason = r.u8(), r.atEnd else { return nil }
            return .end(conn: conn, reason: DataReason(wire: reason))
        case DataRecordKind.channelOpen:
            guard let ch = r.u16(), let k = r.u8(), let kind = ChannelKind(rawValue: k), let size = r.u64(),
                  let blockSize = r.u32(), let key = r.take(16), let dl = r.u16(), Int(dl) <= maximumDescription,
                  let d = r.take(Int(dl)) else { return nil }
            let name = r.rest()
            guard name.count <= maximumName else { return nil }
            // Both are UTF-8 text on the wire; invalid bytes make the record malformed. (Repairing them
            // into U+FFFD could triple a description past its limit, so the message would no longer
            // encode to a record that decodes: found by the data-connection fuzz target.)
            guard let description = String(validating: d, as: UTF8.self),
                  let nameText = String(validating: name, as: UTF8.self) else { return nil }
            return .channelOpen(conn: conn, channel: ch, kind: kind, size: size, blockSize: blockSize,
                                fileKey: Array(key), description: description, name: nameText)
        case DataRecordKind.channelHave:
            guard let ch = r.u16(), let blocks = r.u32(), let agg = r.take(32) else { return nil }
            let bitmap = r.rest()
            guard bitmap.count == (Int(blocks) + 7) / 8 else { return nil }
            return .channelHave(conn: conn, channel: ch, blocks: blocks, aggregate: Array(agg), bitmap: Array(bitmap))
        case DataRecordKind.data:
            guard let ch = r.u16(), let block = r.u32(), let offset = r.u32(), let flags = r.u8() else { return nil }
            var hash: [UInt8]?
            if flags & 2 != 0 {
                guard let h = r.take(32) else { return nil }
                hash = Array(h)
            }
            return .data(conn: conn, channel: ch, block: block, offset: offset, last: flags & 1 != 0, hash: hash,
                         bytes: r.rest())
        case DataRecordKind.channelDone:
            guard let ch = r.u16(), let root = r.take(32), r.atEnd else { return nil }
            return .channelDone(conn: conn, channel: ch, root: Array(root))
        case DataRecordKind.channelResult:
            guard let ch = r.u16(), let ok = r.u8(), let reason = r.u8(), let n = r.u16() else { return nil }
            var bad: [UInt32] = []
            for _ in 0..<n { guard let b = r.u32() else { return nil }; bad.append(b) }
            guard r.atEnd else { return nil }
            return .channelResult(conn: conn, channel: ch, ok: ok == 1, reason: DataReason(wire: reason), badBlocks: bad)
        case DataRecordKind.channelClose:
            guard let ch = r.u16(), let reason = r.u8(), r.atEnd else { return nil }
            return .channelClose(conn: conn, channel: ch, reason: DataReason(wire: reason))
        case DataRecordKind.progress:
            guard let ch = r.u16(), let bytes = r.u64(), r.atEnd else { return nil }
            return .progress(conn: conn, channel: ch, bytes: bytes)
        default:
            return nil
        }
    }
}

struct DataByteWriter {
    var out: [UInt8] = []
    mutating func u8(_ v: UInt8) { out.append(v) }
    mutating func u16(_ v: UInt16) { out.append(UInt8(v >> 8)); out.append(UInt8(v & 0xFF)) }
    mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { out.append(UInt8((v >> UInt32(s)) & 0xFF)) } }
    mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8((v >> UInt64(s)) & 0xFF)) } }
    mutating func bytes<S: Sequence>(_ b: S) where S.Element == UInt8 { out.append(contentsOf: b) }
}

struct DataByteReader {
    let base: [UInt8]
    var at: Int
    init(_ base: [UInt8]) { self.base = base; at = 0 }
    var atEnd: Bool { at == base.count }
    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, base.count - at >= n else { return nil }
        defer { at += n }
        return base[at..<(at + n)]
    }
    mutating func u8() -> UInt8? { take(1).map { $0.first! } }
    mutating func u16() -> UInt16? { take(2).map { $0.reduce(0) { $0 << 8 | UInt16($1) } } }
    mutating func u32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
    mutating func u64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
    mutating func rest() -> ArraySlice<UInt8> { defer { at = base.count }; return base[at...] }
}
