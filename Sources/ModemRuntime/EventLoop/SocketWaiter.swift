#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The runtime's event loop: the one loop that waits on file descriptors (sockets, serial lines, HCI
/// and RFCOMM sockets, pipes) and on time: one background thread runs `poll(2)` over every registered
/// descriptor and the nearest deadline, and wakes whoever waits. Nothing else in the process calls
/// `poll(2)`.
///
/// Async code calls ``wait(fd:for:timeoutMilliseconds:)`` after `EAGAIN` and suspends without
/// holding a cooperative thread. Code that owns a thread of its own (a protocol driver, a KISS
/// server, a serial bridge) blocks that thread with a ``Sleeper``, which other threads can
/// interrupt (a queued call, a stop), or with ``block(_:timeoutMilliseconds:)``.
public final class SocketWaiter: Sendable {
    /// The process-wide waiter (its thread starts on first use).
    public static let shared = SocketWaiter()

    /// What to wait for.
    public enum Interest: Sendable {
        /// Data (or end of stream, or an error) to read; for a listener, a connection to accept.
        case readable
        /// Room to write (or an error).
        case writable
    }

    /// How a wait ended.
    public enum Outcome: Sendable, Equatable {
        /// The descriptor is ready (or has an error or hang-up: the next call tells which).
        case ready
        /// The time allowed passed first.
        case timedOut
        /// The waiting task was cancelled.
        case cancelled
    }

    /// How the loop (or a cancellation) ends a registration.
    enum Event: Sendable {
        /// The `revents` of each of its descriptors (at least one is non-zero).
        case ready([Int16])
        case timedOut
        case cancelled
    }

    typealias Delivery = @Sendable (Event) -> Void

    private struct Registration {
        var fds: [pollfd]
        var deadline: UInt64?
        var deliver: Delivery
    }

    private enum Slot {
        case pending
        case cancelled
        case waiting(Registration)
    }

    private struct State {
        var slots: [UInt64: Slot] = [:]
        var nextID: UInt64 = 1
        var started = false
    }

    private let state = Mutex(State())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    private init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 {
            fatalError("SocketWaiter: pipe failed (errno \(errno)): no descriptors left")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    /// Suspends until `fd` is ready for `interest`, the time passes (nil: no limit), or the task is
    /// cancelled.
    public func wait(fd: Int32, for interest: Interest, timeoutMilliseconds: Int? = nil) async -> Outcome {
        let deadline = Self.deadline(timeoutMilliseconds)
        let id = reserve()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let events = interest == .readable ? Int16(POLLIN) : Int16(POLLOUT)
                let registration = Registration(
                    fds: [pollfd(fd: fd, events: events, revents: 0)], deadline: deadline,
                    deliver: { event in
                        switch event {
                        case .ready: continuation.resume(returning: .ready)
                        case .timedOut: continuation.resume(returning: .timedOut)
                        case .cancelled: continuation.resume(returning: .cancelled)
                        }
                    })
                if !activate(id, registration) { continuation.resume(returning: .cancelled) }
            }
        } onCancel: {
            cancel(id)?.deliver(.cancelled)
        }
    }

    /// Suspends until `fd` is ready for `interest`, `deadline` passes (nil: no limit), or the task is
    /// cancelled. On the system's monotonic clock the time limit goes to `poll(2)`; on any other clock
    /// (a test's manual or simulated one) the wait races a sleep on that clock, so the deadline passes
    /// exactly when that clock says it does.
    public func wait(fd: Int32, for interest: Interest, until deadline: Deadline?) async -> Outcome {
        guard let deadline else { return await wait(fd: fd, for: interest, timeoutMilliseconds: nil) }
        if deadline.clock.isMonotonicSystemClock {
            return await wait(fd: fd, for: interest, timeoutMilliseconds: Int((deadline.remaining * 1000).rounded(.up)))
        }
        if deadline.hasPassed { return .timedOut }
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask { await self.wait(fd: fd, for: interest, timeoutMilliseconds: nil) }
            group.addTask {
                do { try await deadline.sleep() } catch { return nil }
                return .timedOut
            }
            // The first to end decides (a sleep cut short by the socket's readiness says nothing).
            while let outcome = await group.next() {
                guard let outcome else { continue }
                group.cancelAll()
                return outcome
            }
            return .cancelled
        }
    }

    /// Blocks the calling thread (never a cooperative one: use ``wait(fd:for:timeoutMilliseconds:)``
    /// there) until one of `fds` is ready for its `events` or the time passes, as `poll(2)` does:
    /// each entry's `revents` is filled in.
    /// - Returns: how many descriptors are ready (0: the time passed).
    @discardableResult
    public func block(_ fds: inout [pollfd], timeoutMilliseconds: Int?) -> Int {
        Sleeper(waiter: self).wait(&fds, timeoutMilliseconds: timeoutMilliseconds).ready
    }

    /// A thread's handle for blocking waits on the loop that another thread can cut short: a
    /// driver thread sleeps on its socket and is woken by a queued call or a stop. An
    /// ``interrupt()`` that comes while the thread is not waiting ends its next wait at once.
    public final class Sleeper: Sendable {
        /// How a wait ended.
        public struct Wake: Sendable, Equatable {
            /// How many descriptors are ready (0: the time passed or the wait was interrupted).
            public var ready: Int
            /// Whether ``interrupt()`` ended the wait.
            public var interrupted: Bool

            /// A wake with these fields.
            public init(ready: Int, interrupted: Bool) {
                self.ready = ready
                self.interrupted = interrupted
            }
        }

        private struct State {
            var generation: UInt64 = 0
            var revents: [Int16]?
            var timedOut = false
            var interrupted = false
        }

        private let waiter: SocketWaiter
        private let state = Mutex(State())
        private let condition = NSCondition()

        /// A sleeper on the process-wide loop.
        public convenience init() { self.init(waiter: .shared) }

        init(waiter: SocketWaiter) { self.waiter = waiter }

        /// Blocks until one of `fds` is ready (their `revents` filled in, as `poll(2)` does), the
        /// time passes (nil: no limit) or ``interrupt()`` is called.
        @discardableResult
        public func wait(_ fds: inout [pollfd], timeoutMilliseconds: Int?) -> Wake {
            for i in fds.indices { fds[i].revents = 0 }
            let generation: UInt64? = state.withLock { s in
                if s.interrupted { s.interrupted = false; return nil }
                s.generation &+= 1
                s.revents = nil
                s.timedOut = false
                return s.generation
            }
            guard let generation else { return Wake(ready: 0, interrupted: true) }
            let id = waiter.reserve()
            let registration = Registration(
                fds: fds, deadline: SocketWaiter.deadline(timeoutMilliseconds),
                deliver: { [self] event in
                    state.withLock { s in
                        guard s.generation == generation else { return }
                        switch event {
                        case .ready(let revents): s.revents = revents
                        case .timedOut: s.timedOut = true
                        case .cancelled: break
                        }
                    }
                    signal()
                })
            _ = waiter.activate(id, registration)
            var wake = Wake(ready: 0, interrupted: false)
            condition.lock()
            while true {
                let done: Bool = state.withLock { s in
                    if let revents = s.revents {
                        for i in fds.indices { fds[i].revents = revents[i] }
                        wake.ready = revents.reduce(0) { $0 + ($1 != 0 ? 1 : 0) }
                        s.revents = nil
                        return true
                    }
                    if s.timedOut { s.timedOut = false; return true }
                    if s.interrupted { s.interrupted = false; wake.interrupted = true; return true }
                    return false
                }
                if done { break }
                condition.wait()
            }
            condition.unlock()
            if wake.interrupted { _ = waiter.cancel(id) }
            return wake
        }

        /// Ends the current wait (or the next one, when none is under way). Any thread may call it.
        public func interrupt() {
            state.withLock { $0.interrupted = true }
            signal()
        }

        private func signal() {
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    // MARK: - The loop

    private func reserve() -> UInt64 {
        let id: UInt64 = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.slots[id] = .pending
            return id
        }
        startIfNeeded()
        return id
    }

    /// Hands a reserved slot its registration and wakes the loop.
    /// - Returns: false when the slot was cancelled meanwhile (the registration is dropped).
    private func activate(_ id: UInt64, _ registration: Registration) -> Bool {
        let live: Bool = state.withLock { s in
            if case .cancelled = s.slots[id] {
                s.slots[id] = nil
                return false
            }
            s.slots[id] = .waiting(registration)
            return true
        }
        if live { wake() }
        return live
    }

    /// Withdraws a slot. - Returns: its registration when it was waiting (its owner resumes it).
    private func cancel(_ id: UInt64) -> Registration? {
        state.withLock { s in
            switch s.slots[id] {
            case .pending:
                s.slots[id] = .cancelled
                return nil
            case .waiting(let r):
                s.slots[id] = nil
                return r
            default:
                return nil
            }
        }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func startIfNeeded() {
        let start = state.withLock { s in
            if s.started { return false }
            s.started = true
            return true
        }
        guard start else { return }
        DedicatedThread.start(name: "modem-event-loop") { [self] in run() }
    }

    static func now() -> UInt64 { SystemTime.monotonicNanoseconds() }

    static func deadline(_ timeoutMilliseconds: Int?) -> UInt64? {
        timeoutMilliseconds.map { now() + UInt64(max(0, $0)) * 1_000_000 }
    }

    /// How many failed `poll(2)` calls in a row (not `EINTR`) the loop retries before it stops the process.
    static let failedPollLimit = 3

    private func run() {
        var drain = [UInt8](repeating: 0, count: 256)
        var failedPolls = 0
        while true {
            var owners: [(id: UInt64, first: Int, count: Int)] = []
            var fds: [pollfd] = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            var nearest: UInt64?
            state.withLock { s in
                for (id, slot) in s.slots {
                    guard case .waiting(let r) = slot else { continue }
                    owners.append((id, fds.count, r.fds.count))
                    fds.append(contentsOf: r.fds)
                    if let d = r.deadline { nearest = min(nearest ?? d, d) }
                }
            }
            var timeout: Int32 = -1
            if let nearest {
                let now = Self.now()
                timeout = nearest <= now ? 0 : Int32(clamping: (nearest - now + 999_999) / 1_000_000)
            }
            let n = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeout) }
            if n < 0 {
                let code = errno
                if code == EINTR {
                    failedPolls = 0
                } else {
                    // EINVAL (more descriptors than RLIMIT_NOFILE) or ENOMEM: no wait can work any
                    // more. Try the rebuilt set again at once a few times (ENOMEM may pass), then stop
                    // with the reason rather than spin or sleep.
                    failedPolls += 1
                    if failedPolls > Self.failedPollLimit {
                        fatalError("SocketWaiter: poll(2) over \(fds.count) descriptors failed \(failedPolls) times in a row: \(String(cString: strerror(code))) (errno \(code))\(code == EINVAL ? "; more descriptors than the open-file limit (ulimit -n)" : "")")
                    }
                    continue
                }
            } else {
                failedPolls = 0
            }
            if fds[0].revents != 0 {
                while drain.withUnsafeMutableBytes({ read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
            }
            let now = Self.now()
            var deliveries: [(Delivery, Event)] = []
            state.withLock { s in
                for owner in owners {
                    guard case .waiting(let r) = s.slots[owner.id] else { continue }
                    let revents = fds[owner.first ..< owner.first + owner.count].map(\.revents)
                    if revents.contains(where: { $0 != 0 }) {
                        deliveries.append((r.deliver, .ready(revents)))
                        s.slots[owner.id] = nil
                    } else if let d = r.deadline, d <= now {
                        deliveries.append((r.deliver, .timedOut))
                        s.slots[owner.id] = nil
                    }
                }
            }
            for (deliver, event) in deliveries { deliver(event) }
        }
    }
}
