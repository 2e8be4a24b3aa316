import ModemTransport
/// What the messaging modules (mailbox, data connections) see of a session: an authenticated,
/// encrypted, ordered exchange of typed records with one trusted peer. The Noise session over a
/// ``MessageTransport`` implements it; ``InMemorySessionLine`` gives a plaintext pair for tests.
///
/// Record kinds 0x01...0x0F belong to the session itself (accept, reject, ping, close); modules use
/// 0x10...0x1F (mailbox) and 0x20...0x2F (data connections). ``send(kind:body:)`` refuses the
/// session's own kinds.
public protocol RecordSession: Sendable {
    /// Who is at the other end (established by the handshake): name it by
    /// ``PeerIdentity/trustedName`` or ``PeerIdentity/description``, never by the name it claims.
    var peer: PeerIdentity { get }
    /// The largest record body ``send(kind:body:)`` accepts, in bytes.
    var maximumRecordBody: Int { get }
    /// Sends one record. Suspends while the line is full (back-pressure); throws once the session
    /// has ended or is closing on our side.
    func send(kind: UInt8, body: [UInt8]) async throws(SessionSendError)
    /// The next input: a record, the peer's close, or the end. After `.ended` it keeps returning the
    /// same `.ended`. One consumer at a time.
    func receive() async -> SessionIncoming
    /// Half-closes: "I will send no more". If the peer closed first this completes the close.
    /// The session ends (``receive()`` gives `.ended`) when both sides have closed or the line goes.
    func close() async
}

/// Who is at the other end of a session, pairing or data connection: the key that authenticated,
/// the name this installation trusts that key under, and the name the peer claims for itself.
///
/// Name a peer by ``trustedName`` (or print the whole value: ``description`` does it right). The
/// claimed name is chosen by the peer (`--name the-boss`) and proves nothing; it is shown only beside
/// the trusted name, marked as claimed. A peer whose key is not trusted here is named by its key's
/// fingerprint and marked untrusted.
public struct PeerIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The peer's static X25519 public key (32 bytes): its identity.
    public var publicKey: [UInt8]
    /// The local name of the key that authenticated (the key store's entry, or the name a session was
    /// told to trust the key under); nil when the key is not trusted here.
    public var trustedName: String?
    /// The user name the peer announced (a label it chose, not an identity; may be empty).
    public var claimedName: String

    /// Creates a peer identity.
    /// - Parameters:
    ///   - publicKey: the key that authenticated.
    ///   - trustedName: this installation's name for that key, nil when it is not trusted.
    ///   - claimedName: what the peer calls itself.
    public init(publicKey: [UInt8], trustedName: String?, claimedName: String) {
        self.publicKey = publicKey
        self.trustedName = trustedName
        self.claimedName = claimedName
    }

    /// The key's fingerprint (``keyFingerprint(_:)``: 16 hex digits).
    public var keyFingerprint: String { ModemMessaging.keyFingerprint(publicKey) }

    /// Whether the key is trusted here.
    public var isTrusted: Bool { trustedName != nil }

    /// The peer named for people: `bob`; `bob (claims "the-boss")` when the claim differs from the
    /// trusted name; `untrusted key 0123456789abcdef (claims "x")` for a key not trusted here. The
    /// claim is quoted with `"` and `\` escaped and control characters shown as `?`, so it cannot pass
    /// for the trusted name or for more of the line.
    public var description: String {
        let base = trustedName ?? "untrusted key \(keyFingerprint)"
        guard !claimedName.isEmpty, claimedName != trustedName else { return base }
        return "\(base) (claims \(Self.quoted(claimedName)))"
    }

    /// `text` in double quotes with `"` and `\` escaped and control characters as `?`.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"", "\\": out += "\\" + String(scalar)
            case _ where TerminalText.isUnsafe(scalar): out += "?"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// One input from a ``RecordSession``.
public enum SessionIncoming: Sendable, Equatable {
    /// A record of a module's kind with its body.
    case record(kind: UInt8, body: [UInt8])
    /// The peer will send no more (its CLOSE). Send what is still due, then call
    /// ``RecordSession/close()``: the session then ends with ``SessionEnd/otherUserQuit``.
    case peerClosing
    /// The session is over.
    case ended(SessionEnd)
}

/// How a session that was connected ended: the mailbox API's disconnect reasons.
public enum SessionEnd: Sendable, Equatable, Error {
    /// We closed first, or both sides closed at once (`END_USER_QUIT`); the text gives a detail such
    /// as a session limit, or is nil.
    case userQuit(String?)
    /// The peer closed first (`END_OTHER_USER_QUIT`).
    case otherUserQuit
    /// The peer's end vanished without closing: its process died, its socket was reset
    /// (`END_OTHER_USER_LOST`).
    case otherUserLost(String)
    /// The line went silent or failed here (`END_LOST_NET`): keepalive expired, a cut, a local failure.
    case lostNet(String)

    /// The mailbox API's name of this reason.
    public var seedName: String {
        switch self {
        case .userQuit: "END_USER_QUIT"
        case .otherUserQuit: "END_OTHER_USER_QUIT"
        case .otherUserLost: "END_OTHER_USER_LOST"
        case .lostNet: "END_LOST_NET"
        }
    }
}

/// Why a session could not be connected: the mailbox API's connect-failed reasons.
public enum SessionFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Cancelled here before it connected (`FAIL_USER_CANCELED`).
    case userCanceled
    /// No line, refused, unreachable, or garbage before keys (`FAIL_NETWORK_UNAVAILABLE`).
    case networkUnavailable(String)
    /// The peer's key is not trusted here, or ours is not trusted there (`FAIL_INVALID_AUTHORIZATION`,
    /// the data-connection API's `kMediaFailureKeyError`).
    case invalidAuthorization(String)
    /// Too many attempts (`FAIL_EXCEEDED_RATE_LIMIT`).
    case exceededRateLimit
    /// The trust entry for the peer's key has expired (`FAIL_EXPIRED_KEY`).
    case expiredKey(String)
    /// A contact card failed validation (`FAIL_BAD_CONTACT`).
    case badContact(String)

    /// The mailbox API's name of this reason.
    public var seedName: String {
        switch self {
        case .userCanceled: "FAIL_USER_CANCELED"
        case .networkUnavailable: "FAIL_NETWORK_UNAVAILABLE"
        case .invalidAuthorization: "FAIL_INVALID_AUTHORIZATION"
        case .exceededRateLimit: "FAIL_EXCEEDED_RATE_LIMIT"
        case .expiredKey: "FAIL_EXPIRED_KEY"
        case .badContact: "FAIL_BAD_CONTACT"
        }
    }

    /// The reason byte carried in REJECT and NOPE frames.
    public var code: UInt8 {
        switch self {
        case .userCanceled: 1
        case .networkUnavailable: 2
        case .invalidAuthorization: 3
        case .exceededRateLimit: 4
        case .expiredKey: 5
        case .badContact: 6
        }
    }

    public var description: String {
        switch self {
        case .userCanceled: "\(seedName): cancelled"
        case .networkUnavailable(let text), .invalidAuthorization(let text), .expiredKey(let text),
             .badContact(let text):
            "\(seedName): \(text)"
        case .exceededRateLimit: "\(seedName): too many attempts, try again later"
        }
    }
}

/// A failure to send a record.
public enum SessionSendError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The session has ended (with this reason).
    case ended(SessionEnd)
    /// We already called ``RecordSession/close()``.
    case closing
    /// The kind is one of the session's own (0x01...0x0F) or the body is larger than allowed.
    case invalid(String)

    public var description: String {
        switch self {
        case .ended(let end): "the session has ended (\(end.seedName))"
        case .closing: "the session is closing: nothing more can be sent"
        case .invalid(let text): text
        }
    }
}
