/// The parity bit of an asynchronous serial character.
///
/// The raw value is the letter used in framing strings such as `"8N1"` or `"7E1"`.
public enum UARTParity: String, Sendable, CaseIterable {
    /// No parity bit is sent.
    case none = "N"
    /// The parity bit makes the number of one bits in data plus parity even.
    case even = "E"
    /// The parity bit makes the number of one bits in data plus parity odd.
    case odd = "O"
    /// The parity bit is always mark (1).
    case mark = "M"
    /// The parity bit is always space (0).
    case space = "S"

    /// Whether a parity bit is sent at all (every case except ``none``).
    var hasParityBit: Bool { self != .none }

    /// The parity bit for `data`, counting only the low `dataBits` bits.
    ///
    /// Returns 0 for ``none`` (no bit is sent).
    func bit(for data: UInt32, dataBits: Int) -> UInt32 {
        switch self {
        case .none, .space:
            return 0
        case .mark:
            return 1
        case .even:
            return UInt32((data & UARTFraming.mask(dataBits: dataBits)).nonzeroBitCount & 1)
        case .odd:
            return UInt32((data & UARTFraming.mask(dataBits: dataBits)).nonzeroBitCount & 1) ^ 1
        }
    }
}
