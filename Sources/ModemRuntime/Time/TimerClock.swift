/// The clock a protocol's timers run on: a session's handshake timeout, keepalive and silence, the
/// mailbox's time limit, a transit connection's deadlines. Real runs use ``continuous``; a test
/// passes a manual clock (any `Clock` whose durations are `Duration`, such as swift-clocks'
/// `TestClock`) or a ``SimulatedClock`` and moves time itself, so no timer of the protocol fires by
/// how busy the machine is.
///
/// Time is a number of seconds since the clock value was made (a `Double`), so the protocols keep
/// plain arithmetic and any clock type fits behind it.
public struct TimerClock: Sendable {
    /// Seconds since this value was made.
    public let now: @Sendable () -> Double
    /// Suspends for a number of seconds of this clock; throws when the task is cancelled.
    public let sleep: @Sendable (Double) async throws -> Void
    /// Whether this is the system's monotonic clock, so a wait for a socket may hand its time limit
    /// straight to `poll(2)` instead of racing a sleep on the clock (``SocketWaiter/wait(fd:for:until:)``).
    public let isMonotonicSystemClock: Bool

    /// Timers on `clock`.
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = {
            let d = origin.duration(to: clock.now)
            return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        }
        sleep = { seconds in try await clock.sleep(for: .nanoseconds(Int64((max(0, seconds) * 1e9).rounded()))) }
        isMonotonicSystemClock = C.self == ContinuousClock.self
    }

    /// The monotonic clock of the system (`ContinuousClock`): what protocols use unless told otherwise.
    public static var continuous: TimerClock { TimerClock(ContinuousClock()) }

    /// Suspends until this clock reads `seconds` (at once when it already does); throws when the task
    /// is cancelled.
    public func sleep(until seconds: Double) async throws {
        let left = seconds - now()
        if left > 0 { try await sleep(left) }
    }

    /// The point `seconds` from now on this clock.
    public func deadline(after seconds: Double) -> Deadline {
        Deadline(clock: self, at: now() + seconds)
    }
}

/// A point in time on a ``TimerClock``: where a wait gives up.
public struct Deadline: Sendable {
    /// The clock it is on.
    public let clock: TimerClock
    /// The clock's reading (seconds) at which it passes.
    public let at: Double

    /// A deadline at `at` seconds of `clock`.
    public init(clock: TimerClock, at: Double) {
        self.clock = clock
        self.at = at
    }

    /// Seconds left (0 once it has passed).
    public var remaining: Double { max(0, at - clock.now()) }

    /// Whether it has passed.
    public var hasPassed: Bool { clock.now() >= at }

    /// The earlier of this and `other` (which must be on the same clock).
    public func earlier(_ other: Deadline) -> Deadline { other.at < at ? other : self }

    /// Suspends until it passes; throws when the task is cancelled.
    public func sleep() async throws { try await clock.sleep(until: at) }
}
