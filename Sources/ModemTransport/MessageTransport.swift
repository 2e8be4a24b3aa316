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

/// A failure to send on a transport.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed, in words.
    public let description: String
    /// Creates an error with its description.
    public init(_ description: String) { self.description = description }
}
