import ModemCrypto
import ModemCodecs

/// The pairing token the announcing end plays (`docs/messaging-plan.md` section 4): 15 bytes that
/// commit to its public key, self-checking so any carrier can bear it.
///
/// ```
///  0..1   'P' 'K'          magic
///  2      ver 4 b | flags 4 b  (version 2)
///  3..4   s   u16 BE       random pairing session number
///  5..12  C   8 bytes      commitment (``commitment(session:publicKey:opening:name:)``)
///  13..14 CRC-16/X.25 over bytes 0..12, low byte first (the HDLC FCS order)
/// ```
///
/// Version 2 commits to everything the announcer later reveals (key, opening, name, session, role and
/// protocol version), so once the token is out the announcer has no free input left in the short
/// code. Version 1 committed to the key and opening only, leaving the name free: a man in the middle
/// could try names until the two ends' codes matched (issue 32). Version 1 tokens are refused.
public struct PairingToken: Sendable, Hashable {
    /// Bytes on the wire.
    public static let length = 15
    /// The version this codec writes and accepts (2: the commitment binds every input of the code).
    public static let version: UInt8 = 2
    /// The magic that opens a token.
    public static let magic: (UInt8, UInt8) = (0x50, 0x4B)   // "PK"
    /// Bytes of the commitment.
    public static let commitmentLength = 8

    /// Flag bits (4 bits; none defined yet, kept and ignored).
    public var flags: UInt8
    /// The random pairing session number.
    public var session: UInt16
    /// The commitment to the announcer's public key (8 bytes).
    public var commitment: [UInt8]

    /// Creates a token.
    /// - Precondition: `commitment` has 8 bytes and `flags` fits in 4 bits.
    public init(session: UInt16, commitment: [UInt8], flags: UInt8 = 0) {
        precondition(commitment.count == Self.commitmentLength, "a pairing commitment has 8 bytes")
        precondition(flags < 16, "token flags are 4 bits")
        self.session = session
        self.commitment = commitment
        self.flags = flags
    }

    /// The commitment to everything the announcer reveals in P2, with a 16-byte random opening `r`:
    /// SHA-256("SM-pair-commit-2" | version u8 | "A" | session u16 BE | publicKey (32) | r (16) |
    /// name length u8 | name), first 8 bytes. Each field has a fixed length or a length prefix, so no two
    /// different inputs give one byte string; the role letter and version keep it apart from any other
    /// hash of the protocol.
    /// - Parameters:
    ///   - session: the pairing session number the token carries.
    ///   - publicKey: the announcer's X25519 public key.
    ///   - r: the 16 random bytes P2 opens the commitment with.
    ///   - name: the user name P2 carries (at most ``PairingMessage/maximumNameLength`` bytes).
    public static func commitment(session: UInt16, publicKey: [UInt8], opening r: [UInt8], name: [UInt8]) -> [UInt8] {
        precondition(name.count <= PairingMessage.maximumNameLength, "a pairing name has at most 64 bytes")
        var h = SHA256Hasher()
        h.update(Array("SM-pair-commit-2".utf8))
        h.update([version, UInt8(ascii: "A"), UInt8(session >> 8), UInt8(session & 0xFF)])
        h.update(publicKey)
        h.update(r)
        h.update([UInt8(name.count)])
        h.update(name)
        return Array(h.finalize().prefix(commitmentLength))
    }

    /// The token as its 15 bytes.
    public func encode() -> [UInt8] {
        var b: [UInt8] = [Self.magic.0, Self.magic.1, Self.version << 4 | flags, UInt8(session >> 8), UInt8(session & 0xFF)]
        b += commitment
        let crc = CRC16X25.checksum(b)
        b.append(UInt8(crc & 0xFF))
        b.append(UInt8(crc >> 8))
        return b
    }

    /// Decodes a token.
    /// - Throws: ``PairingTokenError`` naming what is wrong.
    public init(decoding bytes: some Collection<UInt8>) throws(PairingTokenError) {
        let b = Array(bytes)
        guard b.count == Self.length else { throw .badLength(b.count) }
        guard b[0] == Self.magic.0, b[1] == Self.magic.1 else { throw .badMagic }
        let crc = CRC16X25.checksum(b[0..<13])
        guard b[13] == UInt8(crc & 0xFF), b[14] == UInt8(crc >> 8) else { throw .badCheck }
        guard b[2] >> 4 == Self.version else { throw .unsupportedVersion(b[2] >> 4) }
        flags = b[2] & 0x0F
        session = UInt16(b[3]) << 8 | UInt16(b[4])
        commitment = Array(b[5..<13])
    }
}

/// Why bytes are not a ``PairingToken``.
public enum PairingTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not 15 bytes.
    case badLength(Int)
    /// Does not start with "PK".
    case badMagic
    /// The CRC-16 does not match.
    case badCheck
    /// Another version.
    case unsupportedVersion(UInt8)

    public var description: String {
        switch self {
        case .badLength(let n): return "a pairing token has \(PairingToken.length) bytes, got \(n)"
        case .badMagic: return "a pairing token starts with \"PK\""
        case .badCheck: return "pairing token CRC-16 mismatch"
        case .unsupportedVersion(let v): return "pairing token version \(v) is not supported (this is version \(PairingToken.version))"
        }
    }
}
