/// Sliding-window counters per key (pure value; the caller supplies the clock in milliseconds).
///
/// `record` counts an event; `retryAfter` tells, when a key has reached `limit` events in the last
/// `windowMs`, how many seconds until the oldest of them leaves the window.
public struct SlidingWindowLimiter: Sendable {
    public let limit: Int
    public let windowMs: Int64
    /// Keys kept at most (oldest entries dropped past it, so a flood of distinct keys cannot grow memory).
    public let maxKeys: Int
    private var events: [String: [Int64]] = [:]

    public init(limit: Int, windowMs: Int64 = 60_000, maxKeys: Int = 10_000) {
        self.limit = limit
        self.windowMs = windowMs
        self.maxKeys = maxKeys
    }

    /// Seconds to wait when `key` is at its limit now, else nil.
    public mutating func retryAfter(_ key: String, nowMs: Int64) -> Int? {
        guard var list = events[key] else { return nil }
        list.removeAll { $0 <= nowMs - windowMs }
        events[key] = list.isEmpty ? nil : list
        guard list.count >= limit, let oldest = list.first else { return nil }
        let ms = oldest + windowMs - nowMs
        return Int((ms + 999) / 1000)
    }

    /// Counts one event for `key` at `nowMs`.
    public mutating func record(_ key: String, nowMs: Int64) {
        if events[key] == nil && events.count >= maxKeys { prune(nowMs: nowMs) }
        if events[key] == nil && events.count >= maxKeys, let victim = events.keys.first { events[victim] = nil }
        var list = events[key] ?? []
        list.removeAll { $0 <= nowMs - windowMs }
        list.append(nowMs)
        if list.count > limit { list.removeFirst(list.count - limit) }
        events[key] = list
    }

    /// Forgets `key` (e.g. after a success that should clear failures).
    public mutating func reset(_ key: String) { events[key] = nil }

    /// Drops every event older than the window.
    public mutating func prune(nowMs: Int64) {
        for (k, v) in events {
            let kept = v.filter { $0 > nowMs - windowMs }
            events[k] = kept.isEmpty ? nil : kept
        }
    }

    /// How many keys are tracked (for tests of the memory bound).
    public var keyCount: Int { events.count }
}
