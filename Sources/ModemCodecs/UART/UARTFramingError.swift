/// A framing that cannot be used: data bits outside 5...8, an unknown parity letter, stop bits other
/// than 1, 1.5 or 2, or a framing string that cannot be parsed.
///
/// ``description`` names the offending text or value and says what is wrong, ready to show to a user.
public struct UARTFramingError: Error, CustomStringConvertible, Sendable {
    /// A one-line message naming the offending text or value and what is wrong with it.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
