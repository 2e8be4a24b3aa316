/// The information field of an XID frame: the parameters AX.25 2.2 negotiates (section 4.3.3.7).
///
/// Layout: format indicator 0x82, group identifier 0x80, a 16-bit group length, then parameters as
/// indicator, length (1...4 bytes) and a big-endian value: 2 classes of procedures (half/full duplex),
/// 3 HDLC optional functions (REJ, SREJ, multi-SREJ, modulo 8/128), 6 I field length rx in **bits**,
/// 8 window size rx, 9 ack timer T1 in ms, 10 retries N2. A parameter that is absent is `nil` (the
/// current value stays). Unknown parameters are skipped; the decoder reads at most the group and never
/// past the field.
public struct AX25XID: Sendable, Hashable {
    /// Selective-reject abilities (a command offers a set, a response names one).
    public struct Reject: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// REJ (go-back-N).
        public static let rej = Reject(rawValue: 1)
        /// SREJ, one sequence number per frame.
        public static let srej = Reject(rawValue: 2)
        /// SREJ with further sequence numbers in its information field.
        public static let multiSREJ = Reject(rawValue: 4)
    }

    /// Full duplex (`true`) or half duplex.
    public var fullDuplex: Bool?
    /// The reject abilities.
    public var reject: Reject?
    /// The modulo.
    public var modulo: AX25Modulo?
    /// The largest information field the sender accepts, bytes (N1).
    public var iFieldLengthRx: Int?
    /// The most outstanding I frames the sender accepts (k).
    public var windowSizeRx: Int?
    /// The acknowledgement timer T1, milliseconds.
    public var ackTimerMilliseconds: Int?
    /// The retry count N2.
    public var retries: Int?

    /// Creates a parameter set.
    public init(fullDuplex: Bool? = nil, reject: Reject? = nil, modulo: AX25Modulo? = nil, iFieldLengthRx: Int? = nil,
                windowSizeRx: Int? = nil, ackTimerMilliseconds: Int? = nil, retries: Int? = nil) {
        self.fullDuplex = fullDuplex
        self.reject = reject
        self.modulo = modulo
        self.iFieldLengthRx = iFieldLengthRx
        self.windowSizeRx = windowSizeRx
        self.ackTimerMilliseconds = ackTimerMilliseconds
        self.retries = retries
    }

    // Bits of the classes of procedures and HDLC optional functions, as big-endian values.
    static let balancedABM: Int = 0x0100, halfDuplex: Int = 0x2000, fullDuplexBit: Int = 0x4000
    static let rejBit: Int = 0x02_0000, srejBit: Int = 0x04_0000, extendedAddress: Int = 0x80_0000
    static let modulo8Bit: Int = 0x00_0400, modulo128Bit: Int = 0x00_0800, testBit: Int = 0x00_2000
    static let fcs16Bit: Int = 0x00_8000, multiSREJBit: Int = 0x00_0020, synchronousTx: Int = 0x00_0002

    /// Why an information field is not an XID parameter field.
    public enum DecodeError: Error, Sendable, Hashable {
        /// The first bytes are not 0x82 0x80 and a group length.
        case notParameterNegotiation
    }

    /// Decodes an XID information field. An empty field decodes to no parameters.
    /// - Throws: ``DecodeError/notParameterNegotiation`` when the format or group identifier is wrong.
    public init(decoding info: [UInt8]) throws(DecodeError) {
        self.init()
        if info.isEmpty { return }
        guard info.count >= 4, info[0] == 0x82, info[1] == 0x80 else { throw .notParameterNegotiation }
        let end = min(info.count, 4 + (Int(info[2]) << 8 | Int(info[3])))
        var i = 4
        while i + 2 <= end {
            let indicator = info[i], length = Int(info[i + 1])
            i += 2
            guard (1...4).contains(length), i + length <= end else { break }
            var value = 0
            for byte in info[i..<i + length] { value = value << 8 | Int(byte) }
            i += length
            switch indicator {
            case 2:
                fullDuplex = value & Self.fullDuplexBit != 0 && value & Self.halfDuplex == 0
            case 3:
                var r: Reject = []
                if value & Self.rejBit != 0 { r.insert(.rej) }
                if value & Self.srejBit != 0 { r.insert(.srej) }
                if value & Self.multiSREJBit != 0 { r.insert(.multiSREJ) }
                reject = r
                if value & Self.modulo128Bit != 0, value & Self.modulo8Bit == 0 { modulo = .oneTwentyEight }
                else if value & Self.modulo8Bit != 0, value & Self.modulo128Bit == 0 { modulo = .eight }
            case 6: iFieldLengthRx = value / 8
            case 8: windowSizeRx = value
            case 9: ackTimerMilliseconds = value
            case 10: retries = value
            default: break
            }
        }
    }

    /// The information field. Classes of procedures and optional functions are always written (half
    /// duplex, REJ and modulo 8 when not set), the rest only when set.
    public func encode() -> [UInt8] {
        var body: [UInt8] = []
        func put(_ indicator: UInt8, _ value: Int, bytes: Int) {
            body += [indicator, UInt8(bytes)]
            for k in stride(from: bytes - 1, through: 0, by: -1) { body.append(UInt8(truncatingIfNeeded: value >> (8 * k))) }
        }
        put(2, Self.balancedABM | (fullDuplex == true ? Self.fullDuplexBit : Self.halfDuplex), bytes: 2)
        var functions = Self.extendedAddress | Self.testBit | Self.fcs16Bit | Self.synchronousTx
        let r = reject ?? .rej
        if r.contains(.rej) { functions |= Self.rejBit }
        if r.contains(.srej) { functions |= Self.srejBit }
        if r.contains(.multiSREJ) { functions |= Self.multiSREJBit }
        functions |= modulo == .oneTwentyEight ? Self.modulo128Bit : Self.modulo8Bit
        put(3, functions, bytes: 3)
        if let n = iFieldLengthRx { put(6, min(n, 8191) * 8, bytes: 2) }
        if let k = windowSizeRx { put(8, min(max(k, 0), 127), bytes: 1) }
        if let t = ackTimerMilliseconds { put(9, min(max(t, 0), 65535), bytes: 2) }
        if let n = retries { put(10, min(max(n, 0), 255), bytes: 1) }
        return [0x82, 0x80, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }
}
