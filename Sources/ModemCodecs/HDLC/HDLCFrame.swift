/// A frame that ``HDLCDecoder`` received between two flags with a correct FCS, or that
/// ``HDLCFrameCandidate/repair(maxBitFlips:adjacentPairsOnly:isAcceptable:)`` made pass its FCS.
///
/// Bit indices count the bits fed to the decoder since it was created or reset, starting at 0; they say
/// where in the stream the frame was (divide by the baud rate for a time).
public struct HDLCFrame: Sendable, Hashable {
    /// The frame's bytes without the two FCS bytes (for AX.25: addresses, control, PID, information).
    public var bytes: [UInt8]

    /// The received FCS (CRC-16/X.25 of ``bytes``; low byte first on the line).
    public var fcs: UInt16

    /// Index of the first bit after the opening flag.
    public var startBitIndex: Int

    /// Index just past the last bit of the closing flag: the moment the frame became known.
    public var endBitIndex: Int

    /// Indices (in the same count as ``startBitIndex``) of the received, still bit-stuffed line bits that
    /// were inverted to make the FCS pass, in increasing order; empty for a frame received intact.
    public var flippedBitIndices: [Int]

    /// Creates a frame.
    public init(bytes: [UInt8], fcs: UInt16, startBitIndex: Int, endBitIndex: Int, flippedBitIndices: [Int] = []) {
        self.bytes = bytes
        self.fcs = fcs
        self.startBitIndex = startBitIndex
        self.endBitIndex = endBitIndex
        self.flippedBitIndices = flippedBitIndices
    }

    /// Whether bits were inverted to make the FCS pass (count such frames apart from intact ones).
    public var isRepaired: Bool {
        !flippedBitIndices.isEmpty
    }
}
