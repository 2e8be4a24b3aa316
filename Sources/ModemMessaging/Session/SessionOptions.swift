import ModemRuntime
import ModemTransport
/// What a session is for (mixed into the Noise prologue, so two ends must agree).
public enum SessionService: UInt8, Sendable, Hashable {
    /// The two-party mailbox (the mailbox API).
    case mailbox = 1
    /// Data connections (the data-connection API).
    case data = 2
    /// Pairing follow-up.
    case pair = 3
}

/// Session limits; nil fields are unlimited. The side that reaches one closes the session
/// (CLOSE with reason 2 or 3) and reports `END_USER_QUIT` with the detail.
public struct SessionLimits: Sendable, Equatable {
    /// Bytes of record bodies sent and received together.
    public var bytes: Int?
    /// Seconds since the session opened.
    public var seconds: Double?

    /// Creates limits.
    public init(bytes: Int? = nil, seconds: Double? = nil) {
        self.bytes = bytes
        self.seconds = seconds
    }

    /// No limits.
    public static let none = SessionLimits()
    /// The mailbox's defaults: 10 MB and one hour.
    public static let mailboxDefault = SessionLimits(bytes: 10_000_000, seconds: 3600)
}

/// How to run a session: who we are, what for, keepalive, limits, the keys.
public struct SessionOptions: Sendable {
    /// The user name announced to the peer (a label).
    public var userName: String
    /// What the session is for.
    public var service: SessionService
    /// Keepalive interval in seconds; nil for the transport's default (10 s on streams, 30 s on links).
    public var keepalive: Double?
    /// This installation's keys and trust.
    public var keys: KeyStore
    /// Limits (default: the mailbox's 10 MB / 1 h for `.mailbox`, none otherwise).
    public var limits: SessionLimits
    /// How long the handshake may take, in seconds (links need longer).
    public var handshakeTimeout: Double?
    /// The clock of the session's timers (handshake timeout, keepalive, silence); the system's
    /// monotonic clock unless a test gives a manual one.
    public var clock: TimerClock
    /// Peers trusted for this session only, beside the key store's (a session met by a wormhole
    /// code trusts the key its peer sent, sealed under the code's PAKE key); empty by default.
    public var sessionTrust: [TrustedPeer] = []
    /// Bytes appended to the Noise prologue (see ``SessionConfiguration/prologueBinding``).
    public var prologueBinding: [UInt8] = []

    /// Creates options.
    public init(userName: String = defaultUserName(), service: SessionService, keepalive: Double? = nil, keys: KeyStore,
                limits: SessionLimits? = nil, handshakeTimeout: Double? = nil, clock: TimerClock = .continuous) {
        self.userName = userName
        self.service = service
        self.keepalive = keepalive
        self.keys = keys
        self.limits = limits ?? (service == .mailbox ? .mailboxDefault : .none)
        self.handshakeTimeout = handshakeTimeout
        self.clock = clock
    }

    /// The keepalive to use on a transport of this kind.
    public func keepalive(for kind: TransportKind) -> Double {
        keepalive ?? (kind == .stream ? 10 : 30)
    }
}
