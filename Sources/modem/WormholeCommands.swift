#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemMessaging
import ModemWormhole
import Synchronization
import ModemRuntime

/// The options of the wormhole modes (`send --wormhole`, `receive --wormhole`, and `wormhole:CODE`
/// endpoints): where the rendezvous server and the transit relay are.
struct WormholeOptions: ParsableArguments {
    @Option(name: .customLong("relay-url"), help: ArgumentHelp("The rendezvous server's WebSocket, ws://HOST:PORT/PATH or wss://HOST:PORT/PATH over TLS, its certificate verified (modem-hub: ws://HOST:PORT/wormhole/v1; default $MODEM_WORMHOLE_RELAY).", valueName: "url"))
    var relayURL: String?

    @Option(name: .customLong("ca"), help: ArgumentHelp("For a wss:// --relay-url: also trust the certificates in this PEM file (a private CA, or the server's own self-signed certificate), beside the system's store ($SSL_CERT_FILE when set).", valueName: "file"))
    var caFile: String?

    @Option(name: .customLong("transit-helper"), help: ArgumentHelp("A transit relay, tcp:HOST:PORT (default $MODEM_WORMHOLE_TRANSIT; none: direct connections only).", valueName: "tcp:host:port"))
    var transitHelper: String?

    @Flag(name: .customLong("no-listen"), help: "Offer no direct connections: the peer's direct addresses or the transit relay only.")
    var noListen = false

    /// The rendezvous server (option, then environment), or a usage error saying how to name one.
    func relay() throws -> WebSocketURL {
        guard let text = relayURL ?? env("MODEM_WORMHOLE_RELAY") else {
            throw UsageError("no rendezvous server: give --relay-url ws://HOST:PORT/PATH or set MODEM_WORMHOLE_RELAY (modem-hub serves one at ws://HOST:PORT/wormhole/v1)")
        }
        var url: WebSocketURL
        do { url = try WebSocketURL(text) } catch { throw UsageError("--relay-url: \(error.description)") }
        if let caFile {
            guard url.secure else { throw UsageError("--ca applies to a wss:// rendezvous server; \(url) is ws://") }
            url.trust = TLSTrust(certificateFiles: [caFile])
            do { try url.trust.validate() } catch { throw UsageError("--ca: \(error.description)") }
        }
        return url
    }

    /// The transit options (relay from the option, then the environment).
    func transit() throws -> WormholeTransitOptions {
        var relays: [TransitHint] = []
        if let text = transitHelper ?? env("MODEM_WORMHOLE_TRANSIT") {
            do { relays = [try TransitHint(helper: text)] } catch { throw UsageError("--transit-helper: \(error.description)") }
        }
        return WormholeTransitOptions(relays: relays, listen: !noListen)
    }

    private func env(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }
}

/// A wormhole code from the command line, as a usage error when malformed (never echoing it).
func parseWormholeCode(_ text: String, option: String) throws -> WormholeCode {
    do { return try WormholeCode(text) } catch { throw UsageError("\(option): \(error.description)") }
}

/// Turns a wormhole failure into the CLI's error: one line with the exit status of README's table.
/// Before the key is agreed (the server, the network), with a wrong code, or without a transit
/// connection, no connection was made: 3. After, a network that failed lost the connection (4), and
/// anything else failed the transfer (1).
func wormholeFailure(_ error: WormholeError, keyAgreed: Bool) -> CLIError {
    let status: Int32 = switch (keyAgreed, error.kind) {
    case (false, _), (_, .wrongCode), (_, .transit): connectionFailedStatus
    case (true, .network): connectionLostStatus
    default: 1
    }
    return CLIError(wormholeErrorText(error), status: status)
}

/// A wormhole failure's line for the user: a certificate that is not trusted says how to trust one.
func wormholeErrorText(_ error: WormholeError) -> String {
    switch error.kind {
    case .certificate: "\(error.description); trust it with --ca FILE or SSL_CERT_FILE"
    case .certificateNotForHost: "\(error.description); give --relay-url the name the certificate is for"
    default: error.description
    }
}

/// `modem send --wormhole`: one text or one file or folder to a stock `wormhole receive` or a
/// `modem receive --wormhole`, through the rendezvous server.
func sendByWormhole(text: String?, files: [String], code: String?, options: WormholeOptions) async throws {
    let relay = try options.relay()
    let transit = try options.transit()
    let given = try code.map { try parseWormholeCode($0, option: "--code") }
    if text == nil {
        guard files.count == 1 else { throw UsageError("--wormhole sends one file or folder (or --text); \(files.count) were given") }
        var st = stat()
        guard stat(files[0], &st) == 0 else { throw UsageError("\(files[0]): no such file or folder") }
        let kind = st.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR else { throw UsageError("\(files[0]): not a regular file or a folder") }
        guard access(files[0], R_OK) == 0 else { throw UsageError("\(files[0]): not readable") }
    }
    let w: Wormhole
    do { w = try await Wormhole.open(relay: relay, appID: WormholeTransfer.appID, code: given) } catch { throw wormholeFailure(error, keyAgreed: false) }
    if let motd = w.motd { printError("modem send: the server says: \(motd)") }
    printError("wormhole code: \(w.code.text)")
    let watch = stopWatch { await w.close(mood: "lonely") }
    defer { watch.cancel() }
    var keyAgreed = false
    do {
        try await w.establishKey()
        keyAgreed = true
        if let text {
            try await WormholeTransfer.sendText(text, over: w)
            await w.close(mood: "happy")
            try printOutput("sent text (\(text.utf8.count) bytes)")
            return
        }
        let started = ProgressLine.now()
        let bar = SharedProgress()
        try await WormholeTransfer.sendFile(path: files[0], over: w, transit: transit) { done, total in
            bar.update(done: done, total: total, started: started)
        }
        bar.clear()
        await w.close(mood: "happy")
        let seconds = ProgressLine.now() - started
        try printOutput("sent \(files[0].split(separator: "/").last ?? "") in \(String(format2: seconds)) s")
    } catch let error as WormholeError {
        await w.close(mood: error.kind == .wrongCode ? "scary" : "errory")
        throw wormholeFailure(error, keyAgreed: keyAgreed)
    }
}

/// `modem receive --wormhole CODE`: a text to standard output, or a file or folder into `dir`.
func receiveByWormhole(code: String, dir: String, acceptAll: Bool, textOnly: Bool, zipLimits: ZipLimits = ZipLimits(),
                       options: WormholeOptions) async throws {
    let relay = try options.relay()
    let transit = try options.transit()
    let parsed = try parseWormholeCode(code, option: "CODE")
    let folder: WormholeFolder?
    // --dir as a receive over any other endpoint takes it: created (0700) when missing, removed again
    // when nothing arrived in it.
    let created: ReceiveFolder?
    if textOnly {
        folder = nil
        created = nil
    } else {
        do throws(FolderError) { created = try ReceiveFolder(path: dir) } catch { throw UsageError("--dir: \(error.description)") }
        do { folder = try WormholeFolder(path: dir) } catch { throw UsageError("--dir: \(error.description)") }
    }
    defer { created?.removeIfCreatedAndEmpty() }
    let w: Wormhole
    do { w = try await Wormhole.open(relay: relay, appID: WormholeTransfer.appID, code: parsed) } catch { throw wormholeFailure(error, keyAgreed: false) }
    let watch = stopWatch { await w.close(mood: "lonely") }
    defer { watch.cancel() }
    var decide: (@Sendable (WormholeOffer) async -> Bool)?
    if !acceptAll {
        decide = { @Sendable offer in
            guard isatty(0) != 0, isatty(2) != 0 else {
                printError("modem receive: declined (no terminal to ask on; use --accept-all)")
                return false
            }
            let what: String = switch offer {
            case .file(let name, let size): "the file \(printableText(name)) (\(formatBytes(size)))"
            case .directory(let name, _, let bytes, let files): "the folder \(printableText(name)) (\(files) files, \(formatBytes(bytes)))"
            case .text: "a text"
            }
            let question = "accept \(what)? [y/N] "
            question.withCString { p in _ = write(2, p, strlen(p)) }
            guard let line = readLine(strippingNewline: true) else { return false }
            let answer = line.filter { $0 != " " && $0 != "\t" }.lowercased()
            return answer == "y" || answer == "yes"
        }
    }
    var keyAgreed = false
    do {
        try await w.establishKey()
        keyAgreed = true
        let started = ProgressLine.now()
        let bar = SharedProgress()
        let got = try await WormholeTransfer.receive(over: w, options: .init(folder: folder, textOnly: textOnly, decide: decide, zipLimits: zipLimits),
                                                     transit: transit, progress: { done, total in
            bar.update(done: done, total: total, started: started)
        })
        bar.clear()
        await w.close(mood: "happy")
        switch got {
        case .text(let text):
            try printOutput(text)
        case .file(let name, let size, let sha):
            try printOutput("received \(name) \(size) sha256 \(Hex.encode(sha)) in \(String(format2: ProgressLine.now() - started)) s")
        case .directory(let name, let files, let bytes):
            try printOutput("received folder \(name) \(files) files \(bytes) bytes in \(String(format2: ProgressLine.now() - started)) s")
        }
    } catch let failure as WormholeError where failure.kind == .declined {
        // Declined here: this side did what it chose (exit 0, as a file declined over any endpoint); the sender fails.
        await w.close(mood: "happy")
        printError("modem receive: \(failure.description)")
    } catch {
        let failure = error as? WormholeError
        await w.close(mood: failure?.kind == .wrongCode ? "scary" : "errory")
        throw failure.map { wormholeFailure($0, keyAgreed: keyAgreed) } ?? error
    }
}

/// A task that runs `onStop` once SIGINT or SIGTERM came (the command then ends with 130 or 143).
private func stopWatch(_ cleanUp: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
    onStop {
        await cleanUp()
        printError("modem: interrupted")
        exit(interruptedStatus)
    }
}
