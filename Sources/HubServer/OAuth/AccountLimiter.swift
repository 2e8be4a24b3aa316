import HubCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bounds on the account flow and on logins (sign-ups, codes issued, guesses at codes, password
/// grants), per account and per client address. Each is a `modem-hub serve` option (docs/hub.md); a
/// request over one is refused with 429 and `Retry-After` and does nothing.
///
/// Accounts are counted under the key of their name (``AccountName/key(_:)``), whether or not the account
/// exists, so a refusal tells nothing about which names exist. Windows slide; nothing an attacker does
/// (asking for a new code, another case of the name) gives a budget back.
public struct AccountLimits: Sendable, Equatable {
    /// Sign-ups (each a bcrypt and a code delivery) per client address per hour (`--signups-per-address-per-hour`).
    public var signupsPerAddressPerHour = 20
    /// Codes issued (sign-up and forgot) per account per hour (`--codes-per-account-per-hour`).
    public var codesPerAccountPerHour = 3
    /// Codes issued per client address per hour, whatever the account (`--codes-per-address-per-hour`).
    public var codesPerAddressPerHour = 20
    /// Wrong guesses one code allows before it is deleted (`--code-tries`).
    public var codeTries = 5
    /// Guesses at codes (confirm and reset) per account per hour, across every code it is sent
    /// (`--code-guesses-per-account-per-hour`).
    public var codeGuessesPerAccountPerHour = 10
    /// Guesses at codes per client address per hour, whatever the account (`--code-guesses-per-address-per-hour`).
    public var codeGuessesPerAddressPerHour = 30
    /// Failed password grants per account per minute (`--login-failures-per-account-per-minute`).
    public var loginFailuresPerAccountPerMinute = 5
    /// Failed password grants per account per hour (`--login-failures-per-account-per-hour`).
    public var loginFailuresPerAccountPerHour = 30
    /// Password grants (failed or not) per client address per minute (`--logins-per-address-per-minute`).
    public var loginsPerAddressPerMinute = 20
    /// Password grants (failed or not) per client address per hour (`--logins-per-address-per-hour`).
    public var loginsPerAddressPerHour = 300
    /// Keys (addresses or accounts) each limiter keeps at most (`--limiter-keys`); see ``BoundedRateLimiter``.
    public var limiterKeys = 100_000
    public init() {}
}

/// The limiters of ``AccountLimits`` on the authority's clock (Unix milliseconds), in bounded memory.
public final class AccountLimiter: Sendable {
    /// What is counted.
    public enum Event: Sendable {
        /// A sign-up from `address`.
        case signup(address: String)
        /// A code issued for the account of key `account`, asked for from `address`.
        case code(account: String, address: String)
        /// A guess at a code of `account` from `address`.
        case guess(account: String, address: String)
        /// A password grant for `account` from `address`: counted per address, and reserved as a failure
        /// of the account until ``AccountLimiter/loginSucceeded(account:admittedAtMs:)`` gives it back, so
        /// that concurrent guesses are counted before their bcrypt, not after.
        case login(account: String, address: String)
    }

    public let limits: AccountLimits
    private struct State {
        var signupsPerAddress: BoundedRateLimiter
        var codesPerAccount: BoundedRateLimiter
        var codesPerAddress: BoundedRateLimiter
        var guessesPerAccount: BoundedRateLimiter
        var guessesPerAddress: BoundedRateLimiter
        var loginFailuresPerMinute: BoundedRateLimiter
        var loginFailuresPerHour: BoundedRateLimiter
        var loginsPerAddress: BoundedRateLimiter
        var loginsPerAddressPerHour: BoundedRateLimiter
    }
    private let state: Mutex<State>
    private let refusalHandler = Mutex<(@Sendable (String) -> Void)?>(nil)

    static let hourMs: Int64 = 3_600_000
    static let minuteMs: Int64 = 60_000

    public init(limits: AccountLimits) {
        self.limits = limits
        let k = limits.limiterKeys
        state = Mutex(State(
            signupsPerAddress: BoundedRateLimiter(limit: limits.signupsPerAddressPerHour, windowMs: Self.hourMs, maxKeys: k),
            codesPerAccount: BoundedRateLimiter(limit: limits.codesPerAccountPerHour, windowMs: Self.hourMs, maxKeys: k),
            codesPerAddress: BoundedRateLimiter(limit: limits.codesPerAddressPerHour, windowMs: Self.hourMs, maxKeys: k),
            guessesPerAccount: BoundedRateLimiter(limit: limits.codeGuessesPerAccountPerHour, windowMs: Self.hourMs, maxKeys: k),
            guessesPerAddress: BoundedRateLimiter(limit: limits.codeGuessesPerAddressPerHour, windowMs: Self.hourMs, maxKeys: k),
            loginFailuresPerMinute: BoundedRateLimiter(limit: limits.loginFailuresPerAccountPerMinute, windowMs: Self.minuteMs, maxKeys: k),
            loginFailuresPerHour: BoundedRateLimiter(limit: limits.loginFailuresPerAccountPerHour, windowMs: Self.hourMs, maxKeys: k),
            loginsPerAddress: BoundedRateLimiter(limit: limits.loginsPerAddressPerMinute, windowMs: Self.minuteMs, maxKeys: k),
            loginsPerAddressPerHour: BoundedRateLimiter(limit: limits.loginsPerAddressPerHour, windowMs: Self.hourMs, maxKeys: k)))
    }

    /// The key of a client address for the limits per address: an IPv4 address as it is, an IPv6 address
    /// by its /64 (one subscriber's network: a host picks any address in it at will), anything else as it is.
    public static func addressKey(_ address: String) -> String {
        ClientAddress.limitKey(address)  // the one key of every limit per address
    }

    /// Counts `event` in every limiter it belongs to and answers nil, or answers the seconds to wait
    /// (the longest of the limiters it is over) and counts nothing: all or none. Addresses are keyed by
    /// ``addressKey(_:)``.
    public func admit(_ event: Event, nowMs: Int64) -> Int? {
        let event: Event = switch event {
        case .signup(let a): .signup(address: Self.addressKey(a))
        case .code(let n, let a): .code(account: n, address: Self.addressKey(a))
        case .guess(let n, let a): .guess(account: n, address: Self.addressKey(a))
        case .login(let n, let a): .login(account: n, address: Self.addressKey(a))
        }
        let refusal = state.withLock { s -> (wait: Int, limit: String)? in
            switch event {
            case .signup(let address):
                return Self.admit([(\State.signupsPerAddress, address, "signups-per-address-per-hour")], in: &s, nowMs: nowMs)
            case .code(let account, let address):
                return Self.admit([(\State.codesPerAccount, account, "codes-per-account-per-hour"),
                                   (\State.codesPerAddress, address, "codes-per-address-per-hour")], in: &s, nowMs: nowMs)
            case .guess(let account, let address):
                return Self.admit([(\State.guessesPerAccount, account, "code-guesses-per-account-per-hour"),
                                   (\State.guessesPerAddress, address, "code-guesses-per-address-per-hour")], in: &s, nowMs: nowMs)
            case .login(let account, let address):
                // The attempt is reserved as a failure of the account now, before its bcrypt: a burst of
                // concurrent guesses all count, and only a success gives its reservation back.
                return Self.admit([(\State.loginFailuresPerMinute, account, "login-failures-per-account-per-minute"),
                                   (\State.loginFailuresPerHour, account, "login-failures-per-account-per-hour"),
                                   (\State.loginsPerAddress, address, "logins-per-address-per-minute"),
                                   (\State.loginsPerAddressPerHour, address, "logins-per-address-per-hour")],
                                  in: &s, nowMs: nowMs)
            }
        }
        guard let refusal else { return nil }
        refusalHandler.withLock { $0 }?(refusal.limit)
        return refusal.wait
    }

    /// Calls `handler` with the name of the bound (its `serve` option without the dashes, e.g.
    /// `signups-per-address-per-hour`) each time ``admit(_:nowMs:)`` refuses (the hub's metrics count them).
    public func onRefusal(_ handler: (@Sendable (String) -> Void)?) {
        refusalHandler.withLock { $0 = handler }
    }

    /// Records a failed password grant for the account of key `account` (one that was not admitted by
    /// ``admit(_:nowMs:)``, which reserves the failure itself).
    public func loginFailed(account: String, nowMs: Int64) {
        state.withLock { s in
            s.loginFailuresPerMinute.record(account, nowMs: nowMs)
            s.loginFailuresPerHour.record(account, nowMs: nowMs)
        }
    }

    /// Gives back the failure reserved for the account of key `account` when its password grant was
    /// admitted at `admittedAtMs` and succeeded (the per-address counts stay).
    public func loginSucceeded(account: String, admittedAtMs: Int64) {
        state.withLock { s in
            s.loginFailuresPerMinute.giveBack(account, atMs: admittedAtMs)
            s.loginFailuresPerHour.giveBack(account, atMs: admittedAtMs)
        }
    }

    /// Keys kept by the limiters, in all (for tests of the memory bound).
    public var keyCount: Int {
        state.withLock { s in
            s.signupsPerAddress.keyCount + s.codesPerAccount.keyCount + s.codesPerAddress.keyCount + s.guessesPerAccount.keyCount
                + s.guessesPerAddress.keyCount + s.loginFailuresPerMinute.keyCount + s.loginFailuresPerHour.keyCount
                + s.loginsPerAddress.keyCount + s.loginsPerAddressPerHour.keyCount
        }
    }

    /// Counts every part or none; the longest wait and the bound that imposes it when over one.
    private static func admit(_ parts: [(WritableKeyPath<State, BoundedRateLimiter>, String, String)], in s: inout State,
                              nowMs: Int64) -> (wait: Int, limit: String)? {
        let waits = parts.compactMap { p in s[keyPath: p.0].retryAfter(p.1, nowMs: nowMs).map { (wait: $0, limit: p.2) } }
        if let longest = waits.max(by: { $0.wait < $1.wait }) { return longest }
        var refused: (wait: Int, limit: String)?
        var counted: [(WritableKeyPath<State, BoundedRateLimiter>, String)] = []
        for (path, key, name) in parts {
            // Only a table full of keys at their limits refuses here (see BoundedRateLimiter).
            if let wait = s[keyPath: path].admit(key, nowMs: nowMs) {
                if wait > (refused?.wait ?? -1) { refused = (wait, name) }
            } else {
                counted.append((path, key))
            }
        }
        // All or none: a refusal takes back what the other parts counted.
        if refused != nil { for (path, key) in counted { s[keyPath: path].giveBack(key, atMs: nowMs) } }
        return refused
    }
}
