/// The TNC2 monitor format, `SRC>DST,DIGI1,DIGI2*:info`, as Dire Wolf 1.6 prints it (`atest`,
/// `kissutil`, `direwolf`) and reads it (`gen_packets`, `kissutil`).
///
/// The rules, checked against Dire Wolf 1.6 (`gen_packets` then `atest -h`):
/// - Addresses are `CALL` or `CALL-N`; an SSID of 0 is not shown (`CQ-0` reads as `CQ`).
/// - A `*` follows the *last* digipeater whose has-been-repeated bit is set, only that one. Reading, a
///   `*` after a digipeater sets the bit on it and on every digipeater before it (`A>B,D1,D2*,D3` sets
///   D1 and D2). A `*` after the source or destination is ignored, as Dire Wolf does.
/// - In the information, bytes below 0x20, 0x7F, 0xFE and 0xFF are shown as `<0xNN>` (two lower-case
///   hexadecimal digits), and so is a space that is the last byte (`<0x20>`), so that it is not lost
///   to trimming. Other bytes are shown as they are, so UTF-8 text passes through. Dire Wolf writes
///   bytes that are not valid UTF-8 raw; a Swift `String` cannot hold them, so they are shown as
///   `<0xNN>` too. With `asciiOnly` every byte from 0x80 up is escaped (Dire Wolf does this for frames
///   that are not APRS in its own display).
/// - Reading, `<0xNN>` (the `0x` lower-case, the digits of either case) becomes the byte NN; anything
///   else is taken literally as UTF-8. The convention is ambiguous for information that really contains
///   the text `<0x41>`, which reads back as `A`, in Dire Wolf as here.
/// - A line read is always a UI frame (control 0x03, PID 0xF0) with the command/response bits of both
///   the destination and the source set, byte for byte what `gen_packets` and `kissutil` make.
extension AX25Frame {
    /// Reads a frame from a TNC2 monitor line, `SRC>DST[,DIGI[*]...]:info`.
    ///
    /// The line is taken as given: pass it without its line terminator (a `\r` left at the end would be
    /// part of the information; `gen_packets` even sends the `\n`). The result is a UI frame, PID 0xF0.
    ///
    /// - Throws: ``AX25Error`` whose description says what is wrong (a missing `>` or `:`, which address
    ///   is bad and why, more than 8 digipeaters); the caller adds the line number.
    public init(monitorLine line: String) throws(AX25Error) {
        func malformed(_ problem: String) -> AX25Error {
            AX25Error(.malformedMonitorLine, "not a TNC2 monitor line (SOURCE>DESTINATION[,DIGIPEATER...]:information): \(problem)")
        }
        if line.isEmpty {
            throw malformed("the line is empty")
        }
        // Work on the UTF-8 view: a character search would miss a ":" that a combining mark follows.
        guard let colon = line.utf8.firstIndex(of: UInt8(ascii: ":")) else {
            throw malformed("no \":\" between the addresses and the information")
        }
        let header = line[..<colon]
        guard let arrow = header.utf8.firstIndex(of: UInt8(ascii: ">")) else {
            throw malformed("no \">\" between the source and destination addresses")
        }
        let path = header.utf8[header.utf8.index(after: arrow)...]
            .split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            .map { Substring($0) }
        let digipeaterTexts = path.dropFirst()
        if digipeaterTexts.count > Self.maxDigipeaters {
            throw AX25Error(.tooManyDigipeaters, "\(digipeaterTexts.count) digipeaters; at most \(Self.maxDigipeaters)")
        }

        /// An address, with whether a `*` followed it.
        func address(_ text: Substring, role: String) throws(AX25Error) -> (AX25Address, Bool) {
            let starred = text.hasSuffix("*")
            return (try AX25Address(parsing: starred ? text.dropLast() : text, role: role), starred)
        }
        var source = try address(header[..<arrow], role: "source address").0
        var destination = try address(path[0], role: "destination address").0
        var digipeaters: [AX25Address] = []
        var lastStarred: Int?
        for (index, text) in digipeaterTexts.enumerated() {
            let (digipeater, starred) = try address(text, role: "digipeater \(index + 1) address")
            digipeaters.append(digipeater)
            if starred { lastStarred = index }
        }
        if let lastStarred {
            for index in 0...lastStarred {
                digipeaters[index].highBit = true
            }
        }
        destination.highBit = true
        source.highBit = true
        self.init(
            destination: destination, source: source, digipeaters: digipeaters,
            control: Self.uiControl, pid: Self.noLayer3PID,
            info: Self.unescapedInfo(line.utf8[line.utf8.index(after: colon)...])
        )
    }

    /// The frame as a TNC2 monitor line, `SRC>DST[,DIGI...]:info`, with a `*` after the last digipeater
    /// that has repeated it and unprintable information bytes as `<0xNN>`.
    ///
    /// - Parameter asciiOnly: Escape every information byte from 0x80 up, rather than letting valid UTF-8
    ///   through.
    public func monitorLine(asciiOnly: Bool = false) -> String {
        var line = monitorAddresses
        line += ":"
        line += Self.escapedInfo(info, asciiOnly: asciiOnly)
        return line
    }

    /// The address part of the monitor line, `SRC>DST[,DIGI[*]...]`, without the `:`.
    public var monitorAddresses: String {
        var text = "\(source)>\(destination)"
        let heard = lastRepeaterIndex
        for (index, digipeater) in digipeaters.enumerated() {
            text += ",\(digipeater)"
            if index == heard {
                text += "*"
            }
        }
        return text
    }

    /// Information bytes as monitor text: bytes below 0x20, 0x7F, 0xFE, 0xFF, a space as the last byte,
    /// bytes that are not part of valid UTF-8 (and, with `asciiOnly`, all bytes from 0x80 up) as `<0xNN>`.
    public static func escapedInfo(_ info: some Collection<UInt8>, asciiOnly: Bool = false) -> String {
        let bytes = Array(info)
        var text = String.UnicodeScalarView()
        func escape(_ byte: UInt8) {
            text.append(contentsOf: "<0x\(ax25HexByte(byte))>".unicodeScalars)
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == 0x7F || (byte == 0x20 && index == bytes.count - 1) {
                escape(byte)
                index += 1
            } else if byte < 0x80 {
                text.append(Unicode.Scalar(byte))
                index += 1
            } else if !asciiOnly, let (scalar, length) = utf8Scalar(in: bytes, at: index) {
                text.append(scalar)
                index += length
            } else {
                escape(byte)
                index += 1
            }
        }
        return String(text)
    }

    /// Monitor text back to information bytes: `<0xNN>` (hexadecimal digits of either case) becomes the
    /// byte NN, everything else its UTF-8 bytes.
    public static func unescapedInfo(_ text: some StringProtocol) -> [UInt8] {
        unescapedInfo(text.utf8)
    }

    /// Monitor text, as UTF-8 bytes, back to information bytes, as the public overload does.
    static func unescapedInfo(_ text: some Sequence<UInt8>) -> [UInt8] {
        let utf8 = Array(text)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "<"), index + 5 < utf8.count,
               utf8[index + 1] == UInt8(ascii: "0"), utf8[index + 2] == UInt8(ascii: "x"),
               utf8[index + 5] == UInt8(ascii: ">"),
               let high = hexValue(utf8[index + 3]), let low = hexValue(utf8[index + 4]) {
                bytes.append(high << 4 | low)
                index += 6
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return bytes
    }

    /// The value of a hexadecimal digit (0-9, a-f, A-F).
    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The Unicode scalar of a valid multi-byte UTF-8 sequence starting at `index`, and its length.
    private static func utf8Scalar(in bytes: [UInt8], at index: Int) -> (Unicode.Scalar, Int)? {
        let lead = bytes[index]
        let length = switch lead {
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 0
        }
        guard length > 0, index + length <= bytes.count,
              let string = String(validating: bytes[index..<index + length], as: UTF8.self),
              let scalar = string.unicodeScalars.first
        else { return nil }
        return (scalar, length)
    }
}
