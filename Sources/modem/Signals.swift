import ModemAudio
import ModemRuntime

/// Seconds a command has, after the first SIGINT/SIGTERM, to stop by itself (finish its output,
/// report) before the process ends anyway: a read blocked in a library (a pipe with no writer,
/// a sound device) cannot check ``isStopRequested``.
let stopGraceSeconds = 2.0

/// Whether SIGINT or SIGTERM came; long-running commands check it and stop cleanly.
var isStopRequested: Bool { StopSignals.isRequested }

/// Exit status after an interruption: 128 + the signal's number, as shells report it (130 for
/// SIGINT, 143 for SIGTERM).
var interruptedStatus: Int32 { StopSignals.interruptedStatus }

/// Installs handlers so SIGINT and SIGTERM request a clean stop instead of killing the process, on
/// the runtime's signal path (``StopSignals``): synchronous loops check ``isStopRequested`` between
/// chunks, async code awaits the stop (``untilStopRequested()``, ``onStop(_:)``) or has it cancel a
/// task (``cancellingOnStop(_:)``). A second signal ends the process at once, and with `watchdog` the
/// process ends ``stopGraceSeconds`` after the first when it has not stopped by then (removing
/// temporary output files), so the signal always works whatever the process is blocked in. Either
/// way the exit status is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
/// - Parameters:
///   - watchdog: end the process ``stopGraceSeconds`` after the first signal (default); without it the
///     command ends itself (the mailbox quits its session, however long the line takes).
///   - restart: restart interrupted system calls (`SA_RESTART`).
func installStopHandlers(watchdog: Bool = true, restart: Bool = false) {
    let dog = StopSignals.Watchdog(
        graceSeconds: stopGraceSeconds,
        message: "modem: interrupted (still blocked \(Int(stopGraceSeconds)) s after the signal)\n",
        beforeExit: { AudioFileWriter.removeTemporaryFiles() })
    StopSignals.install(watchdog: watchdog ? dog : nil, restart: restart)
}

/// SIGINT or SIGTERM as they come (the first one; a second ends the process): a sequence that yields
/// the signal's number once and ends, at once when the stop came before. Ends without a value when
/// its task is cancelled.
func stopRequests() -> AsyncStream<Int32> { StopSignals.requests() }

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
