import ProcessTestSupport

/// A clock that moves only when the test steps it (``advance(by:)``), and that shows who sleeps on it:
/// its state is an ``Observed`` value, so a test waits for the code under test to be asleep (an event,
/// ``waitForSleepers(_:_:)``) before it moves time, and nothing is decided by how busy the machine is.
///
/// Unlike swift-clocks' `TestClock` it tells when a sleep has begun, which the hub's timer tests need:
/// a loop's next step must be asleep on the clock before the clock passes its deadline.
public final class StepClock: Clock, Sendable {
    /// A point of the clock: the time since its start.
    public struct Instant: InstantProtocol, Sendable, Hashable {
        /// Time since the clock's start.
        public var offset: Duration

        /// The point `offset` after the start.
        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    /// What the clock holds: its time, the sleeps in progress and the ones cancelled before they began.
    public struct State: Sendable, CustomStringConvertible {
        /// Time since the start.
        public var now: Duration = .zero
        var sleepers: [UInt64: (deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var cancelledEarly: Set<UInt64> = []
        var nextID: UInt64 = 0

        /// The deadlines of the sleeps in progress, earliest first.
        public var deadlines: [Duration] { sleepers.values.map(\.deadline).sorted() }
        public var description: String { "now \(now), sleeps until \(deadlines)" }
    }

    /// The state; every change (a sleep begun, ended, time moved) wakes whoever waits on it.
    public let state = Observed(State())

    /// A clock at its start, nobody asleep.
    public init() {}

    public var now: Instant { Instant(offset: state.value.now) }
    public var minimumResolution: Duration { .zero }

    /// Time since the start.
    public var elapsed: Duration { state.value.now }

    /// Suspends until the clock has been stepped to `deadline` (at once when it is there already).
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.update { s in defer { s.nextID += 1 }; return s.nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let ended: Result<Void, any Error>? = state.update { s in
                    if s.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if s.now >= deadline.offset { return .success(()) }
                    s.sleepers[id] = (deadline.offset, c)
                    return nil
                }
                if let ended { c.resume(with: ended) }
            }
        } onCancel: {
            let c = state.update { s in
                guard let sleeper = s.sleepers.removeValue(forKey: id) else {
                    s.cancelledEarly.insert(id)
                    return CheckedContinuation<Void, any Error>?.none
                }
                return sleeper.continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration` and wakes every sleep whose deadline it reaches.
    public func advance(by duration: Duration) {
        let due = state.update { s in
            s.now += duration
            let ids = s.sleepers.filter { $0.value.deadline <= s.now }.map(\.key)
            return ids.compactMap { s.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for c in due { c.resume() }
    }

    /// Waits until exactly `count` sleeps are in progress (the code under test is waiting on the clock);
    /// throws ``WaitFailed`` naming `what` after the hang guard.
    public func waitForSleepers(_ count: Int, _ what: String) async throws(WaitFailed) {
        try await state.wait(for: what) { $0.sleepers.count == count }
    }
}
