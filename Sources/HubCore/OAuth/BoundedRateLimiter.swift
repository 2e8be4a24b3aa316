/// Sliding-window counters per key, in bounded memory, that never forgive a key at its limit.
///
/// A pure value on a clock the caller supplies (Unix milliseconds). `admit` counts an event for a key
/// unless the key already had `limit` events in the last `windowMs`; then it answers the seconds until
/// the oldest of them leaves the window (for `Retry-After`) and counts nothing.
///
/// At most `maxKeys` keys are kept. When a new key finds the table full, keys whose events have all left
/// the window go first; then the least recently active key that is *below* its limit (it loses at most
/// `limit - 1` events of history). A key at its limit is never dropped: when every kept key is at its
/// limit, the new key is refused until the first of them expires. Nothing is reset by asking again, and
/// a flood of new keys cannot clear the table.
public struct BoundedRateLimiter: Sendable {
    /// Events allowed per key per window.
    public let limit: Int
    /// The window in milliseconds.
    public let windowMs: Int64
    /// Keys kept at most.
    public let maxKeys: Int
    private var events: [String: [Int64]] = [:]

    /// - Parameters:
    ///   - limit: events per key per window (at least 1).
    ///   - windowMs: the window (at least 1 ms).
    ///   - maxKeys: keys kept at most (at least 1).
    public init(limit: Int, windowMs: Int64, maxKeys: Int = 100_000) {
        self.limit = max(1, limit)
        self.windowMs = max(1, windowMs)
        self.maxKeys = max(1, maxKeys)
    }

    /// Seconds to wait (at least 1) when `key` is at its limit at `nowMs`, else nil. Counts nothing.
    public func retryAfter(_ key: String, nowMs: Int64) -> Int? {
        guard let list = events[key] else { return nil }
        let live = list.drop { $0 <= nowMs - windowMs }
        guard live.count >= limit, let oldest = live.first else { return nil }
        return Self.seconds(oldest + windowMs - nowMs)
    }

    /// Counts one event for `key` at `nowMs` and answers nil, or answers the seconds to wait when the key
    /// is at its limit (or the table is full of keys at their limits) and counts nothing.
    public mutating func admit(_ key: String, nowMs: Int64) -> Int? {
        if let wait = retryAfter(key, nowMs: nowMs) { return wait }
        if events[key] == nil && events.count >= maxKeys, let wait = makeRoom(nowMs: nowMs) { return wait }
        var list = events[key] ?? []
        list.removeAll { $0 <= nowMs - windowMs }
        list.append(nowMs)
        if list.count > limit { list.removeFirst(list.count - limit) }
        events[key] = list
        return nil
    }

    /// Counts one event for `key` at `nowMs` whether or not it is at its limit (a failure that already
    /// happened); a full table makes room as `admit` does, and drops the event only when it cannot.
    public mutating func record(_ key: String, nowMs: Int64) {
        if events[key] == nil && events.count >= maxKeys, makeRoom(nowMs: nowMs) != nil { return }
        var list = events[key] ?? []
        list.removeAll { $0 <= nowMs - windowMs }
        list.append(nowMs)
        if list.count > limit { list.removeFirst(list.count - limit) }
        events[key] = list
    }

    /// Drops every key whose events have all left the window.
    public mutating func prune(nowMs: Int64) {
        let cut = nowMs - windowMs
        events = events.filter { ($0.value.last ?? .min) > cut }
    }

    /// How many keys are kept (for tests of the memory bound).
    public var keyCount: Int { events.count }

    /// Frees one slot, or answers the seconds until one frees when every kept key is at its limit.
    private mutating func makeRoom(nowMs: Int64) -> Int? {
        prune(nowMs: nowMs)
        if events.count < maxKeys { return nil }
        let cut = nowMs - windowMs
        var victim: (key: String, last: Int64)?
        var soonest = Int64.max
        for (k, v) in events {
            let live = v.drop { $0 <= cut }
            if live.count >= limit {
                soonest = min(soonest, (live.first ?? nowMs) + windowMs - nowMs)
            } else if let last = live.last, last < (victim?.last ?? .max) {
                victim = (k, last)
            }
        }
        if let victim {
            events[victim.key] = nil
            return nil
        }
        return Self.seconds(soonest == .max ? windowMs : soonest)
    }

    private static func seconds(_ ms: Int64) -> Int { Int(max(1, (ms + 999) / 1000)) }
}
