import ModemTransport
/// The frames of a session on every transport (docs/messaging-plan.md section 3): the first byte is
/// `0x50 | type` ("session v1" in the high nibble).
public enum SessionFrameType: UInt8, Sendable, CaseIterable {
    /// Noise XX message 1 (-> e).
    case handshake1 = 1
    /// Noise XX message 2 (<- e, ee, s, es).
    case handshake2 = 2
    /// Noise XX message 3 (-> s, se).
    case handshake3 = 3
    /// A record: counter u64 BE, ciphertext, tag.
    case record = 4
    /// A clear refusal before keys exist: reason u8, UTF-8 text.
    case nope = 5

    /// The frame's first byte.
    public var byte: UInt8 { 0x50 | rawValue }

    /// The type of a frame's first byte, or nil for a byte of another version or an unknown type.
    public init?(byte: UInt8) {
        guard byte >> 4 == 0x5, let type = SessionFrameType(rawValue: byte & 0x0F) else { return nil }
        self = type
    }
}

/// The kinds of the session's own records (0x01...0x0F).
public enum SessionRecordKind {
    /// Both sides send it first: "I trust you, go ahead" (TLV body).
    public static let accept: UInt8 = 0x01
    /// A refusal after keys exist: reason u8, text.
    public static let reject: UInt8 = 0x02
    /// Keepalive: u32.
    public static let ping: UInt8 = 0x03
    /// Keepalive answer: u32.
    public static let pong: UInt8 = 0x04
    /// "I will send no more": reason u8 (1 quit, 2 byte limit, 3 time limit).
    public static let close: UInt8 = 0x05
    /// Answer to CLOSE after the own pending data.
    public static let closed: UInt8 = 0x06
}

/// Sizes of the session's wire format.
public enum SessionWire {
    /// The bytes a dialer writes first on a byte stream.
    public static let preamble: [UInt8] = Array("SMsg".utf8)
    /// The sessions' Noise AEAD: `Noise_XX_25519_AESGCM_SHA256` (AES-256-GCM runs 4-5 times faster
    /// than ChaChaPoly on machines with AES instructions; measured in
    /// Benchmarks/README.md).
    public static let cipher: NoiseCipher = .aesGCM
    /// The largest frame on a byte stream.
    public static let maximumFrameLength = 65_560
    /// Record header: type byte and counter (also the AEAD's associated data).
    public static let recordHeaderLength = 9
    /// Largest record plaintext (kind byte + body): Noise's 65,535-byte message less the tag.
    public static let maximumPlaintext = 65_519
    /// Largest record body on a stream (the plaintext less the kind byte).
    public static let maximumRecordBody = maximumPlaintext - 1
    /// Bytes a record adds to its body: header, kind, tag.
    public static let recordOverhead = recordHeaderLength + 1 + 16

    /// The Noise prologue: `"SwiftModem session 1" | service | transport kind`.
    public static func prologue(service: SessionService, kind: TransportKind) -> [UInt8] {
        Array("SwiftModem session 1".utf8) + [service.rawValue, kind.rawValue]
    }

    /// A NOPE frame.
    public static func nope(_ reason: UInt8, _ text: String) -> [UInt8] {
        [SessionFrameType.nope.byte, reason] + Array(NameCleaner.utf8Prefix(text, maximumBytes: 200).utf8)
    }
}

/// A framing error on a byte stream.
public struct SessionFrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problem in words.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// Cuts a byte stream into session frames: an optional `SMsg` preamble (what a listener expects
/// first), then `length u32 BE | frame` with length 1...65,560. A value: feed bytes with
/// ``append(_:)`` or ``withSpace(_:)``, take frames with ``next()``. Memory is bounded by one frame
/// plus what was appended.
public struct SessionFrameDecoder: Sendable {
    private var buffer: [UInt8] = []  // bytes head..<end are pending; end..<count is spare room
    private var head = 0
    private var end = 0
    private var preambleDue: Bool

    /// A decoder; `expectPreamble` for the listening end of a stream.
    public init(expectPreamble: Bool) {
        preambleDue = expectPreamble
    }

    /// Bytes received but not yet returned as frames.
    public var bufferedCount: Int { end - head }

    /// Appends received bytes.
    public mutating func append<S: Sequence<UInt8>>(_ bytes: S) {
        compact()
        buffer.removeLast(buffer.count - end)
        buffer.append(contentsOf: bytes)
        end = buffer.count
    }

    /// Lets `body` write up to `count` bytes at the end of the buffer (a `recv` straight into it);
    /// `body` returns how many it wrote.
    public mutating func withSpace(_ count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        compact()
        let start = end
        if buffer.count < start + count { buffer.append(contentsOf: repeatElement(0, count: start + count - buffer.count)) }
        let written = buffer.withUnsafeMutableBytes { raw in
            body(UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + count)]))
        }
        end += max(0, min(written, count))
        return written
    }

    private mutating func compact() {
        if head > 0 && (head == end || head >= 65_536) {
            buffer.withUnsafeMutableBytes { raw in
                if end > head { raw.baseAddress!.copyMemory(from: raw.baseAddress! + head, byteCount: end - head) }
            }
            end -= head
            head = 0
        }
        // Give back a large spare area once it is no longer needed (a burst of big frames).
        if buffer.count > 1 << 20 && end < 65_600 { buffer.removeLast(buffer.count - max(end, 65_600)) }
    }

    /// The next whole frame, or nil when more bytes are needed.
    /// - Throws: ``SessionFrameError`` for a wrong preamble, a zero or oversized length.
    public mutating func next() throws(SessionFrameError) -> [UInt8]? {
        var storage: [UInt8]? = nil
        return try next(reusing: &storage)
    }

    /// ``next()`` into `storage` when it holds an array (taken out of it; its capacity is reused when
    /// it is the only reference), else into a new array.
    public mutating func next(reusing storage: inout [UInt8]?) throws(SessionFrameError) -> [UInt8]? {
        if preambleDue {
            let have = min(bufferedCount, 4)
            guard buffer[head..<(head + have)].elementsEqual(SessionWire.preamble.prefix(have)) else {
                throw SessionFrameError("not a SwiftModem session: the stream does not start with 'SMsg'")
            }
            guard have == 4 else { return nil }
            head += 4
            preambleDue = false
        }
        guard bufferedCount >= 4 else { return nil }
        let length = Int(buffer[head]) << 24 | Int(buffer[head + 1]) << 16 | Int(buffer[head + 2]) << 8 | Int(buffer[head + 3])
        guard length >= 1 else { throw SessionFrameError("a frame of length 0") }
        guard length <= SessionWire.maximumFrameLength else {
            throw SessionFrameError("a frame of \(length) bytes (at most \(SessionWire.maximumFrameLength))")
        }
        guard bufferedCount >= 4 + length else { return nil }
        var frame = storage.take() ?? []
        frame.removeAll(keepingCapacity: true)
        frame.append(contentsOf: buffer[(head + 4)..<(head + 4 + length)])
        head += 4 + length
        return frame
    }

    /// The 4-byte length prefix of a frame.
    public static func lengthPrefix(_ count: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8),
         UInt8(truncatingIfNeeded: count)]
    }

    /// A frame with its length prefix, as it goes on a stream.
    public static func encode(_ frame: [UInt8]) -> [UInt8] {
        lengthPrefix(frame.count) + frame
    }
}

/// Handshake and ACCEPT payloads: type u8, length u16 BE, value.
public struct SessionTLV: Sendable, Equatable {
    /// The entries in order.
    public var entries: [(type: UInt8, value: [UInt8])]

    /// TLV types.
    public enum Field {
        /// UTF-8 user name.
        public static let userName: UInt8 = 1
        /// Keepalive in milliseconds, u32.
        public static let keepalive: UInt8 = 2
        /// Limits: bytes u64, seconds u32 (0: none).
        public static let limits: UInt8 = 3
        /// Software version, UTF-8.
        public static let version: UInt8 = 4
        /// Verdict u8 (0 accept).
        public static let verdict: UInt8 = 5
    }

    /// An empty list.
    public init() { entries = [] }

    public static func == (a: SessionTLV, b: SessionTLV) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.type == $1.type && $0.value == $1.value }
    }

    /// Adds an entry (values over 65,535 bytes are cut).
    public mutating func add(_ type: UInt8, _ value: [UInt8]) {
        entries.append((type, Array(value.prefix(65_535))))
    }

    /// The first value of a type.
    public func value(_ type: UInt8) -> [UInt8]? { entries.first { $0.type == type }?.value }

    /// The wire bytes.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        for (type, value) in entries {
            out.append(type)
            out.append(UInt8(value.count >> 8))
            out.append(UInt8(value.count & 255))
            out += value
        }
        return out
    }

    /// Parses wire bytes.
    /// - Throws: ``SessionFrameError`` when an entry runs past the end.
    public static func decode(_ bytes: [UInt8]) throws(SessionFrameError) -> SessionTLV {
        var tlv = SessionTLV()
        var i = 0
        while i < bytes.count {
            guard i + 3 <= bytes.count else { throw SessionFrameError("a handshake payload entry is cut short") }
            let length = Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 3 + length <= bytes.count else { throw SessionFrameError("a handshake payload entry runs past the end") }
            tlv.add(bytes[i], Array(bytes[(i + 3)..<(i + 3 + length)]))
            i += 3 + length
        }
        return tlv
    }
}

extension Array where Element == UInt8 {
    /// Big-endian bytes of an integer.
    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    /// A big-endian integer from the front of the bytes, or nil when too short.
    func readBigEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int = 0) -> T? {
        let n = T.bitWidth / 8
        guard offset >= 0, count >= offset + n else { return nil }
        var v: T = 0
        for i in 0..<n { v = v << 8 | T(self[offset + i]) }
        return v
    }
}
