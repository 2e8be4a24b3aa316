// The groups' time. Two readings, as the protocol needs them: the timers (heartbeats, sweeps, the
// twin check at start, the bus's flush window and prune) run on a `TimerClock`; heartbeats, last-seen
// and post times are stored as wall-clock Unix milliseconds, the one reading every node of a shared
// database agrees on. Production uses the system's clocks (``GroupClock/system``); a test gives both
// from one manual clock (``GroupClock/init(timers:originMs:)``), so no timer decides by the machine's speed.

import ModemRuntime

/// Wall-clock time in Unix milliseconds (the system's).
enum WallClock {
    static var nowMs: Int64 { Int64(SystemTime.wallNanoseconds() / 1_000_000) }
}

/// Where the groups of one node take their time: the timers' clock and the wall-clock milliseconds stored.
public struct GroupClock: Sendable {
    /// What the heartbeat and sweep loops, the twin check and the bus's window and prune sleep on.
    public let timers: TimerClock
    /// Wall-clock time in Unix milliseconds: what heartbeats, staleness, last-seen and posts compare.
    public let nowMs: @Sendable () -> Int64

    /// The system's clocks: timers on the monotonic clock, milliseconds from the wall clock.
    public static var system: GroupClock { GroupClock(timers: .continuous, nowMs: { WallClock.nowMs }) }

    /// Timers on `timers` and milliseconds from `nowMs` (independent readings).
    public init(timers: TimerClock, nowMs: @escaping @Sendable () -> Int64) {
        self.timers = timers
        self.nowMs = nowMs
    }

    /// Both readings from one clock: the milliseconds are `originMs` plus `timers`' time (a test's
    /// manual clock then moves the timers and the stored times together).
    public init(timers: TimerClock, originMs: Int64) {
        self.init(timers: timers, nowMs: { originMs + Int64((timers.now() * 1000).rounded()) })
    }
}

extension Duration {
    /// The duration in seconds, as a ``TimerClock`` takes it.
    var timerSeconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }
}
