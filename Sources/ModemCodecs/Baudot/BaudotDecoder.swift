/// Turns received 5-bit Baudot codes into ASCII: ITA2 letters, US-TTY figures, as minimodem 0.24's
/// `rtty` and `tdd` receivers do.
///
/// The decoder starts in letters shift (minimodem resets to letters at each carrier). LTRS (0x1F) and
/// FIGS (0x1B) change the shift and produce no character. A space (0x04) produces `" "` and returns to
/// letters ("unshift on space", as minimodem's receiver does), so `FIGS 1 space 2` (0x1B 0x17 0x04 0x13) reads `"1 W"`. LF
/// and CR do not change the shift. Code 0x00 reads as `_` in letters and `^` in figures, the markers
/// minimodem prints. Figures 0x05 is BEL (0x07) and 0x12 is `)`.
///
/// ## Code table
///
/// ITA2 letters with the US-TTY (AT&T / ANSI "US teletypewriter") figures set, exactly as minimodem 0.24
/// uses it in its `rtty` and `tdd` modes. Codes are written with bit 0 as the first data bit sent (the
/// UART sends data LSB first). ``BaudotEncoder`` uses the same table.
///
/// | code | letters | figures |   | code | letters | figures |
/// |------|---------|---------|---|------|---------|---------|
/// | 0x00 | `_` (NUL) | `^` (NUL) | | 0x10 | T     | 5       |
/// | 0x01 | E       | 3       |   | 0x11 | Z       | `"`     |
/// | 0x02 | LF      | LF      |   | 0x12 | L       | `)`     |
/// | 0x03 | A       | `-`     |   | 0x13 | W       | 2       |
/// | 0x04 | space   | space   |   | 0x14 | H       | `#`     |
/// | 0x05 | S       | BEL     |   | 0x15 | Y       | 6       |
/// | 0x06 | I       | 8       |   | 0x16 | P       | 0       |
/// | 0x07 | U       | 7       |   | 0x17 | Q       | 1       |
/// | 0x08 | CR      | CR      |   | 0x18 | O       | 9       |
/// | 0x09 | D       | `$`     |   | 0x19 | B       | `?`     |
/// | 0x0A | R       | 4       |   | 0x1A | G       | `&`     |
/// | 0x0B | J       | `'`     |   | 0x1B | FIGS    | FIGS    |
/// | 0x0C | N       | `,`     |   | 0x1C | M       | `.`     |
/// | 0x0D | F       | `!`     |   | 0x1D | X       | `/`     |
/// | 0x0E | C       | `:`     |   | 0x1E | V       | `;`     |
/// | 0x0F | K       | `(`     |   | 0x1F | LTRS    | LTRS    |
///
/// US-TTY figures differ from CCITT ITA2 figures at 0x05 (BEL; ITA2 apostrophe), 0x09 (`$`; ITA2 WRU),
/// 0x0B (apostrophe; ITA2 BEL), 0x11 (`"`; ITA2 `+`), 0x14 (`#`; ITA2 `£`) and 0x1E (`;`; ITA2 `=`).
///
/// Two minimodem quirks are kept so that output matches minimodem byte for byte:
/// - Code 0x00 (sent for ASCII NUL) is received as `_` in letters and `^` in figures, the markers
///   minimodem prints for it.
/// - ``BaudotEncoder`` sends `+` as figures 0x12, which this decoder (like minimodem) reads as `)`.
///
/// ```swift
/// var decoder = BaudotDecoder()
/// [0x1F, 0x0A, 0x15, 0x1B, 0x17].compactMap { decoder.decode($0) }  // "RY1" as ASCII
/// ```
public struct BaudotDecoder: Sendable {
    /// Whether the decoder is in figures shift (otherwise letters).
    private var inFigures = false

    /// Creates a decoder in letters shift.
    public init() {}

    /// ASCII for one received 5-bit code, or nil for shift codes (which change the state).
    ///
    /// A space returns the decoder to letters shift (unshift on space), as minimodem does. Bits above the
    /// low 5 of `code` are ignored.
    public mutating func decode(_ code: UInt8) -> UInt8? {
        let code = code & 0x1F
        switch code {
        case Baudot.figureShift:
            inFigures = true
            return nil
        case Baudot.letterShift:
            inFigures = false
            return nil
        case Baudot.space:
            inFigures = false
        default:
            break
        }
        return inFigures ? Baudot.figures[Int(code)] : Baudot.letters[Int(code)]
    }

    /// Returns to letters shift, the state at creation.
    public mutating func reset() {
        inFigures = false
    }
}
