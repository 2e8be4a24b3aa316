#if canImport(Glibc)
import Glibc
#endif

/// The machine's clocks, read in one place: the monotonic clock (`CLOCK_MONOTONIC`: intervals,
/// deadlines, progress) and the wall clock (`CLOCK_REALTIME`: timestamps that leave the process,
/// such as pcap records and database rows).
///
/// Protocol timers do not read these: they are given a `Clock` (or the time as an argument), so
/// tests drive them with a test clock. These are for the drivers at the edge (the event loop's
/// deadlines, a driver thread's seconds, progress lines) and for timestamps.
public enum SystemTime {
    /// Nanoseconds of the monotonic clock (from an arbitrary origin, never going back).
    public static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Seconds of the monotonic clock (from an arbitrary origin).
    public static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Nanoseconds since the Unix epoch on the wall clock (which may jump).
    public static func wallNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(max(0, ts.tv_sec)) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// The wall clock as whole seconds and microseconds since the Unix epoch (pcap's record stamps).
    public static func wallSecondsAndMicroseconds() -> (seconds: UInt64, microseconds: UInt32) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (UInt64(max(0, ts.tv_sec)), UInt32(ts.tv_nsec / 1000))
    }
}

/// Seconds since it was started, on the monotonic clock: a driver's "now" (a host stack's, a
/// serial bridge's), which its machines are given as an argument.
public struct Stopwatch: Sendable {
    private let origin: UInt64

    /// A stopwatch started now.
    public init() { origin = SystemTime.monotonicNanoseconds() }

    /// Seconds since ``init()``.
    public var seconds: Double { Double(SystemTime.monotonicNanoseconds() &- origin) / 1e9 }
}
