/// NRZI encoding (non-return-to-zero inverted) as HDLC, AX.25 and G3RUH use it: a 0 bit changes the
/// line level, a 1 bit keeps it.
///
/// Line levels are `Bool`: `true` is mark (the 1200 Hz tone of Bell 202, the higher level of baseband),
/// `false` is space. Only transitions carry information, so the polarity of the line does not matter to
/// the receiver. Because HDLC stuffs a 0 after five 1s, a bit-stuffed stream has a transition at least
/// every six bits, which keeps the receiver's clock locked.
///
/// ```swift
/// var nrzi = NRZIEncoder()                       // line starts at mark
/// nrzi.encode([false, true, true, false])         // [false, false, false, true]
/// ```
///
/// ``NRZIDecoder`` undoes it.
public struct NRZIEncoder: Sendable, Hashable {
    /// The current line level (`true` = mark): the level of the last bit sent, or the initial level.
    public private(set) var level: Bool

    /// Creates an encoder whose line rests at `initialLevel` before the first bit (default mark).
    public init(initialLevel: Bool = true) {
        level = initialLevel
    }

    /// The line level for one data bit: a 0 toggles the level, a 1 keeps it.
    public mutating func encode(_ bit: Bool) -> Bool {
        if !bit {
            level.toggle()
        }
        return level
    }

    /// The line levels for `bits`, one per bit, in order.
    public mutating func encode(_ bits: some Sequence<Bool>) -> [Bool] {
        var levels: [Bool] = []
        levels.reserveCapacity(bits.underestimatedCount)
        for bit in bits {
            levels.append(encode(bit))
        }
        return levels
    }

    /// Sets the line level to `initialLevel` (default mark), as at creation.
    public mutating func reset(initialLevel: Bool = true) {
        level = initialLevel
    }
}
