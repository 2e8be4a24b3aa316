import ArgumentParser
import HubServer

/// `modem-hub serve`'s bounds on the account flow and on logins (issue 32; docs/hub.md). Every bound is
/// per client address or per account (names that differ only in case are one account); a request over
/// one is answered 429 with `Retry-After`.
struct AccountOptions: ParsableArguments {
    @Option(name: .customLong("signups-per-address-per-hour"), parsing: .unconditional,
            help: "Sign-ups (each a bcrypt and a code delivery) from one address per hour (1 to 100000).")
    var signupsPerAddressPerHour = AccountLimits().signupsPerAddressPerHour
    @Option(name: .customLong("codes-per-account-per-hour"), parsing: .unconditional,
            help: "Confirmation and reset codes issued for one account per hour (1 to 1000).")
    var codesPerAccountPerHour = AccountLimits().codesPerAccountPerHour
    @Option(name: .customLong("codes-per-address-per-hour"), parsing: .unconditional,
            help: "Codes issued at the request of one address per hour, for any accounts (1 to 100000).")
    var codesPerAddressPerHour = AccountLimits().codesPerAddressPerHour
    @Option(name: .customLong("code-tries"), parsing: .unconditional,
            help: "Wrong guesses one code allows before it is deleted (1 to 100).")
    var codeTries = AccountLimits().codeTries
    @Option(name: .customLong("code-guesses-per-account-per-hour"), parsing: .unconditional,
            help: "Guesses at the codes of one account per hour, across every code it is sent (1 to 1000).")
    var codeGuessesPerAccountPerHour = AccountLimits().codeGuessesPerAccountPerHour
    @Option(name: .customLong("code-guesses-per-address-per-hour"), parsing: .unconditional,
            help: "Guesses at codes from one address per hour, for any accounts (1 to 100000).")
    var codeGuessesPerAddressPerHour = AccountLimits().codeGuessesPerAddressPerHour
    @Option(name: .customLong("login-failures-per-account-per-minute"), parsing: .unconditional,
            help: "Failed password grants for one account per minute (1 to 10000).")
    var loginFailuresPerAccountPerMinute = AccountLimits().loginFailuresPerAccountPerMinute
    @Option(name: .customLong("login-failures-per-account-per-hour"), parsing: .unconditional,
            help: "Failed password grants for one account per hour (1 to 100000).")
    var loginFailuresPerAccountPerHour = AccountLimits().loginFailuresPerAccountPerHour
    @Option(name: .customLong("logins-per-address-per-minute"), parsing: .unconditional,
            help: "Password grants from one address per minute (1 to 100000).")
    var loginsPerAddressPerMinute = AccountLimits().loginsPerAddressPerMinute
    @Option(name: .customLong("logins-per-address-per-hour"), parsing: .unconditional,
            help: "Password grants from one address per hour (1 to 1000000).")
    var loginsPerAddressPerHour = AccountLimits().loginsPerAddressPerHour
    @Option(name: .customLong("limiter-keys"), parsing: .unconditional,
            help: "Addresses or accounts each account limiter remembers at most; one at its limit is never forgotten early (1000 to 10000000).")
    var limiterKeys = AccountLimits().limiterKeys
    @Option(name: .customLong("code-hook-concurrency"), parsing: .unconditional,
            help: "Code hooks (--code-hook) running at once; a code beyond them is refused with 429 (1 to 1000).")
    var codeHookConcurrency = 4
    @Option(name: .customLong("code-hook-timeout"), parsing: .unconditional,
            help: "Seconds one code hook (--code-hook) may run before it is killed and its slot freed (1 to 3600).")
    var codeHookTimeout = 30

    @Option(name: .customLong("bcrypt-cost"), parsing: .unconditional,
            help: "bcrypt cost of stored passwords: each step doubles the work of a sign-up, a login and a guess (4 to 18; below 10 only for tests). A hash of another cost is made anew at its owner's next login.")
    var bcryptCost = Int(HubAuthority.defaultBcryptCost)

    /// The limits, or the message of the first option out of its range.
    func limits() -> Result<AccountLimits, ValidationError> {
        let checks: [(String, Int, ClosedRange<Int>)] = [
            ("--signups-per-address-per-hour", signupsPerAddressPerHour, 1...100_000),
            ("--codes-per-account-per-hour", codesPerAccountPerHour, 1...1000),
            ("--codes-per-address-per-hour", codesPerAddressPerHour, 1...100_000),
            ("--code-tries", codeTries, 1...100),
            ("--code-guesses-per-account-per-hour", codeGuessesPerAccountPerHour, 1...1000),
            ("--code-guesses-per-address-per-hour", codeGuessesPerAddressPerHour, 1...100_000),
            ("--login-failures-per-account-per-minute", loginFailuresPerAccountPerMinute, 1...10_000),
            ("--login-failures-per-account-per-hour", loginFailuresPerAccountPerHour, 1...100_000),
            ("--logins-per-address-per-minute", loginsPerAddressPerMinute, 1...100_000),
            ("--limiter-keys", limiterKeys, 1000...10_000_000),
            ("--code-hook-concurrency", codeHookConcurrency, 1...1000),
            ("--logins-per-address-per-hour", loginsPerAddressPerHour, 1...1_000_000),
            ("--code-hook-timeout", codeHookTimeout, 1...3600),
            ("--bcrypt-cost", bcryptCost, HubAuthority.Settings.bcryptCosts),
        ]
        for (name, value, range) in checks where !range.contains(value) {
            return .failure(ValidationError("\(name) must be \(range.lowerBound) to \(range.upperBound), not \(value)"))
        }
        var l = AccountLimits()
        l.signupsPerAddressPerHour = signupsPerAddressPerHour
        l.codesPerAccountPerHour = codesPerAccountPerHour
        l.codesPerAddressPerHour = codesPerAddressPerHour
        l.codeTries = codeTries
        l.codeGuessesPerAccountPerHour = codeGuessesPerAccountPerHour
        l.codeGuessesPerAddressPerHour = codeGuessesPerAddressPerHour
        l.loginFailuresPerAccountPerMinute = loginFailuresPerAccountPerMinute
        l.loginFailuresPerAccountPerHour = loginFailuresPerAccountPerHour
        l.loginsPerAddressPerMinute = loginsPerAddressPerMinute
        l.loginsPerAddressPerHour = loginsPerAddressPerHour
        l.limiterKeys = limiterKeys
        return .success(l)
    }
}
