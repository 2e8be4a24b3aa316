/// NRZI decoding: a line level equal to the previous one is a 1 bit, a change of level is a 0 bit.
///
/// Undoes ``NRZIEncoder``; the polarity of the line does not matter (inverting every level gives the same
/// bits). The first level after creation or ``reset(previousLevel:)`` is compared with `previousLevel`,
/// which is usually unknown: that first bit may be wrong, which HDLC's flags absorb.
///
/// An error in one line level (one wrong decision of the demodulator) becomes two adjacent wrong bits
/// after NRZI decoding, because that level is compared both with the level before it and the one after.
///
/// ```swift
/// var nrzi = NRZIDecoder()                          // previous level assumed mark
/// nrzi.decode([false, false, false, true])          // [false, true, true, false]
/// ```
public struct NRZIDecoder: Sendable, Hashable {
    /// The last line level seen (`true` = mark), or the assumed level before the first one.
    public private(set) var previousLevel: Bool

    /// Creates a decoder that assumes the line was at `previousLevel` (default mark) before the first level.
    public init(previousLevel: Bool = true) {
        self.previousLevel = previousLevel
    }

    /// The data bit for one line level: `true` (1) when the level did not change.
    public mutating func decode(_ level: Bool) -> Bool {
        let bit = level == previousLevel
        previousLevel = level
        return bit
    }

    /// The data bits for `levels`, one per level, in order.
    public mutating func decode(_ levels: some Sequence<Bool>) -> [Bool] {
        var bits: [Bool] = []
        bits.reserveCapacity(levels.underestimatedCount)
        for level in levels {
            bits.append(decode(level))
        }
        return bits
    }

    /// Forgets the line's history and assumes `previousLevel` (default mark), as at creation.
    public mutating func reset(previousLevel: Bool = true) {
        self.previousLevel = previousLevel
    }
}
