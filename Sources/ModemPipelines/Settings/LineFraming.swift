import ModemCodecs
import ModemDSP

/// How bytes are put on the line: asynchronous UART characters or Baudot.
public enum LineFraming: Sendable, Hashable, CustomStringConvertible {
    /// Start bit, 5...8 data bits, optional parity, stop bits.
    case uart(UARTFraming)
    /// 5-bit Baudot (ITA2 letters, US-TTY figures) in start/5 data/stop characters with the given stop length.
    case baudot(stopBits: Double)
    /// Synchronous HDLC with NRZI and bit stuffing carrying AX.25 frames (packet radio).
    case ax25

    /// Parses `8N1`, `7E1`, `5N1.5`, ..., `baudot` (1.5 stop bits) / `baudot:2`, or `ax25`.
    /// - Throws: ``ModemSettingsError`` naming the text and what is wrong.
    public init(parsing text: String) throws {
        let t = text.lowercased()
        if t == "ax25" || t == "hdlc" {
            self = .ax25
        } else if t == "baudot" || t == "ita2" {
            self = .baudot(stopBits: 1.5)
        } else if t.hasPrefix("baudot:"), let s = Double(t.dropFirst(7)), [1, 1.5, 2].contains(s) {
            self = .baudot(stopBits: s)
        } else {
            do {
                self = .uart(try UARTFraming(parsing: text))
            } catch {
                throw ModemSettingsError("\(error.description); or 'baudot' for 5-bit Baudot, or 'ax25' for packet radio")
            }
        }
    }

    /// Whether this is an asynchronous (start/stop character) framing.
    public var isAsynchronous: Bool {
        if case .ax25 = self { return false }
        return true
    }

    /// The character shape the asynchronous demodulator needs (8N1's for ``ax25``, which has none:
    /// check ``isAsynchronous`` first).
    public var shape: AsyncCharacterShape {
        switch self {
        case .uart(let f): return AsyncCharacterShape(bitsBeforeStop: f.bitsBeforeStop, stopBits: f.stopBits)
        case .baudot(let s): return AsyncCharacterShape(bitsBeforeStop: 6, stopBits: s)
        case .ax25: return AsyncCharacterShape(bitsBeforeStop: 9, stopBits: 1)
        }
    }

    public var description: String {
        switch self {
        case .uart(let f): return f.description
        case .baudot(let s): return s == 1.5 ? "baudot" : "baudot:\(s)"
        case .ax25: return "ax25"
        }
    }
}
