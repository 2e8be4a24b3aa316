/// Hexadecimal text, written once: bytes to lower-case digits and back (keys, digests, wormhole
/// sides and phases, file names), and integers as zero-padded digits for protocol logs (HCI
/// opcodes, L2CAP channel IDs, Bluetooth addresses).
public enum Hex {
    private static let lower = Array("0123456789abcdef".utf8)
    private static let upper = Array("0123456789ABCDEF".utf8)

    /// `bytes` as lower-case hex, two digits a byte (`[0x0a, 0xff]` is `"0aff"`).
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(lower[Int(b >> 4)])
            out.append(lower[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of hex text (either case, an even number of digits), or nil when `text` is not that.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let high = value(of: utf8[i]), let low = value(of: utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// Whether `text` is exactly `count` lower-case hex digits (a token or side on the wire, where
    /// upper case is not allowed).
    public static func isLowercaseDigits(_ text: some StringProtocol, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `value` in hex, zero-padded to `width` digits (default: its type's width, two digits a
    /// byte), upper case unless asked for lower. A value wider than `width` keeps all its digits.
    public static func digits<T: BinaryInteger>(_ value: T, width: Int? = nil, uppercase: Bool = true) -> String {
        let text = String(value, radix: 16, uppercase: uppercase)
        let wanted = width ?? MemoryLayout<T>.size * 2
        return text.count < wanted ? String(repeating: "0", count: wanted - text.count) + text : text
    }

    /// The value of one hex digit (either case), or nil.
    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        case 0x41...0x46: digit - 0x41 + 10
        default: nil
        }
    }
}
