/// What an ``AGWDecoder`` has counted.
public struct AGWDecoderStatistics: Sendable, Hashable {
    /// Messages decoded.
    public var frames = 0
    /// Headers whose port was not one Dire Wolf knows (16 or more): read as port 0, as it does.
    public var invalidPorts = 0
    /// Headers whose data length was out of range (more than ``AGWFrame/maximumDataBytes``, or
    /// negative as a signed 32-bit number): the end of the stream, since what follows cannot be found.
    public var oversized = 0

    /// Counts of zero.
    public init() {}
}

/// Reads AGW messages (``AGWFrame``) from a byte stream as it comes, in any pieces.
///
/// Memory is bounded: at most one incomplete message (36 + ``AGWFrame/maximumDataBytes`` bytes) is
/// kept between calls. The stream has no markers to resynchronise on, so a header that announces an
/// impossible length ends it, as in Dire Wolf (which closes such a connection): ``failure`` says why,
/// and every later byte is ignored. A port of 16 or more is read as 0 and counted (Dire Wolf does the
/// same, to keep going).
public struct AGWDecoder: Sendable {
    /// The largest data length accepted (default ``AGWFrame/maximumDataBytes``).
    public let maximumDataBytes: Int
    /// What was counted so far.
    public private(set) var statistics = AGWDecoderStatistics()
    /// Why the stream can no longer be read (nil while it can).
    public private(set) var failure: String?
    private var buffer: [UInt8] = []

    /// A decoder for the start of a stream.
    /// - Parameter maximumDataBytes: the longest data accepted, 0...``AGWFrame/maximumDataBytes``.
    public init(maximumDataBytes: Int = AGWFrame.maximumDataBytes) {
        precondition((0...AGWFrame.maximumDataBytes).contains(maximumDataBytes),
                     "AGWDecoder maximumDataBytes must be 0...\(AGWFrame.maximumDataBytes), got \(maximumDataBytes)")
        self.maximumDataBytes = maximumDataBytes
    }

    /// Bytes of an incomplete message held for the next call.
    public var bufferedBytes: Int { buffer.count }

    /// The messages `bytes` complete, in order.
    public mutating func decode(_ bytes: some Collection<UInt8>) -> [AGWFrame] {
        guard failure == nil else { return [] }
        buffer.append(contentsOf: bytes)
        var frames: [AGWFrame] = []
        var start = 0
        while buffer.count - start >= AGWFrame.headerBytes {
            let length = AGWFrame.u32(buffer[(start + 28)..<(start + 32)])
            guard Int32(bitPattern: length) >= 0, Int(length) <= maximumDataBytes else {
                statistics.oversized += 1
                failure = "an AGW header announces \(Int32(bitPattern: length)) data bytes (0...\(maximumDataBytes) allowed)"
                buffer = []
                return frames
            }
            let end = start + AGWFrame.headerBytes + Int(length)
            guard buffer.count >= end else { break }
            var port = buffer[start]
            if port >= 16 {
                statistics.invalidPorts += 1
                port = 0
            }
            frames.append(AGWFrame(port: port, kindByte: buffer[start + 4], pid: buffer[start + 6],
                                   callFrom: AGWFrame.call(buffer[(start + 8)..<(start + 18)]),
                                   callTo: AGWFrame.call(buffer[(start + 18)..<(start + 28)]),
                                   data: Array(buffer[(start + AGWFrame.headerBytes)..<end]),
                                   userReserved: AGWFrame.u32(buffer[(start + 32)..<(start + 36)])))
            statistics.frames += 1
            start = end
        }
        if start > 0 { buffer.removeFirst(start) }
        return frames
    }
}
