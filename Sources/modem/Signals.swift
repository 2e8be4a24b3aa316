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

/// Exit status after an interruption (128 + SIGINT, as shells report it).
let interruptedStatus: Int32 = 130

/// Installs handlers so SIGINT and SIGTERM request a clean stop instead of killing the process.
///
/// The handlers are installed without `SA_RESTART`, so a blocking `read` of ours returns `EINTR`
/// and its loop sees the request. A second signal ends the process at once, and a watchdog ends it
/// ``stopGraceSeconds`` after the first when it has not stopped by then (removing temporary
/// output files), so the signal always works whatever the process is blocked in. Either way the
/// exit status is 130.
func installStopHandlers() {
    let handler: @convention(c) (Int32) -> Void = { _ in
        if stopRequested.exchange(true, ordering: .relaxed) { _exit(interruptedStatus) }
    }
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    // A closed pipe becomes a write error (reported, exit 1) rather than a silent kill.
    signal(SIGPIPE, SIG_IGN)
    startStopWatchdog()
}

private let watchdogStarted = Atomic<Bool>(false)

/// A thread that ends the process ``stopGraceSeconds`` after a stop request it has not honoured.
private func startStopWatchdog() {
    guard !watchdogStarted.exchange(true, ordering: .relaxed) else { return }
    var thread = pthread_t()
    let body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { _ in
        var tick = timespec(tv_sec: 0, tv_nsec: 50_000_000)
        while !stopRequested.load(ordering: .relaxed) { nanosleep(&tick, nil) }
        var grace = timespec(tv_sec: Int(stopGraceSeconds), tv_nsec: 0)
        var left = timespec()
        while nanosleep(&grace, &left) != 0 && errno == EINTR { grace = left }
        AudioFileWriter.removeTemporaryFiles()
        let line = "modem: interrupted (still blocked \(Int(stopGraceSeconds)) s after the signal)\n"
        line.withCString { _ = write(2, $0, strlen($0)) }
        _exit(interruptedStatus)
    }
    if pthread_create(&thread, nil, body, nil) == 0 { pthread_detach(thread) }
}
