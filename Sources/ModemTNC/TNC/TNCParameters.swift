import ModemCodecs
import ModemPipelines

/// The transmit parameters a KISS client can set (``KISSCommand``), in the specification's units.
///
/// The defaults are Dire Wolf's: TXDELAY 30 (300 ms), persistence 63 (p = 0.25), slot time 10
/// (100 ms), TXTAIL 10 (100 ms), half duplex.
public struct TNCParameters: Sendable, Hashable {
    /// Flags sent before each frame so receivers lock, in units of 10 ms (0...255).
    public var txDelay: Int = 30
    /// p-persistence: the chance to transmit in a free slot is (p + 1) / 256 (0...255).
    public var persistence: Int = 63
    /// Wait between two tries of the channel, in units of 10 ms (0...255).
    public var slotTime: Int = 10
    /// Flags sent after each frame, in units of 10 ms (0...255); at least 3 flags are always sent.
    public var txTail: Int = 10
    /// Transmit at once, without listening first (channel access does not apply).
    public var fullDuplex: Bool = false

    /// Creates parameters (Dire Wolf's defaults unless given).
    public init(txDelay: Int = 30, persistence: Int = 63, slotTime: Int = 10, txTail: Int = 10, fullDuplex: Bool = false) {
        precondition((0...255).contains(txDelay), "TNCParameters txDelay must be 0...255 (10 ms units), got \(txDelay)")
        precondition((0...255).contains(persistence), "TNCParameters persistence must be 0...255, got \(persistence)")
        precondition((0...255).contains(slotTime), "TNCParameters slotTime must be 0...255 (10 ms units), got \(slotTime)")
        precondition((0...255).contains(txTail), "TNCParameters txTail must be 0...255 (10 ms units), got \(txTail)")
        self.txDelay = txDelay
        self.persistence = persistence
        self.slotTime = slotTime
        self.txTail = txTail
        self.fullDuplex = fullDuplex
    }

    /// TXDELAY in milliseconds.
    public var txDelayMilliseconds: Double { Double(txDelay) * 10 }
    /// TXTAIL in milliseconds.
    public var txTailMilliseconds: Double { Double(txTail) * 10 }
    /// Slot time in milliseconds.
    public var slotTimeMilliseconds: Double { Double(slotTime) * 10 }

    /// Applies a parameter frame (TXDELAY, persistence, slot time, TXTAIL, full duplex) with its one
    /// byte of payload.
    /// - Returns: a description of the change (e.g. `TXDELAY 50 (500 ms)`), or nil when `frame` is not
    ///   a parameter frame or carries no byte.
    public mutating func apply(_ frame: KISSFrame) -> String? {
        guard let value = frame.payload.first.map(Int.init) else { return nil }
        switch frame.command {
        case .txDelay:
            txDelay = value
            return "TXDELAY \(value) (\(value * 10) ms)"
        case .persistence:
            persistence = value
            return "persistence \(value) (p = \(String(Double(value + 1) / 256)))"
        case .slotTime:
            slotTime = value
            return "slot time \(value) (\(value * 10) ms)"
        case .txTail:
            txTail = value
            return "TXTAIL \(value) (\(value * 10) ms)"
        case .fullDuplex:
            fullDuplex = value != 0
            return fullDuplex ? "full duplex" : "half duplex"
        case .dataFrame, .setHardware, .exitKISS:
            return nil
        }
    }
}
