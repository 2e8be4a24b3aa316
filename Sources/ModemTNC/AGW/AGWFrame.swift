/// One message of the AGW packet-engine interface (AGWPE's TCP protocol, Dire Wolf's port 8000), either
/// way: a 36-byte little-endian header, then ``data``.
///
/// The header: the port (byte 0; 0 is the first radio port), 3 reserved bytes, the data kind (byte 4,
/// a letter such as `R`, `G`, `M`, `K`), a reserved byte, the PID (byte 6), a reserved byte, the call
/// from and the call to (10 bytes each, NUL-padded text of at most 9 characters), the data length
/// (u32) and 4 bytes the user may use (u32). Reserved bytes are written as 0 and ignored when read.
///
/// ```swift
/// let ask = AGWFrame(kind: "R")                       // "which version are you?"
/// let bytes = ask.encode()                            // 36 bytes, data length 0
/// var decoder = AGWDecoder()
/// decoder.decode(bytes) == [ask]                      // true
/// ```
public struct AGWFrame: Sendable, Hashable, CustomStringConvertible {
    /// Bytes of the header.
    public static let headerBytes = 36
    /// The longest data a client may send, as Dire Wolf 1.8 accepts it: its largest AX.25 packet
    /// (10 addresses, control, PID and 2048 information bytes, 2123 bytes) less one. A header that
    /// announces more (or a negative length) makes it close the connection; so does ``AGWServer``.
    public static let maximumDataBytes = 2122
    /// The most characters of a call field (10 bytes, the last one NUL).
    public static let maximumCallCharacters = 9

    /// The radio port, 0 for the first.
    public var port: UInt8
    /// The data kind: an ASCII letter.
    public var kind: UInt8
    /// The protocol identifier (`M`, `V`, `D`, `c`), else 0.
    public var pid: UInt8
    /// The call from (`N0CALL-7`), at most ``maximumCallCharacters`` characters.
    public var callFrom: String
    /// The call to.
    public var callTo: String
    /// What follows the header.
    public var data: [UInt8]
    /// The header's last 4 bytes, the user's own (sent back as 0).
    public var userReserved: UInt32

    /// A message; `kind` is its letter.
    public init(port: UInt8 = 0, kind: Character, pid: UInt8 = 0, callFrom: String = "", callTo: String = "",
                data: [UInt8] = [], userReserved: UInt32 = 0) {
        precondition(kind.isASCII, "AGWFrame kind must be an ASCII letter, got \(kind)")
        self.init(port: port, kindByte: kind.asciiValue!, pid: pid, callFrom: callFrom, callTo: callTo,
                  data: data, userReserved: userReserved)
    }

    /// A message with any kind byte (what a client sent, known or not).
    public init(port: UInt8, kindByte: UInt8, pid: UInt8, callFrom: String, callTo: String, data: [UInt8],
                userReserved: UInt32 = 0) {
        self.port = port
        self.kind = kindByte
        self.pid = pid
        self.callFrom = callFrom
        self.callTo = callTo
        self.data = data
        self.userReserved = userReserved
    }

    /// The kind as a character (`R`); a byte outside ASCII shows as `\u{FFFD}`.
    public var kindCharacter: Character {
        kind < 0x80 ? Character(Unicode.Scalar(kind)) : "\u{FFFD}"
    }

    /// Header and data. Call fields longer than 9 characters are cut to 9 (each character one byte).
    public func encode() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.headerBytes)
        bytes.reserveCapacity(Self.headerBytes + data.count)
        bytes[0] = port
        bytes[4] = kind
        bytes[6] = pid
        Self.putCall(callFrom, into: &bytes, at: 8)
        Self.putCall(callTo, into: &bytes, at: 18)
        Self.putU32(UInt32(data.count), into: &bytes, at: 28)
        Self.putU32(userReserved, into: &bytes, at: 32)
        bytes += data
        return bytes
    }

    /// `'R' port 0 N0CALL>APRS, 8 data bytes`.
    public var description: String {
        var text = "'\(kindCharacter)' port \(port)"
        if !callFrom.isEmpty || !callTo.isEmpty { text += " \(callFrom)>\(callTo)" }
        if pid != 0 { text += " pid 0x" + String(pid, radix: 16, uppercase: true) }
        return text + ", \(data.count) data byte\(data.count == 1 ? "" : "s")"
    }

    // MARK: - Fields

    /// A call field's text: the bytes before the first NUL, of at most 9 (Dire Wolf forces the 10th
    /// to NUL), each byte one character (Latin-1), so any bytes round-trip.
    static func call(_ bytes: some Collection<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        for byte in bytes.prefix(maximumCallCharacters) {
            if byte == 0 { break }
            scalars.append(Unicode.Scalar(byte))
        }
        return String(scalars)
    }

    static func callBytes(_ text: String) -> [UInt8] {
        text.unicodeScalars.prefix(maximumCallCharacters).map { UInt8(truncatingIfNeeded: $0.value) }
    }

    private static func putCall(_ text: String, into bytes: inout [UInt8], at offset: Int) {
        for (i, b) in callBytes(text).enumerated() { bytes[offset + i] = b }
    }

    static func putU32(_ value: UInt32, into bytes: inout [UInt8], at offset: Int) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    static func u32(_ bytes: some Collection<UInt8>) -> UInt32 {
        bytes.prefix(4).enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// `value` as 4 little-endian bytes.
    static func le32(_ value: Int) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 4)
        putU32(UInt32(truncatingIfNeeded: value), into: &b, at: 0)
        return b
    }
}
