/// Wraps AX.25 frames in FX.25: the bits of one frame as a correlation tag and a Reed-Solomon block.
///
/// The block's data is what a plain HDLC transmission would carry (an opening flag, the frame and its
/// FCS bit-stuffed, a closing flag), packed least significant bit first and padded to the mode's size
/// with more flag bits; the check bytes follow. A receiver without FX.25 still sees an ordinary HDLC
/// frame between flags. Output is HDLC-level bits (before NRZI), to go between a transmission's
/// leading and trailing flags like ``HDLCEncoder``'s.
public struct FX25Encoder: Sendable {
    /// Check bytes asked for per block: 16, 32 or 64.
    public let parityCount: Int

    /// Creates an encoder.
    /// - Parameter parityCount: 16, 32 or 64 check bytes per block (more corrects more, costs more air).
    public init(parityCount: Int) {
        precondition(FX25Mode.parityCounts.contains(parityCount), "FX.25 sends 16, 32 or 64 check bytes, not \(parityCount)")
        self.parityCount = parityCount
    }

    /// The mode `frame` (without FCS) would be sent in, or nil when it is too long for FX.25.
    public func mode(for frame: some Collection<UInt8>) -> FX25Mode? {
        FX25Mode.fitting(byteCount: (Self.flaggedBits(of: frame).count + 7) / 8, parityCount: parityCount)
    }

    /// Appends the tag and block holding `frame` (its FCS is computed here), or returns false and
    /// appends nothing when the frame is too long for any FX.25 block (send it as plain HDLC instead).
    @discardableResult
    public func append(_ frame: some Collection<UInt8>, to bits: inout [Bool]) -> Bool {
        var data = Self.flaggedBits(of: frame)
        guard let mode = FX25Mode.fitting(byteCount: (data.count + 7) / 8, parityCount: parityCount) else { return false }
        // Pad with flag bits, continuing the flag pattern across byte boundaries.
        var k = 0
        while data.count < mode.dataCount * 8 {
            data.append(HDLCEncoder.flagBits[k])
            k = (k + 1) % 8
        }
        var bytes = [UInt8](repeating: 0, count: mode.dataCount)
        for (i, bit) in data.enumerated() where bit { bytes[i >> 3] |= 1 << UInt8(i & 7) }
        for i in 0..<64 { bits.append(mode.tag >> UInt64(i) & 1 != 0) }
        bits.append(contentsOf: data)
        for byte in mode.parity(of: bytes) {
            for i in 0..<8 { bits.append(byte >> UInt8(i) & 1 != 0) }
        }
        return true
    }

    /// An opening flag, the stuffed frame and FCS, a closing flag.
    static func flaggedBits(of frame: some Collection<UInt8>) -> [Bool] {
        var bits = HDLCEncoder.flagBits
        HDLCEncoder().appendFrame(frame, to: &bits)
        bits.append(contentsOf: HDLCEncoder.flagBits)
        return bits
    }
}
