/// Finds HDLC frames in a stream of received bits: flag detection, bit de-stuffing, abort handling, length
/// limits and the FCS check.
///
/// Input is one `Bool` per bit (`true` = 1) *after* NRZI decoding (see ``NRZIDecoder``), in any pieces:
/// one bit at a time from a demodulator, or a whole array. Output is what the bits completed: a frame with
/// a good FCS (``HDLCDecoderOutput/frame(_:)``) or, if ``reportsCandidates``, a damaged frame that a
/// caller may try to repair (``HDLCDecoderOutput/damaged(_:)``). Nothing is thrown: damage is counted in
/// ``statistics``.
///
/// The rules:
/// - A flag is `01111110`. Before the first flag, bits are ignored. The bits between two flags are a
///   frame; several flags in a row (idle, preamble) and flags sharing their zero are fine.
/// - Inside a frame, a 0 that follows five 1s is a stuffing bit and is removed.
/// - Seven or more 1s in a row abort the frame (counted in ``HDLCDecoderStatistics/aborts`` when it held
///   at least 8 bits) and the decoder waits for the next flag; a long run of 1s (mark idle) is quiet.
/// - A frame must be a whole number of bytes, ``minimumLength`` to ``maximumLength`` bytes long with
///   its two FCS bytes, and pass ``CRC16X25/isValidFrame(_:)``.
///
/// ```swift
/// var nrzi = NRZIDecoder()
/// var hdlc = HDLCDecoder()
/// for level in demodulatedLevels {
///     if case .frame(let frame)? = hdlc.decode(nrzi.decode(level)) {
///         print(try AX25Frame(decoding: frame.bytes))
///     }
/// }
/// ```
public struct HDLCDecoder: Sendable {
    /// The smallest AX.25 frame in bytes, FCS included: two addresses (14), control (1), FCS (2).
    public static let ax25MinimumLength = 17

    /// The largest frame Dire Wolf accepts, FCS included: ten addresses (70), control (2), PID (1),
    /// 2048 information bytes, FCS (2). AX.25 2.2's default N1 of 256 information bytes gives 331.
    public static let ax25MaximumLength = 2123

    /// The smallest frame accepted, in bytes including the two FCS bytes (at least 3).
    public let minimumLength: Int

    /// The largest frame accepted, in bytes including the two FCS bytes (at least ``minimumLength``).
    public let maximumLength: Int

    /// Whether damaged frames (CRC failures, misaligned) are returned as ``HDLCDecoderOutput/damaged(_:)``
    /// for repair (`true`), or only counted (`false`, cheaper).
    public var reportsCandidates: Bool

    /// Counts of frames and damage since creation or ``reset()``.
    public private(set) var statistics = HDLCDecoderStatistics()

    /// The number of bits fed since creation or ``reset()``: the index the next bit will have.
    public private(set) var bitIndex = 0

    // Whether a flag has been seen and bits are being collected.
    private var collecting = false
    // Consecutive 1s just received (counting stops being useful past 7).
    private var ones = 0
    // Received (stuffed) bits since the opening flag.
    private var raw: [Bool] = []
    // `raw.count` and the number of data bits just before the last 0 arrived: where a frame ends when that
    // 0 turns out to start the closing flag.
    private var rawCountBeforeZero = 0
    private var dataBitsBeforeZero = 0
    // De-stuffed bits: whole bytes, and the bits of the byte being filled (LSB first).
    private var bytes: [UInt8] = []
    private var partial: UInt8 = 0
    private var partialCount = 0
    // Bit index of the first bit after the opening flag.
    private var frameStartIndex = 0

    /// Creates a decoder.
    ///
    /// - Parameters:
    ///   - minimumLength: Smallest frame in bytes including the FCS; at least 3. Default: AX.25's 17.
    ///   - maximumLength: Largest frame in bytes including the FCS; at least `minimumLength`. Default:
    ///     ``ax25MaximumLength``.
    ///   - reportsCandidates: Whether damaged frames are returned for repair.
    public init(
        minimumLength: Int = HDLCDecoder.ax25MinimumLength,
        maximumLength: Int = HDLCDecoder.ax25MaximumLength,
        reportsCandidates: Bool = true
    ) {
        precondition(minimumLength >= 3, "HDLCDecoder minimumLength must be at least 3 bytes, got \(minimumLength)")
        precondition(
            maximumLength >= minimumLength,
            "HDLCDecoder maximumLength (\(maximumLength)) must be at least minimumLength (\(minimumLength))"
        )
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
        self.reportsCandidates = reportsCandidates
        raw.reserveCapacity(1024)
        bytes.reserveCapacity(256)
    }

    /// Feeds one received bit (`true` = 1); returns the frame or damaged frame that it completed, if any.
    public mutating func decode(_ bit: Bool) -> HDLCDecoderOutput? {
        let index = bitIndex
        bitIndex += 1
        if bit {
            ones += 1
            guard collecting else { return nil }
            if ones >= 7 {
                // Abort: the content before the run of 1s (six of which were already collected).
                if raw.count - 6 >= 8 {
                    statistics.aborts += 1
                }
                stopCollecting()
                return nil
            }
            raw.append(true)
            appendData(true)
            if bytes.count > maximumLength + 1 {
                // Even the bits of a closing flag now in the buffer would leave too many bytes.
                statistics.tooLong += 1
                stopCollecting()
            }
            return nil
        }

        defer { ones = 0 }
        if ones == 6 {
            // The closing flag of this frame, and the opening flag of the next.
            let output = collecting ? finishFrame(endIndex: index + 1) : nil
            startCollecting(at: index + 1)
            return output
        }
        if collecting {
            rawCountBeforeZero = raw.count
            dataBitsBeforeZero = bytes.count * 8 + partialCount
            raw.append(false)
            if ones != 5 {
                appendData(false)
                if bytes.count > maximumLength + 1 {
                    statistics.tooLong += 1
                    stopCollecting()
                }
            }
        }
        return nil
    }

    /// Feeds received bits in order; returns what they completed, in order.
    public mutating func decode(_ bits: some Sequence<Bool>) -> [HDLCDecoderOutput] {
        var outputs: [HDLCDecoderOutput] = []
        for bit in bits {
            if let output = decode(bit) {
                outputs.append(output)
            }
        }
        return outputs
    }

    /// Forgets the frame in progress, the bit count and the statistics: the state at creation.
    public mutating func reset() {
        stopCollecting()
        ones = 0
        bitIndex = 0
        statistics = HDLCDecoderStatistics()
    }

    private mutating func appendData(_ bit: Bool) {
        if bit {
            partial |= 1 << partialCount
        }
        partialCount += 1
        if partialCount == 8 {
            bytes.append(partial)
            partial = 0
            partialCount = 0
        }
    }

    private mutating func startCollecting(at index: Int) {
        clearBuffers()
        collecting = true
        frameStartIndex = index
    }

    private mutating func stopCollecting() {
        clearBuffers()
        collecting = false
    }

    private mutating func clearBuffers() {
        raw.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        partial = 0
        partialCount = 0
        rawCountBeforeZero = 0
        dataBitsBeforeZero = 0
    }

    /// Judges the bits collected before the closing flag.
    private mutating func finishFrame(endIndex: Int) -> HDLCDecoderOutput? {
        let dataBits = dataBitsBeforeZero
        guard dataBits >= 8 else { return nil }
        let byteCount = dataBits / 8
        if dataBits % 8 == 0 {
            if byteCount < minimumLength {
                statistics.tooShort += 1
                return nil
            }
            if byteCount > maximumLength {
                statistics.tooLong += 1
                return nil
            }
            let frameBytes = bytes[0..<byteCount]
            if CRC16X25.isValidFrame(frameBytes) {
                statistics.frames += 1
                let fcs = UInt16(frameBytes[byteCount - 2]) | UInt16(frameBytes[byteCount - 1]) << 8
                return .frame(HDLCFrame(
                    bytes: Array(frameBytes.dropLast(2)), fcs: fcs,
                    startBitIndex: frameStartIndex, endBitIndex: endIndex
                ))
            }
            statistics.crcFailures += 1
        } else {
            if byteCount + 1 < minimumLength {
                statistics.tooShort += 1
                return nil
            }
            if byteCount > maximumLength {
                statistics.tooLong += 1
                return nil
            }
            statistics.misaligned += 1
        }
        guard reportsCandidates else { return nil }
        return .damaged(HDLCFrameCandidate(
            rawBits: Array(raw[0..<rawCountBeforeZero]),
            startBitIndex: frameStartIndex, endBitIndex: endIndex,
            minimumLength: minimumLength, maximumLength: maximumLength
        ))
    }
}
