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
/// The handlers are installed without `SA_RESTART`, so a blocking `read` of ours returns `EINTR`
/// and its loop sees the request. (The kernel may deliver the signal to any thread, so a watchdog
/// thread also interrupts the calling thread, the one running the command, with SIGUSR2.) A second signal ends the process at once, and a watchdog ends it
/// ``stopGraceSeconds`` after the first when it has not stopped by then (removing temporary
/// output files), so the signal always works whatever the process is blocked in. Either way the
/// exit status is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
func installStopHandlers() {
    let handler: @convention(c) (Int32) -> Void = { signal in
        // The first signal names the status; it is stored before the stop shows.
        _ = stopSignal.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
        if stopRequested.exchange(true, ordering: .relaxed) { _exit(128 + signal) }
    }
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
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
    startStopWatchdog()
}

private let watchdogStarted = Atomic<Bool>(false)
/// The thread that called ``installStopHandlers()``.
private let commandThread = Atomic<UInt>(0)

/// A thread that ends the process ``stopGraceSeconds`` after a stop request it has not honoured.
private func startStopWatchdog() {
    guard !watchdogStarted.exchange(true, ordering: .relaxed) else { return }
    var thread = pthread_t()
    let body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { _ in
        var tick = timespec(tv_sec: 0, tv_nsec: 50_000_000)
        while !stopRequested.load(ordering: .relaxed) { nanosleep(&tick, nil) }
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
    if pthread_create(&thread, nil, body, nil) == 0 { pthread_detach(thread) }
}
