#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// SIGINT and SIGTERM as a request to stop, with one path: the handler only sets a flag and writes
/// to a pipe; one thread of the runtime blocks on that pipe (no polling), tells every
/// ``requests()`` sequence, and (with a watchdog) ends the process when the program has not stopped
/// by itself within its grace period.
///
/// Synchronous loops read ``isRequested`` between chunks; async code awaits ``requests()`` or has
/// it cancel a task. The handlers are installed without `SA_RESTART` (unless asked), so a blocking
/// `read` returns `EINTR` and its loop sees the request; since the kernel may deliver the signal to
/// any thread, the runtime's thread also interrupts the installing thread (the command's) with
/// SIGUSR2 a few times over the grace period. A second signal ends the process at once. The exit
/// status after an interruption is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
public enum StopSignals {
    /// Set by the first SIGINT or SIGTERM.
    public static var isRequested: Bool { requested.load(ordering: .relaxed) }

    /// The signal that asked for the stop (SIGINT or SIGTERM; 0 before one came).
    public static var signal: Int32 { stopSignal.load(ordering: .relaxed) }

    /// 128 + the stopping signal's number (SIGINT's when none came yet), as shells report it.
    public static var interruptedStatus: Int32 {
        let s = signal
        return 128 + (s == 0 ? SIGINT : s)
    }

    /// What the watchdog does when the grace period ends with the process still running.
    public struct Watchdog: Sendable {
        /// Seconds the program has, after the first signal, to stop by itself.
        public var graceSeconds: Double
        /// Called on the runtime's thread just before the process ends (remove temporary files).
        public var beforeExit: @Sendable () -> Void
        /// The line written to standard error before the process ends (with its newline).
        public var message: String

        /// A watchdog with these settings.
        public init(graceSeconds: Double, message: String, beforeExit: @escaping @Sendable () -> Void = {}) {
            self.graceSeconds = graceSeconds
            self.beforeExit = beforeExit
            self.message = message
        }
    }

    /// Installs the handlers (once; later calls do nothing) and starts the runtime's signal thread.
    /// - Parameters:
    ///   - watchdog: end the process its grace period after the first signal; nil: the program ends
    ///     itself, however long that takes.
    ///   - restart: restart interrupted system calls (`SA_RESTART`).
    public static func install(watchdog: Watchdog?, restart: Bool = false) {
        guard !installed.exchange(true, ordering: .relaxed) else { return }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            fatalError("StopSignals: pipe failed (errno \(errno)): no descriptors left for the signal path")
        }
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        pipeWriter.store(fds[1], ordering: .relaxed)
        let handler: @convention(c) (Int32) -> Void = { signal in
            // The first signal names the status; it is stored before the stop shows.
            _ = StopSignals.stopSignal.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
            if StopSignals.requested.exchange(true, ordering: .relaxed) { _exit(128 + signal) }
            var byte = UInt8(truncatingIfNeeded: signal)
            _ = write(StopSignals.pipeWriter.load(ordering: .relaxed), &byte, 1)
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = restart ? SA_RESTART : 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        // SIGUSR2 only interrupts a blocking call of the installing thread.
        var wake = sigaction()
        wake.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&wake.sa_mask)
        wake.sa_flags = 0
        sigaction(SIGUSR2, &wake, nil)
        // The caller may run on a thread of the concurrency pool, which blocks signals: let this one in.
        var wakeSet = sigset_t()
        sigemptyset(&wakeSet)
        sigaddset(&wakeSet, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &wakeSet, nil)
        let target = pthread_self()
        // A closed pipe becomes a write error (reported) rather than a silent kill.
        Glibc.signal(SIGPIPE, SIG_IGN)
        let reader = fds[0]
        DedicatedThread.start(name: "modem-signals") {
            var byte: UInt8 = 0
            while read(reader, &byte, 1) < 0 && errno == EINTR {}
            let s = stopSignal.load(ordering: .relaxed)
            let waiting = waiters.withLock { w -> [AsyncStream<Int32>.Continuation] in
                w.signal = s
                defer { w.waiting.removeAll() }
                return Array(w.waiting.values)
            }
            for c in waiting {
                c.yield(s)
                c.finish()
            }
            guard let watchdog else { return }
            // Wake the installing thread from a blocking call, a few times over the grace period.
            let steps = max(1, Int(watchdog.graceSeconds * 5))
            let timer = NSCondition()
            let start = Date()
            for step in 1...steps {
                pthread_kill(target, SIGUSR2)
                timer.lock()
                let until = start.addingTimeInterval(watchdog.graceSeconds * Double(step) / Double(steps))
                while Date() < until { _ = timer.wait(until: until) }
                timer.unlock()
            }
            watchdog.beforeExit()
            watchdog.message.withCString { _ = write(2, $0, strlen($0)) }
            _exit(interruptedStatus)
        }
    }

    /// SIGINT or SIGTERM as they come (the first one; a second ends the process): a sequence that
    /// yields the signal's number once and ends, at once when the stop came before. Ends without a
    /// value when its task is cancelled.
    public static func requests() -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let id = waiters.withLock { w -> Int? in
            if let s = w.signal {
                continuation.yield(s)
                continuation.finish()
                return nil
            }
            w.next += 1
            w.waiting[w.next] = continuation
            return w.next
        }
        if let id {
            continuation.onTermination = { _ in _ = waiters.withLock { $0.waiting.removeValue(forKey: id) } }
        }
        return stream
    }

    private static let requested = Atomic<Bool>(false)
    private static let stopSignal = Atomic<Int32>(0)
    private static let installed = Atomic<Bool>(false)
    /// The write end of the pipe the handler wakes the signal thread through.
    private static let pipeWriter = Atomic<Int32>(-1)
    /// Each ``requests()`` sequence's continuation, and the signal once it came.
    private static let waiters = Mutex<(signal: Int32?, next: Int, waiting: [Int: AsyncStream<Int32>.Continuation])>((nil, 0, [:]))
}
