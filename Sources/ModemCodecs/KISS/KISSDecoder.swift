/// Finds KISS frames in a byte stream that arrives in arbitrary chunks (TCP reads, serial reads).
///
/// A frame is the bytes between two FENDs (0xC0): a command byte, then the payload, with `FESC TFEND`
/// standing for 0xC0 and `FESC TFESC` for 0xDB. Consecutive FENDs (empty frames) are ignored. Nothing is
/// thrown: bytes before the first FEND, frames with a bad escape, an unknown command or a payload longer
/// than ``maximumPayloadLength`` are counted in ``statistics`` and dropped, and decoding goes on at the
/// next FEND, so a client sending garbage cannot disturb the frames that follow.
///
/// ```swift
/// var decoder = KISSDecoder()
/// for chunk in reads {
///     for frame in decoder.decode(chunk) where frame.command == .dataFrame {
///         transmit(frame.payload)
///     }
/// }
/// ```
public struct KISSDecoder: Sendable {
    /// The default ``maximumPayloadLength``: the largest AX.25 frame Dire Wolf handles (addresses,
    /// control, PID and 2048 information bytes), without FCS.
    public static let defaultMaximumPayloadLength = HDLCDecoder.ax25MaximumLength - 2

    /// The longest payload accepted, in bytes (after unescaping, command byte not counted).
    public let maximumPayloadLength: Int

    /// Counts since creation or ``reset()``.
    public private(set) var statistics = KISSDecoderStatistics()

    private enum State: Sendable {
        /// Before the first FEND, or after an error: waiting for a FEND.
        case hunting
        /// After a FEND: collecting a frame (maybe empty so far).
        case collecting
        /// After a FESC inside a frame.
        case escaped
    }

    private var state = State.hunting
    // Unescaped bytes of the frame being collected, command byte first.
    private var buffer: [UInt8] = []

    /// Creates a decoder.
    ///
    /// - Parameter maximumPayloadLength: The longest payload accepted, in bytes, at least 1.
    public init(maximumPayloadLength: Int = KISSDecoder.defaultMaximumPayloadLength) {
        precondition(maximumPayloadLength >= 1, "KISSDecoder maximumPayloadLength must be at least 1, got \(maximumPayloadLength)")
        self.maximumPayloadLength = maximumPayloadLength
    }

    /// Feeds one byte; returns the frame it completed, if any.
    public mutating func decode(_ byte: UInt8) -> KISSFrame? {
        switch state {
        case .hunting:
            if byte == KISSEncoder.fend {
                startFrame()
            } else {
                statistics.garbageBytes += 1
            }
            return nil

        case .collecting:
            switch byte {
            case KISSEncoder.fend:
                let frame = finishFrame()
                startFrame()
                return frame
            case KISSEncoder.fesc:
                state = .escaped
            default:
                append(byte)
            }
            return nil

        case .escaped:
            switch byte {
            case KISSEncoder.tfend:
                state = .collecting
                append(KISSEncoder.fend)
            case KISSEncoder.tfesc:
                state = .collecting
                append(KISSEncoder.fesc)
            case KISSEncoder.fend:
                // The frame ends with a dangling escape: drop it; this FEND opens the next one.
                statistics.badEscapes += 1
                startFrame()
            default:
                statistics.badEscapes += 1
                statistics.garbageBytes += 1
                drop()
            }
            return nil
        }
    }

    /// Feeds a chunk of bytes; returns the frames it completed, in order.
    public mutating func decode(_ bytes: some Sequence<UInt8>) -> [KISSFrame] {
        var frames: [KISSFrame] = []
        for byte in bytes {
            if let frame = decode(byte) {
                frames.append(frame)
            }
        }
        return frames
    }

    /// Forgets any partial frame and the statistics: the state at creation (waiting for a FEND).
    public mutating func reset() {
        state = .hunting
        buffer.removeAll(keepingCapacity: true)
        statistics = KISSDecoderStatistics()
    }

    private mutating func startFrame() {
        state = .collecting
        buffer.removeAll(keepingCapacity: true)
    }

    /// Drops the frame being collected and waits for the next FEND.
    private mutating func drop() {
        state = .hunting
        buffer.removeAll(keepingCapacity: true)
    }

    private mutating func append(_ byte: UInt8) {
        // The command byte plus the payload.
        if buffer.count >= maximumPayloadLength + 1 {
            statistics.oversized += 1
            statistics.garbageBytes += 1
            drop()
            return
        }
        buffer.append(byte)
    }

    /// The frame collected since the last FEND, if it is a valid one.
    private mutating func finishFrame() -> KISSFrame? {
        guard let commandByte = buffer.first else { return nil }
        let command: KISSCommand?
        let port: Int
        if commandByte == 0xFF {
            command = .exitKISS
            port = 0
        } else {
            command = KISSCommand(rawValue: commandByte & 0x0F)
            port = Int(commandByte >> 4)
        }
        guard let command, command != .exitKISS || commandByte == 0xFF else {
            statistics.unknownCommands += 1
            return nil
        }
        statistics.frames += 1
        return KISSFrame(port: port, command: command, payload: Array(buffer.dropFirst()))
    }
}
