#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Set by SIGINT/SIGTERM; long-running commands poll it and stop cleanly.
let stopRequested = Atomic<Bool>(false)

/// Installs handlers so SIGINT and SIGTERM request a clean stop instead of killing the process.
func installStopHandlers() {
    let handler: @convention(c) (Int32) -> Void = { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGINT, handler)
    signal(SIGTERM, handler)
    // A closed pipe becomes a write error (reported, exit 1) rather than a silent kill.
    signal(SIGPIPE, SIG_IGN)
}
