#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemMessaging
import SwiftModem
import Synchronization
import ModemRuntime

/// `modem receive`: serves one data-connection session and stores the files it brings.
struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Receive files over an encrypted data connection (the data-connection API) into a folder.",
        discussion: helpText("""
        Serves one session on ENDPOINT (tcp:HOST:PORT, audio:DEVICE, bt:ADDR with --hci) and exits when it ends. Each file is stored under
        a cleaned name inside --dir (never outside it), verified block by block and as a whole, and
        renamed into place only once verified; interrupted files resume from DIR/.modem-partial.
        Without --accept-all each file is asked for on the terminal; without a terminal it is declined.
        One line per file on standard output: received NAME BYTES sha256 HEX in S s from PEER
        (PEER: the name the sender's key is trusted under here, never the name it gives itself).
        On standard error: session from PEER, with the sender's own --name beside it when it differs,
        as (claims "NAME").
        Once it listens, one line on standard error: listening on ENDPOINT (tcp: with the port it got,
        the kernel's choice for port 0; audio: and bt: once the device end is up).
        Exit status: 0 when no file failed (one declined here is no failure, with --wormhole too), 1
        when one failed or was cut off, 3 when no session was made (with --wormhole: a wrong code), 4
        when a wormhole transfer's network failed, 130 or 143 when interrupted by SIGINT or SIGTERM.

        With --wormhole CODE: receives from a magic-wormhole sender (stock `wormhole send` or `modem send
        --wormhole`) through the rendezvous server (--relay-url, or $MODEM_WORMHOLE_RELAY): a text goes to
        standard output; a file or folder into --dir (default: the current folder), under a cleaned
        name, put in place only once complete. A wrong code fails with one line, exit 1, nothing written.
        """)
    )

    @Option(name: .long, help: ArgumentHelp("Where to listen: tcp:HOST:PORT, audio:DEVICE or bt:ADDR (our controller's address, with --hci).", valueName: "endpoint"))
    var listen: String?

    @Option(name: .long, help: ArgumentHelp("The folder files are stored in (created, mode 0700, if missing, and removed again if nothing arrived; with --wormhole the default is the current folder).", valueName: "dir"))
    var dir: String?

    @Flag(name: .long, help: "Receive by magic-wormhole code (CODE) through a rendezvous server.")
    var wormhole = false

    @Flag(name: .customLong("text-only"), help: "With --wormhole: accept a text message only; refuse files.")
    var textOnly = false

    @Option(name: .customLong("folder-max-ratio"), parsing: .unconditional,
            help: ArgumentHelp("With --wormhole: the most bytes a received folder (a zip) may unpack to per byte of the zip, past its first MiB; a folder over it is refused whole as a zip bomb (deflate reaches about 1,032 on a file of one repeated byte).", valueName: "n"))
    var folderMaxRatio: UInt64 = ZipLimits().maximumRatio

    @Argument(help: ArgumentHelp("With --wormhole: the code the sender printed (NUMBER-WORD-WORD).", valueName: "code"))
    var code: String?

    @OptionGroup var wormholeOptions: WormholeOptions

    @Option(name: .customLong("trust-as"), help: ArgumentHelp("With a wormhole:CODE endpoint: keep the peer's key in the key store under this name.", valueName: "name"))
    var trustAs: String?

    @Flag(name: .long, help: "Accept every file without asking.")
    var acceptAll = false

    @Option(name: .long, help: ArgumentHelp("For bt: endpoints, the controller of our own host stack: tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN.", valueName: "spec"))
    var hci: String?

    @OptionGroup var keyOptions: KeysOptions

    @OptionGroup var audio: AudioModemOptions

    @Option(name: .long, help: ArgumentHelp("The user name announced to the peer (shown there only as a claim, beside the name it trusts our key under).", valueName: "name"))
    var name: String?

    func validate() throws {
        try audio.check(endpoint: listen)
        if wormhole {
            guard code != nil else { throw ValidationError("--wormhole needs the CODE the sender printed") }
            guard listen == nil else { throw ValidationError("--wormhole and --listen do not go together (use --listen wormhole:CODE for a data connection by code)") }
        } else {
            guard listen != nil else { throw ValidationError("give --listen ENDPOINT, or --wormhole CODE") }
            guard dir != nil else { throw ValidationError("give --dir DIR") }
            guard code == nil else { throw ValidationError("a CODE argument needs --wormhole") }
            if textOnly { throw ValidationError("--text-only applies to --wormhole") }
        }
        guard (1...1_000_000).contains(folderMaxRatio) else { throw ValidationError("--folder-max-ratio must be 1 to 1000000") }
    }

    func run() async throws {
        installStopHandlers()
        _ = AllocatorTuning.applied
        if wormhole {
            let options = wormholeOptions
            try await reportingErrors { try await receiveByWormhole(code: code!, dir: dir ?? ".", acceptAll: acceptAll, textOnly: textOnly,
                                                                 zipLimits: ZipLimits(maximumRatio: folderMaxRatio), options: options) }
            return
        }
        try await reportingErrors { try await serve() }
    }

    private func serve() async throws {
        let dir = self.dir!, listen = self.listen!
        let folder: ReceiveFolder
        do throws(FolderError) { folder = try ReceiveFolder(path: dir) } catch { throw UsageError("--dir: \(error.description)") }
        let session: NoiseSession
        do {
            let store = try keyOptions.open()
            let options = SessionOptions(userName: name ?? defaultUserName(), service: .data, keys: store)
            session = try await connecting {
                try await openSession(listen: listen, to: nil, hci: hci, options: options, wormhole: wormholeOptions, trustAs: trustAs,
                                      audioModem: audio.profile)
            }
        } catch {
            folder.removeIfCreatedAndEmpty()  // no session, no trace
            throw error
        }
        var decider: (@Sendable (FileOffer) async -> Bool)?
        if !acceptAll {
            let question = FileQuestion()
            decider = { @Sendable offer in await question.ask(offer) }
        }
        let connections = DataConnections(session: session, configuration: DataConfiguration(
            folder: folder, autoAcceptConnections: true, fileDecider: decider))
        // The peer is named by the name its key is trusted under here; what it calls itself (--name)
        // is shown beside it as a claim only.
        let sender = peerName(session.peer)
        printError("modem receive: session from \(printable(session.peer.description))")
        let stopWatch = onStop { await connections.close() }
        defer { stopWatch.cancel() }
        var bar = ProgressLine(enabled: true)
        var failed = 0  // files that failed here or were cut off (a file declined here is no failure)
        for await event in connections.events {
            switch event {
            case .offered(_, let metadata) where !metadata.isEmpty:
                printError("modem receive: \(printable(sender)) says: \(printable(String(decoding: metadata, as: UTF8.self)))")
            case .progress(_, _, let bytes, let total):
                bar.update("receiving \(formatBytes(bytes)) of \(formatBytes(total))")
            case .fileReceived(_, _, let file):
                bar.clear()
                try printOutput("received \(file.name) \(file.size) sha256 \(Hex.encode(file.sha256)) in \(String(format2: file.seconds)) s from \(printable(sender))")
            case .blobReceived(_, _, let description, let data):
                printError("modem receive: a blob \(printable(description)) of \(data.count) bytes (not stored)")
            case .channelFailed(_, _, let name, let reason, let detail):
                bar.clear()
                printError("modem receive: \(printable(name)): \(reason)\(detail.map { " (\(printable($0)))" } ?? "")")
                if reason != .declined { failed += 1 }
            case .sessionEnded(let end):
                bar.clear()
                printError("modem receive: session ended (\(end.seedName))")
            default:
                break
            }
        }
        // Finished files leave no empty partial folder behind; an interrupted one stays for the resume.
        folder.removeEmptyPartialFolder()
        folder.removeIfCreatedAndEmpty()
        // Exit 0 only when nothing failed: an interrupted receive exits 128 + the signal, a failed file 1.
        if isStopRequested { throw ExitCode(interruptedStatus) }
        if failed > 0 {
            printError("modem receive: \(failed) file\(failed == 1 ? "" : "s") not received")
            throw ExitCode(1)
        }
    }
}

/// Asks on the terminal for each file, one question at a time; declines without a terminal.
actor FileQuestion {
    func ask(_ offer: FileOffer) -> Bool {
        guard isatty(0) != 0, isatty(2) != 0 else {
            printError("modem receive: declined \(offer.name) (no terminal to ask on; use --accept-all)")
            return false
        }
        let question = "accept \(offer.name) (\(formatBytes(offer.size))) from \(printable(offer.peer.description))? [y/N] "
        question.withCString { p in _ = write(2, p, strlen(p)) }
        guard let line = readLine(strippingNewline: true) else { return false }
        let answer = String(line.filter { $0 != " " && $0 != "\t" }).lowercased()
        return answer == "y" || answer == "yes"
    }
}

/// `modem send`: offers files to a listening `modem receive`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send files over an encrypted data connection (the data-connection API).",
        discussion: helpText("""
        Dials ENDPOINT (tcp:HOST:PORT, audio:DEVICE, bt:ADDR: our own host stack with --hci, else the kernel's Bluetooth), offers one connection carrying --metadata, and sends each FILE
        in verified blocks; a file the receiver already holds part of resumes. One line per file on
        standard output: sent NAME BYTES in S s (X MB/s). Exit status 0 only when the receiver has
        confirmed every file; 1 when a file failed or was declined, 3 when no session was made.

        With --wormhole: sends one FILE or folder, or --text MESSAGE, to a magic-wormhole receiver (stock
        `wormhole receive` or `modem receive --wormhole`) through the rendezvous server (--relay-url, or
        $MODEM_WORMHOLE_RELAY); prints `wormhole code: CODE` on standard error (--code chooses it) and
        waits for the receiver. Exit status 0 once the receiver confirmed (a file: its SHA-256); 1 when
        it declined or the transfer failed, 3 with a wrong code or no transit connection, 4 when the
        network failed during the transfer.
        """)
    )

    @Option(name: .long, help: ArgumentHelp("Where to dial: tcp:HOST:PORT, audio:DEVICE or bt:ADDR (our own host stack with --hci, else the kernel's Bluetooth).", valueName: "endpoint"))
    var to: String?

    @Flag(name: .long, help: "Send by magic-wormhole code through a rendezvous server.")
    var wormhole = false

    @Option(name: .long, help: ArgumentHelp("With --wormhole: the code to use (NUMBER-WORD-WORD; default: one the server allocates).", valueName: "code"))
    var code: String?

    @Option(name: .long, help: ArgumentHelp("With --wormhole: send this text message instead of a file.", valueName: "message"))
    var text: String?

    @OptionGroup var wormholeOptions: WormholeOptions

    @Option(name: .customLong("trust-as"), help: ArgumentHelp("With a wormhole:CODE endpoint: keep the peer's key in the key store under this name.", valueName: "name"))
    var trustAs: String?

    @Argument(help: ArgumentHelp("The files to send.", valueName: "file"))
    var files: [String] = []

    @Option(name: .customLong("as"), help: ArgumentHelp("The name to offer the file under (one file only; at most 4096 bytes).", valueName: "name"))
    var asName: String?

    @Option(name: .long, help: ArgumentHelp("Text sent with the offer (at most 4096 bytes).", valueName: "text"))
    var metadata: String?

    @Option(name: .long, help: ArgumentHelp("For bt: endpoints, the controller of our own host stack: tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN.", valueName: "spec"))
    var hci: String?

    @OptionGroup var keyOptions: KeysOptions

    @OptionGroup var audio: AudioModemOptions

    @Option(name: .long, help: ArgumentHelp("The user name announced to the peer (shown there only as a claim, beside the name it trusts our key under).", valueName: "name"))
    var name: String?

    func validate() throws {
        try audio.check(endpoint: to)
        if wormhole {
            guard to == nil else { throw ValidationError("--wormhole and --to do not go together (use --to wormhole:CODE for a data connection by code)") }
            guard (text == nil) != files.isEmpty else { throw ValidationError("with --wormhole give one FILE or --text MESSAGE") }
            return
        }
        guard to != nil else { throw ValidationError("give --to ENDPOINT, or --wormhole") }
        if text != nil || code != nil { throw ValidationError("--text and --code apply to --wormhole") }
        guard !files.isEmpty else { throw ValidationError("name at least one file to send") }
        if asName != nil, files.count != 1 { throw ValidationError("--as names one file; \(files.count) were given") }
        if let asName, asName.isEmpty || asName.utf8.count > DataMessage.maximumName {
            throw ValidationError("--as: a name of 1 to \(DataMessage.maximumName) bytes, not \(asName.utf8.count)")
        }
        if let metadata, metadata.utf8.count > DataMessage.maximumMetadata {
            throw ValidationError("--metadata: \(DataError.metadataTooLarge(metadata.utf8.count, DataMessage.maximumMetadata))")
        }
    }

    func run() async throws {
        installStopHandlers()
        _ = AllocatorTuning.applied
        if wormhole {
            let (text, files, code, options) = (self.text, self.files, self.code, wormholeOptions)
            try await reportingErrors { try await sendByWormhole(text: text, files: files, code: code, options: options) }
            return
        }
        try await reportingErrors { try await sendAll() }
    }

    private func sendAll() async throws {
        for file in files {
            var st = stat()
            guard stat(file, &st) == 0 else { throw UsageError("\(file): no such file") }
            guard (st.st_mode & S_IFMT) == S_IFREG else { throw UsageError("\(file): not a regular file") }
            guard access(file, R_OK) == 0 else { throw UsageError("\(file): not readable") }
        }
        let store = try keyOptions.open()
        let options = SessionOptions(userName: name ?? defaultUserName(), service: .data, keys: store)
        let session = try await connecting {
            try await openSession(listen: nil, to: to!, hci: hci, options: options, wormhole: wormholeOptions, trustAs: trustAs,
                                  audioModem: audio.profile)
        }
        let connections = DataConnections(session: session, configuration: DataConfiguration())
        printError("modem send: session with \(printable(session.peer.description))")
        let stopWatch = onStop { await connections.close() }
        defer { stopWatch.cancel() }
        // Events are not needed here; keep them drained.
        let drain = Task { for await _ in connections.events {} }
        var failures = 0
        do {
            let id = try await connections.start(metadata: Array((metadata ?? "").utf8))
            for file in files {
                let started = ProgressLine.now()
                let bar = SharedProgress()
                let sent: SentFile
                do throws(DataError) {
                    sent = try await connections.sendFile(path: file, as: asName, on: id) { done, total in
                        bar.update(done: done, total: total, started: started)
                    }
                } catch {
                    bar.clear()
                    printError("modem send: \(file): \(error.description)")
                    failures += 1
                    if case .ended = error { break }
                    continue
                }
                bar.clear()
                if sent.skippedBlocks > 0 {
                    printError("modem send: \(sent.name): resumed, \(sent.skippedBlocks) of \(sent.skippedBlocks + sent.sentBlocks) blocks were already there")
                }
                let seconds = ProgressLine.now() - started
                let rate = seconds > 0 ? Double(sent.sentBytes) / seconds / 1e6 : 0
                try printOutput("sent \(sent.name) \(sent.size) in \(String(format2: seconds)) s (\(String(format2: rate)) MB/s)")
            }
        } catch {
            printError("modem send: \(error)")
            failures = max(failures, 1)
        }
        let end = await connections.close()
        _ = await drain.value
        if isStopRequested { throw ExitCode(interruptedStatus) }
        if failures > 0 { throw ExitCode(1) }
        if case .otherUserLost = end { printError("modem send: \(end.seedName)") }
    }
}

/// A peer as one word for a line of output: the name its key is trusted under here (sessions only
/// open with trusted keys), else `untrusted-FINGERPRINT`. Never the name the peer claims.
func peerName(_ peer: PeerIdentity) -> String {
    peer.trustedName ?? "untrusted-\(peer.keyFingerprint)"
}

/// A progress bar shared with the sender's progress callback.
final class SharedProgress: Sendable {
    private let line = Mutex(ProgressLine(enabled: true))
    func update(done: UInt64, total: UInt64, started: Double) {
        line.withLock { bar in
            let seconds = max(0.001, ProgressLine.now() - started)
            let percent = total == 0 ? 100 : Int(Double(done) * 100 / Double(total))
            let width = 30
            let filled = total == 0 ? width : Int(Double(width) * Double(done) / Double(total))
            bar.update("[\(String(repeating: "#", count: filled))\(String(repeating: " ", count: width - filled))] \(percent)% \(formatBytes(done)) \(String(format2: Double(done) / seconds / 1e6)) MB/s")
        }
    }
    func clear() { line.withLock { $0.clear() } }
}

/// Text from the peer made safe for a terminal (``TerminalText/safe(_:maximumScalars:)``: controls,
/// escapes and bidirectional overrides become `?`).
func printable(_ text: String) -> String {
    TerminalText.safe(text)
}

func formatBytes(_ n: UInt64) -> String {
    if n >= 1 << 30 { return "\(String(format2: Double(n) / Double(1 << 30))) GiB" }
    if n >= 1 << 20 { return "\(String(format2: Double(n) / Double(1 << 20))) MiB" }
    if n >= 1 << 10 { return "\(String(format2: Double(n) / Double(1 << 10))) KiB" }
    return "\(n) B"
}
