import ArgumentParser
import Foundation
import ModemMessaging
import SwiftModem

/// `--keys DIR`: the keys folder, shared by every messaging command.
struct KeysOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The keys folder (default $XDG_DATA_HOME/swiftmodem/keys or ~/.local/share/swiftmodem/keys); created 0700 on first use.",
                               valueName: "DIR"))
    var keys: String?

    /// The key store, created on first use. Bad names, keys and dates become usage errors (64).
    func open() throws -> KeyStore {
        try KeysOptions.mapping { () throws(KeyStoreError) in try KeyStore(folder: keys) }
    }

    /// Runs `body`, turning a key store error about bad input into a ``UsageError`` (exit 64) and
    /// any other into a ``CLIError`` (exit 1).
    static func mapping<T>(_ body: () throws(KeyStoreError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            switch error.kind {
            case .invalidKey, .invalidName, .invalidDate, .nameTaken: throw UsageError(error.description)
            default: throw CLIError(error.description)
            }
        }
    }
}

/// `modem keys`: this installation's identity and the peers it trusts.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Show this installation's public key; trust, list and forget peers' keys.",
        discussion: helpText("""
        Sessions (mailbox, send, receive) are encrypted end to end and connect only to peers whose \
        public key is trusted here. Exchange keys with 'modem keys show' on each side and \
        'modem keys trust NAME KEY', or pair by sound with 'modem pair'.
        """),
        subcommands: [Show.self, Trust.self, List.self, Forget.self]
    )

    /// `modem keys show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the own public key (created on first use).",
            discussion: "Prints the keys folder and the key's fingerprint, then the key text alone on the last line."
        )
        @OptionGroup var keyOptions: KeysOptions

        func run() async throws {
            try await reportingErrors {
                let store = try keyOptions.open()
                let key = try KeysOptions.mapping { () throws(KeyStoreError) in try store.publicKey() }
                try printOutput("folder \(store.folder)")
                try printOutput("fingerprint \(keyFingerprint(key))")
                try printOutput(KeyText.encode(key))
            }
        }
    }

    /// `modem keys trust NAME KEY`.
    struct Trust: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trust a peer's public key under a name.",
            discussion: "NAME is a label of 1 to 64 characters A-Z a-z 0-9 . _ -; KEY is the peer's 'modem keys show' text. An entry with the same key is replaced; a NAME already trusted for another key is refused (one name names one key: sessions name a peer by it)."
        )
        @Argument(help: "A name for the peer.") var name: String
        @Argument(help: "The peer's key text (smk1...).") var key: String
        @Option(help: ArgumentHelp("When the trust ends, RFC 3339 (2027-01-31T12:00:00Z).", valueName: "TIME")) var expires: String?
        @OptionGroup var keyOptions: KeysOptions

        func run() async throws {
            try await reportingErrors {
                let bytes = try KeysOptions.mapping { () throws(KeyStoreError) in try KeyText.decode(key) }
                try KeysOptions.mapping { () throws(KeyStoreError) in try KeyStore.validateName(name) }
                let date = try expires.map { text in try KeysOptions.mapping { () throws(KeyStoreError) in try RFC3339.parse(text) } }
                if let date, let expires, date <= Date() {
                    throw UsageError("--expires \(expires) is in the past: the trust would end before it began")
                }
                let store = try keyOptions.open()
                let own = try KeysOptions.mapping { () throws(KeyStoreError) in try store.publicKey() }
                if own == bytes {
                    throw UsageError("that key is this installation's own (modem keys show): trust the peer's key instead")
                }
                try KeysOptions.mapping { () throws(KeyStoreError) in try store.trust(name: name, publicKey: bytes, expires: date) }
                try printOutput("trusted \(name) \(keyFingerprint(bytes))")
            }
        }
    }

    /// `modem keys list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the trusted peers: name, key, fingerprint, expiry.",
            discussion: "One line per peer on standard output; with none, standard output stays empty and standard error says so."
        )
        @OptionGroup var keyOptions: KeysOptions

        func run() async throws {
            try await reportingErrors {
                let store = try keyOptions.open()
                let peers = try KeysOptions.mapping { () throws(KeyStoreError) in try store.trustedPeers() }
                let now = Date()
                if peers.isEmpty {
                    printError("modem keys: no trusted peers in \(store.folder) (add one with `modem keys trust NAME KEY`)")
                }
                for peer in peers {
                    var line = "\(peer.name) \(KeyText.encode(peer.publicKey)) \(keyFingerprint(peer.publicKey))"
                    if let expires = peer.expires {
                        line += (peer.isExpired(at: now) ? " expired=" : " expires=") + RFC3339.format(expires)
                    }
                    try printOutput(line)
                }
            }
        }
    }

    /// `modem keys forget NAME`.
    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a trusted peer by name.")
        @Argument(help: "The peer's name.") var name: String
        @OptionGroup var keyOptions: KeysOptions

        func run() async throws {
            try await reportingErrors {
                try KeysOptions.mapping { () throws(KeyStoreError) in try KeyStore.validateName(name) }
                let store = try keyOptions.open()
                try KeysOptions.mapping { () throws(KeyStoreError) in try store.forget(name: name) }
                try printOutput("forgot \(name)")
            }
        }
    }
}
