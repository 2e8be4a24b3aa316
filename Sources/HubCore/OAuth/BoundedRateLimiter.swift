/// Sliding-window counters per key, in bounded memory, that never forgive a key at its limit.
///
/// A pure value on a clock the caller supplies (Unix milliseconds). `admit` counts an event for a key
/// unless the key already had `limit` events in the last `windowMs`; then it answers the seconds until
/// the oldest of them leaves the window (for `Retry-After`) and counts nothing.
///
/// At most `maxKeys` keys are kept. When a new key finds the table full, one eviction pass frees a batch
/// (an eighth of the table): keys whose events have all left the window first; then the least recently
/// active keys that are *below* their limit (each loses at most `limit - 1` events of history). A key at
/// its limit is never dropped. A pass costs O(`maxKeys`) and runs at most once per batch of new keys: when
/// it cannot free a whole batch (the rest are at their limits), new keys are refused without another pass
/// until enough of those keys will have come below their limits. So the work per new key is amortised
/// O(1), a flood of new keys cannot make the table scan on every request, nothing is reset by asking
/// again, and a flood cannot clear the table.
public struct BoundedRateLimiter: Sendable {
    /// Events allowed per key per window.
    public let limit: Int
    /// The window in milliseconds.
    public let windowMs: Int64
    /// Keys kept at most.
    public let maxKeys: Int
    private var events: [String: [Int64]] = [:]
    /// Until then a full table refuses new keys without an eviction pass (the last pass could not free a
    /// batch; see the type's comment).
    private var noRoomUntilMs: Int64 = .min
    /// Eviction passes made so far (for tests of the work a flood of new keys causes).
    public private(set) var evictionPasses = 0

    /// - Parameters:
    ///   - limit: events per key per window (at least 1).
    ///   - windowMs: the window (at least 1 ms).
    ///   - maxKeys: keys kept at most (at least 1).
    public init(limit: Int, windowMs: Int64, maxKeys: Int = 100_000) {
        self.limit = max(1, limit)
        self.windowMs = max(1, windowMs)
        self.maxKeys = max(1, maxKeys)
    }

    /// Keys one eviction pass frees when it can: an eighth of the table (at least one).
    public var evictionBatch: Int { max(1, maxKeys / 8) }

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
        append(key, nowMs: nowMs)
        return nil
    }

    /// Counts one event for `key` at `nowMs` whether or not it is at its limit (a failure that already
    /// happened); a full table makes room as `admit` does, and drops the event only when it cannot.
    public mutating func record(_ key: String, nowMs: Int64) {
        if events[key] == nil && events.count >= maxKeys, makeRoom(nowMs: nowMs) != nil { return }
        append(key, nowMs: nowMs)
    }

    /// Takes back one event that `admit` counted for `key` at `atMs` (a reservation that turned out not to
    /// be spent, e.g. a login that succeeded). Nothing happens when no such event is kept.
    public mutating func giveBack(_ key: String, atMs: Int64) {
        guard var list = events[key], let i = list.lastIndex(of: atMs) else { return }
        list.remove(at: i)
        events[key] = list
    }

    /// Drops every key whose events have all left the window.
    public mutating func prune(nowMs: Int64) {
        let cut = nowMs - windowMs
        let gone = events.compactMap { ($0.value.last ?? .min) > cut ? nil : $0.key }
        for k in gone { events[k] = nil }
    }

    /// How many keys are kept (for tests of the memory bound).
    public var keyCount: Int { events.count }

    private mutating func append(_ key: String, nowMs: Int64) {
        var list = events[key] ?? []
        list.removeAll { $0 <= nowMs - windowMs }
        list.append(nowMs)
        if list.count > limit { list.removeFirst(list.count - limit) }
        events[key] = list
    }

    /// Frees a batch of slots (at least one), or answers the seconds until a pass may free some when every
    /// kept key is at its limit. One pass over the table at most per call, and none while a previous pass
    /// said there is no room yet.
    private mutating func makeRoom(nowMs: Int64) -> Int? {
        if nowMs < noRoomUntilMs { return Self.seconds(noRoomUntilMs - nowMs) }
        evictionPasses += 1
        let cut = nowMs - windowMs
        let batch = evictionBatch
        var expired: [String] = []
        var below: [(key: String, last: Int64)] = []
        var atLimitFree: [Int64] = []  // when each key at its limit comes below it
        for (k, v) in events {
            let live = v.drop { $0 <= cut }
            if live.isEmpty {
                expired.append(k)
            } else if live.count >= limit {
                atLimitFree.append(live[live.index(live.endIndex, offsetBy: -limit)] + windowMs)
            } else {
                below.append((k, live.last!))
            }
        }
        // Expired keys all go (they cost nothing to forget); then the least recently active below their limit.
        for k in expired { events[k] = nil }
        var freed = expired.count
        if freed < batch && !below.isEmpty {
            let want = min(batch - freed, below.count)
            if want < below.count {
                let lasts = below.map(\.last)
                let threshold = Self.kthSmallest(lasts, want - 1)
                var taken = 0
                // Strictly older than the threshold first, then ties, until `want`.
                for (k, last) in below where last < threshold { events[k] = nil; taken += 1 }
                for (k, last) in below where last == threshold && taken < want { events[k] = nil; taken += 1 }
                freed += taken
            } else {
                for (k, _) in below { events[k] = nil }
                freed += below.count
            }
        }
        if freed >= batch || atLimitFree.isEmpty {
            noRoomUntilMs = .min
        } else {
            // Not a whole batch: no other pass until a batch's worth of keys at their limits came below them.
            let need = min(batch - freed, atLimitFree.count)
            noRoomUntilMs = Self.kthSmallest(atLimitFree, need - 1)
        }
        if freed > 0 { return nil }
        return Self.seconds((noRoomUntilMs == .min ? nowMs + windowMs : noRoomUntilMs) - nowMs)
    }

    /// The `k`-th smallest of `values` (0-based; `k < values.count`), in expected linear time.
    static func kthSmallest(_ values: [Int64], _ k: Int) -> Int64 {
        var a = values, lo = 0, hi = a.count - 1
        var rng = SystemRandomNumberGenerator()
        while lo < hi {
            let pivot = a[Int.random(in: lo...hi, using: &rng)]
            var i = lo, j = hi
            while i <= j {
                while a[i] < pivot { i += 1 }
                while a[j] > pivot { j -= 1 }
                if i <= j { a.swapAt(i, j); i += 1; j -= 1 }
            }
            if k <= j { hi = j } else if k >= i { lo = i } else { return a[k] }
        }
        return a[k]
    }

    private static func seconds(_ ms: Int64) -> Int { Int(max(1, (ms + 999) / 1000)) }
}
