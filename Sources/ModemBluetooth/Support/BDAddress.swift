import ModemRuntime
/// A Bluetooth device address (BD_ADDR): six bytes, printed most significant first
/// ("00:1B:DC:00:00:0B") and sent on the wire least significant first (`0B 00 00 DC 1B 00`).
public struct BDAddress: Sendable, Hashable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    /// The six bytes, most significant first (the printed order).
    public let bytes: [UInt8]

    /// Creates an address from six bytes in printed order (most significant first).
    /// - Precondition: `bytes.count == 6`.
    public init(_ bytes: [UInt8]) {
        precondition(bytes.count == 6, "a BD_ADDR has 6 bytes, got \(bytes.count)")
        self.bytes = bytes
    }

    /// Parses "00:1B:DC:00:00:0B" (also with `-` separators, any letter case); nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).count == 6
            ? text.split(separator: ":", omittingEmptySubsequences: false)
            : text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            out.append(byte)
        }
        bytes = out
    }

    /// Reads an address in wire order (least significant first) from six bytes.
    /// - Precondition: `wire.count == 6`.
    public init<C: Collection>(wire: C) where C.Element == UInt8 {
        precondition(wire.count == 6, "a BD_ADDR has 6 bytes, got \(wire.count)")
        bytes = wire.reversed()
    }

    /// The six bytes in wire order (least significant first).
    public var wire: [UInt8] { bytes.reversed() }

    /// 00:00:00:00:00:00 (BDADDR_ANY).
    public static let any = BDAddress([0, 0, 0, 0, 0, 0])

    /// "00:1B:DC:00:00:0B".
    public var description: String {
        bytes.map { Hex.digits($0) }.joined(separator: ":")
    }

    public static func < (lhs: BDAddress, rhs: BDAddress) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
