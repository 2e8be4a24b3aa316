/// The G3RUH 9600 baud scrambler: a self-synchronising scrambler with polynomial x^17 + x^12 + 1,
/// applied on the line after NRZI encoding (K9NG / G3RUH FSK, as Dire Wolf's `-B 9600`).
///
/// It whitens the spectrum of the baseband signal so that long runs do not drift the receiver's
/// DC level or clock; the descrambler recovers the data from any point after 17 bits.
public struct G3RUHScrambler: Sendable, Hashable {
    private var state: UInt32 = 0

    /// Creates a scrambler with an all-zero shift register.
    public init() {}

    /// Scrambles one bit.
    public mutating func scramble(_ bit: Bool) -> Bool {
        let out = (bit ? 1 : 0) ^ ((state >> 11) & 1) ^ ((state >> 16) & 1)
        state = ((state << 1) | out) & 0x1FFFF
        return out == 1
    }

    /// Scrambles a sequence of bits.
    public mutating func scramble(_ bits: some Sequence<Bool>) -> [Bool] {
        bits.map { scramble($0) }
    }
}

/// The receiving side of ``G3RUHScrambler``.
public struct G3RUHDescrambler: Sendable, Hashable {
    private var state: UInt32 = 0

    /// Creates a descrambler; its output is valid 17 bits after it starts.
    public init() {}

    /// Descrambles one received line bit.
    public mutating func descramble(_ bit: Bool) -> Bool {
        let b: UInt32 = bit ? 1 : 0
        let out = b ^ ((state >> 11) & 1) ^ ((state >> 16) & 1)
        state = ((state << 1) | b) & 0x1FFFF
        return out == 1
    }

    /// Descrambles a sequence of bits.
    public mutating func descramble(_ bits: some Sequence<Bool>) -> [Bool] {
        bits.map { descramble($0) }
    }
}
