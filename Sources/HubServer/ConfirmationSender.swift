import Foundation
import Logging

/// Delivers confirmation and reset codes out of band (the hub API's SMS, in general form).
public protocol ConfirmationSender: Sendable {
    /// Delivers `code` for `purpose` ("confirm" or "reset") to the account `user` at `contact`.
    func send(code: String, purpose: String, user: String, contact: String?) async
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
/// in its environment (never on its command line, where `ps` would show it).
public struct HookConfirmationSender: ConfirmationSender {
    let command: String
    let logger: Logger
    public init(command: String, logger: Logger) { self.command = command; self.logger = logger }
    public func send(code: String, purpose: String, user: String, contact: String?) async {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        var env = ProcessInfo.processInfo.environment
        env["HUB_CODE"] = code; env["HUB_USER"] = user; env["HUB_PURPOSE"] = purpose; env["HUB_CONTACT"] = contact ?? ""
        p.environment = env
        do {
            try p.run()
            let logger = self.logger
            p.terminationHandler = { proc in
                if proc.terminationStatus != 0 { logger.warning("code hook exited with \(proc.terminationStatus)") }
            }
        } catch {
            logger.error("code hook could not start: \(error)")
        }
    }
}
