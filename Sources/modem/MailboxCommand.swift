#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import ModemMessaging
import SwiftModem
import Synchronization
import SystemPackage
import ModemRuntime

/// `modem mailbox`: the two-party mailbox (the mailbox API, with Bump's names and reasons) between two `modem` processes. Each line of
/// standard input is one chunk; each chunk received is one line of standard output; events go to
/// standard error. docs/messaging-plan.md section 5.
struct MailboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mailbox",
        abstract: "Exchange lines with one trusted peer: the mailbox (the mailbox API), end-to-end encrypted.",
        discussion: helpText("""
        Each line of standard input is one chunk, sent as soon as both ends confirmed; each chunk
        received is printed as one line on standard output. Events go to standard error, one line each:
        connected to PEER, sent N, contact NAME (card sent by PEER), disconnected END_..., connect failed
        FAIL_...: detail, and with --listen, listening on ENDPOINT once it listens (tcp: with the port it got, the kernel's choice for port 0).
        PEER is the name the peer's key is trusted under here (modem keys trust NAME, or the pairing);
        the name the peer gives itself (its --name) is shown beside it when it differs, as a claim:
        connected to bob (claims "the-boss").
        Standard input ending quits (END_USER_QUIT) once every chunk is held by the peer; the peer
        quitting first ends this side too (END_OTHER_USER_QUIT). --listen serves one session.
        Exit status: 0 quit (either side, SIGINT/SIGTERM once connected included); 1 an error here
        (the contact file, the keys, a sound device or controller, standard input or output); 3 connect failed; 4 lost
        (END_OTHER_USER_LOST, END_LOST_NET); 64 usage; 130/143 SIGINT/SIGTERM before a peer came.

        Examples:
          modem keys show; modem keys trust bob smk1...
          modem mailbox --listen tcp:0.0.0.0:7000 --name alice
          printf 'hello\\n' | modem mailbox --to tcp:alice.local:7000 --name bob
          modem mailbox --listen wormhole: --relay-url ws://hub:8080/wormhole/v1     # prints a code
          modem mailbox --to wormhole:7-guitarist-revenge --relay-url ws://hub:8080/wormhole/v1 --trust-as alice
        """)
    )

    @Option(name: .long, help: ArgumentHelp("Wait for one peer on this endpoint (tcp:HOST:PORT, audio:DEVICE, bt:ADDR).", valueName: "endpoint"))
    var listen: String?

    @Option(name: .long, help: ArgumentHelp("Connect to a peer at this endpoint.", valueName: "endpoint"))
    var to: String?

    @Option(name: .long, help: ArgumentHelp("The user name we announce (default: $USER@hostname): the peer shows it only as a claim, beside the name it trusts our key under.", valueName: "user"))
    var name: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Keepalive interval in seconds (0.1 to 86400); the peer is lost after twice this of silence (default: 10 on TCP, 30 on links).", valueName: "seconds"))
    var keepalive: Double?

    @Option(name: .long, help: ArgumentHelp("The keys folder (default: $XDG_DATA_HOME/swiftmodem/keys).", valueName: "dir"))
    var keys: String?

    @Option(name: .long, help: ArgumentHelp("A vCard 4.0 file to give the peer.", valueName: "file"))
    var contact: String?

    @Option(name: .customLong("max-bytes"), parsing: .unconditional, help: ArgumentHelp("Chunk bytes (sent + received) after which the session ends.", valueName: "n"))
    var maxBytes: Int = 10_000_000

    @Option(name: .customLong("max-seconds"), parsing: .unconditional, help: ArgumentHelp("Seconds after which the session ends (at most a year).", valueName: "s"))
    var maxSeconds: Double = 3600

    @Option(name: .long, help: ArgumentHelp("For bt: endpoints, the controller of our own host stack: tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN.", valueName: "spec"))
    var hci: String?

    @OptionGroup var wormholeOptions: WormholeOptions

    @OptionGroup var audio: AudioModemOptions

    @Option(name: .customLong("trust-as"), help: ArgumentHelp("With a wormhole:CODE endpoint: keep the peer's key in the key store under this name.", valueName: "name"))
    var trustAs: String?

    func validate() throws {
        try audio.check(endpoint: listen ?? to)
        if let keepalive { try checkSeconds(keepalive, "--keepalive", in: 0.1...86400) }
        guard maxBytes > 0 else { throw ValidationError("--max-bytes must be positive") }
        try checkSeconds(maxSeconds, "--max-seconds", in: 0.001...maximumSeconds, note: " (a year)")
        if let name, name.isEmpty || name.utf8.count > 64 { throw ValidationError("--name must be 1 to 64 bytes") }
        do {
            if isWormholeEndpoint(listen ?? to), (listen == nil) != (to == nil) {
                try validateWormholeEndpoint(listen ?? to!, dialer: to != nil)
            } else {
                _ = try parseSessionEndpoint(listen: listen, to: to, hci: hci)
            }
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        // Our contact card, validated before anything connects.
        var card: VCard?
        if let contact {
            do {
                card = try readContact(contact)
            } catch {
                printError("connect failed FAIL_BAD_CONTACT: \(error)")
                throw ExitCode(1)
            }
        }
        // Standard input is read from the start, so lines typed (or piped) before the peer
        // connects are queued, not lost.
        let input = LineQueue()
        input.startReading(fd: 0)

        let userName = name ?? defaultUserName()
        let configuration = MailboxConfiguration(maximumBytes: maxBytes, maximumSeconds: maxSeconds, contact: card)
        let mailbox = Mailbox(userName: userName, configuration: configuration, pendingOnPeerQuit: { input.takeQueued() })
        // The mailbox enforces the byte and time limits on chunk payload (docs/messaging-plan.md
        // section 3), refusing a chunk that would pass them; the session itself gets none.
        let options = SessionOptions(userName: userName, service: .mailbox, keepalive: keepalive,
                                     keys: try openKeys(), limits: SessionLimits.none)
        let interrupt = InterruptWatch(mailbox: mailbox)
        interrupt.start()
        let (listen, to, hci, wormhole, trustAs) = (self.listen, self.to, self.hci, wormholeOptions, self.trustAs)
        // A failure of this machine's own end (a device or controller) is status 1, not "connect failed" 3.
        let localFailure = Mutex(false)
        let connecting = Task {
            await mailbox.connect {
                do {
                    return try await openSession(listen: listen, to: to, hci: hci, options: options, wormhole: wormhole, trustAs: trustAs,
                                                 audioModem: audio.profile)
                } catch let e as LocalEndpointFailure {
                    localFailure.withLock { $0 = true }
                    throw SessionFailure.networkUnavailable(e.description)
                }
            }
        }

        var status: Int32 = 0
        var peer: PeerIdentity?
        var sender: Task<Void, Never>?
        var outputFailed: String?
        for await event in mailbox.events {
            switch event {
            case .connected(let other):
                // Named by the name its key is trusted under here; its own --name only as a claim.
                peer = other
                printError("connected to \(printable(other.description))")
                sender = Task { await sendLines(from: input, to: mailbox) }
            case .dataReceived(let chunk):
                guard outputFailed == nil else { continue }
                do {
                    _ = try FileDescriptor.standardOutput.writeAll(chunk + [0x0A])
                } catch {
                    outputFailed = "standard output: write failed: \(error)"
                    printError("modem: \(outputFailed!)")
                    await mailbox.disconnectNow()
                }
            case .sendSuccess(let seq):
                printError("sent \(seq)")
            case .contactReceived(let card):
                // A card is what the peer says about itself: shown as sent by the trusted name.
                let from = peer.map { " (card sent by \(peerName($0)))" } ?? ""
                printError("contact \(printable(card.formattedName.replacingOccurrences(of: "\n", with: " ")))\(from)")
            case .disconnected(let reason):
                switch reason {
                case .userQuit(let detail?): printError("disconnected \(reason.seedName): \(detail)")
                case .otherUserLost(let detail), .lostNet(let detail): printError("disconnected \(reason.seedName): \(detail)")
                default: printError("disconnected \(reason.seedName)")
                }
                switch reason {
                case .userQuit, .otherUserQuit: status = 0
                case .otherUserLost, .lostNet: status = connectionLostStatus
                }
            case .connectFailed(let failure):
                printError("connect failed \(failure.description)")
                // Cancelled by SIGINT/SIGTERM before a peer came: an interruption, as in every command.
                if case .userCanceled = failure {
                    status = interruptedStatus
                } else {
                    status = localFailure.withLock { $0 } ? 1 : connectionFailedStatus
                }
            }
        }
        _ = connecting
        sender?.cancel()
        if let problem = input.failure ?? outputFailed {
            if input.failure != nil { printError("modem: \(problem)") }
            if status == 0 { status = 1 }
        }
        if status != 0 { throw ExitCode(status) }
    }

    private func openKeys() throws -> KeyStore {
        do {
            return try KeyStore(folder: keys)
        } catch {
            printError("connect failed FAIL_INVALID_AUTHORIZATION: keys: \(error)")
            throw ExitCode(1)
        }
    }
}

/// Sends each line as a chunk; at the end of input quits (after every chunk is held).
private func sendLines(from input: LineQueue, to mailbox: Mailbox) async {
    var number = 0
    while let line = await input.next() {
        number += 1
        do {
            _ = try await mailbox.send(line)
        } catch let error as MailboxSendError {
            if case .tooLarge = error {
                input.fail("standard input line \(number): \(error)")
                break
            }
            return  // the mailbox is ending; its event says why
        } catch {
            return
        }
    }
    await mailbox.disconnect()
}

/// Reads and validates a vCard file (at most 64 KiB).
private func readContact(_ path: String) throws -> VCard {
    let fd: FileDescriptor
    do {
        fd = try FileDescriptor.open(FilePath(path), .readOnly)
    } catch {
        throw CLIError("\(path): \(error)")
    }
    defer { try? fd.close() }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while bytes.count <= VCard.maximumSize {
        let count = try buffer.withUnsafeMutableBytes { try fd.read(into: $0, retryOnInterrupt: true) }
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    do {
        return try VCard.parse(bytes)
    } catch {
        throw CLIError("\(path): \(error)")
    }
}

/// SIGINT and SIGTERM: before the session connected, cancel (FAIL_USER_CANCELED); after, quit at once
/// (END_USER_QUIT), however long the line takes to say so (no grace-period watchdog; system calls
/// restart). A second signal ends the process (status 128 + its number).
private final class InterruptWatch: Sendable {
    private let mailbox: Mailbox

    init(mailbox: Mailbox) { self.mailbox = mailbox }

    func start() {
        installStopHandlers(watchdog: false, restart: true)
        let mailbox = self.mailbox
        onStop { await mailbox.disconnectNow() }
    }
}

/// Lines of a file descriptor, read on a thread of their own into a bounded queue (the reader
/// blocks when it is full, so a fast input never means unbounded memory).
final class LineQueue: Sendable {
    /// The longest line accepted (a chunk's limit is a little smaller and is checked when sending).
    static let maximumLine = 65_536
    private static let maximumLines = 1_024
    private static let maximumBytes = 4 << 20

    private struct State {
        var lines: [[UInt8]] = []
        var head = 0
        var bytes = 0
        var ended = false
        var failure: String?
        var waiter: CheckedContinuation<[UInt8]?, Never>?
        var producerWaiting = false
        var wakeProducer = false
    }

    private let state = Mutex(State())
    /// Where the reading thread sleeps while the queue is full (woken when a line is taken).
    private let room = NSCondition()

    /// Why reading stopped early (a line too long, a read error), if it did.
    var failure: String? { state.withLock { $0.failure } }

    /// Starts the reading thread.
    func startReading(fd: Int32) {
        DedicatedThread.start(name: "modem-mailbox-input") { [self] in self.readLoop(fd: fd) }
    }

    /// Records a failure and ends the input.
    func fail(_ message: String) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            if state.failure == nil { state.failure = message }
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next line, or nil at the end of input.
    func next() async -> [UInt8]? {
        await withCheckedContinuation { continuation in
            let ready: [UInt8]?? = state.withLock { state in
                if let line = pop(&state) { return .some(line) }
                if state.ended { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            wakeProducerIfTold()
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Every line queued now, without waiting (what is sent when the peer quits first).
    func takeQueued() -> [[UInt8]] {
        let lines = state.withLock { state in
            var lines: [[UInt8]] = []
            while let line = pop(&state) { lines.append(line) }
            return lines
        }
        wakeProducerIfTold()
        return lines
    }

    /// Wakes the reading thread if a line taken made room for it (outside `state`'s lock: the reader
    /// takes `room`'s lock first, then `state`'s).
    private func wakeProducerIfTold() {
        let wake = state.withLock { state -> Bool in
            defer { state.wakeProducer = false }
            return state.wakeProducer
        }
        guard wake else { return }
        room.lock()
        room.broadcast()
        room.unlock()
    }

    private func pop(_ state: inout State) -> [UInt8]? {
        guard state.head < state.lines.count else { return nil }
        let line = state.lines[state.head]
        state.lines[state.head] = []
        state.head += 1
        state.bytes -= line.count
        if state.head == state.lines.count {
            state.lines.removeAll(keepingCapacity: true)
            state.head = 0
        }
        if state.producerWaiting {
            state.producerWaiting = false
            state.wakeProducer = true
        }
        return line
    }

    private func push(_ line: [UInt8]) {
        while true {
            let waiter: CheckedContinuation<[UInt8]?, Never>?? = state.withLock { state in
                if let waiter = state.waiter {
                    state.waiter = nil
                    return .some(waiter)
                }
                if state.lines.count - state.head < Self.maximumLines, state.bytes + line.count <= Self.maximumBytes {
                    state.lines.append(line)
                    state.bytes += line.count
                    return .some(nil)
                }
                state.producerWaiting = true
                return nil
            }
            switch waiter {
            case .some(let waiting?):
                waiting.resume(returning: line)
                return
            case .some(nil):
                return
            case nil:
                // Sleeps until a consumer has cleared `producerWaiting` (checked under `room`'s lock,
                // which the consumer takes to wake it, so the wake-up cannot be missed).
                room.lock()
                while state.withLock({ $0.producerWaiting }) { room.wait() }
                room.unlock()
            }
        }
    }

    private func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    private func readLoop(fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var line: [UInt8] = []
        var number = 1
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                fail("standard input: read failed: \(String(cString: strerror(errno)))")
                return
            }
            if count == 0 { break }
            var start = 0
            for index in 0..<count where buffer[index] == 0x0A {
                line += buffer[start..<index]
                guard line.count <= Self.maximumLine else {
                    fail("standard input line \(number) is over \(Self.maximumLine) bytes")
                    return
                }
                push(line)
                line = []
                number += 1
                start = index + 1
            }
            line += buffer[start..<count]
            if line.count > Self.maximumLine {
                fail("standard input line \(number) is over \(Self.maximumLine) bytes")
                return
            }
            if state.withLock({ $0.ended }) { return }
        }
        // A last line without its newline is a chunk too.
        if !line.isEmpty { push(line) }
        finish()
    }
}
