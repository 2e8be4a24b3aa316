import Foundation
import Synchronization

/// How a blocking call hands async work's result back to the thread that waits for it: the work runs
/// in a `Task`, and the waiting thread sleeps on a condition variable until the task puts its value.
///
/// The waiting thread must be a thread of its own (a caller's thread, a `Thread`), never one of the
/// cooperative pool's: a pool thread that sleeps here is a thread the awaited task may need. So
/// ``take()`` and ``run(_:)`` are unavailable from async code, which awaits the async API instead.
/// This is how the Communication API's blocking calls (`openDevice`, `exchangeData`, `cancelExchange`,
/// `closeDevice`, `closeResource`) wait.
package final class BlockingHandoff<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let condition = NSCondition()

    package init() {}

    /// Hands `result` to the waiting thread (the first value put is the one taken).
    package func put(_ result: Value) {
        condition.lock()
        value.withLock { if $0 == nil { $0 = result } }
        condition.signal()
        condition.unlock()
    }

    /// Blocks this thread until a value is put, and returns it.
    @available(*, noasync, message: "blocks its thread; from async code, await the async API instead")
    package func take() -> Value {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result = value.withLock({ $0 }) { return result }
            condition.wait()
        }
    }

    /// Runs `body` in a task and blocks this thread until it returns.
    @available(*, noasync, message: "blocks its thread; from async code, await the async API instead")
    package static func run(_ body: @escaping @Sendable () async -> Value) -> Value {
        let handoff = BlockingHandoff<Value>()
        Task { handoff.put(await body()) }
        return handoff.take()
    }
}
