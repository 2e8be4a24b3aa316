/// One DLC of an ``RFCOMMSession``: its state, negotiated frame size, credits and send queue.
struct RFCOMMDataLink: Sendable {
    /// Where the DLC is in its life (RFCOMM §5.2, 07.10 §5.4).
    enum State: Sendable, Equatable {
        /// `open` was called before DLCI 0 was up; PN goes out when it is.
        case waitingForSession
        /// Our PN was sent at `since`; waiting for its answer (T2).
        case negotiating(since: Double)
        /// The peer's PN was answered; waiting for its SABM.
        case negotiated
        /// Our SABM was sent at `since`; waiting for UA or DM (T1).
        case connecting(since: Double)
        /// UA exchanged at `since`; data flows, the MSC exchange is under way (T2).
        case connected(since: Double)
        /// UA and both MSCs done; the user was told.
        case open
        /// Our DISC was sent at `since` (T1); `reason` goes to the user with the closing.
        case disconnecting(since: Double, reason: String)
    }

    /// The DLCI.
    let dlci: UInt8
    /// True when we asked for it (`open`), false when the peer opened it.
    let outgoing: Bool
    /// Where it is.
    var state: State
    /// N1, the largest information field either side sends.
    var frameSize: Int
    /// Credit-based flow control is in use on it.
    var creditBased = false
    /// Credits we hold: data frames we may still send.
    var sendCredits = 0
    /// Credits the peer holds: data frames it may still send us.
    var peerCredits = 0
    /// How many credits the peer should hold (topped up at half).
    var creditTarget = 0
    /// The peer answered our MSC.
    var mscAnswered = false
    /// The peer sent its MSC.
    var mscSeen = false
    /// Without credits: the peer's MSC said FC (it cannot receive).
    var peerFlowStopped = false
    /// The user heard `.channelOpened` for it (so it hears `.channelClosed` too).
    var announced = false
    /// Bytes waiting for credits or for the DLC to connect.
    var queue = RFCOMMByteQueue()
    /// Data that arrived before the DLC was open, delivered with `.channelOpened`.
    var heldReceived: [[UInt8]] = []
    /// Since when data has waited with no credits (for the credit timeout).
    var starvedSince: Double?

    /// True once UA is exchanged (data may flow) and until DISC.
    var isConnected: Bool {
        switch state {
        case .connected, .open: return true
        default: return false
        }
    }

    /// Whether the user should hear about its closing: they asked for it or were told it opened.
    var userKnows: Bool { outgoing || announced }

    /// The credits to grant now: when the peer's credits fell to half of the target, enough to reach it.
    var grantDue: Int {
        guard creditBased, isConnected, creditTarget > 0, peerCredits <= creditTarget / 2 else { return 0 }
        return min(255, creditTarget - peerCredits)
    }
}

/// A byte FIFO that takes from the front without moving the rest every time.
struct RFCOMMByteQueue: Sendable {
    private var storage: [UInt8] = []
    private var head = 0

    /// Bytes queued.
    var count: Int { storage.count - head }
    /// Nothing queued.
    var isEmpty: Bool { count == 0 }

    /// Adds bytes at the back.
    mutating func append(_ bytes: [UInt8]) { storage.append(contentsOf: bytes) }

    /// Takes up to `limit` bytes from the front.
    mutating func take(_ limit: Int) -> [UInt8] {
        let n = min(limit, count)
        let out = Array(storage[head..<head + n])
        head += n
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 65536, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return out
    }

    /// Drops everything.
    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
