import Foundation
import Logging
import Synchronization

/// Delivers confirmation and reset codes out of band (the hub API's SMS, in general form).
public protocol ConfirmationSender: Sendable {
    /// Delivers `code` for `purpose` ("confirm" or "reset") to the account `user` at `contact`.
    func send(code: String, purpose: String, user: String, contact: String?) async
    /// Delivers as ``send(code:purpose:user:contact:)`` does, or throws ``CodeDeliveryBusy`` when the
    /// sender cannot take another delivery now (the request is then refused with 429). By default it
    /// sends.
    func deliver(code: String, purpose: String, user: String, contact: String?) async throws
    /// The seconds to suggest in `Retry-After` when a delivery asked for now would be refused as busy,
    /// else nil. Counts and takes nothing: a request that delivers nothing (a reset for a name that is not
    /// an account) asks it so that its answer does not tell that it delivered nothing. By default nil.
    func busyRetryAfter() -> Int?
}

extension ConfirmationSender {
    public func deliver(code: String, purpose: String, user: String, contact: String?) async throws {
        await send(code: code, purpose: purpose, user: user, contact: contact)
    }
    public func busyRetryAfter() -> Int? { nil }
}

/// A delivery refused because as many as allowed are running (`--code-hook-concurrency`).
public struct CodeDeliveryBusy: Error, Sendable, Equatable {
    /// Seconds to suggest in `Retry-After`.
    public let retryAfter: Int
    public init(retryAfter: Int) { self.retryAfter = retryAfter }
}

/// Development delivery: the code goes to the server's log, only when `--log-codes` was given.
public struct LogConfirmationSender: ConfirmationSender {
    let logger: Logger
    let enabled: Bool
    public init(logger: Logger, enabled: Bool) { self.logger = logger; self.enabled = enabled }
    public func send(code: String, purpose: String, user: String, contact: String?) async {
        if enabled {
            let what = purpose == "reset" ? "reset code" : "confirmation code"
            logger.notice("\(what) for \(user): \(code)")
        } else {
            logger.notice("a \(purpose) code for \(user) was not delivered: start with --log-codes or --code-hook CMD")
        }
    }
}

/// Production delivery: runs `/bin/sh -c CMD` with `HUB_CODE`, `HUB_USER`, `HUB_PURPOSE`, `HUB_CONTACT`
/// in its environment (never on its command line, where `ps` would show it). At most `concurrency`
/// hooks run at once (`--code-hook-concurrency`); a delivery beyond that is refused (``CodeDeliveryBusy``),
/// never queued without end nor dropped in silence. A hook still running after `timeout`
/// (`--code-hook-timeout`) is killed (its process group when it leads one) and logged, never with its
/// code, and its slot is free again.
public struct HookConfirmationSender: ConfirmationSender {
    /// How one hook ended (for ``init(command:logger:concurrency:timeout:onFinish:)``'s `onFinish`).
    public enum Outcome: Sendable, Equatable {
        /// It exited by itself with this status.
        case exited(Int32)
        /// It ran past the timeout and was killed.
        case timedOut
        /// It could not be started.
        case notStarted
    }

    let command: String
    let logger: Logger
    let concurrency: Int
    let timeout: Duration
    let onFinish: (@Sendable (Outcome) -> Void)?
    private let running: Running

    private final class Running: Sendable {
        let count = Mutex(0)
    }

    /// One hook's state: whether it ended, so that the deadline kills only a process still running.
    private final class Hook: Sendable {
        let ended = Mutex(false)
    }

    /// - Parameters:
    ///   - timeout: how long one hook may run before it is killed (30 s by default).
    ///   - onFinish: called once per started hook when it ended and its slot is free (tests, metrics).
    public init(command: String, logger: Logger, concurrency: Int = 4, timeout: Duration = .seconds(30),
                onFinish: (@Sendable (Outcome) -> Void)? = nil) {
        self.command = command; self.logger = logger
        self.concurrency = max(1, concurrency)
        self.timeout = max(.milliseconds(1), timeout)
        self.onFinish = onFinish
        self.running = Running()
    }

    /// Hooks running now.
    public var runningCount: Int { running.count.withLock { $0 } }

    public func busyRetryAfter() -> Int? {
        running.count.withLock { $0 } >= concurrency ? 5 : nil
    }

    public func send(code: String, purpose: String, user: String, contact: String?) async {
        do {
            try await deliver(code: code, purpose: purpose, user: user, contact: contact)
        } catch {
            logger.error("a \(purpose) code for \(user) was not delivered: \(concurrency) code hooks are running")
        }
    }

    public func deliver(code: String, purpose: String, user: String, contact: String?) async throws {
        let limit = concurrency
        let taken = running.count.withLock { n -> Bool in
            guard n < limit else { return false }
            n += 1
            return true
        }
        guard taken else {
            logger.warning("code hook busy: \(limit) running; a \(purpose) code was refused")
            throw CodeDeliveryBusy(retryAfter: 5)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        var env = ProcessInfo.processInfo.environment
        env["HUB_CODE"] = code; env["HUB_USER"] = user; env["HUB_PURPOSE"] = purpose; env["HUB_CONTACT"] = contact ?? ""
        p.environment = env
        let logger = self.logger, running = self.running, onFinish = self.onFinish, hook = Hook()
        p.terminationHandler = { proc in
            let timedOut = hook.ended.withLock { ended -> Bool in
                defer { ended = true }
                return ended  // the deadline marked it ended when it killed it
            }
            running.count.withLock { $0 -= 1 }
            if timedOut {
                onFinish?(.timedOut)
            } else {
                if proc.terminationStatus != 0 { logger.warning("code hook exited with \(proc.terminationStatus)") }
                onFinish?(.exited(proc.terminationStatus))
            }
        }
        do {
            try p.run()
        } catch {
            running.count.withLock { $0 -= 1 }
            logger.error("code hook could not start: \(error)")
            onFinish?(.notStarted)
            return
        }
        let pid = p.processIdentifier, timeout = self.timeout
        Task.detached {
            try? await Task.sleep(for: timeout)
            hook.ended.withLock { ended in
                guard !ended else { return }
                ended = true
                // Its whole process group when it leads one (the hook's own children too), else the shell.
                if getpgid(pid) == pid { _ = kill(-pid, SIGKILL) } else { _ = kill(pid, SIGKILL) }
                logger.warning("code hook killed: still running after \(timeout) (a \(purpose) code for \(user) was not delivered)")
            }
        }
    }
}
