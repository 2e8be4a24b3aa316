/// Counts kept by ``KISSDecoder``. Garbage is counted, never thrown.
public struct KISSDecoderStatistics: Sendable, Hashable {
    /// Frames returned.
    public var frames = 0

    /// Bytes that were not inside a frame: before the first FEND, and after a dropped frame's error up to
    /// the next FEND.
    public var garbageBytes = 0

    /// Frames dropped because FESC was followed by something other than TFEND or TFESC.
    public var badEscapes = 0

    /// Frames dropped because their command was not one of ``KISSCommand`` (0...6 with any port, or 0xFF).
    public var unknownCommands = 0

    /// Frames dropped because their payload passed ``KISSDecoder/maximumPayloadLength``.
    public var oversized = 0

    /// Creates counts of zero.
    public init() {}

    /// Frames dropped for any reason.
    public var dropped: Int {
        badEscapes + unknownCommands + oversized
    }
}
