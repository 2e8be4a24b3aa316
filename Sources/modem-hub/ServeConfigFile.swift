// `modem-hub serve --config FILE`: serve's settings from a TOML file (docs/hub-config.example.toml has
// every one), each under its option's long name (`listen = "127.0.0.1:8080"`, `heartbeat = 5`,
// `log-codes = true`, `trusted-proxy = ["10.0.0.0/8"]`). The file is read before the command line is
// parsed and its settings become options placed before the user's, so one parser checks them all
// alike; an option given on the command line replaces the file's setting of the same name (a list as a
// whole, and `--no-log-codes` a file's `log-codes = true`). Precedence: the command line, then the
// environment (`MODEM_HUB_DB`), then the file, then the defaults.
//
// The file is checked first: an unknown key or a value of the wrong type is refused naming the key and
// the file (exit 64), as is a file that is not TOML (with its line and column); a file that cannot be
// read is exit 1. Values in range are checked by `serve` as its options are (exit 64, naming the
// option, which is the key with two dashes).

import Foundation
import TOMLKit
#if canImport(Glibc)
import Glibc
#endif

enum ServeConfigFile {
    /// The type a setting takes in the file.
    enum Kind: Equatable {
        /// A TOML string.
        case string
        /// A TOML integer.
        case integer
        /// A TOML integer or float.
        case number
        /// `true` or `false` (the option `--KEY`, or `--no-KEY`).
        case flag
        /// A TOML array of strings, or one string (the option once per item).
        case strings

        var noun: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .number: "a number"
            case .flag: "true or false"
            case .strings: "a string or an array of strings"
            }
        }
    }

    /// Every setting of `serve`: its options' long names and types (a test keeps this and
    /// `modem-hub serve --experimental-dump-help` equal).
    static let settings: [String: Kind] = {
        var s: [String: Kind] = [
            "listen": .string, "db": .string, "node": .string, "heartbeat": .number, "tls-cert": .string, "tls-key": .string,
            "issuer": .string, "access-ttl": .integer, "head-timeout": .number, "idle-timeout": .number, "shutdown-timeout": .number,
            "max-connections-per-address": .integer, "log-codes": .flag, "code-hook": .string, "log-level": .string,
            "metrics": .flag, "transit-listen": .string, "transit-timeout": .number, "transit-max-pairs": .integer, "transit-splice": .flag,
            // NetworkOptions
            "trusted-proxy": .strings, "transit-handshake-timeout": .number, "transit-idle-timeout": .number,
        ]
        for k in ["signups-per-address-per-hour", "codes-per-account-per-hour", "codes-per-address-per-hour", "code-tries",
                  "code-guesses-per-account-per-hour", "code-guesses-per-address-per-hour", "login-failures-per-account-per-minute",
                  "login-failures-per-account-per-hour", "logins-per-address-per-minute", "logins-per-address-per-hour", "limiter-keys",
                  "code-hook-concurrency", "code-hook-timeout", "bcrypt-cost",                                // AccountOptions
                  "transit-max-pairs-per-address", "transit-max-waiting-per-address", "wormhole-max-nameplates-per-address",
                  "wormhole-max-mailboxes-per-address", "wormhole-max-bytes-per-address", "wormhole-max-bytes",
                  "wormhole-max-tracked-addresses",                                               // NetworkOptions
                  "max-posts-per-user-per-group", "max-posts-per-group", "max-posts-per-user", "max-groups-per-user",
                  "devices-per-address-per-hour", "max-devices-per-client", "max-socket-queue-bytes"] {  // GroupOptions
            s[k] = .integer
        }
        return s
    }()

    /// The settings that may come from an environment variable instead of the file (the variable wins
    /// over the file, an option on the command line over both): the database URL, which may hold a password.
    static let environment = ["db": "MODEM_HUB_DB"]

    /// Why the settings could not be taken: the message (without the program's name) and the exit status.
    struct Failure: Error {
        let message: String
        /// 64 for a bad file or setting, 1 for a file that cannot be read.
        let status: Int32
    }

    /// The command line (without the program's name) with the settings of `serve --config FILE` placed
    /// before the user's own options; any other command line as it is.
    static func expand(_ arguments: [String], environment env: [String: String] = ProcessInfo.processInfo.environment)
        throws(Failure) -> [String] {
        guard arguments.first == "serve" else { return arguments }
        let user = Array(arguments.dropFirst())
        let options = user.prefix { $0 != "--" }
        var files: [String] = []
        for (i, a) in options.enumerated() {
            if a == "--config", i + 1 < options.count { files.append(options[options.startIndex + i + 1]) }
            if a.hasPrefix("--config=") { files.append(String(a.dropFirst("--config=".count))) }
        }
        guard let file = files.first else { return arguments }
        guard files.count == 1 else { throw Failure(message: "--config is given more than once", status: 64) }
        let text = try read(file)
        let given = Set(options.compactMap(optionName))
        return ["serve"] + (try self.arguments(fromTOML: text, file: file, except: given, environment: env)) + user
    }

    /// The long name an argument gives (`--listen`, `--listen=X`: `listen`; `--no-log-codes`: `log-codes`),
    /// nil for a value or a short option.
    static func optionName(_ argument: String) -> String? {
        guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
        let name = String(argument.dropFirst(2).prefix { $0 != "=" })
        if name.hasPrefix("no-"), settings[String(name.dropFirst(3))] == .flag { return String(name.dropFirst(3)) }
        return name
    }

    /// The file's text; exit 1 naming it when it cannot be read, 64 when it is not UTF-8.
    static func read(_ file: String) throws(Failure) -> String {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw Failure(message: "cannot read the settings file \(file): \(String(cString: strerror(errno)))", status: 1)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 {
                let why = String(cString: strerror(errno))
                close(fd)
                throw Failure(message: "cannot read the settings file \(file): \(why)", status: 1)
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > 1 << 20 {
                close(fd)
                throw Failure(message: "\(file): a settings file is at most 1 MiB", status: 64)
            }
        }
        close(fd)
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Failure(message: "\(file): not UTF-8 text", status: 64) }
        return text
    }

    /// `serve`'s options for the settings in `text` (TOML), leaving out those named in `except` (given on
    /// the command line) and those whose environment variable is set. Every problem is reported at once,
    /// one line each, naming the file and the key.
    static func arguments(fromTOML text: String, file: String, except given: Set<String> = [],
                          environment env: [String: String] = [:]) throws(Failure) -> [String] {
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch let e as TOMLParseError {
            throw Failure(message: "\(file):\(e.source.begin.line):\(e.source.begin.column): \(e.description)", status: 64)
        } catch {
            throw Failure(message: "\(file): not TOML: \(error)", status: 64)
        }
        var arguments: [String] = []
        var problems: [String] = []
        for key in table.keys.sorted() {
            guard let kind = settings[key] else {
                let hint = key.hasPrefix("-") ? " (write keys without dashes)" : key == "config" ? " (a settings file names no other)" : ""
                problems.append("unknown setting '\(key)'\(hint); the settings are serve's options, see modem-hub serve --help")
                continue
            }
            guard !given.contains(key) else { continue }
            if let variable = environment[key], let v = env[variable], !v.isEmpty { continue }
            guard let value = table[key]?.tomlValue, let args = options(key, kind, value) else {
                let shown = table[key].map { describe($0.tomlValue) } ?? "nothing"
                problems.append("'\(key)' takes \(kind.noun), not \(shown)")
                continue
            }
            arguments += args
        }
        if !problems.isEmpty {
            throw Failure(message: problems.map { "\(file): \($0)" }.joined(separator: "\nmodem-hub: "), status: 64)
        }
        return arguments
    }

    /// The options for one setting, nil when the value is not of the setting's type.
    static func options(_ key: String, _ kind: Kind, _ value: TOMLValue) -> [String]? {
        let option = "--" + key
        switch (kind, value.type) {
        case (.string, .string): return value.string.map { [option, $0] }
        case (.integer, .int), (.number, .int): return value.int.map { [option, String($0)] }
        case (.number, .double): return value.double.map { [option, String($0)] }
        case (.flag, .bool): return value.bool.map { [$0 ? option : "--no-" + key] }
        case (.strings, .string): return value.string.map { [option, $0] }
        case (.strings, .array):
            guard let items = value.array else { return nil }
            var out: [String] = []
            for item in items {
                guard item.tomlValue.type == .string, let s = item.tomlValue.string else { return nil }
                out += [option, s]
            }
            return out
        default: return nil
        }
    }

    /// A value for a message: its TOML type and, for scalars, the value.
    static func describe(_ value: TOMLValue) -> String {
        switch value.type {
        case .string: "a string (\"\(value.string ?? "")\")"
        case .int: "an integer (\(value.int.map(String.init) ?? ""))"
        case .double: "a float (\(value.double.map { String($0) } ?? ""))"
        case .bool: "a boolean (\(value.bool.map(String.init) ?? ""))"
        case .array: "an array"
        case .table: "a table"
        default: "a \(value.type)"
        }
    }
}
