import Foundation
import Synchronization

/// Bounds what one address may do at the rendezvous: at most ``maximumLiveAllocations`` nameplates
/// allocated by its connections that are still open, ``maximumAllocationsPerWindow`` allocations and
/// ``maximumClaimsPerWindow`` claims and mailbox opens (which make nameplates and mailboxes as
/// allocations do) in ``windowSeconds``. Beyond, the request is answered with the protocol's `error`
/// (`too many ... from your address`); other addresses are not affected.
///
/// It remembers at most ``maximumAddresses`` addresses. When a new one comes and the table is full, it
/// first forgets addresses whose windows are empty and that hold no allocation, then, when none are,
/// the eighth of the table with the fewest requests counted (an address that holds allocations last):
/// a flood of new addresses never wipes out what an address at its limit did.
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
    /// Addresses remembered at once.
    public let maximumAddresses: Int
    private struct Counts {
        var live = 0
        var allocations: [Double] = []
        var claims: [Double] = []
        mutating func trim(now: Double, window: Double) {
            allocations.removeAll { now - $0 > window }
            claims.removeAll { now - $0 > window }
        }
        /// How much forgetting this address would forgive (a holder of allocations: everything).
        var weight: Int { live > 0 ? Int.max : allocations.count + claims.count }
    }
    private let state = Mutex<[String: Counts]>([:])

    /// Creates a limiter.
    public init(maximumLiveAllocations: Int = 64, maximumAllocationsPerWindow: Int = 600, maximumClaimsPerWindow: Int = 1200,
                windowSeconds: Double = 600, maximumAddresses: Int = 65_536) {
        self.maximumLiveAllocations = maximumLiveAllocations
        self.maximumAllocationsPerWindow = maximumAllocationsPerWindow
        self.maximumClaimsPerWindow = maximumClaimsPerWindow
        self.windowSeconds = windowSeconds
        self.maximumAddresses = max(8, maximumAddresses)
    }

    /// Creates a limiter with the rates of `limits`.
    public convenience init(limits: WormholeLimits) {
        self.init(maximumLiveAllocations: limits.maximumLiveAllocations, maximumAllocationsPerWindow: limits.maximumAllocationsPerWindow,
                  maximumClaimsPerWindow: limits.maximumClaimsPerWindow, windowSeconds: limits.windowSeconds,
                  maximumAddresses: limits.maximumTrackedAddresses)
    }

    /// Addresses remembered now.
    public var trackedAddresses: Int { state.withLock { $0.count } }

    /// Makes room for a new address in a full table (see the type's comment).
    private func evict(_ s: inout [String: Counts], now: Double) {
        for (k, var c) in s {
            c.trim(now: now, window: windowSeconds)
            if c.live == 0 && c.allocations.isEmpty && c.claims.isEmpty { s[k] = nil } else { s[k] = c }
        }
        guard s.count >= maximumAddresses else { return }
        let lightest = s.map { ($0.key, $0.value.weight) }.sorted { $0.1 < $1.1 }.prefix(max(1, maximumAddresses / 8))
        for (k, w) in lightest where w != Int.max { s[k] = nil }
    }

    /// Counts one request of `kind` from `address`, or refuses it.
    public func allow(_ kind: Kind, from address: String, now: Double) throws(RendezvousRefusal) {
        let refusal: RendezvousRefusal? = state.withLock { s in
            if s[address] == nil && s.count >= maximumAddresses {
                evict(&s, now: now)
                // Every remembered address holds allocations: refuse rather than forget one of them.
                if s.count >= maximumAddresses { return .serverFull("the server is busy; try again later") }
            }
            var c = s[address] ?? Counts()
            defer { s[address] = c }
            c.trim(now: now, window: windowSeconds)
            switch kind {
            case .allocate:
                if c.live >= maximumLiveAllocations { return .addressLimit("too many nameplates allocated from your address at once; release some first") }
                if c.allocations.count >= maximumAllocationsPerWindow { return .addressLimit("too many allocations from your address; try again later") }
                c.live += 1
                c.allocations.append(now)
            case .claim:
                if c.claims.count >= maximumClaimsPerWindow { return .addressLimit("too many claims from your address; try again later") }
                c.claims.append(now)
            }
            return nil
        }
        if let refusal { throw refusal }
    }

    /// Allocates under the limits of `address`: counts the allocation (``allow(_:from:now:)``, which may
    /// refuse it), runs `allocate`, and when that fails (the rendezvous refused: its bounds per address or
    /// in all, a database error) gives the allocation held back at once, so refusals never use up the
    /// address's ``maximumLiveAllocations`` nor keep it in the table as a holder (the rate window still
    /// counts the attempt). On success the allocation is held until ``allocationEnded(from:)``.
    public func allocating<T>(from address: String, now: Double,
                              _ allocate: () async throws(RendezvousRefusal) -> T) async throws(RendezvousRefusal) -> T {
        try allow(.allocate, from: address, now: now)
        do {
            return try await allocate()
        } catch {
            allocationEnded(from: address)
            throw error
        }
    }

    /// Allocations `address` holds now (its connections' that allocated and are still open).
    public func liveAllocations(of address: String) -> Int { state.withLock { $0[address]?.live ?? 0 } }

    /// A connection of `address` that allocated ended (or its allocation failed).
    public func allocationEnded(from address: String) {
        state.withLock { s in
            guard var c = s[address] else { return }
            c.live = max(0, c.live - 1)
            s[address] = c
        }
    }
}
