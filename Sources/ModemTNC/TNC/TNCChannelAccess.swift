/// p-persistent CSMA, as a KISS TNC does it before keying a shared channel (the KISS
/// specification's persistence and slot time; Dire Wolf's algorithm).
///
/// With a frame waiting: while the channel is busy (our receiver hears a carrier), wait; when it is
/// clear, draw a random number 0...255: at most the persistence, transmit; above it, wait one slot
/// time and try again. Full duplex transmits at once. Time is counted in samples of the capture, so
/// a test drives it with no clock.
///
/// A value type with one input method; the driver performs the action it returns:
///
/// ```swift
/// var access = TNCChannelAccess()
/// switch access.decide(now: samplesCaptured, channelBusy: carrier.isBusy, parameters: p,
///                      sampleRate: 44100, using: &rng) {
/// case .transmit: key the transmitter, then call access.reset()
/// case .wait: try again after the next capture block
/// }
/// ```
public struct TNCChannelAccess: Sendable, Hashable {
    /// What the driver should do now.
    public enum Action: Sendable, Hashable {
        /// Start the transmission.
        case transmit
        /// Not now; ask again later (with the next block of audio).
        case wait
    }

    enum State: Sendable, Hashable {
        /// No decision in progress.
        case idle
        /// Waiting for the channel to clear.
        case deferring
        /// Lost the persistence draw: waiting for the slot to end (sample index).
        case backingOff(untilSample: Int)
    }

    private(set) var state = State.idle
    /// Slots waited (persistence draws lost) since creation.
    public private(set) var slotsWaited = 0
    /// Decisions made while the channel was busy, since creation.
    public private(set) var busyDeferrals = 0

    /// Creates the machine, idle.
    public init() {}

    /// Decides whether a waiting frame may go now.
    /// - Parameters:
    ///   - now: the current time, in samples (e.g. samples captured so far).
    ///   - channelBusy: whether the receiver hears a carrier.
    ///   - parameters: persistence, slot time and duplex.
    ///   - sampleRate: samples per second, to convert the slot time.
    ///   - generator: where the persistence draws come from.
    public mutating func decide(now: Int, channelBusy: Bool, parameters: TNCParameters, sampleRate: Int,
                                using generator: inout some RandomNumberGenerator) -> Action {
        if parameters.fullDuplex {
            state = .idle
            return .transmit
        }
        if case .backingOff(let until) = state, now < until { return .wait }
        if channelBusy {
            if state != .deferring { busyDeferrals += 1 }
            state = .deferring
            return .wait
        }
        let draw = Int(UInt8.random(in: 0...255, using: &generator))
        if draw <= parameters.persistence {
            state = .idle
            return .transmit
        }
        slotsWaited += 1
        let slot = Int((parameters.slotTimeMilliseconds / 1000 * Double(sampleRate)).rounded())
        state = .backingOff(untilSample: now + max(1, slot))
        return .wait
    }

    /// Forgets a decision in progress (after a transmission, or when the queue empties).
    public mutating func reset() {
        state = .idle
    }
}
