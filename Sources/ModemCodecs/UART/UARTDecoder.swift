/// Checks the bits of one received character.
///
/// The demodulator finds the start bit, samples the data, parity and stop bits in the middle of their
/// bit periods and hands them over; the decoder extracts the byte and checks parity and stop bit. It is
/// stateless: every call decodes one character.
///
/// ```swift
/// let decoder = UARTDecoder(framing: try UARTFraming(parsing: "7O1"))
/// decoder.decode(dataAndParity: 0b1_1000001, stopBit: true)
/// // UARTCharacter(byte: 0x41, parityOK: true, stopBitOK: true)
/// ```
public struct UARTDecoder: Sendable {
    /// The framing of the characters checked.
    public let framing: UARTFraming

    private let dataMask: UInt32

    /// Creates a decoder for `framing`.
    public init(framing: UARTFraming) {
        self.framing = framing
        self.dataMask = UARTFraming.mask(dataBits: framing.dataBits)
    }

    /// Decodes one character.
    ///
    /// - Parameters:
    ///   - dataAndParity: Data bits LSB first in bit 0..., followed by the parity bit (if any); start bit
    ///     NOT included. Bits above the data and parity bits are ignored.
    ///   - stopBit: The level seen in the stop bit (`true` = mark, 1, as it should be).
    public func decode(dataAndParity: UInt32, stopBit: Bool) -> UARTCharacter {
        let data = dataAndParity & dataMask
        var parityOK = true
        if framing.parity.hasParityBit {
            let received = (dataAndParity >> UInt32(framing.dataBits)) & 1
            parityOK = received == framing.parity.bit(for: data, dataBits: framing.dataBits)
        }
        return UARTCharacter(byte: UInt8(truncatingIfNeeded: data), parityOK: parityOK, stopBitOK: stopBit)
    }

    /// Parity bit for a data value under this framing (mark=1, space=0, even/odd over `dataBits` bits).
    ///
    /// Bits of `data` above `dataBits` are ignored. Returns 0 for ``UARTParity/none``, where no parity bit
    /// is sent.
    public func parityBit(for data: UInt32) -> UInt32 {
        framing.parity.bit(for: data, dataBits: framing.dataBits)
    }
}
