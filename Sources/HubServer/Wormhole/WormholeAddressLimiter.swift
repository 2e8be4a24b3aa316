import Foundation
import Synchronization

/// Bounds what one address may do at the rendezvous: at most ``maximumLiveAllocations`` nameplates
/// allocated by its connections that are still open, ``maximumAllocationsPerWindow`` allocations and
/// ``maximumClaimsPerWindow`` claims and mailbox opens (which make nameplates and mailboxes as
/// allocations do) in ``windowSeconds``. Beyond, the request is answered with the protocol's `error`
/// (`too many ... from your address`); other addresses are not affected.
public final class WormholeAddressLimiter: Sendable {
    /// What is counted.
    public enum Kind: Sendable { case allocate, claim }
    /// Allocations held at once by open connections of one address.
    public let maximumLiveAllocations: Int
    /// Allocations per address per window.
    public let maximumAllocationsPerWindow: Int
    /// Claims and opens per address per window.
    public let maximumClaimsPerWindow: Int
    /// The window, in seconds.
    public let windowSeconds: Double
    private struct Counts {
        var live = 0
        var allocations: [Double] = []
        var claims: [Double] = []
    }
    private let state = Mutex<[String: Counts]>([:])

    /// Creates a limiter.
    public init(maximumLiveAllocations: Int = 64, maximumAllocationsPerWindow: Int = 600, maximumClaimsPerWindow: Int = 1200,
                windowSeconds: Double = 600) {
        self.maximumLiveAllocations = maximumLiveAllocations
        self.maximumAllocationsPerWindow = maximumAllocationsPerWindow
        self.maximumClaimsPerWindow = maximumClaimsPerWindow
        self.windowSeconds = windowSeconds
    }

    /// Counts one request of `kind` from `address`, or refuses it.
    public func allow(_ kind: Kind, from address: String, now: Double) throws(WormholeError) {
        let refusal: String? = state.withLock { s in
            if s.count > 65_536 { s = s.filter { $0.value.live > 0 } }  // bounded memory under a flood of addresses
            var c = s[address] ?? Counts()
            defer { s[address] = c }
            c.allocations.removeAll { now - $0 > windowSeconds }
            c.claims.removeAll { now - $0 > windowSeconds }
            switch kind {
            case .allocate:
                if c.live >= maximumLiveAllocations { return "too many nameplates allocated from your address at once; release some first" }
                if c.allocations.count >= maximumAllocationsPerWindow { return "too many allocations from your address; try again later" }
                c.live += 1
                c.allocations.append(now)
            case .claim:
                if c.claims.count >= maximumClaimsPerWindow { return "too many claims from your address; try again later" }
                c.claims.append(now)
            }
            return nil
        }
        if let refusal { throw WormholeError(refusal) }
    }

    /// A connection of `address` that allocated ended.
    public func allocationEnded(from address: String) {
        state.withLock { s in
            guard var c = s[address] else { return }
            c.live = max(0, c.live - 1)
            s[address] = c
        }
    }
}
