/// The 5-bit Baudot code tables shared by ``BaudotEncoder`` and ``BaudotDecoder``: ITA2 letters with the
/// US-TTY figures set, exactly as minimodem 0.24 uses it. The full table and the minimodem quirks kept
/// here are documented on ``BaudotDecoder``.
enum Baudot {
    /// Letters shift (LTRS), 0x1F: following codes are letters.
    static let letterShift: UInt8 = 0x1F
    /// Figures shift (FIGS), 0x1B: following codes are figures.
    static let figureShift: UInt8 = 0x1B
    /// Space, 0x04: the same in both shifts; a receiver returns to letters on it ("unshift on space").
    static let space: UInt8 = 0x04

    /// ASCII received for each code in letters shift. Shift codes are never looked up.
    static let letters: [UInt8] = Array("_E\nA SIU\rDRJNFCKTZLWHYPQOBG%MXV%".utf8)

    /// ASCII received for each code in figures shift (US-TTY figures). Shift codes are never looked up.
    static let figures: [UInt8] = Array("^3\n- \u{07}87\r$4',!:(5\")2#6019?&%./;%".utf8)

    /// Which shifts an ASCII character can be sent in.
    enum Shift: UInt8, Sendable {
        case letters = 1
        case figures = 2
        /// Sent with the same code in either shift (NUL, LF, CR, space): no shift code needed.
        case either = 3
    }

    /// One entry of the encoding table: the 5-bit code and the shift it needs.
    struct Encoding: Sendable, Hashable {
        var code: UInt8
        var shift: Shift
    }

    /// The encoding of each ASCII value 0x00...0x5F (after folding lowercase to uppercase); `nil` where
    /// there is no Baudot code.
    static let encodings: [Encoding?] = {
        var table = [Encoding?](repeating: nil, count: 0x60)
        for code in 0..<UInt8(32) where code != letterShift && code != figureShift && code != 0 {
            let letter = letters[Int(code)], figure = figures[Int(code)]
            if letter == figure {
                table[Int(letter)] = Encoding(code: code, shift: .either)
            } else {
                table[Int(letter)] = Encoding(code: code, shift: .letters)
                table[Int(figure)] = Encoding(code: code, shift: .figures)
            }
        }
        // NUL is sent as code 0x00 in either shift (the receiver shows it as `_` or `^`).
        table[0x00] = Encoding(code: 0x00, shift: .either)
        // minimodem sends `+` as figures 0x12, which US-TTY receivers print as `)`.
        table[Int(UInt8(ascii: "+"))] = Encoding(code: 0x12, shift: .figures)
        return table
    }()

    /// The encoding of `ascii`, with lowercase folded to uppercase; `nil` if it has no Baudot code.
    static func encoding(of ascii: UInt8) -> Encoding? {
        var character = ascii
        if character >= UInt8(ascii: "a") && character <= UInt8(ascii: "z") {
            character -= 0x20
        }
        return Int(character) < encodings.count ? encodings[Int(character)] : nil
    }
}
