import ModemRuntime
import Synchronization
import Testing

/// The discrete-event simulation: virtual time moves only when every task is idle, to the next
/// event; tasks run one job at a time in the order they became ready.
@Suite struct SimulationTests {
    /// A log the tasks of a test append to.
    final class Log<T: Sendable>: Sendable {
        private let entries = Mutex<[T]>([])
        func append(_ e: T) { entries.withLock { $0.append(e) } }
        var all: [T] { entries.withLock { $0 } }
    }

    @Test("an hour of sleeping takes no wall time, and sleeps end in the order of their deadlines")
    func sleepsEndInDeadlineOrder() async throws {
        let simulation = Simulation()
        let order = try await simulation.run {
            let log = Log<String>()
            await withTaskGroup(of: Void.self) { group in
                for (name, seconds) in [("c", 3600), ("a", 1), ("b", 60), ("a2", 1)] {
                    group.addTask {
                        try? await simulation.clock.sleep(for: .seconds(seconds))
                        log.append("\(name)@\(simulation.clock.now.nanoseconds / 1_000_000_000)")
                    }
                }
            }
            return log.all
        }
        #expect(order == ["a@1", "a2@1", "b@60", "c@3600"])
    }

    @Test("time does not pass while a task computes: the clock reads the same before and after work")
    func computingTakesNoTime() async throws {
        let simulation = Simulation()
        let (before, after, sum) = try await simulation.run {
            let before = simulation.clock.now
            var x: UInt64 = 0
            for i in 0..<2_000_000 { x = x &+ UInt64(i) &* 31 }
            await Task.yield()
            return (before, simulation.clock.now, x)
        }
        #expect(before == after && sum != 0)
    }

    @Test("tasks started with spawn run inside the simulation: a spawned sleeper is waited for")
    func spawnedTasksAreInside() async throws {
        let simulation = Simulation()
        let woke = try await simulation.run {
            let t = Simulation.spawn { () -> Int64 in
                try? await simulation.clock.sleep(for: .seconds(5))
                return simulation.clock.now.nanoseconds
            }
            return await t.value
        }
        #expect(woke == 5_000_000_000)
        // Outside a simulation spawn is an ordinary task.
        #expect(await Simulation.spawn { 7 }.value == 7)
    }

    @Test("a cancelled sleep ends at once with CancellationError and its event does not move time")
    func cancelledSleep() async throws {
        let simulation = Simulation()
        let (threw, at) = try await simulation.run {
            let sleeper = Simulation.spawn { () -> Bool in
                do { try await simulation.clock.sleep(for: .seconds(1000)); return false } catch { return error is CancellationError }
            }
            try await simulation.clock.sleep(for: .seconds(2))
            sleeper.cancel()
            return (await sleeper.value, simulation.clock.now.nanoseconds)
        }
        #expect(threw)
        #expect(at == 2_000_000_000)
    }

    @Test("every task waiting on nothing that could come is a deadlock, reported as an error, not a hang")
    func deadlockIsAnError() async throws {
        let simulation = Simulation()
        await #expect(throws: SimulationError.deadlock) {
            try await simulation.run {
                await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            }
        }
    }

    @Test("events scheduled at the same time run in the order they were scheduled; a cancelled one does not run")
    func eventsAtOneTime() async throws {
        let simulation = Simulation()
        let log = Log<Int>()
        try await simulation.run {
            for i in 0..<5 { simulation.schedule(at: 1_000) { log.append(i) } }
            let token = simulation.schedule(at: 1_000) { log.append(99) }
            #expect(simulation.cancel(token))
            #expect(!simulation.cancel(token))
            try await simulation.clock.sleep(for: .nanoseconds(2_000))
        }
        #expect(log.all == [0, 1, 2, 3, 4])
    }
}
