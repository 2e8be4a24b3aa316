import HubCore
import Testing

/// The pure parts of the account bounds (issue 32): the one key of a name, and the bounded limiter that
/// never forgives a key at its limit, on a clock the test moves.
@Suite struct AccountLimitsTests {
    @Test func oneKeyPerNameWhateverItsCase() {
        #expect(AccountName.key("ALICE") == "alice")
        #expect(AccountName.key("aLiCe.Z_9-") == "alice.z_9-")
        #expect(AccountName.key("alice") == AccountName.key("ALICE"))
        #expect(AccountName.validKey("Bob") == "bob")
        #expect(AccountName.validKey("b o b") == nil)
        #expect(AccountName.validKey("ａlice") == nil)  // fullwidth: not a valid name, so never another form of one
        #expect(AccountName.validKey("") == nil)
        for s in ["A", "Za", "x-Y.z_Q"] { #expect(Limits.isValidUsername(AccountName.key(s))) }
    }

    @Test func admitsUpToTheLimitThenTellsTheWait() {
        var l = BoundedRateLimiter(limit: 3, windowMs: 60_000, maxKeys: 10)
        #expect(l.admit("a", nowMs: 0) == nil)
        #expect(l.admit("a", nowMs: 1000) == nil)
        #expect(l.admit("a", nowMs: 2000) == nil)
        #expect(l.admit("a", nowMs: 3000) == 57)       // the first event leaves the window at 60 s
        #expect(l.admit("a", nowMs: 59_999) == 1)
        #expect(l.retryAfter("b", nowMs: 3000) == nil)  // another key is not affected
        #expect(l.admit("a", nowMs: 60_000) == nil)     // one slot back, one used
        #expect(l.admit("a", nowMs: 60_500) == 1)
        // Refusals count nothing: asking again does not push the wait out.
        for t in stride(from: Int64(60_500), to: 61_000, by: 100) { _ = l.admit("a", nowMs: t) }
        #expect(l.admit("a", nowMs: 61_000) == nil)
    }

    @Test func aFullTableForgetsTheExpiredAndNeverAKeyAtItsLimit() {
        var l = BoundedRateLimiter(limit: 2, windowMs: 10_000, maxKeys: 3)
        // The attacker's key at its limit.
        #expect(l.admit("attacker", nowMs: 0) == nil)
        #expect(l.admit("attacker", nowMs: 0) == nil)
        #expect(l.admit("attacker", nowMs: 1) != nil)
        // A flood of new keys: room is made from keys below their limit, never from the attacker's.
        for i in 0..<100 { _ = l.admit("k\(i)", nowMs: 100 + Int64(i)) }
        #expect(l.keyCount <= 3)
        #expect(l.admit("attacker", nowMs: 500) != nil, "the attacker was forgiven by a flood of other keys")
        // A table full of keys at their limits refuses a new key rather than forget one.
        var full = BoundedRateLimiter(limit: 1, windowMs: 10_000, maxKeys: 2)
        #expect(full.admit("x", nowMs: 0) == nil)
        #expect(full.admit("y", nowMs: 1000) == nil)
        #expect(full.admit("z", nowMs: 2000) == 8)
        #expect(full.admit("x", nowMs: 2000) == 8)
        // Expired keys go first, once their window has passed.
        #expect(full.admit("z", nowMs: 10_000) == nil)
        #expect(full.keyCount == 2)
        #expect(full.admit("y", nowMs: 10_000) == 1)
    }

    @Test func recordCountsFailuresThatHappened() {
        var l = BoundedRateLimiter(limit: 2, windowMs: 1000, maxKeys: 100)
        l.record("u", nowMs: 0)
        #expect(l.retryAfter("u", nowMs: 0) == nil)
        l.record("u", nowMs: 10)
        #expect(l.retryAfter("u", nowMs: 10) == 1)
        l.prune(nowMs: 2000)
        #expect(l.keyCount == 0)
    }

    /// Review of issue 32: a full table made an eviction pass (a scan of every key and a new dictionary)
    /// for every new key. Passes now free a batch (an eighth of the table), so N new keys cost at most
    /// N / batch + 1 passes; a table full of keys at their limits makes one pass and then refuses new keys
    /// without scanning until a batch of them comes below their limits.
    @Test func aFullTableTakesNewKeysInBatchesOfEvictions() {
        var l = BoundedRateLimiter(limit: 3, windowMs: 60_000, maxKeys: 800)
        #expect(l.evictionBatch == 100)
        for i in 0..<800 { #expect(l.admit("old\(i)", nowMs: Int64(i)) == nil) }
        #expect(l.evictionPasses == 0)
        for i in 0..<1000 { #expect(l.admit("new\(i)", nowMs: 1000 + Int64(i)) == nil) }
        #expect(l.keyCount <= 800)
        #expect(l.evictionPasses <= 1000 / 100 + 1, "\(l.evictionPasses) eviction passes for 1,000 new keys")
        // The least recently active went first: the newest keys are all still counted.
        for i in 990..<1000 { #expect(l.admit("new\(i)", nowMs: 3000) == nil) }

        // A table full of keys at their limits: one pass, then refusals that scan nothing.
        var full = BoundedRateLimiter(limit: 1, windowMs: 60_000, maxKeys: 800)
        for i in 0..<800 { #expect(full.admit("k\(i)", nowMs: Int64(i)) == nil) }
        for i in 0..<1000 { #expect(full.admit("flood\(i)", nowMs: 1000) != nil) }
        #expect(full.evictionPasses == 1, "\(full.evictionPasses) passes")
        // A batch of them is back below its limit at 60.1 s: one pass frees it and takes 100 new keys.
        for i in 0..<100 { #expect(full.admit("later\(i)", nowMs: 60_100) == nil) }
        #expect(full.evictionPasses == 2)
        #expect(full.admit("k500", nowMs: 60_100) != nil, "a key at its limit was forgotten")
    }

    /// However the flood of new keys comes (all at once, spread over the window, with `record`), a key
    /// at its limit keeps being refused until its own events leave the window.
    @Test func batchedEvictionNeverForgivesAKeyAtItsLimit() {
        var l = BoundedRateLimiter(limit: 4, windowMs: 60_000, maxKeys: 64)
        for _ in 0..<4 { #expect(l.admit("attacker", nowMs: 0) == nil) }
        var t: Int64 = 1
        for round in 0..<50 {
            for i in 0..<100 {
                if i % 2 == 0 { _ = l.admit("r\(round)k\(i)", nowMs: t) } else { l.record("r\(round)k\(i)", nowMs: t) }
                // Some keys at their limits too, so that passes meet both kinds.
                if i % 10 == 0 { for _ in 0..<4 { _ = l.admit("r\(round)k\(i)", nowMs: t) } }
            }
            #expect(l.keyCount <= 64)
            #expect(l.admit("attacker", nowMs: t) != nil, "the attacker was forgiven in round \(round)")
            t += 1000
        }
        #expect(l.admit("attacker", nowMs: 60_000) == nil)  // its own window is over
    }

    @Test func giveBackTakesBackOneReservedEvent() {
        var l = BoundedRateLimiter(limit: 2, windowMs: 1000, maxKeys: 10)
        #expect(l.admit("u", nowMs: 5) == nil)
        #expect(l.admit("u", nowMs: 6) == nil)
        #expect(l.admit("u", nowMs: 7) != nil)
        l.giveBack("u", atMs: 6)
        #expect(l.admit("u", nowMs: 8) == nil)
        l.giveBack("u", atMs: 99)  // nothing at that time: nothing changes
        #expect(l.admit("u", nowMs: 9) != nil)
    }
}
