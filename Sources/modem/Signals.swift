#if canImport(Glibc)
import Glibc
#endif
import ModemAudio
import Synchronization

/// Set by SIGINT/SIGTERM; long-running commands poll it and stop cleanly.
let stopRequested = Atomic<Bool>(false)

/// Seconds a command has, after the first SIGINT/SIGTERM, to stop by itself (finish its output,
/// report) before the process ends anyway: a read blocked in a library (a pipe with no writer,
/// a sound device) cannot poll ``stopRequested``.
let stopGraceSeconds = 2.0

/// The signal that asked for the stop (SIGINT or SIGTERM; 0 before one came).
let stopSignal = Atomic<Int32>(0)

/// Exit status after an interruption: 128 + the signal's number, as shells report it (130 for
/// SIGINT, 143 for SIGTERM).
var interruptedStatus: Int32 {
    let signal = stopSignal.load(ordering: .relaxed)
    return 128 + (signal == 0 ? SIGINT : signal)
}

/// Installs handlers so SIGINT and SIGTERM request a clean stop instead of killing the process.
///
/// One signal path: the handler sets ``stopRequested`` (what synchronous loops check between
/// chunks) and writes to a pipe; one thread blocks on that pipe (no polling) and tells every
/// ``stopRequests()`` sequence, so async code awaits the stop (``untilStopRequested()``, ``onStop(_:)``)
/// or has it cancel a task (``cancellingOnStop(_:)``).
///
/// The handlers are installed without `SA_RESTART` (unless `restart`), so a blocking `read` of ours
/// returns `EINTR` and its loop sees the request. (The kernel may deliver the signal to any thread, so
/// the same thread also interrupts the calling thread, the one running the command, with SIGUSR2.) A
/// second signal ends the process at once, and with `watchdog` the thread ends it
/// ``stopGraceSeconds`` after the first when it has not stopped by then (removing temporary
/// output files), so the signal always works whatever the process is blocked in. Either way the
/// exit status is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
/// - Parameters:
///   - watchdog: end the process ``stopGraceSeconds`` after the first signal (default); without it the
///     command ends itself (the mailbox quits its session, however long the line takes).
///   - restart: restart interrupted system calls (`SA_RESTART`).
func installStopHandlers(watchdog: Bool = true, restart: Bool = false) {
    guard !handlersInstalled.exchange(true, ordering: .relaxed) else { return }
    var fds: [Int32] = [0, 0]
    if pipe(&fds) == 0 {
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        stopPipeWriter.store(fds[1], ordering: .relaxed)
    }
    let handler: @convention(c) (Int32) -> Void = { signal in
        // The first signal names the status; it is stored before the stop shows.
        _ = stopSignal.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
        if stopRequested.exchange(true, ordering: .relaxed) { _exit(128 + signal) }
        var byte = UInt8(truncatingIfNeeded: signal)
        _ = write(stopPipeWriter.load(ordering: .relaxed), &byte, 1)
    }
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    action.sa_flags = restart ? SA_RESTART : 0
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    // SIGUSR2 only interrupts a blocking call of the command's thread.
    var wake = sigaction()
    wake.__sigaction_handler.sa_handler = { _ in }
    sigemptyset(&wake.sa_mask)
    wake.sa_flags = 0
    sigaction(SIGUSR2, &wake, nil)
    // The command may run on a thread of the concurrency pool, which blocks signals: let this one in.
    var wakeSet = sigset_t()
    sigemptyset(&wakeSet)
    sigaddset(&wakeSet, SIGUSR2)
    pthread_sigmask(SIG_UNBLOCK, &wakeSet, nil)
    commandThread.store(UInt(pthread_self()), ordering: .relaxed)
    // A closed pipe becomes a write error (reported, exit 1) rather than a silent kill.
    signal(SIGPIPE, SIG_IGN)
    startSignalThread(reader: fds[0], watchdog: watchdog)
}

private let handlersInstalled = Atomic<Bool>(false)
/// The write end of the pipe the handler wakes the signal thread through.
private let stopPipeWriter = Atomic<Int32>(-1)
/// The thread that called ``installStopHandlers(watchdog:restart:)``.
private let commandThread = Atomic<UInt>(0)

/// Who waits for the stop: each ``stopRequests()`` sequence's continuation, and the signal once it came.
private let stopWaiters = Mutex<(signal: Int32?, next: Int, waiting: [Int: AsyncStream<Int32>.Continuation])>((nil, 0, [:]))

/// SIGINT or SIGTERM as they come (the first one; a second ends the process): a sequence that yields
/// the signal's number once and ends, at once when the stop came before. Ends without a value when
/// its task is cancelled.
func stopRequests() -> AsyncStream<Int32> {
    let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
    let id = stopWaiters.withLock { w -> Int? in
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
        continuation.onTermination = { _ in _ = stopWaiters.withLock { $0.waiting.removeValue(forKey: id) } }
    }
    return stream
}

/// Returns once SIGINT or SIGTERM came (or at once if it has); returns early when the task is cancelled.
func untilStopRequested() async {
    for await _ in stopRequests() { return }
}

/// A task that runs `body` once SIGINT or SIGTERM came; cancelling it (the work ended first) runs nothing.
@discardableResult
func onStop(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
    Task {
        await untilStopRequested()
        if !Task.isCancelled { await body() }
    }
}

/// Runs `body`, cancelling it when SIGINT or SIGTERM comes; its result, or what it threw (a
/// `CancellationError` when the stop cut it short).
func cancellingOnStop<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let work = Task { try await body() }
    let watch = onStop { work.cancel() }
    defer { watch.cancel() }
    return try await work.value
}

/// The signal thread: blocks on the pipe until the first signal, tells every waiter, then (with
/// `watchdog`) wakes the command's thread from blocking calls over the grace period and ends the
/// process when it has not ended by itself.
private func startSignalThread(reader: Int32, watchdog: Bool) {
    final class Settings: @unchecked Sendable {
        let reader: Int32, watchdog: Bool
        init(reader: Int32, watchdog: Bool) { self.reader = reader; self.watchdog = watchdog }
    }
    let settings = Unmanaged.passRetained(Settings(reader: reader, watchdog: watchdog)).toOpaque()
    var thread = pthread_t()
    let body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { raw in
        let settings = Unmanaged<Settings>.fromOpaque(raw!).takeRetainedValue()
        var byte: UInt8 = 0
        while read(settings.reader, &byte, 1) < 0 && errno == EINTR {}
        let signal = stopSignal.load(ordering: .relaxed)
        let waiting = stopWaiters.withLock { w -> [AsyncStream<Int32>.Continuation] in
            w.signal = signal
            defer { w.waiting.removeAll() }
            return Array(w.waiting.values)
        }
        for c in waiting {
            c.yield(signal)
            c.finish()
        }
        guard settings.watchdog else { return nil }
        // Wake the command's thread from a blocking call, a few times over the grace period.
        var step = timespec(tv_sec: 0, tv_nsec: 200_000_000)
        for _ in 0..<Int(stopGraceSeconds * 5) {
            let target = commandThread.load(ordering: .relaxed)
            if target != 0 { pthread_kill(pthread_t(target), SIGUSR2) }
            nanosleep(&step, nil)
        }
        AudioFileWriter.removeTemporaryFiles()
        let line = "modem: interrupted (still blocked \(Int(stopGraceSeconds)) s after the signal)\n"
        line.withCString { _ = write(2, $0, strlen($0)) }
        _exit(interruptedStatus)
    }
    if pthread_create(&thread, nil, body, settings) == 0 { pthread_detach(thread) }
}
