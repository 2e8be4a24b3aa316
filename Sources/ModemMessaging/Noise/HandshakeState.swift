import ModemCrypto

/// Noise's HandshakeState (spec rev. 34, section 5.3) for one pattern, XX:
///
/// ```
///   -> e
///   <- e, ee, s, es
///   -> s, se
/// ```
///
/// as `Noise_XX_25519_ChaChaPoly_SHA256` or `Noise_XX_25519_AESGCM_SHA256` (sessions use AESGCM). A value: ``writeMessage(payload:)`` and
/// ``readMessage(_:)`` alternate as the pattern says; after the third message ``split()`` gives the
/// transport keys. The ephemeral key is given at creation, so tests are deterministic.
public struct HandshakeState: Sendable {
    /// The protocol name for a cipher (at most 32 bytes, so used as `h` directly, zero-padded).
    public static func protocolName(_ cipher: NoiseCipher) -> String { "Noise_XX_25519_\(cipher.rawValue)_SHA256" }
    /// This handshake's protocol name.
    public var protocolName: String { Self.protocolName(cipher) }
    /// The AEAD of the handshake and of the transport keys it gives.
    public let cipher: NoiseCipher
    /// The largest Noise message.
    public static let maximumMessageLength = 65_535
    /// Length of a DH public key.
    public static let keyLength = 32

    /// Whether this side sends the first message.
    public let initiator: Bool
    private var symmetric: SymmetricState
    private let staticKey: X25519PrivateKey
    private let ephemeralKey: X25519PrivateKey
    private var remoteEphemeral: X25519PublicKey?
    /// The peer's static public key, once its message carrying `s` was read.
    public private(set) var remoteStatic: [UInt8]?
    /// Messages written or read so far (0...3).
    public private(set) var messageIndex = 0

    /// Starts a handshake.
    /// - Parameters:
    ///   - initiator: whether this side sends the first message.
    ///   - prologue: data both sides must agree on (mixed into `h`).
    ///   - staticKey: this side's identity.
    ///   - ephemeralKey: this handshake's ephemeral key (fresh and random unless a test fixes it).
    ///   - cipher: the AEAD (`ChaChaPoly` by default, as the published vectors use; sessions pass AESGCM).
    public init(initiator: Bool, prologue: [UInt8], staticKey: X25519PrivateKey,
                ephemeralKey: X25519PrivateKey = .init(), cipher: NoiseCipher = .chaChaPoly) {
        self.initiator = initiator
        self.cipher = cipher
        self.staticKey = staticKey
        self.ephemeralKey = ephemeralKey
        symmetric = SymmetricState(protocolName: Self.protocolName(cipher), cipher: cipher)
        symmetric.mixHash(prologue)
    }

    /// Whether it is this side's turn to write.
    public var isMyTurn: Bool { (messageIndex % 2 == 0) == initiator }
    /// Whether all three messages have passed.
    public var isComplete: Bool { messageIndex == 3 }
    /// The handshake hash `h` (equal on both sides after the handshake: a channel binding).
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    private func dh(_ key: X25519PrivateKey, _ remote: X25519PublicKey) throws(NoiseError) -> [UInt8] {
        do {
            return try key.sharedSecret(with: remote)
        } catch {
            throw NoiseError("the peer's key gives no shared secret (a low-order point)")
        }
    }

    private static func publicKey(_ bytes: ArraySlice<UInt8>) throws(NoiseError) -> X25519PublicKey {
        do {
            return try X25519PublicKey(rawRepresentation: bytes)
        } catch {
            throw NoiseError("a public key of the wrong length")
        }
    }

    /// Writes the next handshake message carrying `payload` (encrypted from the second message on).
    /// - Throws: ``NoiseError`` when it is not this side's turn, the handshake is over, or the
    ///   message would exceed 65,535 bytes.
    public mutating func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isComplete else { throw NoiseError("the handshake is complete") }
        guard isMyTurn else { throw NoiseError("it is the peer's turn to send a handshake message") }
        var out: [UInt8] = []
        switch messageIndex {
        case 0:  // -> e
            let e = Array(ephemeralKey.publicKey.rawRepresentation)
            out += e
            symmetric.mixHash(e)
        case 1:  // <- e, ee, s, es
            guard let re = remoteEphemeral else { throw NoiseError("no remote ephemeral key") }
            let e = Array(ephemeralKey.publicKey.rawRepresentation)
            out += e
            symmetric.mixHash(e)
            symmetric.mixKey(try dh(ephemeralKey, re))
            out += try symmetric.encryptAndHash(Array(staticKey.publicKey.rawRepresentation))
            symmetric.mixKey(try dh(staticKey, re))  // es: responder's s with initiator's e
        default:  // -> s, se
            guard let re = remoteEphemeral else { throw NoiseError("no remote ephemeral key") }
            out += try symmetric.encryptAndHash(Array(staticKey.publicKey.rawRepresentation))
            symmetric.mixKey(try dh(staticKey, re))  // se: initiator's s with responder's e
        }
        out += try symmetric.encryptAndHash(payload)
        guard out.count <= Self.maximumMessageLength else { throw NoiseError("a handshake message over 65,535 bytes") }
        messageIndex += 1
        return out
    }

    /// Reads the peer's next handshake message and returns its payload.
    /// - Throws: ``NoiseError`` when the message is short, does not authenticate (another
    ///   prologue, a changed byte), or comes out of turn. The state is unchanged after a failure.
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isComplete else { throw NoiseError("the handshake is complete") }
        guard !isMyTurn else { throw NoiseError("it is this side's turn to send a handshake message") }
        guard message.count <= Self.maximumMessageLength else { throw NoiseError("a handshake message over 65,535 bytes") }
        var copy = self
        let payload = try copy.read(message)
        self = copy
        return payload
    }

    private mutating func read(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        var rest = message[...]
        func take(_ n: Int) throws(NoiseError) -> [UInt8] {
            guard rest.count >= n else { throw NoiseError("handshake message \(messageIndex + 1) is too short (\(message.count) bytes)") }
            let part = Array(rest.prefix(n))
            rest = rest.dropFirst(n)
            return part
        }
        let tag = CipherState.tagLength
        switch messageIndex {
        case 0:  // -> e
            let e = try take(Self.keyLength)
            remoteEphemeral = try Self.publicKey(e[...])
            symmetric.mixHash(e)
        case 1:  // <- e, ee, s, es
            let e = try take(Self.keyLength)
            let re = try Self.publicKey(e[...])
            remoteEphemeral = re
            symmetric.mixHash(e)
            symmetric.mixKey(try dh(ephemeralKey, re))
            let s = try symmetric.decryptAndHash(try take(Self.keyLength + tag))
            let rs = try Self.publicKey(s[...])
            remoteStatic = s
            symmetric.mixKey(try dh(ephemeralKey, rs))  // es
        default:  // -> s, se
            guard let re = remoteEphemeral else { throw NoiseError("no remote ephemeral key") }
            _ = re
            let s = try symmetric.decryptAndHash(try take(Self.keyLength + tag))
            let rs = try Self.publicKey(s[...])
            remoteStatic = s
            symmetric.mixKey(try dh(ephemeralKey, rs))  // se
        }
        let payload = try symmetric.decryptAndHash(Array(rest))
        messageIndex += 1
        return payload
    }

    /// The transport CipherStates after the handshake: (sending, receiving) for this side.
    /// - Throws: ``NoiseError`` before the handshake is complete.
    public func split() throws(NoiseError) -> (send: CipherState, receive: CipherState) {
        guard isComplete else { throw NoiseError("the handshake is not complete") }
        let (c1, c2) = symmetric.split()
        return initiator ? (c1, c2) : (c2, c1)
    }
}
