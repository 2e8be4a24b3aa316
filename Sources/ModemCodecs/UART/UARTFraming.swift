/// Asynchronous serial framing: one start bit (space, 0), 5...8 data bits LSB first, optional parity bit,
/// 1, 1.5 or 2 stop bits (mark, 1).
///
/// All lengths are in bit periods (one bit period is `1 / baudRate` seconds). The usual short form is
/// data bits, parity letter and stop bits: `"8N1"`, `"7E1"`, `"5N1.5"` (RTTY), `"5N2"` (TDD).
///
/// ```swift
/// let framing = try UARTFraming(parsing: "7e1")
/// framing.bitsBeforeStop   // 9: start + 7 data + parity
/// framing.characterLength  // 10.0 bit periods
/// framing.description      // "7E1"
/// ```
///
/// Values are checked when created; assigning an out-of-range value to a property afterwards is a
/// programming error and traps.
public struct UARTFraming: Sendable, Hashable, CustomStringConvertible {
    /// The valid numbers of data bits.
    static let validDataBits: ClosedRange<Int> = 5...8
    /// The valid numbers of stop bits, in bit periods.
    static let validStopBits: [Double] = [1, 1.5, 2]

    /// Number of data bits per character, 5...8, sent least significant bit first.
    public var dataBits: Int {
        didSet {
            precondition(Self.validDataBits.contains(dataBits), "UARTFraming.dataBits must be 5...8, got \(dataBits)")
        }
    }

    /// The parity bit sent after the data bits, if any.
    public var parity: UARTParity

    /// Length of the stop (mark) period in bit periods: 1, 1.5 or 2.
    public var stopBits: Double {
        didSet {
            precondition(Self.validStopBits.contains(stopBits), "UARTFraming.stopBits must be 1, 1.5 or 2, got \(stopBits)")
        }
    }

    /// Creates a framing after checking its parameters.
    ///
    /// - Parameters:
    ///   - dataBits: Data bits per character, 5...8.
    ///   - parity: The parity bit, if any.
    ///   - stopBits: Stop period in bit periods: 1, 1.5 or 2.
    /// - Throws: ``UARTFramingError`` if `dataBits` or `stopBits` is out of range.
    public init(dataBits: Int = 8, parity: UARTParity = .none, stopBits: Double = 1) throws(UARTFramingError) {
        if let problem = Self.dataBitsProblem(dataBits) {
            throw UARTFramingError("invalid UART framing: \(problem)")
        }
        if let problem = Self.stopBitsProblem(stopBits) {
            throw UARTFramingError("invalid UART framing: \(problem)")
        }
        self.init(checkedDataBits: dataBits, parity: parity, stopBits: stopBits)
    }

    /// Creates a framing from its short form, such as `"8N1"`, `"7E1"`, `"8N2"` or `"5N1.5"`.
    ///
    /// The form is the number of data bits (5...8), a parity letter (`N`one, `E`ven, `O`dd, `M`ark or
    /// `S`pace) and the number of stop bits (1, 1.5 or 2). Letters are case-insensitive and surrounding
    /// whitespace is ignored.
    ///
    /// - Throws: ``UARTFramingError`` whose description quotes `text` and says which part is wrong.
    public init(parsing text: String) throws(UARTFramingError) {
        func failure(_ problem: String) -> UARTFramingError {
            UARTFramingError("invalid UART framing \"\(text)\": \(problem)")
        }
        let trimmed = Substring(text).drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
        let body = String(trimmed).uppercased()
        if body.isEmpty {
            throw failure("empty; expected data bits (5...8), parity (N, E, O, M or S) and stop bits (1, 1.5 or 2), e.g. \"8N1\"")
        }

        let digits = body.prefix(while: { $0.isASCII && $0.isNumber })
        if digits.isEmpty {
            throw failure("missing data bits; expected a number 5...8 first, e.g. \"8N1\"")
        }
        guard let dataBits = Int(digits), Self.validDataBits.contains(dataBits) else {
            throw failure("data bits must be 5...8, got \(digits)")
        }

        let afterDigits = body.dropFirst(digits.count)
        guard let parityLetter = afterDigits.first else {
            throw failure("missing parity; expected N, E, O, M or S after the data bits, e.g. \"\(dataBits)N1\"")
        }
        guard let parity = UARTParity(rawValue: String(parityLetter)) else {
            throw failure("unknown parity \"\(parityLetter)\"; expected N, E, O, M or S")
        }

        let stopText = afterDigits.dropFirst()
        if stopText.isEmpty {
            throw failure("missing stop bits; expected 1, 1.5 or 2 after the parity, e.g. \"\(dataBits)\(parity.rawValue)1\"")
        }
        guard stopText.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let stopBits = Double(String(stopText)), Self.validStopBits.contains(stopBits)
        else {
            throw failure("stop bits must be 1, 1.5 or 2, got \"\(stopText)\"")
        }
        self.init(checkedDataBits: dataBits, parity: parity, stopBits: stopBits)
    }

    /// Creates a framing whose parameters the caller has already checked.
    init(checkedDataBits dataBits: Int, parity: UARTParity, stopBits: Double) {
        self.dataBits = dataBits
        self.parity = parity
        self.stopBits = stopBits
    }

    /// 8 data bits, no parity, 1 stop bit: the common framing of Bell 103, Bell 202 and V.21 links.
    public static let default8N1 = UARTFraming(checkedDataBits: 8, parity: .none, stopBits: 1)

    /// Bits before the stop bits: start + data + parity (e.g. 9 for 8N1, 9 for 7E1, 6 for 5N1.5).
    public var bitsBeforeStop: Int {
        1 + dataBits + (parity.hasParityBit ? 1 : 0)
    }

    /// Duration of one character in bit periods (e.g. 10 for 8N1, 7.5 for 5N1.5, 12 for 8E2).
    public var characterLength: Double {
        Double(bitsBeforeStop) + stopBits
    }

    /// The short form: data bits, parity letter, stop bits, e.g. `"8N1"`, `"7E1"`, `"5N1.5"`.
    public var description: String {
        let stop = stopBits == stopBits.rounded() ? String(Int(stopBits)) : String(stopBits)
        return "\(dataBits)\(parity.rawValue)\(stop)"
    }

    /// A mask with the low `dataBits` bits set.
    static func mask(dataBits: Int) -> UInt32 {
        (1 << UInt32(dataBits)) - 1
    }

    private static func dataBitsProblem(_ dataBits: Int) -> String? {
        validDataBits.contains(dataBits) ? nil : "data bits must be 5...8, got \(dataBits)"
    }

    private static func stopBitsProblem(_ stopBits: Double) -> String? {
        validStopBits.contains(stopBits) ? nil : "stop bits must be 1, 1.5 or 2, got \(stopBits)"
    }
}
