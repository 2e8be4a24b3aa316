/// ITA2 / US-TTY Baudot (5-bit) with letter and figure shift, as minimodem's rtty mode uses it.
///
/// Feed ASCII one byte at a time; each call returns the 5-bit codes to send for it (0, 1 or 2 codes).
/// The encoder tracks the shift the receiver is in and sends LTRS (0x1F) or FIGS (0x1B) before a
/// character that needs the other shift. Like minimodem 0.24:
/// - The shift is unknown at the start (and after ``reset()``), so the first character is always preceded
///   by a shift code (LTRS for letters and for characters valid in either shift).
/// - After a space the receiver is assumed back in letters ("unshift on space", which ``BaudotDecoder``
///   and minimodem's receiver do), so figures after a space get a fresh FIGS.
/// - NUL, LF, CR and space are sent in whichever shift is current.
/// - Lowercase is sent as uppercase. `+` is sent as figures code 0x12, which US-TTY receivers print as `)`.
/// - Everything else without a code (`%`, `*`, `<`, `=`, `>`, `@`, `[`, `\`, `]`, `^`, `_`, `` ` ``,
///   `{`, `|`, `}`, `~`, other control characters and bytes 0x80...0xFF) is skipped and counted in
///   ``unencodableCount``.
///
/// The code table (ITA2 letters, US-TTY figures) is documented on ``BaudotDecoder``.
///
/// ```swift
/// var encoder = BaudotEncoder()
/// encoder.encode(UInt8(ascii: "R"))  // [0x1F, 0x0A]: LTRS, R
/// encoder.encode(UInt8(ascii: "y"))  // [0x15]: Y
/// encoder.encode(UInt8(ascii: "1"))  // [0x1B, 0x17]: FIGS, 1
/// ```
public struct BaudotEncoder: Sendable {
    /// The shift the receiver is in after the codes sent so far; `nil` when not known.
    private var shift: Baudot.Shift?

    /// Number of input bytes skipped because they have no Baudot code, since creation or ``reset()``.
    public private(set) var unencodableCount: Int = 0

    /// Creates an encoder whose receiver's shift is unknown.
    public init() {}

    /// Codes (5-bit values) to send for one ASCII byte, including a LTRS/FIGS shift when the state must
    /// change; lowercase is sent as uppercase; characters with no Baudot code return [] (and are counted in
    /// ``unencodableCount``).
    public mutating func encode(_ ascii: UInt8) -> [UInt8] {
        guard let encoding = Baudot.encoding(of: ascii) else {
            unencodableCount += 1
            return []
        }
        var codes: [UInt8] = []
        codes.reserveCapacity(2)
        switch (encoding.shift, shift) {
        case (.either, .some), (.letters, .letters?), (.figures, .figures?):
            break
        case (.either, nil), (.letters, _):
            shift = .letters
            codes.append(Baudot.letterShift)
        case (.figures, _):
            shift = .figures
            codes.append(Baudot.figureShift)
        }
        codes.append(encoding.code)
        if encoding.code == Baudot.space {
            shift = .letters  // the receiver unshifts on space
        }
        return codes
    }

    /// Forgets the receiver's shift (the next character gets a shift code) and zeroes
    /// ``unencodableCount``.
    public mutating func reset() {
        shift = nil
        unencodableCount = 0
    }
}
