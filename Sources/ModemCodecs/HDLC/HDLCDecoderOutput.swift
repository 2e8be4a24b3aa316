/// What ``HDLCDecoder`` makes of the bits between two flags: a good frame, or a damaged one offered for
/// repair.
public enum HDLCDecoderOutput: Sendable, Hashable {
    /// A frame whose FCS matched.
    case frame(HDLCFrame)

    /// A frame of plausible length whose FCS did not match or whose length was not a whole number of
    /// bytes; see ``HDLCFrameCandidate/repair(maxBitFlips:adjacentPairsOnly:isAcceptable:)``. Only
    /// returned when ``HDLCDecoder/reportsCandidates`` is `true`.
    case damaged(HDLCFrameCandidate)

    /// The good frame, if this is one.
    public var frame: HDLCFrame? {
        if case .frame(let frame) = self { return frame }
        return nil
    }

    /// The damaged frame, if this is one.
    public var candidate: HDLCFrameCandidate? {
        if case .damaged(let candidate) = self { return candidate }
        return nil
    }
}
