/// What an ``RFCOMMSession`` counted: traffic, and damage it dropped instead of failing.
public struct RFCOMMStatistics: Sendable, Hashable {
    /// Frames handed to `received`, good or bad.
    public var framesReceived = 0
    /// Frames sent (`.transmit` actions).
    public var framesSent = 0
    /// Data bytes received on DLCs (not counting DLCI 0).
    public var bytesReceived = 0
    /// Data bytes sent on DLCs.
    public var bytesSent = 0
    /// Frames dropped because their FCS was wrong.
    public var badFCS = 0
    /// Frames or multiplexer messages dropped because they could not be parsed.
    public var malformed = 0
    /// Frames dropped because their DLC is not open (unknown DLCI, not yet connected, session closed).
    public var droppedFrames = 0
    /// Responses that matched nothing we asked (a PN answer for another DLCI, a stray UA, ...).
    public var unexpectedResponses = 0
    /// NSC responses we sent for commands we do not know.
    public var nscSent = 0
    /// NSC responses we received.
    public var nscReceived = 0
    /// Data frames that arrived while the peer held no credit from us.
    public var creditViolations = 0
    /// Data frames longer than the negotiated N1 (delivered anyway).
    public var oversizedFrames = 0
    /// PN values we could not take as they were (N1 of 0, above 32767 or too big for the MTUs;
    /// a convergence layer we do not know): answered clamped.
    public var clampedNegotiations = 0

    /// All zero.
    public init() {}
}
