import ModemCodecs
import ModemDSP

/// How bytes are put on the line: asynchronous UART characters or Baudot.
public enum LineFraming: Sendable, Hashable, CustomStringConvertible {
    /// Start bit, 5...8 data bits, optional parity, stop bits.
    case uart(UARTFraming)
    /// 5-bit Baudot (ITA2 letters, US-TTY figures) in start/5 data/stop characters with the given stop length.
    case baudot(stopBits: Double)

    /// Parses `8N1`, `7E1`, `5N1.5`, ... or `baudot` (1.5 stop bits) / `baudot:2`.
    /// - Throws: ``ModemSettingsError`` naming the text and what is wrong.
    public init(parsing text: String) throws {
        let t = text.lowercased()
        if t == "baudot" || t == "ita2" {
            self = .baudot(stopBits: 1.5)
        } else if t.hasPrefix("baudot:"), let s = Double(t.dropFirst(7)), [1, 1.5, 2].contains(s) {
            self = .baudot(stopBits: s)
        } else {
            do {
                self = .uart(try UARTFraming(parsing: text))
            } catch {
                throw ModemSettingsError("\(error.description); or 'baudot' for 5-bit Baudot")
            }
        }
    }

    /// The character shape the demodulator needs.
    public var shape: AsyncCharacterShape {
        switch self {
        case .uart(let f): return AsyncCharacterShape(bitsBeforeStop: f.bitsBeforeStop, stopBits: f.stopBits)
        case .baudot(let s): return AsyncCharacterShape(bitsBeforeStop: 6, stopBits: s)
        }
    }

    public var description: String {
        switch self {
        case .uart(let f): return f.description
        case .baudot(let s): return s == 1.5 ? "baudot" : "baudot:\(s)"
        }
    }
}
