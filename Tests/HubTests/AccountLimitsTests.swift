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
}
