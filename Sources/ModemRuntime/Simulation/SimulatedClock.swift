import Synchronization

/// The clock of a ``Simulation``: `now` is its virtual time; a sleep is an event of the simulation,
/// so it ends when the simulation reaches its deadline (at once in wall time when nothing else is
/// due earlier). Give it wherever a protocol takes a `Clock` to run that protocol in a simulation.
public struct SimulatedClock: Clock, Sendable {
    /// A point of virtual time.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// Nanoseconds since the simulation's start.
        public var nanoseconds: Int64

        /// The instant `nanoseconds` after the start.
        public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

        public func advanced(by duration: Duration) -> Instant {
            Instant(nanoseconds: nanoseconds &+ duration.nanosecondsClamped)
        }

        public func duration(to other: Instant) -> Duration {
            .nanoseconds(other.nanoseconds &- nanoseconds)
        }

        public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    }

    let simulation: Simulation

    /// Virtual time now.
    public var now: Instant { Instant(nanoseconds: simulation.nanoseconds) }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until the simulation reaches `deadline`.
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let slot = Mutex<(continuation: CheckedContinuation<Void, any Error>?, token: UInt64?, cancelled: Bool)>((nil, nil, false))
        let simulation = self.simulation
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let cancelled = slot.withLock { s -> Bool in
                    if s.cancelled { return true }
                    s.continuation = c
                    return false
                }
                if cancelled { return c.resume(throwing: CancellationError()) }
                let token = simulation.schedule(at: deadline.nanoseconds) {
                    slot.withLock { s in defer { s.continuation = nil }; return s.continuation }?.resume()
                }
                slot.withLock { $0.token = token }
            }
        } onCancel: {
            let (c, token) = slot.withLock { s in
                s.cancelled = true
                defer { s.continuation = nil }
                return (s.continuation, s.token)
            }
            if let token { simulation.cancel(token) }
            c?.resume(throwing: CancellationError())
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `Int64`.
    var nanosecondsClamped: Int64 {
        let (s, a) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return s < 0 ? .min : .max }
        return ns &+ a / 1_000_000_000
    }
}
