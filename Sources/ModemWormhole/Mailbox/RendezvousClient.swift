import Foundation
import ModemMessaging
import Synchronization
import ModemRuntime

/// A message of the mailbox, as the server relays it: the sending side, its phase and its body.
public struct MailboxMessage: Sendable, Equatable {
    /// The side that sent it (random per client).
    public var side: String
    /// Its phase (`pake`, `version`, `0`, `1`, ...).
    public var phase: String
    /// Its body (decoded from hex).
    public var body: [UInt8]
}

/// The client half of magic-wormhole's rendezvous (mailbox) protocol over a ``WebSocketClient``: the
/// server's `welcome`, then `bind`, `allocate`, `claim`, `open`, `add`, `release`, `close`, each
/// request with an `id` (the server acks them; acks are skipped). One reader task takes every server
/// message: relayed mailbox messages go to ``nextMessage()``, answers to the request that waits for
/// them, and an `error` fails that request (or the next one) with the server's words.
public final class RendezvousClient: Sendable {
    private let socket: WebSocketClient
    private struct State {
        var inbox = RendezvousInbox()
        var answerWaiter: CheckedContinuation<[String: JSONValue]?, Never>?
        var messageWaiter: CheckedContinuation<MailboxMessage?, Never>?
        var ended: WormholeError?
        var welcome: [String: JSONValue]?
        var welcomeWaiter: CheckedContinuation<[String: JSONValue]?, Never>?
    }
    private let state = Mutex(State())
    private let reader = Mutex<Task<Void, Never>?>(nil)

    /// Connects to a rendezvous server's WebSocket and waits for its `welcome`.
    /// - Throws: ``WormholeError``: `.network`, or `.server` when the welcome carries an `error`
    ///   (the server refuses this client) or is missing.
    public static func connect(_ url: WebSocketURL, timeout: Double = 15) async throws(WormholeError) -> RendezvousClient {
        let client = RendezvousClient(socket: try await WebSocketClient.connect(url, timeout: timeout))
        client.startReading()
        let welcome = await withCheckedContinuation { (c: CheckedContinuation<[String: JSONValue]?, Never>) in
            let ready: [String: JSONValue]?? = client.state.withLock { s in
                if let w = s.welcome { return .some(w) }
                if s.ended != nil { return .some(nil) }
                s.welcomeWaiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
        guard let welcome else {
            throw client.state.withLock { $0.ended } ?? WormholeError(.server, "\(url) closed before its welcome")
        }
        if let error = welcome["error"]?.string {
            await client.close()
            throw WormholeError(.server, "the rendezvous server refuses this client: \(printableText(error))")
        }
        return client
    }

    private init(socket: WebSocketClient) { self.socket = socket }

    /// The server's message of the day, if its welcome had one.
    public var motd: String? { state.withLock { $0.welcome?["motd"]?.string.map(printableText) } }

    private func startReading() {
        let task = Task { [self] in
            var failure = WormholeError(.network, "the rendezvous server closed the connection")
            do throws(WormholeError) {
                while let text = try await socket.receive() {
                    guard let m = JSONValue.parse(text)?.object, let type = m["type"]?.string else {
                        throw WormholeError(.server, "the rendezvous server sent a message that is not a JSON object with a type")
                    }
                    try route(type, m, size: text.utf8.count)
                }
            } catch {
                failure = error
            }
            end(failure)
        }
        reader.withLock { $0 = task }
    }

    private func route(_ type: String, _ m: [String: JSONValue], size: Int) throws(WormholeError) {
        switch type {
        case "ack", "pong":
            return
        case "welcome":
            let w = m["welcome"]?.object ?? [:]
            let waiter = state.withLock { s -> CheckedContinuation<[String: JSONValue]?, Never>? in
                s.welcome = w
                defer { s.welcomeWaiter = nil }
                return s.welcomeWaiter
            }
            waiter?.resume(returning: w)
        case "message":
            guard let side = m["side"]?.string, let phase = m["phase"]?.string, let hex = m["body"]?.string,
                  let body = Hex.decode(hex) else {
                throw WormholeError(.server, "the rendezvous server relayed a message without side, phase or hex body")
            }
            let message = MailboxMessage(side: side, phase: phase, body: body)
            let result: Result<CheckedContinuation<MailboxMessage?, Never>?, WormholeError> = state.withLock { s in
                if let w = s.messageWaiter {
                    s.messageWaiter = nil
                    return .success(w)
                }
                do throws(WormholeError) { try s.inbox.hold(message, size: size) } catch { return .failure(error) }
                return .success(nil)
            }
            try result.get()?.resume(returning: message)
        default:
            // Answers (allocated, claimed, released, closed, nameplates) and errors, in order.
            let result: Result<CheckedContinuation<[String: JSONValue]?, Never>?, WormholeError> = state.withLock { s in
                if let w = s.answerWaiter {
                    s.answerWaiter = nil
                    return .success(w)
                }
                do throws(WormholeError) { try s.inbox.hold(answer: m, size: size) } catch { return .failure(error) }
                return .success(nil)
            }
            try result.get()?.resume(returning: m)
        }
    }

    private func end(_ error: WormholeError) {
        let (a, m, w) = state.withLock { s in
            if s.ended == nil { s.ended = error }
            defer { s.answerWaiter = nil; s.messageWaiter = nil; s.welcomeWaiter = nil }
            return (s.answerWaiter, s.messageWaiter, s.welcomeWaiter)
        }
        a?.resume(returning: nil)
        m?.resume(returning: nil)
        w?.resume(returning: nil)
    }

    /// Sends one request (`id` and `type` added).
    func send(_ type: String, _ fields: [String: JSONValue] = [:]) async throws(WormholeError) {
        var f = fields
        f["type"] = .string(type)
        f["id"] = .string(Hex.encode((0..<2).map { _ in UInt8.random(in: 0...255) }))
        try await socket.send(text: JSONValue.object(f).text)
    }

    /// Waits for the next answer; it must be of `type` (an `error` throws with the server's words).
    func answer(_ type: String) async throws(WormholeError) -> [String: JSONValue] {
        let m = await withCheckedContinuation { (c: CheckedContinuation<[String: JSONValue]?, Never>) in
            let ready: [String: JSONValue]?? = state.withLock { s in
                if let a = s.inbox.nextAnswer() { return .some(a) }
                if s.ended != nil { return .some(nil) }
                s.answerWaiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
        guard let m else { throw state.withLock { $0.ended } ?? WormholeError(.network, "the rendezvous connection ended") }
        let got = m["type"]?.string ?? ""
        if got == "error" {
            throw WormholeError(.server, "the rendezvous server refused '\(type)': \(printableText(m["error"]?.string ?? "an error"))")
        }
        guard got == type else { throw WormholeError(.server, "the rendezvous server answered '\(printableText(got))' where '\(type)' was due") }
        return m
    }

    /// `bind`: this client's application id and side.
    public func bind(appID: String, side: String) async throws(WormholeError) {
        try await send("bind", ["appid": .string(appID), "side": .string(side), "client_version": ["swiftmodem", .string(wormholeClientVersion)]])
    }

    /// `allocate`: a free nameplate from the server, claimed for this side.
    public func allocate() async throws(WormholeError) -> String {
        try await send("allocate")
        guard let n = try await answer("allocated")["nameplate"]?.string, isNameplate(n) else {
            throw WormholeError(.server, "the rendezvous server allocated no valid nameplate")
        }
        return n
    }

    /// `claim`: the mailbox of a nameplate.
    public func claim(_ nameplate: String) async throws(WormholeError) -> String {
        try await send("claim", ["nameplate": .string(nameplate)])
        guard let mailbox = try await answer("claimed")["mailbox"]?.string, !mailbox.isEmpty, mailbox.utf8.count <= 256 else {
            throw WormholeError(.server, "the rendezvous server claimed no valid mailbox")
        }
        return mailbox
    }

    /// `open`: from now on the mailbox's messages (earlier ones first) come to ``nextMessage()``.
    public func open(_ mailbox: String) async throws(WormholeError) {
        try await send("open", ["mailbox": .string(mailbox)])
    }

    /// `add`: leaves a message in the open mailbox.
    public func add(phase: String, body: [UInt8]) async throws(WormholeError) {
        try await send("add", ["phase": .string(phase), "body": .string(Hex.encode(body))])
    }

    /// `release`: gives the nameplate back.
    public func release(_ nameplate: String) async throws(WormholeError) {
        try await send("release", ["nameplate": .string(nameplate)])
        _ = try await answer("released")
    }

    /// `close`: this side is done with the mailbox, with a mood (`happy`, `lonely`, `scary`, `errory`).
    public func close(mailbox: String, mood: String) async throws(WormholeError) {
        try await send("close", ["mailbox": .string(mailbox), "mood": .string(mood)])
        _ = try await answer("closed")
    }

    /// The next message of the open mailbox (ours included, as the server relays every message).
    /// - Throws: ``WormholeError`` once the connection ended.
    public func nextMessage() async throws(WormholeError) -> MailboxMessage {
        let m = await withCheckedContinuation { (c: CheckedContinuation<MailboxMessage?, Never>) in
            let ready: MailboxMessage?? = state.withLock { s in
                if let m = s.inbox.nextMessage() { return .some(m) }
                if s.ended != nil { return .some(nil) }
                s.messageWaiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
        guard let m else { throw state.withLock { $0.ended } ?? WormholeError(.network, "the rendezvous connection ended") }
        return m
    }

    /// Closes the WebSocket.
    public func close() async {
        await socket.close()
        reader.withLock { $0?.cancel() }
    }
}

/// Whether `text` is a nameplate: 1 to 64 ASCII digits.
func isNameplate(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
}

/// Text from the other end made safe for a terminal (``TerminalText/safe(_:maximumScalars:)``), at most 300 scalars.
public func printableText(_ text: String) -> String {
    TerminalText.safe(text, maximumScalars: 300)
}

/// What a ``RendezvousClient`` holds that nobody has asked for yet: relayed mailbox messages and
/// answers, in order, bounded in number (``maximumQueued`` of each) and together in bytes as they came
/// on the wire (``maximumBytes``). A server (or a partner, through it) that sends more than that
/// before they are taken ends the connection with a `.server` error: nothing is dropped silently,
/// and what a hostile server can make us hold is bounded.
struct RendezvousInbox: Sendable {
    /// Messages (and, apart, answers) held at most.
    static let maximumQueued = 1000
    /// Bytes (as received) of everything held at most: 8 MiB, room for eight of the largest
    /// messages (``WebSocketClient/maximumMessageBytes``); an honest exchange holds a few small ones.
    static let maximumBytes = 8 << 20

    private var messages: [(message: MailboxMessage, size: Int)] = []
    private var messageHead = 0
    private var answers: [(answer: [String: JSONValue], size: Int)] = []
    private var answerHead = 0
    /// Bytes held now.
    private(set) var bytes = 0

    /// Messages held now.
    var messageCount: Int { messages.count - messageHead }
    /// Answers held now.
    var answerCount: Int { answers.count - answerHead }

    private mutating func reserve(_ size: Int, what: String) throws(WormholeError) {
        guard size <= Self.maximumBytes - bytes else {
            throw WormholeError(.server, "the rendezvous server sent \(what) over \(Self.maximumBytes) bytes in all, none of it asked for yet")
        }
        bytes += size
    }

    /// Holds a relayed message of `size` bytes on the wire.
    mutating func hold(_ message: MailboxMessage, size: Int) throws(WormholeError) {
        guard messageCount < Self.maximumQueued else {
            throw WormholeError(.server, "the rendezvous server relayed over \(Self.maximumQueued) messages")
        }
        try reserve(size, what: "messages")
        messages.append((message, size))
    }

    /// Holds an answer of `size` bytes on the wire.
    mutating func hold(answer: [String: JSONValue], size: Int) throws(WormholeError) {
        guard answerCount < Self.maximumQueued else {
            throw WormholeError(.server, "the rendezvous server sent over \(Self.maximumQueued) answers nobody asked for")
        }
        try reserve(size, what: "answers")
        answers.append((answer, size))
    }

    /// The oldest message held, if any.
    mutating func nextMessage() -> MailboxMessage? {
        guard messageHead < messages.count else { return nil }
        let (m, size) = messages[messageHead]
        messageHead += 1
        bytes -= size
        if messageHead > 64, messageHead * 2 > messages.count { messages.removeFirst(messageHead); messageHead = 0 }
        return m
    }

    /// The oldest answer held, if any.
    mutating func nextAnswer() -> [String: JSONValue]? {
        guard answerHead < answers.count else { return nil }
        let (a, size) = answers[answerHead]
        answerHead += 1
        bytes -= size
        if answerHead > 64, answerHead * 2 > answers.count { answers.removeFirst(answerHead); answerHead = 0 }
        return a
    }
}
