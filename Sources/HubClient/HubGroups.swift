import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import ModemRuntime
import NIOSSL
import Synchronization

/// A user's presence in a group (the groups API's `user` packet).
public struct HubGroupUser: Sendable, Hashable, Codable {
    /// The group the packet comes from.
    public var group: String
    /// The stable user id.
    public var user: String
    /// 0 while online, else last seen in Unix milliseconds.
    public var timestamp: Int64
    /// The user's payload.
    public var userload: HubJSON
    /// Whether the user is online now.
    public var isOnline: Bool { timestamp == 0 }
}

/// What the groups socket pushes, in the groups API's shapes.
public enum HubGroupEvent: Sendable, Hashable {
    /// `{"type":"hello","user":ID}`: the socket's user id (keep a device id to present it next time).
    case hello(user: String)
    /// `{"type":"user","group","user","timestamp","userload"}`
    case user(HubGroupUser)
    /// `{"type":"post","group","pid","pidload","timestamp","user"}`
    case post(HubPost)
    /// `{"type":"error","op","message"}`: the hub refused an operation (a bad name, unposting another's post).
    case error(op: String?, message: String)

    /// The event as the groups API's JSON object (with `type`).
    public var json: HubJSON {
        switch self {
        case .hello(let u):
            return ["type": "hello", "user": .string(u)]
        case .user(let u):
            return ["type": "user", "group": .string(u.group), "user": .string(u.user), "timestamp": .integer(u.timestamp),
                    "userload": u.userload]
        case .post(let p):
            return ["type": "post", "group": .string(p.group), "pid": .string(p.pid), "pidload": p.pidload,
                    "timestamp": .integer(p.timestamp), "user": .string(p.user)]
        case .error(let op, let message):
            return ["type": "error", "op": op.map(HubJSON.string) ?? .null, "message": .string(message)]
        }
    }

    /// The event as a dictionary, the form the groups API's `socketReceivedDict` delivers.
    public var dictionary: [String: Any] { json.foundationValue as? [String: Any] ?? [:] }

    /// Reads one pushed frame; nil for a frame of an unknown `type` (ignored, for later extensions).
    public init?(parsing text: String) throws {
        let j = try HubJSON(parsing: text)
        guard let o = j.objectValue, let type = o["type"]?.stringValue else {
            throw HubClientError.unexpectedResponse(status: 101, detail: "a socket frame without type: \(text.prefix(200))")
        }
        func string(_ k: String) throws -> String {
            guard let s = o[k]?.stringValue else {
                throw HubClientError.unexpectedResponse(status: 101, detail: "a \(type) frame without \(k)")
            }
            return s
        }
        func int(_ k: String) throws -> Int64 {
            guard let s = o[k]?.int64Value else {
                throw HubClientError.unexpectedResponse(status: 101, detail: "a \(type) frame without \(k)")
            }
            return s
        }
        switch type {
        case "hello":
            self = .hello(user: try string("user"))
        case "user":
            self = .user(HubGroupUser(group: try string("group"), user: try string("user"), timestamp: try int("timestamp"),
                                      userload: o["userload"] ?? [:]))
        case "post":
            self = .post(HubPost(group: try string("group"), pid: try string("pid"), pidload: o["pidload"] ?? [:],
                                 timestamp: try int("timestamp"), user: try string("user")))
        case "error":
            self = .error(op: o["op"]?.stringValue, message: o["message"]?.stringValue ?? "refused")
        default:
            return nil
        }
    }
}

/// One groups socket (`/v1/socket`) with the groups API's operations; its events are an `AsyncSequence`
/// (one consumer). Made by `HubClient.connectGroups(user:)` or ``connect(baseURL:accessToken:user:tlsConfiguration:clock:)``.
///
/// `close()` ends the events normally; any other end (the hub closed it, the connection dropped)
/// ends them by throwing ``HubClientError/socketClosed(_:)`` naming what happened.
public final class HubGroupsConnection: AsyncSequence, Sendable {
    public typealias Element = HubGroupEvent
    public typealias AsyncIterator = AsyncThrowingStream<HubGroupEvent, any Error>.Iterator

    /// The user id the hub gave this socket at hello (an account's, or a device id to keep).
    public let user: String
    private let events: AsyncThrowingStream<HubGroupEvent, any Error>
    private let commands: AsyncStream<Command>.Continuation
    private let flags: Flags
    private let task: Task<Void, Never>
    /// What `close()`'s wait for the end runs on.
    private let clock: TimerClock

    enum Command: Sendable {
        case text(String)
        case close
    }

    private init(user: String, events: AsyncThrowingStream<HubGroupEvent, any Error>, commands: AsyncStream<Command>.Continuation,
                 flags: Flags, task: Task<Void, Never>, clock: TimerClock) {
        self.clock = clock
        self.user = user
        self.events = events
        self.commands = commands
        self.flags = flags
        self.task = task
    }

    /// What the socket's task and the connection share: whether `close()` was called, and the hello.
    private final class Flags: Sendable {
        let closing = Atomic<Bool>(false)
        private let hello = Mutex<(waiter: CheckedContinuation<String, any Error>?, result: Result<String, HubClientError>?)>((nil, nil))

        /// The first result wins; later ones are ignored.
        func settleHello(_ r: Result<String, HubClientError>) {
            let waiter = hello.withLock { s -> CheckedContinuation<String, any Error>? in
                guard s.result == nil else { return nil }
                s.result = r
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(with: r.mapError { $0 as any Error })
        }

        func waitHello() async throws -> String {
            try await withCheckedThrowingContinuation { c in
                let done = hello.withLock { s -> Result<String, HubClientError>? in
                    if let r = s.result { return r }
                    s.waiter = c
                    return nil
                }
                if let done { c.resume(with: done.mapError { $0 as any Error }) }
            }
        }
    }

    /// Events waiting unread beyond this end the socket with an error (the hub's own queue is 1,024 frames).
    public static let maxUnreadEvents = 65_536

    /// Connects to `baseURL`'s `/v1/socket` with a Bearer token and says hello (with `user`: a device id
    /// kept from an earlier connection of the same OAuth client; nil asks the hub for a new one). Returns
    /// once the hub has answered hello, or throws when it has not within 15 seconds of `clock`.
    /// - Parameter clock: what the wait for hello and `close()`'s wait for the end run on (default: the
    ///   system's monotonic clock; a test passes a manual one)
    public static func connect(baseURL: String, accessToken: String, user: String? = nil,
                               tlsConfiguration: TLSConfiguration? = nil, clock: TimerClock = .continuous) async throws -> HubGroupsConnection {
        var url = baseURL
        while url.hasSuffix("/") { url.removeLast() }
        if url.lowercased().hasPrefix("https://") { url = "wss://" + url.dropFirst(8) }
        else if url.lowercased().hasPrefix("http://") { url = "ws://" + url.dropFirst(7) }
        else { throw HubClientError.invalidArgument("the hub URL must be http(s)://HOST[:PORT], got '\(baseURL)'") }
        url += "/v1/socket"

        var config = WebSocketClientConfiguration(maxFrameSize: 1 << 20, autoPing: .disabled, validateUTF8: true)
        // The WebSocket client always sends SNI, which TLS forbids for an IP address; with verification
        // off (allowInvalidCertificates) the name checks nothing, so a reserved name stands in.
        if let tls = tlsConfiguration, tls.certificateVerification == .none, let host = URL(string: baseURL)?.host,
           host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) {
            config.sniHostname = "hub.invalid"
        }
        config.additionalHeaders[.authorization] = "Bearer " + accessToken
        var hello: HubJSON = ["op": "hello"]
        if let user { hello = ["op": "hello", "user": .string(user)] }
        let helloText = hello.jsonText
        let wsURL = url, configuration = config

        let (commandStream, commands) = AsyncStream<Command>.makeStream()
        // Bounded: a consumer that stops reading ends the socket rather than growing memory without end.
        let (events, sink) = AsyncThrowingStream<HubGroupEvent, any Error>.makeStream(bufferingPolicy: .bufferingOldest(maxUnreadEvents))
        let flags = Flags()
        var logger = Logger(label: "HubClient.groups")
        logger.logLevel = .error
        let log = logger
        let task = Task {
            let ending: HubClientError?
            do {
                let closeFrame = try await WebSocketClient.connect(
                    url: wsURL, configuration: configuration, tlsConfiguration: tlsConfiguration, logger: log
                ) { inbound, outbound, _ in
                    try await outbound.write(.text(helloText))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await c in commandStream {
                                switch c {
                                case .text(let t): try await outbound.write(.text(t))
                                case .close:
                                    try? await outbound.close(.normalClosure, reason: "client closed")
                                    return
                                }
                            }
                        }
                        group.addTask {
                            for try await message in inbound.messages(maxSize: 1 << 20) {
                                guard case .text(let text) = message else { continue }
                                guard let event = try HubGroupEvent(parsing: text) else { continue }
                                switch event {
                                case .hello(let u): flags.settleHello(.success(u))
                                case .error(let op, let m) where op == "hello":
                                    flags.settleHello(.failure(.socketClosed("the hub refused hello: \(m)")))
                                default: break
                                }
                                if case .dropped = sink.yield(event) {
                                    throw HubClientError.socketClosed("more than \(maxUnreadEvents) events were waiting unread")
                                }
                            }
                        }
                        // Whichever ends first (our close, or the inbound side) ends the socket.
                        _ = try await group.next()
                        group.cancelAll()
                    }
                }
                if flags.closing.load(ordering: .acquiring) {
                    ending = nil
                } else if let f = closeFrame {
                    ending = .socketClosed("closed by the hub (code \(f.closeCode)\(f.reason.map { ": \($0)" } ?? ""))")
                } else {
                    ending = .socketClosed("the connection dropped without a close frame")
                }
            } catch let e as HubClientError {
                ending = flags.closing.load(ordering: .acquiring) ? nil : e
            } catch {
                if flags.closing.load(ordering: .acquiring) {
                    ending = nil
                } else if let w = error as? WebSocketClientError, w == .webSocketUpgradeFailed {
                    ending = .socketClosed("the hub refused the WebSocket upgrade at \(wsURL) (a missing or refused token answers 401)")
                } else {
                    ending = .socketClosed("the connection failed or dropped: \(HubClient.describe(error))")
                }
            }
            flags.settleHello(.failure(ending ?? .socketClosed("closed before hello")))
            commands.finish()
            if let ending { sink.finish(throwing: ending) } else { sink.finish() }
        }
        // A hub that upgrades but never answers hello must not hang the caller.
        let timer = Task {
            try? await clock.sleep(15)
            if !Task.isCancelled { flags.settleHello(.failure(.socketClosed("no hello from the hub within 15 s"))) }
        }
        let id: String
        do {
            id = try await flags.waitHello()
            timer.cancel()
        } catch {
            timer.cancel()
            flags.closing.store(true, ordering: .releasing)
            commands.finish()
            task.cancel()
            throw error
        }
        return HubGroupsConnection(user: id, events: events, commands: commands, flags: flags, task: task, clock: clock)
    }

    /// The events, in the order the hub sent them: the hello, then presence and posts of the groups joined
    /// or listened to. One consumer only.
    public func makeAsyncIterator() -> AsyncIterator { events.makeAsyncIterator() }

    /// `{"op":"join","group":G}`: become a member, be seen, and receive the group's presence and posts.
    public func join(_ group: String) throws { try send(["op": "join", "group": .string(group)]) }

    /// `{"op":"listen","group":G}`: receive the group's presence and posts without being seen.
    public func listen(_ group: String) throws { try send(["op": "listen", "group": .string(group)]) }

    /// `{"op":"leave","group":G}`: stop being a member (the group sees the user's last-seen time).
    public func leave(_ group: String) throws { try send(["op": "leave", "group": .string(group)]) }

    /// `{"op":"post",...}`: a post kept (and delivered to newcomers) until unposted.
    public func post(group: String, pid: String, pidload: [String: HubJSON]) throws {
        try send(["op": "post", "group": .string(group), "pid": .string(pid), "pidload": .object(pidload)])
    }

    /// `{"op":"unpost",...}`: removes one's own post.
    public func unpost(group: String, pid: String) throws {
        try send(["op": "unpost", "group": .string(group), "pid": .string(pid)])
    }

    /// `{"op":"update","userload":{...}}`: a new userload, told to every group the user joined.
    public func update(userload: [String: HubJSON]) throws {
        try send(["op": "update", "userload": .object(userload)])
    }

    private func send(_ op: HubJSON) throws {
        guard !flags.closing.load(ordering: .acquiring) else { throw HubClientError.socketClosed("close() was called") }
        if case .terminated = commands.yield(.text(op.jsonText)) {
            throw HubClientError.socketClosed("the socket has ended")
        }
    }

    /// Closes the socket (a normal close frame) and waits, up to 5 seconds (of the clock given to
    /// ``connect(baseURL:accessToken:user:tlsConfiguration:clock:)``), for it to end. The events end
    /// without an error.
    public func close() async {
        flags.closing.store(true, ordering: .releasing)
        commands.yield(.close)
        commands.finish()
        let task = self.task, clock = self.clock
        await withTaskGroup(of: Void.self) { g in
            g.addTask { await task.value }
            g.addTask { try? await clock.sleep(5) }
            await g.next()
            g.cancelAll()
        }
        task.cancel()
    }
}

/// The groups API's delegate: packets arrive as dictionaries through `socketReceivedDict`.
public protocol HubGroupsDelegate: AnyObject, Sendable {
    /// Every packet the socket pushes (`hello`, `user`, `post`, `error`) as a dictionary in the groups API's
    /// shape: `type`, `group`, `user`, `timestamp`, `userload` / `pid`, `pidload`. Called in order,
    /// one at a time, on a task of the facade.
    func socketReceivedDict(_ dict: [String: Any])
    /// The socket ended: nil after `close()`, else the error naming why. Optional.
    func socketDidClose(error: HubClientError?)
}

extension HubGroupsDelegate {
    public func socketDidClose(error: HubClientError?) {}
}

/// The groups API's SDK shape over a ``HubGroupsConnection``: the operations as methods, the packets delivered
/// to a delegate's `socketReceivedDict`. The facade holds its delegate until the socket ends.
public final class HubGroups: Sendable {
    /// The socket underneath.
    public let connection: HubGroupsConnection
    private let pump: Task<Void, Never>

    /// Starts delivering `connection`'s events (the hello first) to `delegate`.
    public init(connection: HubGroupsConnection, delegate: any HubGroupsDelegate) {
        self.connection = connection
        pump = Task {
            do {
                for try await event in connection { delegate.socketReceivedDict(event.dictionary) }
                delegate.socketDidClose(error: nil)
            } catch let e as HubClientError {
                delegate.socketDidClose(error: e)
            } catch {
                delegate.socketDidClose(error: .socketClosed("\(error)"))
            }
        }
    }

    /// Connects with `client`'s current token (see `HubClient.connectGroups(user:)`) and delivers to `delegate`.
    public static func connect(client: HubClient, user: String? = nil, delegate: any HubGroupsDelegate) async throws -> HubGroups {
        HubGroups(connection: try await client.connectGroups(user: user), delegate: delegate)
    }

    /// This device's (or account's) user id.
    public var user: String { connection.user }
    /// Joins `group` (seen; receives its presence and posts). See ``HubGroupsConnection/join(_:)``.
    public func join(_ group: String) throws { try connection.join(group) }
    /// Listens to `group` (unseen). See ``HubGroupsConnection/listen(_:)``.
    public func listen(_ group: String) throws { try connection.listen(group) }
    /// Leaves `group`. See ``HubGroupsConnection/leave(_:)``.
    public func leave(_ group: String) throws { try connection.leave(group) }
    /// Posts `pid` to `group`, kept until unposted. See ``HubGroupsConnection/post(group:pid:pidload:)``.
    public func post(group: String, pid: String, pidload: [String: HubJSON]) throws {
        try connection.post(group: group, pid: pid, pidload: pidload)
    }
    /// Removes one's own post. See ``HubGroupsConnection/unpost(group:pid:)``.
    public func unpost(group: String, pid: String) throws { try connection.unpost(group: group, pid: pid) }
    /// Sets the userload, told to every group joined. See ``HubGroupsConnection/update(userload:)``.
    public func update(userload: [String: HubJSON]) throws { try connection.update(userload: userload) }

    /// Closes the socket; the delegate's `socketDidClose(error: nil)` has been called when this returns.
    public func close() async {
        await connection.close()
        await pump.value
    }
}
