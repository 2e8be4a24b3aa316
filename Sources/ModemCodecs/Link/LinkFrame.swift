import ModemRuntime
/// The native frame of the channel protocol (`ModemLink`), as bytes; the HDLC byte codec below it
/// adds flags, bit stuffing and its own FCS-16 on the line. Wire format: `docs/link-protocol.md`.
///
/// ```
///  0      2        3        4        5       7          9         11       13        13+n    17+n
///  +------+--------+--------+--------+-------+----------+---------+--------+---------+-------+
///  | "SM" |ver|type| flags  |session |message|fragment  |fragments|length n| payload | CRC-32|
///  +------+--------+--------+--------+-------+----------+---------+--------+---------+-------+
/// ```
/// Multi-byte fields are big-endian. The CRC-32 covers bytes 0 ..< 13 + n.
public struct LinkFrame: Sendable, Hashable {
    /// The sync word that opens every frame: ASCII "SM".
    public static let syncWord: (UInt8, UInt8) = (0x53, 0x4D)
    /// The protocol version this codec writes and accepts.
    public static let version: UInt8 = 1
    /// Header bytes before the payload.
    public static let headerLength = 13
    /// Bytes a frame adds to its payload (header and CRC-32).
    public static let overhead = headerLength + 4
    /// The largest payload one frame may carry, in bytes.
    public static let maximumPayload = 2048

    /// What a frame is for.
    public enum Kind: UInt8, Sendable, Hashable, CaseIterable {
        /// A fragment of a message.
        case data = 1
        /// Which fragments of a message arrived: the payload is a bitmap, bit i of byte i/8 (LSB first)
        /// set for fragment i; ``LinkFrame/Flags/complete`` when the whole message was delivered.
        case ack = 2
        /// The phone's boot signal and handshake request; the payload is the phone's name (UTF-8).
        case hello = 3
        /// The device's answer to ``hello``; the payload is the device's name (UTF-8).
        case helloAck = 4
        /// Asks the peer to drop the message `message` (its exchange is cancelled).
        case cancel = 5
        /// Confirms a ``cancel``.
        case cancelAck = 6
        /// The close signal: the device powers off.
        case close = 7
        /// Confirms a ``close``.
        case closeAck = 8
        /// Asks for an ``ack`` of message `message` (sent when an acknowledgement is overdue).
        case poll = 9
    }

    /// Header flag bits.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Sent by the device (clear: by the phone). Lets a station on a shared medium ignore its own frames.
        public static let fromDevice = Flags(rawValue: 1)
        /// The sender asks for an ``Kind/ack`` after this frame (the last of a burst).
        public static let poll = Flags(rawValue: 2)
        /// The message answers the peer's message with the same `message` number (master-slave reply).
        public static let reply = Flags(rawValue: 4)
        /// In an ``Kind/ack``: the message is complete and was delivered.
        public static let complete = Flags(rawValue: 8)
        /// In a ``Kind/hello``: the phone runs duplex mode (clear: master-slave). A device that follows
        /// the phone's mode adopts it; others ignore the bit (unknown bits are kept and ignored).
        public static let duplex = Flags(rawValue: 16)
        /// On an audio line: the sender hears the receiver's frames clean enough to take them plain, so
        /// a receiver whose forward error correction is automatic may stop coding its frames. Set and
        /// read by the audio modem (`LinkModem`), which removes it before the state machines see a frame.
        public static let lineClean = Flags(rawValue: 32)
        /// On an audio line: the sender hears the receiver's frames damaged and asks for coded frames
        /// (neither this nor ``lineClean``: the sender has not judged the line yet). Like ``lineClean``,
        /// the audio modem's alone.
        public static let lineNoisy = Flags(rawValue: 64)
        /// On a duplex message's frames: it was sent before the acknowledgement of the sender's
        /// message before it (number − 1, skipping 0), so the receiver delivers it after that one.
        public static let follows = Flags(rawValue: 128)
    }

    /// The kind of frame.
    public var kind: Kind
    /// Header flags.
    public var flags: Flags
    /// The session number chosen at the handshake; frames of other sessions are ignored.
    public var session: UInt8
    /// The message number (per sender, increasing, wrapping at 65536).
    public var message: UInt16
    /// Index of this fragment in its message (0-based).
    public var fragment: UInt16
    /// Number of fragments in the message (at least 1).
    public var fragmentCount: UInt16
    /// The payload, at most ``maximumPayload`` bytes.
    public var payload: [UInt8]

    /// Creates a frame.
    public init(kind: Kind, flags: Flags = [], session: UInt8, message: UInt16 = 0, fragment: UInt16 = 0,
                fragmentCount: UInt16 = 1, payload: [UInt8] = []) {
        precondition(payload.count <= Self.maximumPayload, "LinkFrame payload of \(payload.count) bytes exceeds \(Self.maximumPayload)")
        self.kind = kind
        self.flags = flags
        self.session = session
        self.message = message
        self.fragment = fragment
        self.fragmentCount = fragmentCount
        self.payload = payload
    }

    /// The frame as bytes: header, payload, CRC-32.
    public func encode() -> [UInt8] {
        var b: [UInt8] = [Self.syncWord.0, Self.syncWord.1, Self.version << 4 | kind.rawValue, flags.rawValue, session]
        b.reserveCapacity(Self.overhead + payload.count)
        for v in [message, fragment, fragmentCount, UInt16(payload.count)] {
            b.append(UInt8(v >> 8)); b.append(UInt8(v & 0xFF))
        }
        b.append(contentsOf: payload)
        let crc = CRC32.checksum(b)
        for s in stride(from: 24, through: 0, by: -8) { b.append(UInt8((crc >> UInt32(s)) & 0xFF)) }
        return b
    }

    /// Decodes a frame from its bytes.
    /// - Throws: ``LinkFrameError`` naming what is wrong (these are counted as channel damage by receivers).
    public init(decoding bytes: some Collection<UInt8>) throws(LinkFrameError) {
        let b = Array(bytes)
        guard b.count >= Self.overhead else { throw .tooShort(b.count) }
        guard b[0] == Self.syncWord.0, b[1] == Self.syncWord.1 else { throw .badSyncWord }
        func u16(_ i: Int) -> UInt16 { UInt16(b[i]) << 8 | UInt16(b[i + 1]) }
        let length = Int(u16(11))
        guard length <= Self.maximumPayload, b.count == Self.overhead + length else {
            throw .badLength(declared: length, actual: b.count - Self.overhead)
        }
        var crc: UInt32 = 0
        for i in b.count - 4 ..< b.count { crc = crc << 8 | UInt32(b[i]) }
        guard CRC32.checksum(b[0 ..< b.count - 4]) == crc else { throw .badCRC }
        guard b[2] >> 4 == Self.version else { throw .unsupportedVersion(b[2] >> 4) }
        guard let kind = Kind(rawValue: b[2] & 0x0F) else { throw .unknownKind(b[2] & 0x0F) }
        let count = u16(9), index = u16(7)
        guard count >= 1, index < count else { throw .badFragment(index: index, count: count) }
        self.kind = kind
        flags = Flags(rawValue: b[3])
        session = b[4]
        message = u16(5)
        fragment = index
        fragmentCount = count
        payload = Array(b[Self.headerLength ..< Self.headerLength + length])
    }
}

/// Why bytes are not a ``LinkFrame``.
public enum LinkFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than a header and CRC.
    case tooShort(Int)
    /// The first two bytes are not the sync word "SM".
    case badSyncWord
    /// The length field disagrees with the bytes received, or exceeds the maximum payload.
    case badLength(declared: Int, actual: Int)
    /// The CRC-32 does not match.
    case badCRC
    /// A version this codec does not speak.
    case unsupportedVersion(UInt8)
    /// An unknown frame kind.
    case unknownKind(UInt8)
    /// Fragment index not below the fragment count, or a count of 0.
    case badFragment(index: UInt16, count: UInt16)

    public var description: String {
        switch self {
        case .tooShort(let n): return "frame of \(n) bytes is shorter than the \(LinkFrame.overhead)-byte header and CRC"
        case .badSyncWord: return "frame does not start with the sync word \"SM\""
        case .badLength(let d, let a): return "frame declares \(d) payload bytes but carries \(a)"
        case .badCRC: return "frame CRC-32 mismatch"
        case .unsupportedVersion(let v): return "frame version \(v) is not supported (this is version \(LinkFrame.version))"
        case .unknownKind(let k): return "unknown frame kind \(k)"
        case .badFragment(let i, let c): return "fragment \(i) of \(c) is out of range"
        }
    }
}
