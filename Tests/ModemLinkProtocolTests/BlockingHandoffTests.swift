import Foundation
import ModemLinkProtocol
import Synchronization
import Testing

/// How the Communication API's blocking calls wait: on a thread of their own, for a task's value.
@Suite("BlockingHandoff")
struct BlockingHandoffTests {
    /// Runs `body` on a new thread (the blocking calls are unavailable from async code, and a test's
    /// own thread belongs to the cooperative pool).
    private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            Thread { c.resume(returning: body()) }.start()
        }
    }

    @Test("run blocks its thread until the task returns, and gives the task's value")
    func runGivesTheTasksValue() async {
        let value = await onThread {
            BlockingHandoff<Int>.run {
                await Task.yield()
                return 42
            }
        }
        #expect(value == 42)
    }

    @Test("a value put before the wait is taken at once; only the first value put counts")
    func putBeforeTakeAndFirstWins() async {
        let handoff = BlockingHandoff<Int>()
        handoff.put(1)
        handoff.put(2)
        #expect(await onThread { handoff.take() } == 1)
    }

    @Test("many waiting threads at once, each woken by its own task")
    func manyWaitersAtOnce() async {
        let values = await withTaskGroup(of: Int.self) { group in
            for i in 0..<32 {
                group.addTask { await onThread { BlockingHandoff<Int>.run { await Task.yield(); return i } } }
            }
            var all: [Int] = []
            for await v in group { all.append(v) }
            return all.sorted()
        }
        #expect(values == Array(0..<32))
    }
}
