import Foundation
import Synchronization

/// A discrete-event simulation: tasks run on one thread, one job at a time in the order they
/// became ready, and virtual time (``clock``) advances only when every task in the simulation is
/// idle, straight to the next due event (a ``SimulatedClock`` sleep or an ``schedule(at:_:)`` event).
///
/// So a run is a function of its inputs: it does not depend on the machine, its load or its
/// speed. It is the model of tokio's paused time and of FoundationDB's simulator. What runs inside
/// must wait only through the simulation: its clock, continuations resumed by other simulated
/// work, and tasks started with ``Simulation/spawn(priority:_:)`` (a plain `Task {}` would run on the
/// global executor, outside it). A wall-clock sleep or real I/O inside is a bug: the run would hang
/// (nothing due) or stop being reproducible.
///
/// ```swift
/// let simulation = Simulation()
/// let answer = try await simulation.run {
///     try await simulation.clock.sleep(for: .seconds(3600))   // returns at once in wall time
///     return simulation.clock.now
/// }
/// ```
public final class Simulation: TaskExecutor, @unchecked Sendable {
    // `@unchecked Sendable`: every field is behind `state`'s lock.

    /// The simulation a task runs in (bound for the tasks of ``run(_:)`` and inherited by the
    /// tasks they start); nil outside any.
    @TaskLocal public static var current: Simulation?

    private struct Event {
        var due: Int64
        var sequence: UInt64
        var action: @Sendable () -> Void
    }

    private struct State {
        var jobs: [UnownedJob] = []
        var jobsHead = 0
        var now: Int64 = 0
        var sequence: UInt64 = 0
        var events: [Event] = []   // a binary heap on (due, sequence)
        var running = false
    }
    private let state = Mutex(State())

    /// The simulation's clock: reads virtual time; its sleeps are events of the simulation.
    public var clock: SimulatedClock { SimulatedClock(simulation: self) }

    /// Virtual time since the start, in nanoseconds.
    public var nanoseconds: Int64 { state.withLock { $0.now } }

    /// Creates a simulation at virtual time 0.
    public init() {}

    /// The executor's entry: a job of a task in the simulation is ready.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        state.withLock { $0.jobs.append(unowned) }
    }

    /// Runs `action` on the simulation's thread when virtual time reaches `nanoseconds` (at once in
    /// the next idle moment when that is now or past). Events due at the same time run in the order
    /// they were scheduled.
    /// - Returns: a token for ``cancel(_:)``.
    @discardableResult
    public func schedule(at nanoseconds: Int64, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { s in
            s.sequence += 1
            s.events.append(Event(due: max(nanoseconds, s.now), sequence: s.sequence, action: action))
            Self.siftUp(&s.events, s.events.count - 1)
            return s.sequence
        }
    }

    /// Removes a scheduled event that has not run; returns whether it was still scheduled.
    @discardableResult
    public func cancel(_ token: UInt64) -> Bool {
        state.withLock { s in
            guard let i = s.events.firstIndex(where: { $0.sequence == token }) else { return false }
            let last = s.events.removeLast()
            if i < s.events.count {
                s.events[i] = last
                Self.siftDown(&s.events, i)
                Self.siftUp(&s.events, i)
            }
            return true
        }
    }

    /// Runs `body` as a task in the simulation, on a thread of its own, until it returns; returns
    /// what it returned. Tasks it started that are still waiting then stay suspended (they hold no
    /// thread).
    /// - Throws: what `body` threw, or ``SimulationError/deadlock`` when every task waits and no
    ///   event is due (nothing could ever wake them).
    public func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let result = Outcome<T>()
        Self.$current.withValue(self) {
            _ = Task(executorPreference: self) {
                let r: Result<T, any Error>
                do { r = .success(try await body()) } catch { r = .failure(error) }
                result.set(r)
            }
        }
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            let thread = Thread { [self] in
                c.resume(with: self.loop { result.value })
            }
            thread.name = "modem-simulation"
            thread.start()
        }
    }

    /// The result of a run's body, set by its task and read by the loop.
    private final class Outcome<T: Sendable>: Sendable {
        private let slot = Mutex<Result<T, any Error>?>(nil)
        func set(_ r: Result<T, any Error>) { slot.withLock { $0 = r } }
        var value: Result<T, any Error>? { slot.withLock { $0 } }
    }

    /// The simulation's loop: every ready job, then the next due event, until `finished` gives a result.
    private func loop<T>(_ finished: () -> Result<T, any Error>?) -> Result<T, any Error> {
        let executor = asUnownedTaskExecutor()
        while true {
            while let job = nextJob() {
                job.runSynchronously(on: executor)
            }
            if let done = finished() { return done }
            guard let event = nextEvent() else { return .failure(SimulationError.deadlock) }
            event()
        }
    }

    private func nextJob() -> UnownedJob? {
        state.withLock { s in
            guard s.jobsHead < s.jobs.count else { return nil }
            let job = s.jobs[s.jobsHead]
            s.jobsHead += 1
            if s.jobsHead == s.jobs.count { s.jobs.removeAll(keepingCapacity: true); s.jobsHead = 0 }
            return job
        }
    }

    /// Takes the earliest event, moving virtual time to it.
    private func nextEvent() -> (@Sendable () -> Void)? {
        state.withLock { s in
            guard !s.events.isEmpty else { return nil }
            let first = s.events[0]
            let last = s.events.removeLast()
            if !s.events.isEmpty {
                s.events[0] = last
                Self.siftDown(&s.events, 0)
            }
            s.now = max(s.now, first.due)
            return first.action
        }
    }

    private static func before(_ a: Event, _ b: Event) -> Bool {
        a.due != b.due ? a.due < b.due : a.sequence < b.sequence
    }

    private static func siftUp(_ heap: inout [Event], _ index: Int) {
        var i = index
        while i > 0 {
            let parent = (i - 1) / 2
            guard before(heap[i], heap[parent]) else { return }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private static func siftDown(_ heap: inout [Event], _ index: Int) {
        var i = index
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count, before(heap[l], heap[m]) { m = l }
            if r < heap.count, before(heap[r], heap[m]) { m = r }
            guard m != i else { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}

/// Why a simulation could not go on.
public enum SimulationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every task waits and no event is due: nothing could ever wake them.
    case deadlock

    public var description: String {
        switch self {
        case .deadlock: "the simulation is deadlocked: every task waits and no event is due"
        }
    }
}

extension Simulation {
    /// Starts an unstructured task that runs where its creator runs: on the ``Simulation``'s
    /// executor inside one (so it is part of the simulation), on the global executor elsewhere.
    /// Like `Task {}`, it inherits the actor context it is started in (a task started in an actor's
    /// method runs on that actor, queued behind the method). Use it instead of `Task {}` in code
    /// that runs in simulations.
    @discardableResult
    public static func spawn<T: Sendable>(priority: TaskPriority? = nil,
                                          @_inheritActorContext _ operation: sending @escaping @isolated(any) () async -> T) -> Task<T, Never> {
        Task(executorPreference: Simulation.current, priority: priority, operation: operation)
    }

    /// ``spawn(priority:_:)`` for an operation that throws.
    @discardableResult
    public static func spawn<T: Sendable>(priority: TaskPriority? = nil,
                                          @_inheritActorContext _ operation: sending @escaping @isolated(any) () async throws -> T) -> Task<T, any Error> {
        Task(executorPreference: Simulation.current, priority: priority, operation: operation)
    }
}
