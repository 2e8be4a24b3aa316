#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemRuntime
import ModemSockets
import SwiftModem

/// `modem ax25`: connected-mode AX.25 2.2 for a person at a terminal, through a KISS TNC.
struct AX25Command: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ax25",
        abstract: "Connected-mode AX.25 (2.2, and 2.0 peers) at a terminal, through a KISS TNC.",
        discussion: helpText("""
        `connect` calls a station and `listen` waits for one to call; either way, what you type goes \
        to the other station and what it sends is printed, until either side disconnects or your \
        input ends (Ctrl-D, or the end of a piped file: everything sent is acknowledged first, then \
        the link is closed; `listen` instead waits for the caller to disconnect, see --at-end). \
        Ctrl-C disconnects at once.

        The frames go through a KISS TNC over TCP (--kiss HOST:PORT): `modem tnc` on a sound card, \
        Dire Wolf's port 8001, or any other. The data link follows the AX.25 2.2 specification: \
        SABME with XID negotiation (modulo 128, selective reject) and fallback to SABM for 2.0 \
        stations, retransmission after T1 (from the measured round trip), N2 retries, RNR flow \
        control. Lines are sent with a carriage return, as packet stations expect; --binary sends \
        and prints bytes unchanged.

        Examples:
          modem tnc --device default --kiss-port 8001 &
          modem ax25 connect W1AW-1 --mycall N0CALL --kiss 127.0.0.1:8001
          modem ax25 listen --mycall N0CALL-2 --kiss 127.0.0.1:8001 > received.txt
          modem ax25 connect N0CALL-2 --mycall N0CALL --kiss 127.0.0.1:8001 --binary < file.bin
        """),
        subcommands: [AX25ConnectCommand.self, AX25ListenCommand.self]
    )
}

/// `--at-end` of `modem ax25`.
enum AX25AtEnd: String, ExpressibleByArgument, CaseIterable {
    case close, stay
}

/// Options every `modem ax25` subcommand takes.
struct AX25SessionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("This station's call, with an optional SSID (e.g. N0CALL-2).", valueName: "CALL"))
    var mycall: String

    @Option(name: .long, help: ArgumentHelp("The KISS TNC to send and receive through (e.g. 127.0.0.1:8001).", valueName: "HOST:PORT"))
    var kiss: String

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The bit rate the TNC sends at (1200 for Bell 202, 300, 9600...): the retransmission timer does not run while this station's frames are still on the air.", valueName: "BPS"))
    var baud: Double = 1200

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The TNC's TXDELAY in milliseconds (key-up before each transmission), counted with --baud.", valueName: "MS"))
    var txdelay: Double = 300

    @Flag(name: .long, help: "Send and print bytes unchanged (no CR/LF translation).")
    var binary = false

    @Flag(name: .customLong("v20"), help: "Connect as AX.25 2.0 (SABM, modulo 8, no XID) from the start.")
    var v20 = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Frames sent before an acknowledgement (the window k): 1...7 for modulo 8, 1...127 for modulo 128 (default 4 either way: the TNC's transmit queue sits between this link and the air, and answers wait behind what is queued there).", valueName: "K"))
    var window: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Most information bytes per frame (N1, PACLEN), 1...2048.", valueName: "N"))
    var paclen: Int = 256

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Initial retransmission time T1 (FRACK) in seconds, 0.5...60; later values follow the measured round trip.", valueName: "SECONDS"))
    var frack: Double = 3

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Retries (N2) before the link is given up, 1...50.", valueName: "N"))
    var retries: Int = 10

    @Option(name: .customLong("at-end"), help: ArgumentHelp("What the end of standard input does: close (disconnect once everything sent is acknowledged; connect's default) or stay (wait for the other station to disconnect; listen's default).", valueName: "close|stay"))
    var atEnd: AX25AtEnd?

    @Flag(name: [.short, .long], help: "No status lines (connected, disconnected) on standard error.")
    var quiet = false

    func validate() throws {
        _ = try localAddress()
        _ = try kissEndpoint()
        if let window {
            let limit = v20 ? 7 : 127
            guard (1...limit).contains(window) else { throw ValidationError("--window \(window) is outside 1...\(limit)\(v20 ? " (modulo 8 with --v20)" : "")") }
        }
        guard (1...2048).contains(paclen) else { throw ValidationError("--paclen \(paclen) is outside 1...2048") }
        guard (0.5...60).contains(frack) else { throw ValidationError("--frack \(frack) is outside 0.5...60 seconds") }
        guard (1...50).contains(retries) else { throw ValidationError("--retries \(retries) is outside 1...50") }
        guard (50...1_000_000).contains(baud) else { throw ValidationError("--baud \(baud) is outside 50...1000000") }
        guard (0...2550).contains(txdelay) else { throw ValidationError("--txdelay \(txdelay) is outside 0...2550 ms") }
    }

    func localAddress() throws -> AX25Address {
        do { return try AX25Address(parsing: mycall, role: "--mycall") } catch { throw ValidationError("\(error)") }
    }

    func kissEndpoint() throws -> (host: String, port: Int) {
        guard let colon = kiss.lastIndex(of: ":"), let port = Int(kiss[kiss.index(after: colon)...]), (1...65535).contains(port) else {
            throw ValidationError("--kiss \(kiss) is not HOST:PORT (e.g. 127.0.0.1:8001)")
        }
        var host = String(kiss[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--kiss \(kiss) names no host") }
        return (host, port)
    }

    func parameters() -> AX25LinkParameters {
        var p = AX25LinkParameters()
        if v20 {
            p.preferV22 = false
            if let window { p.windowModulo8 = window }
        } else {
            p.windowModulo8 = min(window ?? 4, 7)
            p.windowModulo128 = window ?? 4
        }
        p.maxInformationBytes = paclen
        p.t1Initial = frack
        p.retries = retries
        return p
    }
}

struct AX25ConnectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connect to a station and talk: standard input goes to it, what it sends goes to standard output.")

    @Argument(help: ArgumentHelp("The station to connect to (e.g. W1AW-1).", valueName: "CALL"))
    var call: String

    @Option(name: .long, help: ArgumentHelp("Digipeaters to go through, comma-separated (e.g. WIDE1-1,RELAY).", valueName: "CALLS"))
    var via: String?

    @OptionGroup var options: AX25SessionOptions

    func validate() throws {
        _ = try addresses()
    }

    func addresses() throws -> (remote: AX25Address, via: [AX25Address]) {
        do {
            let remote = try AX25Address(parsing: call, role: "the station to connect to")
            let path = try (via ?? "").split(separator: ",").map { try AX25Address(parsing: $0.filter { $0 != " " }, role: "--via") }
            guard path.count <= AX25Frame.maxDigipeaters else { throw ValidationError("--via names \(path.count) digipeaters; AX.25 allows 8") }
            return (remote, path)
        } catch let e as ValidationError {
            throw e
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func run() throws {
        let (remote, path) = try addresses()
        try runAX25Session(options: options, mode: .connect(remote: remote, via: path))
    }
}

struct AX25ListenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Wait for a station to connect to --mycall, then talk as `connect` does; exits when the session ends.")

    @OptionGroup var options: AX25SessionOptions

    func run() throws {
        try runAX25Session(options: options, mode: .listen)
    }
}

/// Runs one session to its end: standard input and the KISS connection on one wait, the data link's
/// timers on the monotonic clock. Exit status 0 when the session ended normally (either side
/// disconnected), 3 when no link could be made, 4 when it failed while up, 130/143 on a signal.
private func runAX25Session(options: AX25SessionOptions, mode: AX25TerminalSession.Mode) throws {
    let local = try options.localAddress()
    let endpoint = try options.kissEndpoint()
    installStopHandlers(watchdog: false)
    let status = { (line: String) in if !options.quiet { printError("modem ax25: \(line)") } }
    let connection: (fd: Int32, peer: String)
    do {
        connection = try TCPSocket.connect(host: endpoint.host, port: endpoint.port, timeoutMilliseconds: 10_000)
    } catch {
        printError("modem: cannot reach the KISS TNC at \(options.kiss): \(error)")
        throw ExitCode(connectionFailedStatus)
    }
    let fd = connection.fd
    defer { TCPSocket.close(fd) }
    status("KISS TNC at \(connection.peer)")

    let listening = if case .listen = mode { true } else { false }
    var session = AX25TerminalSession(local: local, mode: mode, parameters: options.parameters(),
                                      translatesLineEndings: !options.binary,
                                      closesWhenInputEnds: (options.atEnd ?? (listening ? .stay : .close)) == .close)
    session.airtimeBitRate = options.baud
    session.keyUpSeconds = options.txdelay / 1000
    var decoder = KISSDecoder()
    var pending: [UInt8] = []
    var stdinOpen = true
    var stopSent = false
    let clock = Stopwatch()
    let sleeper = SocketWaiter.Sleeper()
    let watch = onStop { sleeper.interrupt() }
    defer { watch.cancel() }
    var readBuffer = [UInt8](repeating: 0, count: 4096)

    func act(_ outputs: [AX25TerminalSession.Output]) {
        for output in outputs {
            switch output {
            case .transmit(let frame):
                KISSEncoder.encode(.data(frame), into: &pending)
            case .display(let bytes):
                writeAll(1, bytes)
            case .status(let line):
                status(line)
            case .finished:
                break
            }
        }
    }

    act(session.start(now: clock.seconds))
    while session.end == nil {
        if isStopRequested, !stopSent {
            stopSent = true
            status("interrupted: disconnecting")
            act(session.disconnect(now: clock.seconds))
            continue
        }
        var fds = [pollfd(fd: fd, events: Int16(POLLIN) | (pending.isEmpty ? 0 : Int16(POLLOUT)), revents: 0)]
        let readsInput = stdinOpen && session.wantsInput
        if readsInput { fds.append(pollfd(fd: 0, events: Int16(POLLIN), revents: 0)) }
        let now = clock.seconds
        let timeout = session.nextDeadline.map { max(0, Int((($0 - now) * 1000).rounded(.up))) }
        sleeper.wait(&fds, timeoutMilliseconds: timeout)
        if fds[0].revents & Int16(POLLOUT) != 0, !pending.isEmpty {
            switch pending.withUnsafeBytes({ TCPSocket.send(fd, $0) }) {
            case .success(let n): pending.removeFirst(n)
            case .failure(let e) where e.code == EAGAIN || e.code == EWOULDBLOCK || e.code == EINTR: break
            case .failure(let e):
                printError("modem: the KISS TNC connection failed: \(String(cString: strerror(e.code)))")
                throw ExitCode(connectionLostStatus)
            }
        }
        if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            let received = readBuffer.withUnsafeMutableBytes { TCPSocket.receive(fd, into: $0) }
            switch received {
            case .bytes(let n):
                for frame in decoder.decode(readBuffer[0..<n]) where frame.command == .dataFrame && frame.port == 0 {
                    act(session.received(frame: frame.payload, now: clock.seconds))
                }
            case .wouldBlock:
                break
            case .closed, .failed:
                printError("modem: the KISS TNC at \(options.kiss) closed the connection")
                throw ExitCode(session.isConnected ? connectionLostStatus : connectionFailedStatus)
            }
        }
        if readsInput, fds.count > 1, fds[1].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            let n = readBuffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n > 0 {
                act(session.input(Array(readBuffer[0..<n]), now: clock.seconds))
            } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                stdinOpen = false
                act(session.inputDidEnd(now: clock.seconds))
            }
        }
        act(session.advance(to: clock.seconds))
    }
    // The last frames (the UA or DISC) go out before the connection closes.
    while !pending.isEmpty {
        var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
        sleeper.wait(&fds, timeoutMilliseconds: 2000)
        guard fds[0].revents & Int16(POLLOUT) != 0,
              case .success(let n) = pending.withUnsafeBytes({ TCPSocket.send(fd, $0) }) else { break }
        pending.removeFirst(n)
    }
    status("\(session.bytesSent) bytes sent, \(session.bytesReceived) received")
    if stopSent { throw ExitCode(interruptedStatus) }
    switch session.end {
    case .connectFailed(let why):
        printError("modem: could not connect: \(why)")
        throw ExitCode(connectionFailedStatus)
    case .linkLost(let why):
        printError("modem: the link failed: \(why)")
        throw ExitCode(connectionLostStatus)
    default:
        break
    }
}

/// Writes every byte to `fd` (standard output), retrying short writes.
private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; return }
        offset += n
    }
}
