import Foundation
import Synchronization

// The one way tests wait (docs/testing.md, "Waits are for events"): the code under test, or a
// callback a test gives it, changes a value through `Observed.update`, and each change wakes whoever
// waits for a condition on that value. Nothing polls and nothing sleeps to decide; a waiter's time
// limit is a hang guard only, far above the expected wait, and when it runs out the failure names
// what was awaited and shows the value it saw last.

/// A value that a test watches: every ``update(_:)`` wakes the waiters of ``wait(for:hangGuard:until:)``,
/// which check their condition again. Safe to update from any thread (a callback of the code under
/// test, a C thread, a dispatch queue) and to wait on from any task.
public final class Observed<Value: Sendable>: Sendable {
    private struct Guarded {
        var value: Value
        /// Bumped on every change; a waiter sleeps until it moves or the hang guard runs out.
        var version: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var expired: Set<UInt64> = []
        var nextWaiter: UInt64 = 0
    }
    private let guarded: Mutex<Guarded>

    /// A value starting at `value`.
    public init(_ value: Value) { guarded = Mutex(Guarded(value: value)) }

    /// The value now.
    public var value: Value { guarded.withLock { $0.value } }

    /// Changes the value (under the lock) and wakes every waiter; returns what `change` returns.
    @discardableResult
    public func update<R>(_ change: (inout Value) throws -> R) rethrows -> R {
        let (result, woken) = try guarded.withLock { g -> (R, [CheckedContinuation<Void, Never>]) in
            let result = try change(&g.value)
            g.version &+= 1
            defer { g.waiters = [:] }
            return (result, Array(g.waiters.values))
        }
        for w in woken { w.resume() }
        return result
    }

    /// Sets the value and wakes every waiter.
    public func set(_ value: Value) { update { $0 = value } }

    /// Waits until `condition` holds for the value (checked now and after every change) and returns
    /// the value it held for; nil when it did not within `timeout` seconds (a hang guard).
    public func wait(timeout: Double, until condition: (Value) -> Bool) async -> Value? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while true {
            let (value, version) = guarded.withLock { ($0.value, $0.version) }
            if condition(value) { return value }
            if ContinuousClock.now >= deadline { return nil }
            await change(since: version, until: deadline)
        }
    }

    /// Waits until `condition` holds for the value and returns it; throws ``WaitFailed`` naming `what`
    /// and showing the last value when it does not within `hangGuard` seconds (far above the expected
    /// wait: it never decides a pass).
    @discardableResult
    public func wait(for what: String, hangGuard: Double = 120, until condition: (Value) -> Bool) async throws(WaitFailed) -> Value {
        if let value = await wait(timeout: hangGuard, until: condition) { return value }
        throw WaitFailed("no \(what) within \(hangGuard) s (a hang guard); last value: \(self.value)")
    }

    /// Returns after the next change since `version`, or at `deadline`.
    private func change(since version: UInt64, until deadline: ContinuousClock.Instant) async {
        let id = guarded.withLock { g in defer { g.nextWaiter += 1 }; return g.nextWaiter }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                try? await Task.sleep(until: deadline, clock: .continuous)   // the hang guard only
                expire(id)
            }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = guarded.withLock { g -> Bool in
                    if g.expired.remove(id) != nil || g.version != version { return true }
                    g.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
            group.cancelAll()
        }
        guarded.withLock { _ = $0.expired.remove(id) }
    }

    private func expire(_ id: UInt64) {
        let waiter = guarded.withLock { g -> CheckedContinuation<Void, Never>? in
            if let w = g.waiters.removeValue(forKey: id) { return w }
            g.expired.insert(id)
            return nil
        }
        waiter?.resume()
    }
}

extension Observed where Value: AdditiveArithmetic {
    /// Adds `amount` to the value (a counter of events) and wakes every waiter.
    public func add(_ amount: Value) { update { $0 += amount } }
}

extension Observed {
    /// Appends `element` to the value (a log of events) and wakes every waiter.
    public func append<Element: Sendable>(_ element: Element) where Value == [Element] { update { $0.append(element) } }
}

/// A wait's hang guard ran out: what was awaited and what was seen.
public struct WaitFailed: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// A failure saying `description`.
    public init(_ description: String) { self.description = description }
}
