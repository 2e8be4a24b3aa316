/// Turns frames into HDLC bits for the line: opening flags, the frame and its FCS bit-stuffed, closing
/// flags.
///
/// Output is one `Bool` per bit in the order sent (`true` = 1), the same representation as ``RawBits``.
/// These are HDLC bits *before* NRZI: pass them through ``NRZIEncoder`` to get line levels for an AFSK or
/// baseband modulator (G3RUH 9600 baud also scrambles after NRZI).
///
/// Each frame is sent as:
/// - ``leadingFlags`` flags (0x7E, `01111110`); several make the preamble a receiver locks to (Dire Wolf
///   sends its TXDELAY as flags: a TXDELAY of `t` seconds at `b` baud is `t * b / 8` flags);
/// - the frame bytes, then its FCS (``CRC16X25``, low byte first) unless ``appendsFCS`` is `false`; every
///   byte least significant bit first; a 0 is inserted after every five consecutive 1s (bit stuffing), so
///   that the content never looks like a flag (six 1s) or an abort (seven or more 1s);
/// - ``trailingFlags`` flags.
///
/// ``encode(frames:)`` sends several frames in one transmission, one flag between them.
///
/// ```swift
/// let encoder = HDLCEncoder(leadingFlags: 30, trailingFlags: 2)
/// var nrzi = NRZIEncoder()
/// let levels = nrzi.encode(encoder.encode(ax25Frame.encode()))
/// ```
public struct HDLCEncoder: Sendable, Hashable {
    /// The flag byte, 0x7E.
    public static let flag: UInt8 = 0x7E

    /// The bits of one flag in line order: `0 1 1 1 1 1 1 0`.
    public static let flagBits: [Bool] = [false, true, true, true, true, true, true, false]

    /// Flags sent before each transmission, at least 1.
    public var leadingFlags: Int {
        didSet { precondition(leadingFlags >= 1, "HDLCEncoder.leadingFlags must be at least 1, got \(leadingFlags)") }
    }

    /// Flags sent after the last frame of each transmission, at least 1 (the closing flag).
    public var trailingFlags: Int {
        didSet { precondition(trailingFlags >= 1, "HDLCEncoder.trailingFlags must be at least 1, got \(trailingFlags)") }
    }

    /// Whether the FCS (CRC-16/X.25) is computed and appended to each frame (default `true`); when
    /// `false`, frames are sent as given, e.g. because they already end with their FCS.
    public var appendsFCS: Bool

    /// Creates an encoder.
    ///
    /// - Parameters:
    ///   - leadingFlags: Flags before each transmission, at least 1.
    ///   - trailingFlags: Flags after it, at least 1.
    ///   - appendsFCS: Whether to append the FCS to each frame.
    public init(leadingFlags: Int = 1, trailingFlags: Int = 1, appendsFCS: Bool = true) {
        precondition(leadingFlags >= 1, "HDLCEncoder leadingFlags must be at least 1, got \(leadingFlags)")
        precondition(trailingFlags >= 1, "HDLCEncoder trailingFlags must be at least 1, got \(trailingFlags)")
        self.leadingFlags = leadingFlags
        self.trailingFlags = trailingFlags
        self.appendsFCS = appendsFCS
    }

    /// The bits of one transmission holding `frame`: flags, the stuffed frame and FCS, flags.
    public func encode(_ frame: some Collection<UInt8>) -> [Bool] {
        var bits: [Bool] = []
        bits.reserveCapacity((leadingFlags + trailingFlags) * 8 + (frame.count + 2) * 10)
        Self.appendFlags(leadingFlags, to: &bits)
        appendFrame(frame, to: &bits)
        Self.appendFlags(trailingFlags, to: &bits)
        return bits
    }

    /// The bits of one transmission holding all `frames`: leading flags, the frames with one flag between
    /// each two, trailing flags. With no frames, only the flags.
    public func encode(frames: [[UInt8]]) -> [Bool] {
        var bits: [Bool] = []
        Self.appendFlags(leadingFlags, to: &bits)
        for (index, frame) in frames.enumerated() {
            if index > 0 {
                Self.appendFlags(1, to: &bits)
            }
            appendFrame(frame, to: &bits)
        }
        Self.appendFlags(trailingFlags, to: &bits)
        return bits
    }

    /// Appends the stuffed bits of `frame` and its FCS (if ``appendsFCS``), without flags.
    ///
    /// The caller must send a flag before and after (see ``appendFlags(_:to:)``).
    public func appendFrame(_ frame: some Collection<UInt8>, to bits: inout [Bool]) {
        var stuffer = Stuffer()
        for byte in frame {
            stuffer.append(byte, to: &bits)
        }
        if appendsFCS {
            for byte in CRC16X25.fcsBytes(of: frame) {
                stuffer.append(byte, to: &bits)
            }
        }
    }

    /// Appends `count` flags (`01111110` each) to `bits`, e.g. to fill idle time between frames.
    public static func appendFlags(_ count: Int, to bits: inout [Bool]) {
        for _ in 0..<max(0, count) {
            bits.append(contentsOf: flagBits)
        }
    }

    /// The bits of `bytes` (least significant bit first) with a 0 inserted after every five consecutive
    /// 1s: the frame content as sent between flags, with no FCS added.
    public static func stuffedBits(of bytes: some Sequence<UInt8>) -> [Bool] {
        var bits: [Bool] = []
        var stuffer = Stuffer()
        for byte in bytes {
            stuffer.append(byte, to: &bits)
        }
        return bits
    }

    /// Bit stuffing state: the number of consecutive 1s sent.
    struct Stuffer {
        var ones = 0

        mutating func append(_ byte: UInt8, to bits: inout [Bool]) {
            var value = byte
            for _ in 0..<8 {
                let bit = value & 1 != 0
                value >>= 1
                bits.append(bit)
                if bit {
                    ones += 1
                    if ones == 5 {
                        bits.append(false)
                        ones = 0
                    }
                } else {
                    ones = 0
                }
            }
        }
    }
}
