/// One KISS frame: a port, a command and its payload.
///
/// On the byte stream it is `FEND, port << 4 | command, payload..., FEND`, with FEND and FESC escaped
/// (``KISSEncoder``). The return command (``KISSCommand/exitKISS``) is the single byte 0xFF and has no
/// port: it is encoded as 0xFF whatever ``port`` says, and decoded with port 0.
public struct KISSFrame: Sendable, Hashable {
    /// The TNC port (radio channel), 0...15.
    public var port: Int {
        didSet { precondition((0...15).contains(port), "KISSFrame.port must be 0...15, got \(port)") }
    }

    /// What the frame is.
    public var command: KISSCommand

    /// The bytes after the command byte, unescaped: an AX.25 frame without FCS for
    /// ``KISSCommand/dataFrame``, one parameter byte for TXDELAY, persistence, slot time, TX tail and
    /// full duplex.
    public var payload: [UInt8]

    /// Creates a frame.
    ///
    /// - Parameters:
    ///   - port: 0...15.
    ///   - command: The command.
    ///   - payload: The bytes after the command byte.
    public init(port: Int = 0, command: KISSCommand, payload: [UInt8] = []) {
        precondition((0...15).contains(port), "KISSFrame port must be 0...15, got \(port)")
        self.port = port
        self.command = command
        self.payload = payload
    }

    /// A data frame carrying `frame` (an AX.25 frame without FCS) on `port`.
    public static func data(_ frame: [UInt8], port: Int = 0) -> KISSFrame {
        KISSFrame(port: port, command: .dataFrame, payload: frame)
    }

    /// The command byte: `port << 4 | command`, or 0xFF for ``KISSCommand/exitKISS``.
    public var commandByte: UInt8 {
        command == .exitKISS ? 0xFF : UInt8(port) << 4 | command.rawValue
    }
}
