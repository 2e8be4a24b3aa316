import Foundation
import Synchronization

/// The one facility for blocking C calls from async code (name resolution, `connect` of a serial
/// line, a file lock, joining a driver's thread): the call runs on one of a small, bounded set of
/// threads kept for it, and the awaiting task suspends without holding a thread of Swift's
/// cooperative pool.
///
/// At most ``threadLimit`` calls run at once; more wait in arrival order. The threads are started on
/// demand and kept. A call is not cancelled when its task is: it runs to its end (keep calls bounded:
/// give them a timeout). A call that may block without bound (another process's file lock) goes
/// through ``waitAtMost(seconds:_:whenLate:)``, on a thread of its own.
public enum BlockingCalls {
    /// How many blocking calls may run at once (threads kept for them).
    public static let threadLimit = 4

    /// Runs `call` on one of the facility's threads and returns its result.
    public static func run<T: Sendable>(_ call: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            BlockingPool.shared.submit { continuation.resume(returning: call()) }
        }
    }

    /// Runs `call` on one of the facility's threads and returns its result or throws its error.
    public static func run<T: Sendable, E: Error>(_ call: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await run {
            do throws(E) { return .success(try call()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Runs a call that may block without bound (a `flock` another process holds) on a thread of its
    /// own, and waits for it at most `seconds`. When the time passes first, the call is left to end
    /// when it will, and `whenLate` gets its result then (to release what it got: close the
    /// descriptor, drop the lock).
    ///
    /// Blocks the calling thread (a synchronous API's caller; not for async code).
    /// - Returns: the call's result, or nil when `seconds` passed first.
    @available(*, noasync, message: "blocks the thread")
    public static func waitAtMost<T: Sendable>(seconds: Double, _ call: @escaping @Sendable () -> T,
                                               whenLate: @escaping @Sendable (T) -> Void) -> T? {
        let handoff = LateHandoff<T>(whenLate: whenLate)
        DedicatedThread.start(name: "modem-blocking-call") { handoff.deliver(call()) }
        return handoff.wait(seconds: seconds)
    }
}

/// Where a bounded wait and its call meet: the result goes to the waiter while it waits, else to
/// `whenLate`.
private final class LateHandoff<T: Sendable>: Sendable {
    private let state = Mutex<(result: T?, abandoned: Bool)>((nil, false))
    private let condition = NSCondition()
    private let whenLate: @Sendable (T) -> Void

    init(whenLate: @escaping @Sendable (T) -> Void) { self.whenLate = whenLate }

    func deliver(_ value: T) {
        condition.lock()
        let late = state.withLock { s -> Bool in
            if s.abandoned { return true }
            s.result = value
            return false
        }
        condition.broadcast()
        condition.unlock()
        if late { whenLate(value) }
    }

    func wait(seconds: Double) -> T? {
        let deadline = Date(timeIntervalSinceNow: max(0, seconds))
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let r = state.withLock({ $0.result }) { return r }
            if !condition.wait(until: deadline) {
                return state.withLock { s -> T? in
                    if let r = s.result { return r }
                    s.abandoned = true
                    return nil
                }
            }
        }
    }
}

/// The threads behind ``BlockingCalls/run(_:)``: a queue of calls, at most ``BlockingCalls/threadLimit``
/// threads, each taking calls in order and sleeping on a condition when there are none.
private final class BlockingPool: Sendable {
    static let shared = BlockingPool()

    private struct State {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        var idle = 0
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        let startThread = state.withLock { s -> Bool in
            s.queue.append(job)
            if s.idle == 0 && s.threads < BlockingCalls.threadLimit {
                s.threads += 1
                return true
            }
            return false
        }
        condition.signal()
        condition.unlock()
        if startThread {
            DedicatedThread.start(name: "modem-blocking") { [self] in work() }
        }
    }

    private func work() {
        while true {
            condition.lock()
            var job: (@Sendable () -> Void)?
            while true {
                job = state.withLock { s -> (@Sendable () -> Void)? in
                    guard s.head < s.queue.count else { return nil }
                    let j = s.queue[s.head]
                    s.head += 1
                    if s.head > 64 && s.head * 2 > s.queue.count {
                        s.queue.removeFirst(s.head)
                        s.head = 0
                    }
                    return j
                }
                if job != nil { break }
                state.withLock { $0.idle += 1 }
                condition.wait()
                state.withLock { $0.idle -= 1 }
            }
            condition.unlock()
            job?()
        }
    }
}
