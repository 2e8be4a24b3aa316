/// The outcome of decoding one received character.
///
/// A parity or stop-bit error is channel damage, not a failure: the byte is still delivered and the
/// flags say whether to trust it.
public struct UARTCharacter: Sendable, Hashable {
    /// The received data bits, the low `dataBits` bits of the byte (higher bits are 0).
    public var byte: UInt8
    /// Whether the received parity bit matched the data; always `true` for ``UARTParity/none``.
    public var parityOK: Bool
    /// Whether the stop bit was mark (1), as it must be; `false` is a framing error.
    public var stopBitOK: Bool

    /// Creates a decoded character.
    public init(byte: UInt8, parityOK: Bool, stopBitOK: Bool) {
        self.byte = byte
        self.parityOK = parityOK
        self.stopBitOK = stopBitOK
    }

    /// Whether both the parity and the stop bit were right.
    public var isValid: Bool { parityOK && stopBitOK }
}
