import Dispatch
import Foundation
import Subprocess
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
#if canImport(System)
import System
#else
import SystemPackage
#endif

// The one process runner of the tests (docs/testing.md): every child process a test starts, to
// completion (`runProcess`) or in the background (`ChildProcess`), is spawned, watched and reaped by
// swift-subprocess. Standard output and error are read while the child runs, into memory, so no pipe
// can fill up; every wait is for an event (a chunk of output, the end of the child) with a hang guard.

/// Where a child's standard input comes from.
public enum ChildInput: Sendable {
    /// `/dev/null`.
    case none
    /// The file at this path (a real file: the child may seek in it).
    case file(String)
    /// These bytes through a pipe, which is then closed.
    case bytes([UInt8])
    /// A pipe the test writes to (``ChildProcess/writeStdin(_:)-([UInt8])``) and closes
    /// (``ChildProcess/closeStdin()``).
    case pipe
}

/// Where a child's standard output goes.
public enum ChildOutput: Sendable {
    /// Read into memory while it runs (``ChildProcess/stdout``).
    case capture
    /// The file at this path (e.g. `/dev/full`, or a log), emptied, then appended to; nothing is captured.
    case file(String)
}

/// One of a child's output streams.
public enum ChildStream: Sendable, CustomStringConvertible {
    /// Standard output.
    case stdout
    /// Standard error.
    case stderr

    public var description: String { self == .stdout ? "standard output" : "standard error" }
}

/// Why a child process could not be run or waited for.
public struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// What a finished child process did.
public struct ProcessResult: Sendable, CustomStringConvertible {
    /// The command line, for messages (`modem rx -q 'a b'`).
    public var command: String
    /// Exit status when it exited; the signal number when ``signaled``.
    public var status: Int32
    /// Ended by a signal.
    public var signaled: Bool
    /// Killed by us (SIGKILL) after the time limit.
    public var timedOut: Bool
    /// Its standard output (empty when it went to a file).
    public var stdout: [UInt8]
    /// Its standard error.
    public var stderr: [UInt8]
    /// Wall seconds from its start to its end.
    public var seconds: Double

    /// A result of these values.
    public init(command: String, status: Int32, signaled: Bool, timedOut: Bool, stdout: [UInt8], stderr: [UInt8], seconds: Double) {
        self.command = command
        self.status = status
        self.signaled = signaled
        self.timedOut = timedOut
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
    }

    /// Standard error as UTF-8 text.
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    /// Standard output as UTF-8 text.
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    /// Non-empty lines of standard error.
    public var stderrLines: [Substring] { stderrText.split(separator: "\n", omittingEmptySubsequences: true) }
    /// Exited by itself with status 0.
    public var succeeded: Bool { !signaled && !timedOut && status == 0 }

    public var description: String {
        let how = timedOut ? "timed out (killed)" : signaled ? "killed by signal \(status)" : "exit \(status)"
        var s = "`\(command)`: \(how) after \(String(format: "%.2f", seconds)) s, stdout \(stdout.count) bytes"
        let err = stderrText.trimmingCharacters(in: .whitespacesAndNewlines)
        if !err.isEmpty { s += ", stderr:\n" + String(err.prefix(1500)) }
        return s
    }
}

/// Runs `executable` with `arguments` to completion: standard input from `stdin`, the environment
/// with `environment`'s changes, in `workingDirectory` (else the test's own), standard output and
/// error as `stdout` and `stderr` say (captured, or into a file; both may name the same file). `timeout` seconds is a hang guard, not a measurement:
/// when it runs out the child gets SIGKILL and the result says ``ProcessResult/timedOut``.
public func runProcess(_ executable: String, _ arguments: [String], stdin: ChildInput = .none,
                       stdout: ChildOutput = .capture, stderr: ChildOutput = .capture, environment: [String: String] = [:],
                       workingDirectory: String? = nil, timeout: Double = 60) async throws -> ProcessResult {
    let child = try await ChildProcess(executable, arguments, environment: environment, workingDirectory: workingDirectory,
                                       stdin: stdin, stdout: stdout, stderr: stderr)
    let exited = await child.wait(timeout: timeout)
    if !exited {
        child.signal(SIGKILL)
        _ = await child.wait(timeout: 60)
    }
    return child.result(timedOut: !exited)
}

/// A child process running in the background, on swift-subprocess: its standard output and error
/// are read into memory as they come (``stdoutText``, ``stderrText``), standard input is `/dev/null`,
/// a file, bytes or a pipe the test writes to. Waits (``awaitStderr(_:timeout:_:)``,
/// ``awaitExit(_:timeout:)``) are woken by new output and by its end, and bounded by hang guards.
/// Dropping the object (or ``kill()``) kills the child with SIGKILL and waits for its end.
public final class ChildProcess: Sendable {
    /// The command line, for messages.
    public let command: String
    /// The test's name for it (e.g. "alice"), for messages; nil for none.
    public let name: String?
    /// How messages name it: its name and command line.
    public var label: String { name.map { "\($0) (`\(command)`)" } ?? "`\(command)`" }
    /// Its process id.
    public let pid: Int32
    /// When it was started (just before the spawn).
    public let startedAt: Date
    /// An object kept alive as long as this one (e.g. the temporary folder its files are in).
    public var keepAlive: (any AnyObject & Sendable)? {
        get { kept.withLock { $0 } }
        set { kept.withLock { $0 = newValue } }
    }

    private let state: ChildState
    private let stdinWriter: StdinWriter?
    /// A pidfd of our own (a dup of swift-subprocess's): readable once the child has ended.
    private let pidfd: Int32
    private let kept = Mutex<(any AnyObject & Sendable)?>(nil)

    /// Starts `executable` with `arguments` (see ``runProcess(_:_:stdin:stdout:stderr:environment:workingDirectory:timeout:)``
    /// for the parameters; `name` labels it in messages) and returns once it runs; throws when it
    /// cannot be started.
    public init(_ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String] = [:],
                workingDirectory: String? = nil, stdin: ChildInput = .none, stdout: ChildOutput = .capture,
                stderr: ChildOutput = .capture) async throws {
        self.name = name
        command = ([URL(fileURLWithPath: executable).lastPathComponent] + arguments)
            .map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
        var changes: [Environment.Key: String?] = [:]
        for (key, value) in environment { if let k = Environment.Key(rawValue: key) { changes[k] = value } }
        let configuration = Configuration(
            executable: .path(FilePath(executable)), arguments: Arguments(arguments),
            environment: changes.isEmpty ? .inherit : .inherit.updating(changes),
            workingDirectory: workingDirectory.map { FilePath($0) })

        let input: FileDescriptor
        switch stdin {
        case .none:
            input = try openFile("/dev/null", O_RDONLY)
            stdinWriter = nil
        case .file(let path):
            input = try openFile(path, O_RDONLY)
            stdinWriter = nil
        case .bytes, .pipe:
            var fds: [Int32] = [-1, -1]
            // Close-on-exec (swift-subprocess also closes every other descriptor in its children).
            guard pipe(&fds) == 0 else { throw ChildProcessError("pipe: errno \(errno)") }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            input = FileDescriptor(rawValue: fds[0])
            stdinWriter = StdinWriter(fd: fds[1])
        }
        if case .bytes(let bytes) = stdin {
            stdinWriter?.write(bytes)
            stdinWriter?.close()
        }

        let state = ChildState()
        self.state = state
        startedAt = Date()
        let started: (pid: Int32, pidfd: Int32)
        do {
            // swift-subprocess types each output by its kind: a stream read here, or a file.
            func file(_ path: String) throws -> FileDescriptorOutput {
                // Appending: standard output and error may name the same file (a log).
                .fileDescriptor(try openFile(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND), closeAfterSpawningProcess: true)
            }
            switch (stdout, stderr) {
            case (.capture, .capture):
                started = try await launch(configuration, input, .sequence, .sequence, state) { ($0.standardOutput, $0.standardError) }
            case (.file(let out), .capture):
                started = try await launch(configuration, input, try file(out), .sequence, state) { (nil, $0.standardError) }
            case (.capture, .file(let err)):
                started = try await launch(configuration, input, .sequence, try file(err), state) { ($0.standardOutput, nil) }
            case (.file(let out), .file(let err)):
                started = try await launch(configuration, input, try file(out), try file(err), state) { _ in (nil, nil) }
            }
        } catch {
            stdinWriter?.close()
            throw error
        }
        pid = started.pid
        pidfd = started.pidfd
        // The end is timed by the kernel's event on a pidfd, on a dispatch queue: a busy test thread
        // pool does not move it. The source has a pidfd of its own and holds itself until it fired.
        let watched = fcntl(pidfd, F_DUPFD_CLOEXEC, 0)
        if watched >= 0 {
            let source = DispatchSource.makeReadSource(fileDescriptor: watched, queue: .global())
            source.setEventHandler { [state] in
                state.markEnded()
                source.cancel()
            }
            source.setCancelHandler { _ = Glibc.close(watched) }
            source.resume()
        }
    }

    deinit {
        kill()
        stdinWriter?.close()
        Glibc.close(pidfd)
    }

    // MARK: State

    /// Standard output so far (empty when it goes to a file; so for standard error).
    public var stdout: [UInt8] { state.output(.stdout) }
    /// Standard error so far.
    public var stderr: [UInt8] { state.output(.stderr) }
    /// Standard output so far, as UTF-8 text.
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    /// Standard error so far, as UTF-8 text.
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    /// Whether it has not been reaped yet (swift-subprocess reaps it as soon as it ends).
    public var isRunning: Bool { state.termination == nil }
    /// How it ended, once reaped; nil while it runs.
    public var termination: TerminationStatus? { state.termination }
    /// The exit status (or signal number when killed by one), or -1 while it runs.
    public var status: Int32 {
        switch state.termination {
        case .exited(let code)?, .signaled(let code)?: return code
        case nil: return -1
        }
    }
    /// Whether it exited by itself (not killed by a signal).
    public var exitedNormally: Bool { if case .exited? = state.termination { true } else { false } }
    /// When it ended, or nil while it runs.
    public var endedAt: Date? { state.endedAt }
    /// Seconds from its start to its end, or nil while it runs.
    public var runSeconds: Double? { endedAt.map { $0.timeIntervalSince(startedAt) } }

    /// What it did so far, as a ``ProcessResult`` (`timedOut` as given).
    public func result(timedOut: Bool = false) -> ProcessResult {
        let signaled = if case .signaled? = state.termination { true } else { false }
        return ProcessResult(command: command, status: status, signaled: signaled, timedOut: timedOut, stdout: stdout,
                             stderr: stderr, seconds: (endedAt ?? Date()).timeIntervalSince(startedAt))
    }

    // MARK: Standard input

    /// Writes to its standard input (started with ``ChildInput/pipe``), in order, without blocking
    /// the caller.
    public func writeStdin(_ bytes: [UInt8]) { stdinWriter?.write(bytes) }
    /// Writes UTF-8 text to its standard input; see ``writeStdin(_:)-([UInt8])``.
    public func writeStdin(_ text: String) { writeStdin(Array(text.utf8)) }
    /// Closes its standard input (after what was written before).
    public func closeStdin() { stdinWriter?.close() }
    /// Whether everything written to its standard input so far has been written into the pipe and read
    /// by the child from it (the event "it waits for more input").
    public var stdinDrained: Bool { stdinWriter?.drained ?? true }

    // MARK: Signals

    /// Sends signal `s` while it runs.
    public func signal(_ s: Int32) {
        if !hasEnded { Glibc.kill(pid, s) }
    }

    /// Kills it (SIGKILL) and waits for its end (blocking, with a hang guard of 60 s).
    public func kill() { stop(SIGKILL) }

    /// Sends `s` (e.g. SIGTERM) and waits for its end, blocking the caller (for `defer`); after `timeout`
    /// seconds (a hang guard) it gets SIGKILL. The child's exit status is read when it is reaped, which
    /// may be just after this returns: read ``status`` after ``wait(timeout:)`` returned true.
    public func stop(_ s: Int32, timeout: Double = 60) {
        signal(s)
        if !awaitEndBlocking(timeout: timeout) {
            signal(SIGKILL)
            _ = awaitEndBlocking(timeout: 60)
        }
    }

    /// Whether it has ended (it may not be reaped yet).
    private var hasEnded: Bool { state.termination != nil || pollEnd(0) }

    private func awaitEndBlocking(timeout: Double) -> Bool { hasEnded || pollEnd(Int32(timeout * 1000)) }

    private func pollEnd(_ milliseconds: Int32) -> Bool {
        var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while true {
            let n = poll(&p, 1, milliseconds)
            if n < 0, errno == EINTR { continue }
            return n > 0
        }
    }

    // MARK: Waits

    /// Waits for it to end and be reaped; false if it still runs after `timeout` seconds.
    public func wait(timeout: Double) async -> Bool {
        await state.wait(timeout: timeout) { $0.termination != nil }
    }

    /// Waits until `stream` satisfies `condition` (checked on each new output and at the end); false
    /// if it does not within `timeout` seconds or the child ended without it.
    public func waitFor(_ stream: ChildStream, timeout: Double, _ condition: (String) -> Bool) async -> Bool {
        var met = false
        _ = await state.wait(timeout: timeout) { snapshot in
            met = condition(String(decoding: stream == .stdout ? snapshot.stdout : snapshot.stderr, as: UTF8.self))
            return met || snapshot.termination != nil
        }
        return met
    }

    /// Waits until standard error satisfies `condition`; false if not within `timeout` seconds.
    public func waitForStderr(timeout: Double, _ condition: (String) -> Bool) async -> Bool {
        await waitFor(.stderr, timeout: timeout, condition)
    }

    /// Waits until `stream` satisfies `condition`; throws, naming `what` and showing the stream, when
    /// it does not within `timeout` seconds (a hang guard) or the child ended first without it.
    public func awaitOutput(_ stream: ChildStream, _ what: String, timeout: Double = 60, _ condition: (String) -> Bool) async throws {
        if await waitFor(stream, timeout: timeout, condition) { return }
        let how = isRunning ? "within \(timeout) s" : "before it exited (status \(status))"
        var message = "\(label): no \(what) on \(stream) \(how); \(stream):\n"
        message += stream == .stdout ? "\(stdoutText.suffix(3000))\nstandard error:\n\(stderrText.suffix(2000))" : "\(stderrText.suffix(3000))"
        throw ChildProcessError(message)
    }

    /// Waits until standard error satisfies `condition`; throws like ``awaitOutput(_:_:timeout:_:)``.
    public func awaitStderr(_ what: String, timeout: Double = 60, _ condition: (String) -> Bool) async throws {
        try await awaitOutput(.stderr, what, timeout: timeout, condition)
    }

    /// Waits until standard output satisfies `condition`; throws like ``awaitOutput(_:_:timeout:_:)``.
    public func awaitStdout(_ what: String, timeout: Double = 60, _ condition: (String) -> Bool) async throws {
        try await awaitOutput(.stdout, what, timeout: timeout, condition)
    }

    /// Waits for it to exit; throws, naming `what` it was expected to do, when it still runs after
    /// `timeout` seconds (a hang guard).
    public func awaitExit(_ what: String = "exit", timeout: Double = 60) async throws {
        if await wait(timeout: timeout) { return }
        throw ChildProcessError("\(label): no \(what) within \(timeout) s; standard error:\n\(stderrText.suffix(3000))")
    }

    /// The number after `prefix` on the first whole line of `stream` that has it (e.g. the port of
    /// `"listening on tcp:127.0.0.1:"`; an empty prefix: a line that starts with the number); waits for it up to `timeout` seconds (a hang guard), else
    /// throws naming what was awaited.
    public func announcedNumber(after prefix: String, on stream: ChildStream = .stderr, timeout: Double = 60) async throws -> Int {
        var number: Int?
        try await awaitOutput(stream, "line with '\(prefix)NUMBER'", timeout: timeout) { text in
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
                guard let start = prefix.isEmpty ? line.startIndex : line.range(of: prefix)?.upperBound else { continue }
                let digits = line[start...].prefix { $0.isNumber }
                // The whole number: the line may still be half written.
                guard !digits.isEmpty, digits.endIndex < line.endIndex || text.hasSuffix("\n") else { continue }
                number = Int(digits)
                return number != nil
            }
            return false
        }
        return number!
    }
}

/// Spawns `configuration` on swift-subprocess in a task of its own that drains the output streams into
/// `state` and records the end; returns the child's pid and a pidfd of ours once it runs.
private func launch<Output: OutputProtocol, ErrorOutput: ErrorOutputProtocol>(
    _ configuration: Configuration, _ input: FileDescriptor, _ output: Output, _ error: ErrorOutput, _ state: ChildState,
    streams: @escaping @Sendable (Execution<FileDescriptorInput, Output, ErrorOutput>)
        -> (stdout: SubprocessOutputSequence?, stderr: SubprocessOutputSequence?)
) async throws -> (pid: Int32, pidfd: Int32) {
    let handshake = Handshake()
    func answer(_ result: Result<(pid: Int32, pidfd: Int32), any Error>) { handshake.answer(result) }
    return try await withCheckedThrowingContinuation { continuation in
        handshake.set(continuation)
        Task {
            do {
                let outcome = try await Subprocess.run(
                    configuration, input: .fileDescriptor(input, closeAfterSpawningProcess: true),
                    output: output, error: error
                ) { execution in
                    let own = fcntl(execution.processIdentifier.processDescriptor, F_DUPFD_CLOEXEC, 0)
                    if own < 0 {
                        Glibc.kill(execution.processIdentifier.value, SIGKILL)
                        answer(.failure(ChildProcessError("no pidfd for \(configuration.executable): errno \(errno)")))
                    } else {
                        answer(.success((execution.processIdentifier.value, own)))
                    }
                    let (stdout, stderr) = streams(execution)
                    await withTaskGroup(of: Void.self) { group in
                        for case let (stream, sequence?) in [(ChildStream.stdout, stdout), (.stderr, stderr)] {
                            group.addTask {
                                do {
                                    for try await buffer in sequence {
                                        state.append(stream, buffer.withUnsafeBytes { Array($0) })
                                    }
                                } catch {
                                    state.append(.stderr, Array("[ProcessTestSupport: reading \(stream) failed: \(error)]\n".utf8))
                                }
                            }
                        }
                    }
                }
                state.finish(outcome.terminationStatus)
            } catch {
                answer(.failure(ChildProcessError("cannot run \(configuration.executable): \(error)")))
                state.finish(.exited(127))
            }
        }
    }
}

/// The answer of a spawn (its pid and pidfd, or why it failed), given once.
private final class Handshake: Sendable {
    private let continuation = Mutex<CheckedContinuation<(pid: Int32, pidfd: Int32), any Error>?>(nil)
    func set(_ c: CheckedContinuation<(pid: Int32, pidfd: Int32), any Error>) { continuation.withLock { $0 = c } }
    func answer(_ result: Result<(pid: Int32, pidfd: Int32), any Error>) {
        continuation.withLock { $0.take() }?.resume(with: result)
    }
}

private func openFile(_ path: String, _ flags: Int32) throws -> FileDescriptor {
    let fd = open(path, flags | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw ChildProcessError("cannot open \(path): errno \(errno)") }
    return FileDescriptor(rawValue: fd)
}

/// A child's output so far and its end, shared by the task that drains it and the waiters: an
/// ``Observed`` snapshot, so every chunk of output and the end wake the waits.
private final class ChildState: Sendable {
    struct Snapshot: Sendable, CustomStringConvertible {
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        var termination: TerminationStatus?
        var endedAt: Date?

        var description: String {
            "\(stdout.count) bytes on standard output, \(stderr.count) on standard error, "
                + (termination.map { "ended: \($0)" } ?? "running")
        }
    }
    private let observed = Observed(Snapshot())

    func output(_ stream: ChildStream) -> [UInt8] {
        let s = observed.value
        return stream == .stdout ? s.stdout : s.stderr
    }
    var termination: TerminationStatus? { observed.value.termination }
    var endedAt: Date? { observed.value.endedAt }

    func append(_ stream: ChildStream, _ bytes: [UInt8]) {
        observed.update { if stream == .stdout { $0.stdout += bytes } else { $0.stderr += bytes } }
    }

    func markEnded() { observed.update { if $0.endedAt == nil { $0.endedAt = Date() } } }

    func finish(_ status: TerminationStatus) {
        observed.update {
            $0.termination = status
            if $0.endedAt == nil { $0.endedAt = Date() }
        }
    }

    /// Waits until `done` holds for the current snapshot (checked now and after every change), or
    /// `timeout` seconds pass; returns whether it held.
    func wait(timeout: Double, _ done: (Snapshot) -> Bool) async -> Bool {
        await observed.wait(timeout: timeout, until: done) != nil
    }
}

/// The write end of a child's standard input pipe: writes run in order on a queue of their own
/// (a full pipe blocks that queue, never the caller); SIGPIPE is ignored so a write to a child that
/// stopped reading fails with EPIPE.
private final class StdinWriter: Sendable {
    private let queue = DispatchQueue(label: "ProcessTestSupport.stdin")
    private let fd = Mutex<Int32>(-1)
    /// Bytes handed to ``write(_:)`` and not yet written into the pipe.
    private let pending = Atomic<Int>(0)

    init(fd: Int32) {
        Glibc.signal(SIGPIPE, SIG_IGN)
        self.fd.withLock { $0 = fd }
    }

    func write(_ bytes: [UInt8]) {
        pending.add(bytes.count, ordering: .sequentiallyConsistent)
        queue.async { [self] in
            let f = fd.withLock { $0 }
            var offset = 0
            while f >= 0, offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.write(f, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                offset += n
            }
            pending.subtract(bytes.count, ordering: .sequentiallyConsistent)
        }
    }

    func close() {
        queue.async { [self] in
            fd.withLock { if $0 >= 0 { Glibc.close($0); $0 = -1 } }
        }
    }

    /// Everything handed over was written into the pipe, and the child read it all.
    var drained: Bool {
        guard pending.load(ordering: .sequentiallyConsistent) == 0 else { return false }
        return fd.withLock { f in
            guard f >= 0 else { return true }
            var count: Int32 = 0
            return ioctl(f, UInt(FIONREAD), &count) == 0 && count == 0
        }
    }
}
