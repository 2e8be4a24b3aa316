/// The RFCOMM frame check sequence (07.10 §5.2.1.6 and Annex B; RFCOMM §5.1.1): CRC-8 with the
/// polynomial x^8+x^2+x+1 processed least significant bit first (reflected 0xE0), register preset
/// 0xFF, the ones' complement transmitted. A receiver that runs the register over the covered bytes
/// and the received FCS ends at ``goodRemainder`` (0xCF).
public enum RFCOMMFCS {
    /// The register value after the covered bytes and a correct FCS.
    public static let goodRemainder: UInt8 = 0xCF

    /// One step of the register for every byte value.
    private static let table: [UInt8] = (0..<256).map { index in
        var register = UInt8(index)
        for _ in 0..<8 {
            register = register & 1 != 0 ? (register >> 1) ^ 0xE0 : register >> 1
        }
        return register
    }

    /// The register (preset 0xFF, not complemented) after `bytes`.
    public static func register<C: Collection>(_ bytes: C) -> UInt8 where C.Element == UInt8 {
        var register: UInt8 = 0xFF
        for byte in bytes { register = table[Int(register ^ byte)] }
        return register
    }

    /// The FCS to send after `covered` (address + control, plus the length for non-UIH frames).
    public static func compute<C: Collection>(_ covered: C) -> UInt8 where C.Element == UInt8 {
        ~register(covered)
    }

    /// True when `fcs` is the right check value for `covered` (the receiver's 0xCF test).
    public static func isValid<C: Collection>(_ covered: C, fcs: UInt8) -> Bool where C.Element == UInt8 {
        var register = register(covered)
        register = table[Int(register ^ fcs)]
        return register == goodRemainder
    }
}
