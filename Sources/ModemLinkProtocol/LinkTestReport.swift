/// The outcome of a link test: `LinkTest` (both ends in one process, over audio) or ``RemoteLinkTest``
/// (a phone against a remote device, over any ``CommunicationManager``); `modem link-test --json`
/// prints it. Delivery counts are the harness's: every payload delivered to an application is
/// compared with what was really sent, never taken from the protocol's own belief. Counts a harness
/// cannot see (frames of a remote device) stay 0.
public struct LinkTestReport: Sendable, Hashable, Codable {
    /// Exchanges attempted.
    public var exchanges = 0
    /// Exchanges whose data arrived intact both ways.
    public var completed = 0
    /// Exchanges that ended with a timeout.
    public var timedOut = 0
    /// Exchanges that ended otherwise (an error, a refused call, corrupt or misplaced data).
    public var failed = 0
    /// Payloads delivered to either application that match nothing sent in that direction.
    public var corruptDelivered = 0
    /// Payloads delivered to either application a second time, or to the wrong exchange.
    public var duplicatesDelivered = 0
    /// Mean time from the start of an exchange to its completion, in ms (completed exchanges).
    public var meanRoundTripMs = 0.0
    /// Payload bits delivered intact in both directions per second of channel time.
    public var goodputBps = 0.0
    /// Channel time of the exchanges, in seconds.
    public var channelSeconds = 0.0
    /// Whether the handshake succeeded (open returned 0).
    public var opened = false
    /// `open`'s return code.
    public var openCode: Int32 = 0
    /// Frames sent by the phone and by the device.
    public var framesSent = 0
    /// Data frames sent again.
    public var retransmissions = 0
    /// Frames the receivers found damaged (failed FCS/CRC): channel damage.
    public var framesDamaged = 0
    /// Frames the medium dropped (in-memory medium only).
    public var framesLost = 0
    /// Duplicate frames the protocol suppressed.
    public var duplicateFramesSuppressed = 0
    /// Frames that arrived as coded frames (forward error correction on an audio line).
    public var framesCoded = 0

    /// Creates an empty report.
    public init() {}
}
