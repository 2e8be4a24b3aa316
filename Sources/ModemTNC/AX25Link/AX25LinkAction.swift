import ModemCodecs

/// What a connected-mode link or station asks its driver to do or tell.
public enum AX25LinkAction: Sendable, Hashable {
    /// Send this frame (bytes without FCS) to the modulator.
    case transmit([UInt8])
    /// A link is up: `incoming` when the peer asked for it.
    case connected(local: AX25Address, remote: AX25Address, incoming: Bool)
    /// Data received on a link, in order.
    case data(local: AX25Address, remote: AX25Address, pid: UInt8, bytes: [UInt8])
    /// A link is down (or a connection attempt failed), and why.
    case disconnected(local: AX25Address, remote: AX25Address, reason: AX25DisconnectReason)
    /// A protocol event worth a log line (the link carries on or recovers by itself).
    case error(local: AX25Address, remote: AX25Address, problem: AX25LinkProblem)
    /// A request was not carried out.
    case refused(local: AX25Address, remote: AX25Address, reason: AX25LinkRefusal)
}

/// Why a link ended.
public enum AX25DisconnectReason: Sendable, Hashable {
    /// This end asked (DISC answered by UA or DM, or the request came while connecting).
    case requested
    /// The peer sent DISC.
    case peerDisconnected
    /// The peer answered the connection request with DM (busy, refused, or nobody listening there).
    case refused
    /// The peer sent DM on a connected link (it has forgotten the link).
    case peerDisconnectedMode
    /// N2 attempts went unanswered (connecting, sending, or disconnecting).
    case retriesExhausted
    /// The peer answered SABM with FRMR: it cannot take a connection.
    case frameReject
}

/// Protocol events, named after the specification's error letters (AX.25 2.2, C4.3).
public enum AX25LinkProblem: Sendable, Hashable {
    /// A: F = 1 received when no poll was outstanding.
    case unexpectedFinal
    /// C: UA received on a connected link.
    case unexpectedUA
    /// D: UA without F = 1.
    case uaWithoutFinal
    /// F: the peer reset the link with SABM(E); unacknowledged data were discarded when `lostData`.
    case linkReset(lostData: Bool)
    /// J: an N(R) outside V(A)...V(S); the link is re-established.
    case sequenceError
    /// K: FRMR received; the link is re-established.
    case frameRejectReceived
    /// O: an I frame longer than 2048 bytes; dropped.
    case informationTooLong
    /// S: an I frame sent as a response; dropped.
    case informationResponse
    /// The peer understood SABME but not XID; the v2.2 defaults stay.
    case xidUnanswered
    /// SABME went unanswered or was refused: falling back to AX.25 2.0 (SABM).
    case fallingBackToV20
}

/// Why a request was not carried out.
public enum AX25LinkRefusal: Sendable, Hashable {
    /// The station already holds ``AX25LinkParameters/maxLinks`` links.
    case tooManyLinks
    /// The link's send buffer would exceed ``AX25LinkParameters/maxQueuedBytes``.
    case queueFull
    /// There is no such link, or it is disconnecting.
    case notConnected
    /// A link between these two calls exists already.
    case alreadyConnected
}
