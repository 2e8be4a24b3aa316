/// Turns KISS frames into bytes for a KISS stream (a TCP connection like Dire Wolf's port 8001, a
/// serial line).
///
/// Each frame is `FEND (0xC0), command byte, payload, FEND`, where every FEND between the delimiters is
/// sent as `FESC TFEND` (0xDB 0xDC) and every FESC as `FESC TFESC` (0xDB 0xDD); the command byte is
/// escaped too (port 12's data command is 0xC0). Starting each frame with a FEND flushes any noise the
/// receiver had collected, as the KISS specification recommends.
///
/// ```swift
/// KISSEncoder.encode(.data([0xC0, 0x01]))  // [0xC0, 0x00, 0xDB, 0xDC, 0x01, 0xC0]
/// ```
public enum KISSEncoder {
    /// Frame end, the delimiter: 0xC0.
    public static let fend: UInt8 = 0xC0
    /// Frame escape: 0xDB.
    public static let fesc: UInt8 = 0xDB
    /// Transposed frame end, sent after FESC for a 0xC0 in the data: 0xDC.
    public static let tfend: UInt8 = 0xDC
    /// Transposed frame escape, sent after FESC for a 0xDB in the data: 0xDD.
    public static let tfesc: UInt8 = 0xDD

    /// The bytes of one frame, delimiters included.
    public static func encode(_ frame: KISSFrame) -> [UInt8] {
        var bytes: [UInt8] = []
        encode(frame, into: &bytes)
        return bytes
    }

    /// Appends the bytes of one frame, delimiters included, to `bytes`.
    public static func encode(_ frame: KISSFrame, into bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + frame.payload.count + frame.payload.count / 16 + 4)
        bytes.append(fend)
        appendEscaped(frame.commandByte, to: &bytes)
        for byte in frame.payload {
            appendEscaped(byte, to: &bytes)
        }
        bytes.append(fend)
    }

    private static func appendEscaped(_ byte: UInt8, to bytes: inout [UInt8]) {
        switch byte {
        case fend:
            bytes.append(fesc)
            bytes.append(tfend)
        case fesc:
            bytes.append(fesc)
            bytes.append(tfesc)
        default:
            bytes.append(byte)
        }
    }
}
