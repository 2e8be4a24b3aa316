/// The seam between sessions and the ways bytes travel. A session only ever sees whole frames: a
/// stream transport (TCP, later a hub relay) delimits them itself, a link transport (the channel
/// protocol over audio or RFCOMM) carries one frame per duplex message.
///
/// Receiving is pull-based: a transport reads from its line only when ``receive()`` is waiting, so a
/// peer that sends faster than we consume fills the kernel's buffers, never our memory.
public protocol MessageTransport: Sendable {
    /// What kind of line this is (the session's keepalive defaults and the Noise prologue use it).
    var kind: TransportKind { get }
    /// The largest frame ``send(_:)`` accepts, in bytes.
    var maximumFrameSize: Int { get }
    /// Sends one frame. Returns once the frame is handed to the line (stream: written to the socket;
    /// link: acknowledged by the peer's link layer). Suspends while the line is full (back-pressure).
    func send(_ frame: [UInt8]) async throws(TransportError)
    /// The next input: a frame, a sign of life from the peer, or the end. After `.ended` it keeps
    /// returning `.ended`.
    func receive() async -> TransportInput
    /// Closes the line; a pending ``receive()`` returns `.ended(.localClose)`.
    func close() async
}

/// The kind of line under a session.
extension MessageTransport {
    /// Hands back a frame that ``receive()`` gave and the caller is done with, so the transport may
    /// reuse its storage for a later frame (a session passes each record frame back once it is
    /// opened). Optional: the default does nothing.
    public func recycle(_ frame: [UInt8]) {}
}

public enum TransportKind: UInt8, Sendable, Hashable {
    /// A reliable byte stream: TCP (and later a hub relay).
    case stream = 1
    /// The channel protocol's duplex messages (audio, Bluetooth RFCOMM).
    case link = 2
}

/// One input from a transport.
public enum TransportInput: Sendable, Equatable {
    /// A whole frame from the peer.
    case frame([UInt8])
    /// The link layer heard the peer (an acknowledgement, a fragment) without a whole frame yet:
    /// keepalive counts this as life.
    case peerHeard
    /// The line ended.
    case ended(TransportEnd)
}

/// Why a line ended.
public enum TransportEnd: Sendable, Equatable {
    /// The peer closed its end in order (TCP FIN after a whole frame).
    case peerClosed
    /// The connection was reset or cut off mid-frame (the peer's process died, the kernel closed it).
    case reset
    /// Our side failed (the audio device, a socket error); the text names it.
    case localFailure(String)
    /// ``MessageTransport/close()`` was called here.
    case localClose
    /// The framing was violated (oversized length, bad frame); the text names it.
    case malformed(String)
}

/// Why a transport call failed: sending a frame, dialling, listening or accepting. Callers decide by
/// case (a dial retries on ``connectionRefused(_:)`` alone, say), never by the words; ``description``
/// is the one line a user reads.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing accepts connections at the address (TCP's `ECONNREFUSED`): the peer's listener may not
    /// be started yet. The text names the address and the reason.
    case connectionRefused(String)
    /// No answer from the address within the time allowed. The text names the address.
    case timedOut(String)
    /// The address cannot be used: a name that does not resolve, or an address not of this machine.
    /// The text names the address and the reason.
    case invalidAddress(String)
    /// Another program already listens on the address and port. The text names the address.
    case addressInUse(String)
    /// Not allowed, e.g. a port below 1024 without privileges. The text names the address.
    case permissionDenied(String)
    /// Any other failure of the operating system: its `errno` and the text naming the call, the
    /// address and the reason.
    case io(code: Int32, String)
    /// An empty frame: a frame holds at least one byte (an empty link message is only a sign of life).
    case emptyFrame
    /// A frame larger than the transport carries, in bytes.
    case frameTooLarge(size: Int, maximum: Int)
    /// The channel protocol's handshake found no device (a muted line, nobody listening).
    case noDevice
    /// Something answered the channel protocol's handshake that is not this protocol or version.
    case handshakeFailed
    /// The line ended before the frame was delivered; ``TransportEnd`` says how.
    case ended(TransportEnd)
    /// The end (its device, audio or controller) stopped: a dial or accept waiting ends this way
    /// (with how the line ended), and so does one called after the stop (nil).
    case stopped(TransportEnd?)
    /// Something closed here: the text names it ("the connection", "the listener on HOST:PORT").
    case closed(String)
    /// The wait was cancelled: the text names what waited ("accepting on HOST:PORT").
    case cancelled(String)
    /// A second dial while one is under way on the same end (one at a time).
    case dialUnderWay
    /// A second accept while one is waiting on the same end (one at a time).
    case acceptUnderWay

    /// Whether a dial that failed this way may succeed when it is tried again shortly: only when
    /// nothing listened at the address yet (``connectionRefused(_:)``), as when the peer's
    /// `--listen` is still starting. Every other failure is final.
    public var mayRetryDial: Bool {
        if case .connectionRefused = self { return true }
        return false
    }

    /// The failure in one line, naming the problem.
    public var description: String {
        switch self {
        case .connectionRefused(let text), .timedOut(let text), .invalidAddress(let text), .addressInUse(let text),
             .permissionDenied(let text), .io(_, let text):
            return text
        case .emptyFrame:
            return "a frame is never empty (an empty link message is only a sign of life)"
        case .frameTooLarge(let size, let maximum):
            return "a frame of \(size) bytes is larger than the line's maximum of \(maximum)"
        case .noDevice:
            return "cannot open the link: no device answered"
        case .handshakeFailed:
            return "cannot open the link: the handshake failed (another protocol or version answered)"
        case .ended(let end):
            return "the line has ended: \(Self.words(end))"
        case .stopped(let end?):
            return "the link stopped: \(Self.words(end))"
        case .stopped(nil):
            return "the link has stopped"
        case .closed(let what):
            return "\(what) is closed"
        case .cancelled(let what):
            return "\(what) was cancelled"
        case .dialUnderWay:
            return "a dial is already under way on this link"
        case .acceptUnderWay:
            return "an accept is already waiting on this link"
        }
    }

    /// How a line ended, in words.
    static func words(_ end: TransportEnd) -> String {
        switch end {
        case .peerClosed: "the peer closed it"
        case .reset: "it was reset (the peer's end went away, or a new session replaced it)"
        case .localFailure(let why): why
        case .localClose: "it was closed here"
        case .malformed(let why): "the framing was violated: \(why)"
        }
    }
}
