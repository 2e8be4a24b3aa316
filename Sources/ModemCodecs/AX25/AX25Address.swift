import ModemRuntime
/// One address of an AX.25 frame: a callsign, an SSID and the bits that travel with them.
///
/// On the air an address is 7 bytes: the callsign's 6 characters (padded with spaces), each shifted left
/// one bit, then the SSID byte `H/C R R S S S S E`: bit 7 is the command/response bit (C) in the
/// destination and source and the has-been-repeated bit (H) in a digipeater (``highBit``); bits 6-5 are
/// reserved and normally 1 (``reservedBits``); bits 4-1 the SSID; bit 0 marks the last address.
///
/// In text (TNC2 monitor format) an address is the callsign, then `-` and the SSID when it is not 0:
/// `N0CALL`, `WIDE2-1`.
///
/// ```swift
/// let digi = try AX25Address(parsing: "WIDE2-1")   // callsign "WIDE2", ssid 1
/// digi.description                                   // "WIDE2-1"
/// digi.encode(isLast: true)                          // [0xAE, 0x92, 0x88, 0x8A, 0x64, 0x40, 0x63]
/// ```
public struct AX25Address: Sendable, Hashable, CustomStringConvertible {
    /// The callsign, 1 to 6 characters: upper-case letters A-Z and digits 0-9 (other printable characters
    /// only when decoded with `strictCallsigns: false`).
    public let callsign: String

    /// The secondary station identifier, 0...15.
    public let ssid: Int

    /// Bit 7 of the SSID byte: the command/response bit (C) in the destination and source, the
    /// has-been-repeated bit (H) in a digipeater.
    public var highBit: Bool

    /// Bits 6-5 of the SSID byte (reserved; 0b11 unless used by agreement), 0...3.
    public var reservedBits: UInt8

    /// Creates an address after checking its callsign and SSID.
    ///
    /// - Parameters:
    ///   - callsign: 1 to 6 characters A-Z, 0-9.
    ///   - ssid: 0...15.
    ///   - highBit: The C bit (destination, source) or H bit (digipeater).
    ///   - reservedBits: Bits 6-5 of the SSID byte, 0...3.
    /// - Throws: ``AX25Error`` (``AX25Error/Kind/invalidCallsign``, ``AX25Error/Kind/invalidSSID``).
    public init(callsign: String, ssid: Int = 0, highBit: Bool = false, reservedBits: UInt8 = 0b11) throws(AX25Error) {
        if let problem = Self.callsignProblem(callsign) {
            throw AX25Error(.invalidCallsign, "callsign \"\(callsign)\" \(problem)")
        }
        guard (0...15).contains(ssid) else {
            throw AX25Error(.invalidSSID, "SSID of \"\(callsign)\" must be 0...15, got \(ssid)")
        }
        self.init(checkedCallsign: callsign, ssid: ssid, highBit: highBit, reservedBits: reservedBits)
    }

    /// Creates an address from its text form, `CALL` or `CALL-N` (no `*`).
    ///
    /// - Parameters:
    ///   - text: The address, e.g. `"N0CALL"`, `"WIDE2-1"`.
    ///   - role: What the address is, for error messages (e.g. `"source"`, `"digipeater 2"`).
    /// - Throws: ``AX25Error`` saying which part is wrong.
    public init(parsing text: some StringProtocol, role: String = "address") throws(AX25Error) {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let callsign = String(parts[0])
        if let problem = Self.callsignProblem(callsign) {
            if callsign.isEmpty, parts.count == 1 {
                throw AX25Error(.invalidCallsign, "\(role) is empty")
            }
            throw AX25Error(.invalidCallsign, "\(role) \"\(text)\": callsign \(problem)")
        }
        var ssid = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...2).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(digits), (0...15).contains(value)
            else {
                throw AX25Error(.invalidSSID, "\(role) \"\(text)\": SSID must be a number 0...15 after \"-\", got \"\(digits)\"")
            }
            ssid = value
        }
        self.init(checkedCallsign: callsign, ssid: ssid, highBit: false, reservedBits: 0b11)
    }

    /// Creates an address whose parts the caller has checked.
    init(checkedCallsign: String, ssid: Int, highBit: Bool, reservedBits: UInt8) {
        self.callsign = checkedCallsign
        self.ssid = ssid
        self.highBit = highBit
        self.reservedBits = reservedBits & 0b11
    }

    /// Decodes the 7 bytes of an address.
    ///
    /// - Parameters:
    ///   - bytes: Exactly 7 bytes.
    ///   - strictCallsigns: When `true` (default) the callsign must be 1 to 6 characters A-Z, 0-9, padded
    ///     with trailing spaces; when `false` any printable ASCII characters other than space are accepted
    ///     (still 1 to 6, space-padded).
    ///   - role: What the address is, for error messages.
    /// - Returns: The address and whether it is the last one (bit 0 of the SSID byte).
    /// - Throws: ``AX25Error/Kind/invalidCallsign``.
    public static func decode(
        _ bytes: some Collection<UInt8>, strictCallsigns: Bool = true, role: String = "address"
    ) throws(AX25Error) -> (address: AX25Address, isLast: Bool) {
        let bytes = Array(bytes)
        precondition(bytes.count == 7, "AX25Address.decode needs 7 bytes, got \(bytes.count)")
        var characters: [UInt8] = []
        var padding = false
        for (index, byte) in bytes[0..<6].enumerated() {
            let character = byte >> 1
            let valid: Bool
            if byte & 1 != 0 {
                valid = false
            } else if character == 0x20 {
                padding = true
                valid = index > 0
            } else if padding {
                valid = false
            } else if strictCallsigns {
                valid = (0x41...0x5A).contains(character) || (0x30...0x39).contains(character)
            } else {
                valid = (0x21...0x7E).contains(character)
            }
            guard valid else {
                let hex = bytes[0..<6].map { ax25HexByte($0) }.joined(separator: " ")
                throw AX25Error(
                    .invalidCallsign,
                    "\(role) bytes \(hex): character \(index + 1) (byte 0x\(ax25HexByte(byte))) is not "
                        + (strictCallsigns ? "a letter A-Z, digit or trailing space" : "printable or a trailing space")
                )
            }
            if !padding {
                characters.append(character)
            }
        }
        let ssidByte = bytes[6]
        let address = AX25Address(
            checkedCallsign: String(decoding: characters, as: UTF8.self),
            ssid: Int((ssidByte >> 1) & 0x0F),
            highBit: ssidByte & 0x80 != 0,
            reservedBits: (ssidByte >> 5) & 0b11
        )
        return (address, ssidByte & 1 != 0)
    }

    /// The 7 bytes of this address; `isLast` sets the end-of-addresses bit.
    public func encode(isLast: Bool) -> [UInt8] {
        var bytes: [UInt8] = callsign.utf8.prefix(6).map { $0 << 1 }
        while bytes.count < 6 {
            bytes.append(0x20 << 1)
        }
        var ssidByte = UInt8(ssid & 0x0F) << 1 | (reservedBits & 0b11) << 5
        if highBit { ssidByte |= 0x80 }
        if isLast { ssidByte |= 0x01 }
        bytes.append(ssidByte)
        return bytes
    }

    /// The text form: the callsign, then `-` and the SSID when it is not 0 (`N0CALL`, `WIDE2-1`).
    public var description: String {
        ssid == 0 ? callsign : "\(callsign)-\(ssid)"
    }

    /// What is wrong with `callsign` under the strict rules, or `nil`.
    static func callsignProblem(_ callsign: String) -> String? {
        if callsign.isEmpty {
            return "is empty"
        }
        let utf8 = Array(callsign.utf8)
        if utf8.count > 6 {
            return "is longer than 6 characters"
        }
        if utf8.contains(where: { (0x61...0x7A).contains($0) }) {
            return "has lower-case letters; callsigns are upper-case A-Z and digits 0-9"
        }
        if let bad = callsign.unicodeScalars.first(where: {
            !(("A"..."Z").contains($0) || ("0"..."9").contains($0))
        }) {
            return "has \"\(bad.escaped(asASCII: true))\"; callsigns are upper-case A-Z and digits 0-9"
        }
        return nil
    }
}

/// Two lower-case hexadecimal digits.
func ax25HexByte(_ byte: UInt8) -> String { Hex.encode(CollectionOfOne(byte)) }
