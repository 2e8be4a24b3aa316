import ModemCodecs

/// What a state machine reports to its application (through the driver).
public enum LinkEvent: Sendable, Equatable {
    /// Phone: the handshake ended; `code` is `open`'s result (0, -3 handshake failed, -4 no device).
    case opened(code: Int32, deviceName: String?)
    /// The message `message` was acknowledged by the peer (the Communication API's `onSendOK`).
    case sendOK(message: UInt16)
    /// A whole message arrived: the reply of an exchange, a duplex message, or (device) a request.
    case received(message: UInt16, data: [UInt8])
    /// The exchange carrying `message` ran out of time (the Communication API's `onTimeout`).
    case timeout(message: UInt16)
    /// An error with the Communication API's code (`onError`); 12 and 13 end a cancel.
    case error(CommunicationError, String)
    /// Bytes of the message in transit so far, of `total` (`onProgress`).
    case progress(bytes: Int, total: Int)
    /// Device: the phone cancelled the exchange carrying `message`.
    case cancelled(message: UInt16)
    /// The link was closed (phone: after the close signal; device: on receiving it).
    case closed
}

/// What a state machine asks its driver to do.
public enum LinkAction: Sendable, Equatable {
    /// Send these frames, in order, as one transmission.
    case transmit([LinkFrame])
    /// Tell the application.
    case event(LinkEvent)
    /// Release the audio resources (after close or close-resources).
    case releaseResources
}

/// Counts kept by a state machine: the protocol's view of the channel.
public struct LinkStatistics: Sendable, Hashable {
    /// Frames handed to the driver for sending.
    public var framesSent = 0
    /// Data frames sent again after a missing acknowledgement.
    public var retransmissions = 0
    /// Polls sent for overdue acknowledgements.
    public var polls = 0
    /// Frames received for this end and its session.
    public var framesReceived = 0
    /// Frames repeating data already held or delivered (suppressed).
    public var duplicateFrames = 0
    /// Frames of another session, of a finished exchange, or otherwise out of place (ignored).
    public var staleFrames = 0
    /// Whole messages delivered to the application.
    public var messagesDelivered = 0
    /// Creates zero counts.
    public init() {}
}
