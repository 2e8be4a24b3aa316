/// The clock a session's timers run on: the handshake timeout, keepalive, silence and the flush
/// limits at close. Real sessions use ``continuous``; a test passes a manual clock (any `Clock` whose
/// durations are `Duration`, such as swift-clocks' `TestClock`) and moves time itself, so no timer of
/// the protocol fires by how busy the machine is.
public struct SessionClock: Sendable {
    /// Seconds since the clock was made.
    let now: @Sendable () -> Double
    /// Suspends for a number of seconds of this clock; throws when the task is cancelled.
    let sleep: @Sendable (Double) async throws -> Void

    /// Timers on `clock`.
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = {
            let d = origin.duration(to: clock.now)
            return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        }
        sleep = { seconds in try await clock.sleep(for: .nanoseconds(Int64((seconds * 1e9).rounded()))) }
    }

    /// The monotonic clock of the system (`ContinuousClock`): what sessions use unless told otherwise.
    public static var continuous: SessionClock { SessionClock(ContinuousClock()) }
}
