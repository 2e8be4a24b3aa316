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
}

extension ConfirmationSender {
    public func deliver(code: String, purpose: String, user: String, contact: String?) async throws {
        await send(code: code, purpose: purpose, user: user, contact: contact)
    }
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
/// never queued without end nor dropped in silence.
public struct HookConfirmationSender: ConfirmationSender {
    let command: String
    let logger: Logger
    let concurrency: Int
    private let running: Running

    private final class Running: Sendable {
        let count = Mutex(0)
    }

    public init(command: String, logger: Logger, concurrency: Int = 4) {
        self.command = command; self.logger = logger
        self.concurrency = max(1, concurrency)
        self.running = Running()
    }

    /// Hooks running now.
    public var runningCount: Int { running.count.withLock { $0 } }

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
        let logger = self.logger, running = self.running
        p.terminationHandler = { proc in
            running.count.withLock { $0 -= 1 }
            if proc.terminationStatus != 0 { logger.warning("code hook exited with \(proc.terminationStatus)") }
        }
        do {
            try p.run()
        } catch {
            running.count.withLock { $0 -= 1 }
            logger.error("code hook could not start: \(error)")
        }
    }
}
