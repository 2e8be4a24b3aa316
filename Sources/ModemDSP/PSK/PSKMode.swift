/// The phase-shift keyed packet modes of Dire Wolf (1.4 and later): 2400 bit/s QPSK after ITU-T V.26
/// and 4800 bit/s 8PSK after V.27, both on an 1800 Hz carrier, with the data in the phase *change*
/// from one symbol to the next (differential PSK), Gray coded.
///
/// The bits are the HDLC line levels (NRZI, as for AFSK; nothing is scrambled), taken two (QPSK) or
/// three (8PSK) at a time, the first bit the most significant. The phase advances by
/// ``phaseSteps(forSymbol:)`` steps of ``phaseStep`` radians, plus ``extraShift`` for V.26 alternative B.
public enum PSKMode: String, Sendable, Hashable, CaseIterable {
    /// V.26 alternative A, 2400 bit/s QPSK as Dire Wolf 1.4 and 1.5 sent it (`-j` in its tools):
    /// phase changes of 0°, 90°, 180°, 270°.
    case v26A = "v26a"
    /// V.26 alternative B, 2400 bit/s QPSK as the MFJ-2400 sends it (`-J` in Dire Wolf's tools):
    /// phase changes of 45°, 135°, 225°, 315°, so the phase moves at every symbol.
    case v26B = "v26b"
    /// V.27, 4800 bit/s 8PSK: phase changes in steps of 45°.
    case v27 = "v27"

    /// The carrier, in Hz (1800 for every mode).
    public var carrierFrequency: Double { 1800 }

    /// Bits per symbol: 2 (QPSK) or 3 (8PSK).
    public var bitsPerSymbol: Int { self == .v27 ? 3 : 2 }

    /// Phases in the constellation: 4 or 8.
    public var phaseCount: Int { 1 << bitsPerSymbol }

    /// Symbols per second: 1200 (QPSK) or 1600 (8PSK).
    public var symbolRate: Double { self == .v27 ? 1600 : 1200 }

    /// Bits per second: 2400 or 4800.
    public var bitRate: Double { symbolRate * Double(bitsPerSymbol) }

    /// One step of the constellation, in radians (π/2 or π/4).
    public var phaseStep: Double { 2 * Double.pi / Double(phaseCount) }

    /// The fixed part of every phase change, in radians: π/4 for V.26 alternative B, else 0.
    public var extraShift: Double { self == .v26B ? Double.pi / 4 : 0 }

    /// The number of ``phaseStep``s the phase advances for a symbol (its bits, first bit most
    /// significant), before ``extraShift``: V.26 00 → 0, 01 → 1, 11 → 2, 10 → 3; V.27 001 → 0,
    /// 000 → 1, 010 → 2, 011 → 3, 111 → 4, 110 → 5, 100 → 6, 101 → 7 (a Gray code: neighbours differ in
    /// one bit).
    /// - Parameter symbol: 0..<``phaseCount``.
    public func phaseSteps(forSymbol symbol: Int) -> Int {
        self == .v27 ? Self.v27Steps[symbol] : Self.v26Steps[symbol]
    }

    /// The symbol (bits, first bit most significant) that advances the phase by `steps`, the inverse of
    /// ``phaseSteps(forSymbol:)``.
    /// - Parameter steps: 0..<``phaseCount``.
    public func symbol(forPhaseSteps steps: Int) -> Int {
        self == .v27 ? Self.v27Symbols[steps] : Self.v26Symbols[steps]
    }

    static let v26Steps = [0, 1, 3, 2]
    static let v26Symbols = [0, 1, 3, 2]
    static let v27Steps = [1, 0, 2, 3, 6, 7, 5, 4]
    static let v27Symbols = [1, 0, 2, 3, 7, 6, 4, 5]
}
