#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Waits for sockets to become readable or writable without blocking Swift's cooperative threads:
/// one background thread runs `poll(2)` over every registered descriptor and resumes the waiting
/// tasks. Non-blocking socket code calls ``wait(fd:for:timeoutMilliseconds:)`` after `EAGAIN`.
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

    private struct Waiter {
        var fd: Int32
        var events: Int16
        var deadline: UInt64?
        var continuation: CheckedContinuation<Outcome, Never>
    }

    private enum Slot {
        case pending
        case cancelled
        case waiting(Waiter)
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
        let deadline = timeoutMilliseconds.map { Self.now() + UInt64(max(0, $0)) * 1_000_000 }
        let id: UInt64 = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.slots[id] = .pending
            return id
        }
        startIfNeeded()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let events = interest == .readable ? Int16(POLLIN) : Int16(POLLOUT)
                let cancelled: Bool = state.withLock { s in
                    if case .cancelled = s.slots[id] {
                        s.slots[id] = nil
                        return true
                    }
                    s.slots[id] = .waiting(Waiter(fd: fd, events: events, deadline: deadline, continuation: continuation))
                    return false
                }
                if cancelled { continuation.resume(returning: .cancelled) } else { wake() }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { s in
                switch s.slots[id] {
                case .pending:
                    s.slots[id] = .cancelled
                    return nil
                case .waiting(let w):
                    s.slots[id] = nil
                    return w
                default:
                    return nil
                }
            }
            waiter?.continuation.resume(returning: .cancelled)
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
        let thread = Thread { [self] in run() }
        thread.name = "SocketWaiter"
        thread.start()
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    private func run() {
        var drain = [UInt8](repeating: 0, count: 256)
        while true {
            var ids: [UInt64] = []
            var fds: [pollfd] = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            var nearest: UInt64?
            state.withLock { s in
                for (id, slot) in s.slots {
                    guard case .waiting(let w) = slot else { continue }
                    ids.append(id)
                    fds.append(pollfd(fd: w.fd, events: w.events, revents: 0))
                    if let d = w.deadline { nearest = min(nearest ?? d, d) }
                }
            }
            var timeout: Int32 = -1
            if let nearest {
                let now = Self.now()
                timeout = nearest <= now ? 0 : Int32(clamping: (nearest - now + 999_999) / 1_000_000)
            }
            let n = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeout) }
            if n < 0 && errno != EINTR {
                // Should not happen (EINVAL/ENOMEM): wait a little and rebuild the set.
                usleep(1000)
            }
            if fds[0].revents != 0 {
                while drain.withUnsafeMutableBytes({ read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
            }
            let now = Self.now()
            var resumes: [(CheckedContinuation<Outcome, Never>, Outcome)] = []
            state.withLock { s in
                for (index, id) in ids.enumerated() {
                    guard case .waiting(let w) = s.slots[id] else { continue }
                    if fds[index + 1].revents != 0 {
                        resumes.append((w.continuation, .ready))
                        s.slots[id] = nil
                    } else if let d = w.deadline, d <= now {
                        resumes.append((w.continuation, .timedOut))
                        s.slots[id] = nil
                    }
                }
            }
            for (continuation, outcome) in resumes { continuation.resume(returning: outcome) }
        }
    }
}
