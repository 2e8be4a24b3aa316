/// Why bytes are not an AX.25 frame, or text is not a valid address or TNC2 monitor line.
///
/// ``kind`` says what went wrong, for programs; ``description`` is a one-line message for people that
/// names the offending part (e.g. `source address "ab1cd" has lower-case letters; callsigns are A-Z and
/// 0-9`). A command-line tool adds the line number.
public struct AX25Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of problem.
    public enum Kind: Sendable, Hashable {
        /// Too few bytes for two addresses and a control field.
        case frameTooShort
        /// No address with the end-of-addresses bit, within 10 addresses or before the bytes ran out.
        case addressFieldNotTerminated
        /// More than 8 digipeaters.
        case tooManyDigipeaters
        /// A callsign that is empty, longer than 6 characters, or has characters other than A-Z and 0-9.
        case invalidCallsign
        /// An SSID that is not a number from 0 to 15.
        case invalidSSID
        /// An I or UI frame that ends before its PID byte.
        case missingPID
        /// A monitor line without `>` after the source or without `:` before the information.
        case malformedMonitorLine
    }

    /// What went wrong.
    public var kind: Kind

    /// A one-line message naming the offending part and what is wrong with it.
    public var description: String

    /// Creates an error.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
