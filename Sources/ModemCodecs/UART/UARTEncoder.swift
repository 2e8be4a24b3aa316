/// Turns a byte into the bits of one asynchronous serial character.
///
/// The encoder is stateless: each call makes one character. The modulator sends the returned
/// ``UARTFraming/bitsBeforeStop`` bits, first-sent bit first, and then holds mark for
/// ``UARTFraming/stopBits`` bit periods.
///
/// ```swift
/// let encoder = UARTEncoder(framing: try UARTFraming(parsing: "7E1"))
/// encoder.encode(0x41)  // 0b0_1000001_0: start 0, data 1000001 (LSB first), even parity 0
/// ```
public struct UARTEncoder: Sendable {
    /// The framing of the characters made.
    public let framing: UARTFraming

    private let dataMask: UInt32
    private let parityShift: UInt32

    /// Creates an encoder for `framing`.
    public init(framing: UARTFraming) {
        self.framing = framing
        self.dataMask = UARTFraming.mask(dataBits: framing.dataBits)
        self.parityShift = UInt32(1 + framing.dataBits)
    }

    /// Bits of the character before the stop bits, first-sent bit in bit 0: start bit (0), data LSB first,
    /// parity. Count is `framing.bitsBeforeStop`. Data bits above `dataBits` are ignored (masked).
    ///
    /// Bits above `framing.bitsBeforeStop` are 0.
    public func encode(_ byte: UInt8) -> UInt32 {
        let data = UInt32(byte) & dataMask
        var bits = data << 1  // bit 0: start bit, space (0)
        if framing.parity.hasParityBit {
            bits |= framing.parity.bit(for: data, dataBits: framing.dataBits) << parityShift
        }
        return bits
    }
}
