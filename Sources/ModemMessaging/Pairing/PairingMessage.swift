import ModemCrypto

/// One message of pairing by sound (`docs/messaging-plan.md` section 4). Apart from the token, each
/// starts with 'P', a type letter and the pairing session number (u16 BE); the line that carries them
/// (the link frame's CRC-32 and the HDLC FCS-16) checks them.
///
/// ```
///  token  'P' 'K' ... (PairingToken, 15 bytes with its own CRC-16)
///  P1     'P' '1' s | pk_B 32 | n_B 16 | name length u8 | name (UTF-8, 0...64)
///  P2     'P' '2' s | pk_A 32 | r_A 16 | name length u8 | name | MAC_A 16
///  P3     'P' '3' s | MAC_B 16
///  abort  'P' 'X' s                  (a pairing of session s was heard to be ambiguous)
/// ```
public enum PairingMessage: Sendable, Hashable {
    /// The announcer's token.
    case token(PairingToken)
    /// P1, the listener's answer: its public key, a nonce and (optionally) its user name.
    case answer(session: UInt16, publicKey: [UInt8], nonce: [UInt8], name: [UInt8])
    /// P2, the announcer's opening of its commitment, with its proof (MAC_A).
    case reveal(session: UInt16, publicKey: [UInt8], opening: [UInt8], name: [UInt8], mac: [UInt8])
    /// P3, the listener's proof (MAC_B).
    case confirm(session: UInt16, mac: [UInt8])
    /// Someone heard two pairings at once: everyone in session `session` stops.
    case abort(session: UInt16)

    /// The longest user name carried, in bytes.
    public static let maximumNameLength = 64
    /// Bytes of a MAC.
    public static let macLength = 16
    /// Bytes of a nonce or opening.
    public static let nonceLength = 16

    /// The pairing session the message belongs to.
    public var session: UInt16 {
        switch self {
        case .token(let t): return t.session
        case .answer(let s, _, _, _), .reveal(let s, _, _, _, _), .confirm(let s, _), .abort(let s): return s
        }
    }

    /// The message as bytes.
    public func encode() -> [UInt8] {
        func head(_ type: Character, _ s: UInt16) -> [UInt8] { [0x50, type.asciiValue!, UInt8(s >> 8), UInt8(s & 0xFF)] }
        switch self {
        case .token(let t): return t.encode()
        case .answer(let s, let pk, let n, let name):
            return head("1", s) + pk + n + [UInt8(name.count)] + name
        case .reveal(let s, let pk, let r, let name, let mac):
            return head("2", s) + pk + r + [UInt8(name.count)] + name + mac
        case .confirm(let s, let mac): return head("3", s) + mac
        case .abort(let s): return head("X", s)
        }
    }

    /// Decodes a message.
    /// - Throws: ``PairingMessageError`` naming what is wrong.
    public init(decoding bytes: some Collection<UInt8>) throws(PairingMessageError) {
        let b = Array(bytes)
        guard b.count >= 4, b[0] == 0x50 else { throw .notPairing }
        if b[1] == PairingToken.magic.1 {
            do { self = .token(try PairingToken(decoding: b)) } catch { throw .badToken(error) }
            return
        }
        let s = UInt16(b[2]) << 8 | UInt16(b[3])
        var i = 4
        func take(_ n: Int) throws(PairingMessageError) -> [UInt8] {
            guard b.count - i >= n else { throw .truncated }
            defer { i += n }
            return Array(b[i..<i + n])
        }
        func name() throws(PairingMessageError) -> [UInt8] {
            let n = Int(try take(1)[0])
            guard n <= Self.maximumNameLength else { throw .nameTooLong(n) }
            return try take(n)
        }
        switch b[1] {
        case UInt8(ascii: "1"):
            self = .answer(session: s, publicKey: try take(32), nonce: try take(Self.nonceLength), name: try name())
        case UInt8(ascii: "2"):
            self = .reveal(session: s, publicKey: try take(32), opening: try take(Self.nonceLength), name: try name(),
                           mac: try take(Self.macLength))
        case UInt8(ascii: "3"):
            self = .confirm(session: s, mac: try take(Self.macLength))
        case UInt8(ascii: "X"):
            self = .abort(session: s)
        default:
            throw .unknownType(b[1])
        }
        guard i == b.count else { throw .trailingBytes(b.count - i) }
    }
}

/// Why bytes are not a ``PairingMessage``.
public enum PairingMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Does not start with 'P' and a type.
    case notPairing
    /// A token that does not check.
    case badToken(PairingTokenError)
    /// An unknown type letter.
    case unknownType(UInt8)
    /// Shorter than its fields.
    case truncated
    /// Bytes after the last field.
    case trailingBytes(Int)
    /// A name over 64 bytes.
    case nameTooLong(Int)

    public var description: String {
        switch self {
        case .notPairing: return "not a pairing message"
        case .badToken(let e): return e.description
        case .unknownType(let t): return "unknown pairing message type \(t)"
        case .truncated: return "pairing message is shorter than its fields"
        case .trailingBytes(let n): return "pairing message has \(n) bytes after its last field"
        case .nameTooLong(let n): return "pairing user name of \(n) bytes exceeds \(PairingMessage.maximumNameLength)"
        }
    }
}

/// The key schedule of a pairing: confirmation key, MACs and the short code, all functions of the
/// transcript `T = token | P1 | P2 without its MAC`. Every input of `T` is fixed before the other end
/// chooses its random part: the token commits to all of P2 (``PairingToken/commitment(session:publicKey:opening:name:)``),
/// and P1 goes out before P2 opens that commitment. So neither end, nor anyone between them, can steer
/// the code: a man in the middle matches the two ends' codes with a chance of one in a million.
/// The domain strings carry the protocol version (2).
public enum PairingCrypto {
    /// Digits of the short code.
    public static let codeDigits = 6

    /// K = HKDF-SHA256(X25519(privateKey, peer), salt: SHA-256(T), info: "SM-pair-confirm-2"), 32 bytes.
    /// - Throws: when `peer` is not a valid X25519 public key (wrong length, all zeros, or a low-order point).
    public static func confirmationKey(privateKey: X25519PrivateKey, peer: [UInt8],
                                       transcript: [UInt8]) throws -> [UInt8] {
        try KeyText.validatePublicKey(peer)
        let peerKey = try X25519PublicKey(rawRepresentation: peer)
        let shared = try privateKey.sharedSecret(with: peerKey)
        let salt = SHA256Hasher.hash(transcript)
        return HMACSHA256.hkdf(inputKeyMaterial: shared, salt: salt, info: Array("SM-pair-confirm-2".utf8), length: 32)
    }

    /// HMAC-SHA256(K, role)[0..16], role "A" (announcer) or "B" (listener).
    public static func mac(key: [UInt8], role: String) -> [UInt8] {
        Array(HMACSHA256.code(for: Array(role.utf8), key: key).prefix(PairingMessage.macLength))
    }

    /// The 6-digit code: u32 BE of SHA-256("SM-pair-code-2" | T)[0..4] mod 1,000,000.
    public static func code(transcript: [UInt8]) -> String {
        code(transcript: transcript, digits: codeDigits)
    }

    /// The code with `digits` digits (1...9): tests shrink the code space to play an attacker cheaply.
    static func code(transcript: [UInt8], digits: Int) -> String {
        precondition((1...9).contains(digits), "a pairing code has 1 to 9 digits")
        var h = SHA256Hasher()
        h.update(Array("SM-pair-code-2".utf8))
        h.update(transcript)
        let d = Array(h.finalize())
        var space: UInt32 = 1
        for _ in 0..<digits { space *= 10 }
        let v = (UInt32(d[0]) << 24 | UInt32(d[1]) << 16 | UInt32(d[2]) << 8 | UInt32(d[3])) % space
        let s = String(v)
        return String(repeating: "0", count: digits - s.count) + s
    }

    /// Compares two MACs in time independent of where they differ.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var d: UInt8 = 0
        for i in a.indices { d |= a[i] ^ b[i] }
        return d == 0
    }
}
