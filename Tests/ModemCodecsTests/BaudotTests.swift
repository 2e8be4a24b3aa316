import Testing
import ModemCodecs

/// Encodes `text` with one encoder, all codes concatenated.
private func encode(_ text: [UInt8], with encoder: inout BaudotEncoder) -> [UInt8] {
    text.flatMap { encoder.encode($0) }
}

private func encode(_ text: String) -> [UInt8] {
    var encoder = BaudotEncoder()
    return encode(Array(text.utf8), with: &encoder)
}

/// Decodes `codes` with one decoder fed code by code.
private func decode(_ codes: [UInt8], with decoder: inout BaudotDecoder) -> [UInt8] {
    codes.compactMap { decoder.decode($0) }
}

private func decode(_ codes: [UInt8]) -> [UInt8] {
    var decoder = BaudotDecoder()
    return decode(codes, with: &decoder)
}

private let LTRS: UInt8 = 0x1F
private let FIGS: UInt8 = 0x1B

@Suite("Baudot")
struct BaudotTests {
    // Known answers captured from minimodem 0.24:
    //   echo 'RYRY THE QUICK BROWN FOX 0123456789 $!&#()' | minimodem --tx rtty -f x.wav
    //   minimodem --rx rtty --binary-output -f x.wav   (prints each code LSB first)
    static let quickBrownFoxText = "RYRY THE QUICK BROWN FOX 0123456789 $!&#()\n"
    static let quickBrownFoxCodes: [UInt8] = [
        0x1F, 0x0A, 0x15, 0x0A, 0x15, 0x04, 0x10, 0x14, 0x01, 0x04, 0x17, 0x07, 0x06, 0x0E, 0x0F, 0x04,
        0x19, 0x0A, 0x18, 0x13, 0x0C, 0x04, 0x0D, 0x18, 0x1D, 0x04, 0x1B, 0x16, 0x17, 0x13, 0x01, 0x0A,
        0x10, 0x15, 0x07, 0x06, 0x18, 0x04, 0x1B, 0x09, 0x0D, 0x1A, 0x14, 0x0F, 0x12, 0x02,
    ]

    // All printable ASCII 0x20...0x7E sent by minimodem 0.24 (16 characters skipped as non-encodable).
    static let printableCodes: [UInt8] = [
        0x1F, 0x04, 0x1B, 0x0D, 0x11, 0x14, 0x09, 0x1A, 0x0B, 0x0F, 0x12, 0x12, 0x0C, 0x03, 0x1C, 0x1D,
        0x16, 0x17, 0x13, 0x01, 0x0A, 0x10, 0x15, 0x07, 0x06, 0x18, 0x0E, 0x1E, 0x19, 0x1F, 0x03, 0x19,
        0x0E, 0x09, 0x01, 0x0D, 0x1A, 0x14, 0x06, 0x0B, 0x0F, 0x12, 0x1C, 0x0C, 0x18, 0x16, 0x17, 0x0A,
        0x05, 0x10, 0x07, 0x1E, 0x13, 0x1D, 0x15, 0x11, 0x03, 0x19, 0x0E, 0x09, 0x01, 0x0D, 0x1A, 0x14,
        0x06, 0x0B, 0x0F, 0x12, 0x1C, 0x0C, 0x18, 0x16, 0x17, 0x0A, 0x05, 0x10, 0x07, 0x1E, 0x13, 0x1D,
        0x15, 0x11,
    ]
    // What minimodem 0.24 --rx rtty prints for printableCodes (`%` `*` `<` `=` `>` `@` `[` `\` `]` `^`
    // `_` `` ` `` `{` `|` `}` `~` skipped; `+` arrives as `)`; lowercase as uppercase).
    static let printableReceived = " !\"#$&'()),-./0123456789:;?ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ"

    @Test("encoder matches minimodem: RYRY THE QUICK BROWN FOX")
    func quickBrownFoxEncode() {
        #expect(encode(Self.quickBrownFoxText) == Self.quickBrownFoxCodes)
        #expect(Array(encode(Self.quickBrownFoxText).prefix(3)) == [LTRS, 0x0A, 0x15])  // LTRS R Y
    }

    @Test("decoder matches minimodem: RYRY THE QUICK BROWN FOX, all at once and split anywhere")
    func quickBrownFoxDecode() {
        let expected = Array(Self.quickBrownFoxText.utf8)
        #expect(decode(Self.quickBrownFoxCodes) == expected)
        // Split the code stream at every point; the decoder carries its shift across the pieces.
        for split in 0...Self.quickBrownFoxCodes.count {
            var decoder = BaudotDecoder()
            var output = decode(Array(Self.quickBrownFoxCodes[..<split]), with: &decoder)
            output += decode(Array(Self.quickBrownFoxCodes[split...]), with: &decoder)
            #expect(output == expected, "split at \(split)")
        }
    }

    @Test("encoder matches minimodem for every printable ASCII character")
    func printableEncode() {
        var encoder = BaudotEncoder()
        let codes = encode(Array(0x20...0x7E), with: &encoder)
        #expect(codes == Self.printableCodes)
        #expect(encoder.unencodableCount == 16)
        #expect(decode(codes) == Array(Self.printableReceived.utf8))
    }

    @Test("control characters and bytes above 0x7F: only NUL, BEL, LF and CR have codes")
    func controlAndHighBytes() {
        var encoder = BaudotEncoder()
        let input = Array(UInt8(0x00)...0x1F) + Array(UInt8(0x80)...0xFF)
        // As minimodem 0.24 sends them: LTRS NUL FIGS BEL LF CR.
        #expect(encode(input, with: &encoder) == [LTRS, 0x00, FIGS, 0x05, 0x02, 0x08])
        #expect(encoder.unencodableCount == 28 + 128)
    }

    @Test("minimodem quirks: NUL shows as _ or ^, + arrives as ), BEL round trips")
    func quirks() {
        // minimodem 0.24: printf 'E\a\0a+ 1 2\r\n' | minimodem --tx rtty, then --rx rtty --binary-output.
        let codes: [UInt8] = [LTRS, 0x01, FIGS, 0x05, 0x00, LTRS, 0x03, FIGS, 0x12, 0x04, FIGS, 0x17, 0x04, FIGS, 0x13, 0x08, 0x02]
        #expect(encode("E\u{07}\u{00}a+ 1 2\r\n") == codes)
        // minimodem --rx rtty prints "E\a^A) 1 2\r\n" for it.
        #expect(decode(codes) == Array("E\u{07}^A) 1 2\r\n".utf8))
        #expect(decode([0x00, FIGS, 0x00]) == Array("_^".utf8))
    }

    @Test("every encodable ASCII character round trips through encoder and decoder")
    func roundTrip() {
        // Everything with a code, except NUL (received as _ or ^) and + (received as ), minimodem's table).
        let encodable = (UInt8(0)...UInt8(0x7F)).filter { byte in
            var probe = BaudotEncoder()
            return !probe.encode(byte).isEmpty && byte != 0 && byte != UInt8(ascii: "+")
        }
        // 26 letters, 26 lowercase, 25 figures (! " # $ & ' ( ) , - . / 0-9 : ; ?), space, LF, CR, BEL.
        #expect(encodable.count == 81)

        // One stream, in order, and in a scrambled order that exercises every shift transition.
        var scrambled: [UInt8] = []
        for a in encodable { for b in encodable where (a &+ b) % 3 == 0 { scrambled += [a, b] } }
        for text in [encodable, scrambled] {
            var encoder = BaudotEncoder()
            var decoder = BaudotDecoder()
            var output: [UInt8] = []
            for byte in text {
                for code in encoder.encode(byte) {
                    #expect(code < 32)
                    if let ascii = decoder.decode(code) { output.append(ascii) }
                }
            }
            #expect(output == text.map(uppercased))
            #expect(encoder.unencodableCount == 0)
        }
    }

    @Test("the encoder sends a shift only when needed")
    func shiftHandling() {
        #expect(encode("A") == [LTRS, 0x03])       // shift unknown at start: LTRS first
        #expect(encode("1") == [FIGS, 0x17])       // ... or FIGS
        #expect(encode(" ") == [LTRS, 0x04])       // either-shift characters start with LTRS
        #expect(encode("\n") == [LTRS, 0x02])
        #expect(encode("A1A") == [LTRS, 0x03, FIGS, 0x17, LTRS, 0x03])
        #expect(encode("AB") == [LTRS, 0x03, 0x19])
        #expect(encode("12") == [FIGS, 0x17, 0x13])
        #expect(encode("1\r\n2") == [FIGS, 0x17, 0x08, 0x02, 0x13])  // CR and LF keep the shift
        #expect(encode("1 2") == [FIGS, 0x17, 0x04, FIGS, 0x13])     // unshift on space: FIGS again
        #expect(encode("1 A") == [FIGS, 0x17, 0x04, 0x03])           // ... and letters need no LTRS
        #expect(encode("A%B") == [LTRS, 0x03, 0x19])                  // skipped characters leave no trace
    }

    @Test("lowercase is sent as uppercase")
    func lowercaseFolding() {
        #expect(encode("ryry the quick brown fox") == encode("RYRY THE QUICK BROWN FOX"))
        for letter in UInt8(ascii: "a")...UInt8(ascii: "z") {
            var lower = BaudotEncoder(), upper = BaudotEncoder()
            #expect(lower.encode(letter) == upper.encode(letter - 0x20))
        }
    }

    @Test("unencodable characters are counted, and reset zeroes the count and forgets the shift")
    func unencodableCounting() {
        var encoder = BaudotEncoder()
        #expect(encoder.unencodableCount == 0)
        for byte in Array("%*<=>@[\\]^_`{|}~".utf8) + [0x01, 0x08, 0x09, 0x7F, 0x80, 0xC3, 0xFF] {
            #expect(encoder.encode(byte) == [])
        }
        #expect(encoder.unencodableCount == 23)
        #expect(encoder.encode(UInt8(ascii: "E")) == [LTRS, 0x01])
        #expect(encoder.encode(UInt8(ascii: "E")) == [0x01])
        #expect(encoder.unencodableCount == 23)
        encoder.reset()
        #expect(encoder.unencodableCount == 0)
        #expect(encoder.encode(UInt8(ascii: "E")) == [LTRS, 0x01])
    }

    @Test("decoder: shifts, unshift on space, LF and CR keep the shift, reset")
    func decoderShifts() {
        #expect(decode([0x17]) == Array("Q".utf8))                          // starts in letters
        #expect(decode([FIGS, 0x17, LTRS, 0x17]) == Array("1Q".utf8))
        #expect(decode([FIGS, 0x17, 0x04, 0x17]) == Array("1 Q".utf8))     // unshift on space
        #expect(decode([FIGS, 0x17, 0x08, 0x02, 0x17]) == Array("1\r\n1".utf8))
        #expect(decode([FIGS, FIGS, LTRS, LTRS, FIGS]) == [])              // shift codes give nothing
        #expect(decode([FIGS, 0x05, 0x09, 0x0B, 0x11, 0x14, 0x1E]) == Array("\u{07}$'\"#;".utf8))

        var decoder = BaudotDecoder()
        #expect(decoder.decode(FIGS) == nil)
        #expect(decoder.decode(0x17) == UInt8(ascii: "1"))
        decoder.reset()
        #expect(decoder.decode(0x17) == UInt8(ascii: "Q"))
    }

    @Test("RTTY characters through 5N1.5 UART framing and back")
    func throughUART() throws {
        let framing = try UARTFraming(parsing: "5N1.5")
        let uartEncoder = UARTEncoder(framing: framing)
        let uartDecoder = UARTDecoder(framing: framing)
        #expect(uartEncoder.encode(LTRS) == 0b11_1110)  // start 0, then 1 1 1 1 1
        #expect(uartEncoder.encode(0x01) == 0b00_0010)  // E: start 0, then 1 0 0 0 0
        var baudotDecoder = BaudotDecoder()
        var output: [UInt8] = []
        for code in encode(Self.quickBrownFoxText) {
            let character = uartDecoder.decode(dataAndParity: uartEncoder.encode(code) >> 1, stopBit: true)
            #expect(character.isValid)
            if let ascii = baudotDecoder.decode(character.byte) { output.append(ascii) }
        }
        #expect(output == Array(Self.quickBrownFoxText.utf8))
    }

    @Test("decoder ignores bits above the low five")
    func decoderMasks() {
        let junk = Self.quickBrownFoxCodes.enumerated().map { index, code in code | UInt8(truncatingIfNeeded: index << 5) }
        #expect(decode(junk) == Array(Self.quickBrownFoxText.utf8))
    }

    @Test("every code decodes in both shifts to ASCII")
    func fullDecodeTable() {
        var decoder = BaudotDecoder()
        let letters = (0...31).compactMap { code -> UInt8? in
            _ = decoder.decode(LTRS)  // back to letters even after FIGS
            return decoder.decode(UInt8(code))
        }
        let figures = (0...31).compactMap { code -> UInt8? in
            _ = decoder.decode(FIGS)  // back to figures even after a space
            return decoder.decode(UInt8(code))
        }
        #expect(String(decoding: letters, as: UTF8.self) == "_E\nA SIU\rDRJNFCKTZLWHYPQOBGMXV")
        #expect(String(decoding: figures, as: UTF8.self) == "^3\n- \u{07}87\r$4',!:(5\")2#6019?&./;")
    }
}

private func uppercased(_ byte: UInt8) -> UInt8 {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) ? byte - 0x20 : byte
}
