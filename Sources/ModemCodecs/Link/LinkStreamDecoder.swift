/// Finds ``LinkFrame``s in a byte stream (Bluetooth RFCOMM, TCP): frames written back to back with
/// ``LinkFrame/encode()``, no HDLC flags, stuffing or FCS-16 around them. A link frame is already
/// self-delimiting (the sync word "SM", a length, a CRC-32), so over a reliable byte stream nothing
/// more is needed.
///
/// ``push(_:)`` takes bytes as they arrive, in pieces of any size, and returns the whole frames they
/// complete. The decoder hunts for the sync word, checks the header (version, kind, fragment index
/// and count, length at most ``LinkFrame/maximumPayload``), waits for the whole frame, then checks the
/// CRC-32 with ``LinkFrame/init(decoding:)``. On any failure it drops one byte and hunts again, so
/// junk before or between frames (a peer's garbage, the tail of a frame cut by a reconnect) costs
/// only the damaged frames. It never throws: damage is counted in ``junkBytes`` and ``badFrames``.
///
/// Between calls at most one incomplete frame is kept (fewer than ``LinkFrame/overhead`` +
/// ``LinkFrame/maximumPayload`` bytes). A header that promises more bytes than ever come (junk that
/// happens to look like a header, followed by silence) would hold back the real frames behind it;
/// a driver that knows the stream went quiet calls ``resynchronize()``.
///
/// ```swift
/// var decoder = LinkStreamDecoder()
/// for frame in decoder.push(bytesFromTheSocket) { machine.receive(frame, now: now) }
/// ```
public struct LinkStreamDecoder: Sendable {
    /// The most bytes one frame occupies on the stream.
    public static let maximumFrameLength = LinkFrame.overhead + LinkFrame.maximumPayload

    /// Bytes dropped because they were not part of a good frame: junk while hunting, and every byte
    /// of a rejected candidate (each rejection drops one byte; the rest is hunted through again).
    public private(set) var junkBytes = 0
    /// Candidates with a plausible header that failed once whole (CRC-32, or another check of
    /// ``LinkFrame/init(decoding:)``): frames damaged on the way, or junk that looked like a header.
    public private(set) var badFrames = 0
    /// Good frames returned so far.
    public private(set) var framesDecoded = 0
    /// Why the last bad candidate was rejected.
    public private(set) var lastError: LinkFrameError?

    private var buffer: [UInt8] = []
    /// Index of the first byte not yet consumed in `buffer`.
    private var start = 0

    /// Creates a decoder with an empty buffer.
    public init() {}

    /// Bytes held: the start of a frame (or of a sync word) waiting for the rest.
    public var bufferedBytes: Int { buffer.count - start }

    /// Whether the held bytes start with a plausible header whose frame is not yet complete.
    public var isAwaitingFrame: Bool {
        if case .wait(let n) = candidate(at: start), n > 2 { return true }
        return false
    }

    /// Adds bytes from the stream.
    /// - Returns: the frames completed by them, in order.
    public mutating func push(_ bytes: some Sequence<UInt8>) -> [LinkFrame] {
        buffer.append(contentsOf: bytes)
        return scan()
    }

    /// Gives up the frame being waited for (the stream went quiet in the middle of it): drops its
    /// first byte as junk and hunts through the rest of the held bytes again.
    /// - Returns: frames found in the held bytes.
    public mutating func resynchronize() -> [LinkFrame] {
        guard bufferedBytes > 0 else { return [] }
        start += 1
        junkBytes += 1
        return scan()
    }

    /// Drops everything held (a new connection starts) and keeps the counters.
    public mutating func reset() {
        junkBytes += bufferedBytes
        buffer.removeAll(keepingCapacity: true)
        start = 0
    }

    // MARK: Internals

    private enum Candidate {
        /// A frame of this many bytes starts here and is all present.
        case complete(Int)
        /// This many bytes are needed before anything can be decided.
        case wait(Int)
        /// No frame starts here.
        case reject
    }

    /// What starts at `i`, judged from the bytes present.
    private func candidate(at i: Int) -> Candidate {
        let available = buffer.count - i
        guard available >= 1 else { return .wait(1) }
        guard buffer[i] == LinkFrame.syncWord.0 else { return .reject }
        guard available >= 2 else { return .wait(2) }
        guard buffer[i + 1] == LinkFrame.syncWord.1 else { return .reject }
        guard available >= LinkFrame.headerLength else { return .wait(LinkFrame.headerLength) }
        func u16(_ k: Int) -> Int { Int(buffer[i + k]) << 8 | Int(buffer[i + k + 1]) }
        // The checks LinkFrame(decoding:) makes on the header, made now so junk is not waited for.
        guard buffer[i + 2] >> 4 == LinkFrame.version,
              LinkFrame.Kind(rawValue: buffer[i + 2] & 0x0F) != nil else { return .reject }
        let index = u16(7), count = u16(9), length = u16(11)
        guard count >= 1, index < count, length <= LinkFrame.maximumPayload else { return .reject }
        let total = LinkFrame.overhead + length
        return available >= total ? .complete(total) : .wait(total)
    }

    private mutating func scan() -> [LinkFrame] {
        var frames: [LinkFrame] = []
        hunt: while start < buffer.count {
            switch candidate(at: start) {
            case .wait:
                break hunt
            case .reject:
                // Skip to the next possible sync byte.
                var next = start + 1
                while next < buffer.count && buffer[next] != LinkFrame.syncWord.0 { next += 1 }
                junkBytes += next - start
                start = next
            case .complete(let n):
                do {
                    frames.append(try LinkFrame(decoding: buffer[start ..< start + n]))
                    framesDecoded += 1
                    start += n
                } catch {
                    badFrames += 1
                    lastError = error
                    junkBytes += 1
                    start += 1
                }
            }
        }
        compact()
        return frames
    }

    /// Drops consumed bytes once they are the larger part of the buffer (amortised O(1) per byte).
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 4 * Self.maximumFrameLength)
            start = 0
        } else if start > buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
