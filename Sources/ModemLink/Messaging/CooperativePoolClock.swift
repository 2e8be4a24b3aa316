import Foundation
import ModemLinkTransport
import Synchronization

/// A clock of the time the cooperative pool was free to run an application's tasks: it advances
/// with the wall clock while small probe tasks run promptly, and stands while a probe has waited
/// more than ``stallAllowance`` for a thread (every thread of the pool busy, e.g. synchronous tests
/// side by side on two cores).
///
/// ``LinkLoopbackPair`` counts an application's time to react on it, so an end whose resumed task
/// is still waiting for a thread is waited for, however long the pool is busy, and an end that had
/// the pool and did not react is not waited for longer than the reaction limit. While the pool is
/// busy (``Reading/busy``) the pair does not step at all: an application task that has not started
/// yet (a send about to be queued) is not left behind by channel time.
final class CooperativePoolClock: Sendable {
    /// How long a probe may wait before the pool counts as busy, and the most one reading adds (20 ms).
    static let stallAllowance: UInt64 = 20_000_000
    /// The least wall time between two probes (1 ms).
    static let probeInterval: UInt64 = 1_000_000

    private struct State {
        var elapsed: UInt64 = 0
        var lastReading: UInt64?
        var lastLaunch: UInt64 = 0
        var probeLaunched: UInt64?
    }
    private let state = Mutex(State())

    /// One reading of the clock.
    struct Reading {
        /// The pool time so far in nanoseconds.
        var elapsed: UInt64
        /// How long the probe out now has waited for a thread, when that is more than
        /// ``CooperativePoolClock/stallAllowance`` (the pool is busy); else 0.
        var busyNanoseconds: UInt64
        /// Whether the pool is busy.
        var busy: Bool { busyNanoseconds > 0 }
    }

    /// The pool time so far, and whether the pool is busy now. The wall time since the previous reading counts (up to
    /// ``stallAllowance``, so the runner's stretches of stepping on its own add little) unless a probe
    /// has been waiting longer than the allowance: then the pool is busy and the clock stands. Launches
    /// a probe when none is out and the last was launched ``probeInterval`` ago. Called by the runner's
    /// thread while it waits for the ends.
    func now() -> Reading {
        let wall = wallNanoseconds()
        let (reading, launch) = state.withLock { s -> (Reading, Bool) in
            let waited = s.probeLaunched.map { wall &- $0 } ?? 0
            let stalled = waited > Self.stallAllowance
            if let last = s.lastReading, !stalled { s.elapsed &+= min(wall &- last, Self.stallAllowance) }
            s.lastReading = wall
            let reading = Reading(elapsed: s.elapsed, busyNanoseconds: stalled ? waited : 0)
            guard s.probeLaunched == nil, wall &- s.lastLaunch >= Self.probeInterval else { return (reading, false) }
            s.probeLaunched = wall
            s.lastLaunch = wall
            return (reading, true)
        }
        if launch { Task { self.probeRan() } }
        return reading
    }

    private func probeRan() {
        state.withLock { $0.probeLaunched = nil }
    }
}
