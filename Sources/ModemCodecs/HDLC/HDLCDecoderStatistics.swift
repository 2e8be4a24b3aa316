/// Counts kept by ``HDLCDecoder``: what it received between flags and what became of it.
///
/// Channel damage is counted, never thrown. Stretches of fewer than 8 bits between two flags (flags
/// sharing bits, noise between flags) are ignored and not counted.
public struct HDLCDecoderStatistics: Sendable, Hashable {
    /// Frames returned with a correct FCS.
    public var frames = 0

    /// Frames of a whole number of bytes, within the length limits, whose FCS did not match.
    public var crcFailures = 0

    /// Frames whose bit count after de-stuffing was not a multiple of 8.
    public var misaligned = 0

    /// Frames cut short by an abort: seven or more 1s in a row after at least 8 bits of content.
    public var aborts = 0

    /// Frames shorter than ``HDLCDecoder/minimumLength`` bytes (FCS included).
    public var tooShort = 0

    /// Frames longer than ``HDLCDecoder/maximumLength`` bytes (FCS included); the decoder stops collecting
    /// as soon as the limit is passed and waits for the next flag.
    public var tooLong = 0

    /// Creates counts of zero.
    public init() {}

    /// Frames that arrived between flags but failed: CRC failures and misaligned frames (the ones
    /// ``HDLCDecoder`` offers for repair as ``HDLCFrameCandidate``).
    public var damaged: Int {
        crcFailures + misaligned
    }
}
