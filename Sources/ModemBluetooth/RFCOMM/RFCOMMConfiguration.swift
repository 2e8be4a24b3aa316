/// What an ``RFCOMMSession`` offers and how long it waits.
public struct RFCOMMConfiguration: Sendable, Hashable {
    /// N1 we propose and accept at most, in bytes (1-32767). The session lowers it further so a whole
    /// frame (N1 + 6 bytes of header, credit and FCS) fits both L2CAP MTUs.
    public var maximumFrameSize: Int
    /// Ask for (and accept) credit-based flow control (RFCOMM §6.5). Off: 07.10 flow control (MSC FC, FCon/FCoff).
    public var creditBasedFlowControl: Bool
    /// The credits granted in PN (k, 0-7).
    public var initialCredits: UInt8
    /// How many credits the peer should hold: when its remaining credits fall to half of this, it
    /// is topped up to it (0-255; bounded so target × N1 ≤ 256 KiB; 0 grants nothing after PN).
    public var creditTarget: Int
    /// A DLC with queued data and no credits for this long (seconds) is closed.
    public var creditTimeout: Double
    /// T1: how long to wait for the answer to SABM or DISC (seconds).
    public var acknowledgementTimeout: Double
    /// T2: how long to wait for the answer to a PN or MSC command (seconds).
    public var responseTimeout: Double
    /// The DLC priority proposed in PN (0-63).
    public var priority: UInt8

    /// Creates a configuration; the defaults are the plan's (N1 1000, credits 7 then 32, 10 s, 20 s, 20 s, 7).
    public init(maximumFrameSize: Int = 1000, creditBasedFlowControl: Bool = true, initialCredits: UInt8 = 7,
                creditTarget: Int = 32, creditTimeout: Double = 10, acknowledgementTimeout: Double = 20,
                responseTimeout: Double = 20, priority: UInt8 = 7) {
        self.maximumFrameSize = maximumFrameSize
        self.creditBasedFlowControl = creditBasedFlowControl
        self.initialCredits = initialCredits
        self.creditTarget = creditTarget
        self.creditTimeout = creditTimeout
        self.acknowledgementTimeout = acknowledgementTimeout
        self.responseTimeout = responseTimeout
        self.priority = priority
    }
}
