import Synchronization

/// A first-come-first-served lock for async code: one holder at a time, waiters suspend (never
/// block a thread) and are resumed in the order they came. The one async lock of the code base
/// (messaging's TCP writes, the wormhole's streams, the hub's SQLite connection).
///
/// Not reentrant: a holder that locks again waits for itself. Every ``lock()`` must be matched by
/// one ``unlock()``; ``withLock(_:)`` does both.
public final class AsyncLock: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// An unheld lock.
    public init() {}

    /// Suspends until the lock is ours (at once when nobody holds it).
    public func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if !s.held {
                    s.held = true
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the lock to the longest waiter, or frees it when nobody waits.
    public func unlock() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.held = false
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Whether someone holds the lock now (a snapshot, for tests and diagnostics).
    public var isHeld: Bool { state.withLock { $0.held } }

    /// How many tasks wait for the lock now (a snapshot, for tests and diagnostics).
    public var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Runs `body` holding the lock, and releases it however `body` ends.
    public func withLock<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }
}
