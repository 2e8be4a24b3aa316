/// CRC-16/X.25, the frame check sequence (FCS) of HDLC and AX.25.
///
/// Parameters (in the Rocksoft/"CRC RevEng" notation): width 16, polynomial 0x1021 processed reflected
/// (0x8408, least significant bit first), initial value 0xFFFF, input and output reflected, final XOR
/// 0xFFFF. The check value of the ASCII bytes `"123456789"` is 0x906E.
///
/// On the line the FCS follows the frame as two bytes, low byte first, each sent least significant bit
/// first like every other byte (see ``fcsBytes(of:)``). Running the CRC register over a frame *and* its
/// two FCS bytes leaves the constant ``goodResidue`` (0xF0B8) in the register when nothing was damaged,
/// which is how ``isValidFrame(_:)`` checks a received frame.
///
/// The value is incremental: feed bytes in as many pieces as convenient.
///
/// ```swift
/// CRC16X25.checksum(Array("123456789".utf8))   // 0x906E
///
/// var crc = CRC16X25()
/// crc.update(Array("1234".utf8))
/// crc.update(Array("56789".utf8))
/// crc.value                                   // 0x906E
///
/// let frame = payload + CRC16X25.fcsBytes(of: payload)
/// CRC16X25.isValidFrame(frame)                // true
/// ```
public struct CRC16X25: Sendable, Hashable {
    /// The register's value before any byte: 0xFFFF.
    public static let initialRegister: UInt16 = 0xFFFF

    /// What the register holds after a frame followed by its correct FCS (before the final XOR): 0xF0B8.
    public static let goodResidue: UInt16 = 0xF0B8

    /// The reflected generator polynomial, 0x8408 (x¹⁶ + x¹² + x⁵ + 1, bit-reversed).
    public static let reflectedPolynomial: UInt16 = 0x8408

    /// The running register (not yet complemented): ``initialRegister`` when created.
    ///
    /// After a frame followed by its FCS the register equals ``goodResidue``.
    public private(set) var register: UInt16

    /// Creates a CRC over no bytes yet.
    public init() {
        register = Self.initialRegister
    }

    /// The CRC of the bytes fed so far (the register complemented): the FCS value to send.
    public var value: UInt16 {
        ~register
    }

    /// Feeds `bytes` into the CRC.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var crc = register
        for byte in bytes {
            crc = (crc >> 8) ^ Self.table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)]
        }
        register = crc
    }

    /// Feeds one byte into the CRC.
    public mutating func update(_ byte: UInt8) {
        register = (register >> 8) ^ Self.table[Int(UInt8(truncatingIfNeeded: register) ^ byte)]
    }

    /// Feeds one bit into the CRC (`true` = 1), in the order sent on the line (each byte least significant
    /// bit first). Eight bits fed this way equal one ``update(_:)-(UInt8)`` of the byte they make.
    public mutating func update(bit: Bool) {
        let feedback = (register & 1) ^ (bit ? 1 : 0)
        register >>= 1
        if feedback != 0 {
            register ^= Self.reflectedPolynomial
        }
    }

    /// Returns to the state at creation.
    public mutating func reset() {
        register = Self.initialRegister
    }

    /// The CRC-16/X.25 of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc = CRC16X25()
        crc.update(bytes)
        return crc.value
    }

    /// The two FCS bytes to append to `bytes`, in line order: the low byte of the CRC, then the high byte.
    public static func fcsBytes(of bytes: some Sequence<UInt8>) -> [UInt8] {
        let fcs = checksum(bytes)
        return [UInt8(truncatingIfNeeded: fcs), UInt8(truncatingIfNeeded: fcs >> 8)]
    }

    /// Whether `frame`, which ends with its two FCS bytes, arrived intact (the register's residue is
    /// ``goodResidue``). Frames shorter than 2 bytes are never valid.
    public static func isValidFrame(_ frame: some Collection<UInt8>) -> Bool {
        guard frame.count >= 2 else { return false }
        var crc = CRC16X25()
        crc.update(frame)
        return crc.register == goodResidue
    }

    /// The byte-at-a-time lookup table for the reflected polynomial.
    static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index)
        for _ in 0..<8 {
            crc = crc & 1 != 0 ? (crc >> 1) ^ reflectedPolynomial : crc >> 1
        }
        return crc
    }
}
