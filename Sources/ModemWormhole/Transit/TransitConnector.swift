#if canImport(Glibc)
import Glibc
#endif
import ModemCrypto
import ModemSockets
import Synchronization
import ModemRuntime

/// The keys and handshake lines of magic-wormhole's transit, from the transit key (itself derived from
/// the wormhole's key for the application's purpose): each line and record key is HKDF-SHA256 of the
/// transit key with its name as the info.
public struct TransitKeys: Sendable {
    /// The transit key (32 bytes).
    public let key: [UInt8]
    /// Creates the keys of a transit key.
    public init(key: [UInt8]) { self.key = key }

    private func derivedHex(_ info: String) -> String { Hex.encode(WormholeKeys.derive(key, purpose: info)) }
    /// `transit sender HEX ready\n\n`.
    public var senderHandshake: [UInt8] { Array("transit sender \(derivedHex("transit_sender")) ready\n\n".utf8) }
    /// `transit receiver HEX ready\n\n`.
    public var receiverHandshake: [UInt8] { Array("transit receiver \(derivedHex("transit_receiver")) ready\n\n".utf8) }
    /// `please relay TOKEN for side SIDE\n`.
    public func relayHandshake(side: String) -> [UInt8] { Array("please relay \(derivedHex("transit_relay_token")) for side \(side)\n".utf8) }
    /// The key of the records the sender sends.
    public var senderRecordKey: [UInt8] { WormholeKeys.derive(key, purpose: "transit_record_sender_key") }
    /// The key of the records the receiver sends.
    public var receiverRecordKey: [UInt8] { WormholeKeys.derive(key, purpose: "transit_record_receiver_key") }
}

/// A transit connection that passed its handshake: the stream, and how it was made.
public struct TransitConnection: Sendable {
    /// The connected stream (after `go`).
    public let stream: ByteStream
    /// `direct tcp:HOST:PORT`, `direct from HOST:PORT` or `relay tcp:HOST:PORT`.
    public let route: String
    /// Whether it goes through a transit relay.
    public let relayed: Bool
}

/// Makes magic-wormhole's transit connection for one side (the file's sender or receiver): listens
/// for direct connections (unless told not to) and offers those addresses as hints, then tries every
/// route at once (the peer's direct hints, connections to our listener, and the relays, these after
/// two seconds when there are direct routes) and keeps the first whose handshake completes: the
/// sender says `go` on it and `nevermind` on any other that completes; the receiver waits for `go`.
public final class TransitConnector: Sendable {
    /// Which end of the transfer this is.
    public enum Role: Sendable { case sender, receiver }

    /// This side's role.
    public let role: Role
    /// The keys.
    public let keys: TransitKeys
    /// Our relays.
    public let relays: [TransitHint]
    /// Our transit side (16 hex digits), for the relay handshake.
    public let side = Hex.encode(secureRandomBytes(8))
    private let listener: Int32?
    private let listenPort: Int
    /// The most connections to our listener whose handshake is under way at once (default 32). More
    /// wait in the kernel's queue (nothing is dropped) until one of these ends: it passes, fails or
    /// reaches ``handshakeTimeout``. Anyone on the network can connect to the listener, so this
    /// bounds what they hold, and the timeout makes sure they cannot hold it for long.
    public let maximumPendingHandshakes: Int
    /// Seconds a connection to our listener has to complete its handshake (default 10; the peer
    /// sends its handshake at once, so this is only ever reached by a connection that is not the peer).
    public let handshakeTimeout: Double
    /// The listening socket's queue: connections waiting for a handshake slot.
    static let listenBacklog: Int32 = 128

    /// Seconds before the relays are tried when there are direct routes.
    public static let relayDelay = 2.0
    /// The clock of every deadline here (the whole attempt's, each route's connect, each handshake's,
    /// the relay delay).
    public let clock: TimerClock

    /// Creates the connector; with `listen`, a listening socket on every address (port chosen by the kernel).
    /// - Parameters:
    ///   - maximumPendingHandshakes: connections to our listener in their handshake at once (at least 1).
    ///   - handshakeTimeout: seconds each of them has for it (more than 0).
    ///   - clock: the clock of the deadlines (a test passes a manual one).
    /// - Throws: ``WormholeError`` (`.network`) when it cannot listen.
    public init(role: Role, transitKey: [UInt8], relays: [TransitHint], listen: Bool,
                maximumPendingHandshakes: Int = 32, handshakeTimeout: Double = 10, clock: TimerClock = .continuous) throws(WormholeError) {
        precondition(maximumPendingHandshakes >= 1 && handshakeTimeout > 0, "TransitConnector: at least one handshake slot and a timeout over 0")
        self.role = role
        keys = TransitKeys(key: transitKey)
        self.relays = relays
        self.maximumPendingHandshakes = maximumPendingHandshakes
        self.handshakeTimeout = handshakeTimeout
        self.clock = clock
        if listen {
            do {
                let (fd, port) = try TCPSocket.listen(host: "0.0.0.0", port: 0, backlog: Self.listenBacklog)
                listener = fd
                listenPort = port
            } catch {
                throw WormholeError(.network, error.description)
            }
        } else {
            listener = nil
            listenPort = 0
        }
    }

    deinit { if let listener { TCPSocket.close(listener) } }

    /// Our hints: this machine's addresses with the listening port, and our relays.
    public var hints: TransitHints {
        TransitHints(direct: listener == nil ? [] : TransitHints.localAddresses().map { TransitHint(host: $0, port: listenPort) }, relays: relays)
    }

    private var ourHandshake: [UInt8] { role == .sender ? keys.senderHandshake : keys.receiverHandshake }
    private var theirHandshake: [UInt8] { role == .sender ? keys.receiverHandshake : keys.senderHandshake }

    /// Connects to the peer of `peer` hints within `timeout` seconds of ``clock``.
    /// - Throws: ``WormholeError`` (`.transit`) when no route completed its handshake.
    public func connect(to peer: TransitHints, timeout: Double = 120) async throws(WormholeError) -> TransitConnection {
        let clock = self.clock
        let deadline = clock.deadline(after: timeout)
        // Each route's TCP connect has at most 10 s of it.
        let connectBy: @Sendable () -> Deadline = { deadline.earlier(clock.deadline(after: min(10, timeout))) }
        // Each address once (a peer's hints are at most 64 of each kind: TransitHints(message:)).
        var unique: [TransitHint] = []
        for d in peer.direct.sorted(by: { $0.priority > $1.priority }) where !unique.contains(where: { $0.host == d.host && $0.port == d.port }) {
            unique.append(d)
        }
        let direct = unique
        var relaySet: [TransitHint] = []
        for r in relays + peer.relays where !relaySet.contains(where: { $0.host == r.host && $0.port == r.port }) { relaySet.append(r) }
        let race = TransitRace(directs: direct.count)
        enum Outcome: Sendable { case won(TransitConnection), routeFailed, other }
        let result: TransitConnection? = await withTaskGroup(of: Outcome.self) { group in
            for hint in direct {
                group.addTask {
                    defer { race.directEnded() }
                    let r = await self.attempt(route: "direct \(hint)", relayed: false, deadline: deadline, race: race) { () async throws(WormholeError) -> ByteStream in
                        try await ByteStream.connect(host: hint.host, port: hint.port, deadline: connectBy())
                    }
                    return r.map { .won($0) } ?? .routeFailed
                }
            }
            for hint in relaySet {
                group.addTask {
                    // The relay after the direct routes had their chance (or at once when there are none):
                    // until every direct route ended, one won, or the relay delay passed.
                    if !direct.isEmpty {
                        await withTaskGroup(of: Void.self) { wait in
                            wait.addTask { await race.directsOverOrDecided() }
                            wait.addTask { try? await clock.sleep(Self.relayDelay) }
                            await wait.next()
                            wait.cancelAll()
                        }
                    }
                    if Task.isCancelled || race.decided.load(ordering: .relaxed) { return .routeFailed }
                    let r = await self.attempt(route: "relay \(hint)", relayed: true, deadline: deadline, race: race) { () async throws(WormholeError) -> ByteStream in
                        let s = try await ByteStream.connect(host: hint.host, port: hint.port, deadline: connectBy())
                        try await s.write(self.keys.relayHandshake(side: self.side), deadline: deadline)
                        let ok = try await s.read(exactly: 3, deadline: deadline)
                        guard ok == Array("ok\n".utf8) else { throw WormholeError(.transit, "the relay \(hint) refused the handshake") }
                        return s
                    }
                    return r.map { .won($0) } ?? .routeFailed
                }
            }
            if let listener {
                group.addTask {
                    await self.acceptLoop(listener, deadline: deadline, race: race).map { .won($0) } ?? .other
                }
            }
            // A guard task: ends the wait at the deadline (cancelled with the group when a route won
            // or every route failed).
            group.addTask {
                try? await deadline.sleep()
                return .other
            }
            var winner: TransitConnection?
            var outgoingLeft = direct.count + relaySet.count
            while let r = await group.next() {
                switch r {
                case .won(let c): winner = c
                case .routeFailed: outgoingLeft -= 1
                case .other: break
                }
                // Done: a winner; the deadline; or every outgoing route failed and nobody can call us.
                if winner != nil || deadline.hasPassed || (outgoingLeft == 0 && listener == nil) { break }
            }
            group.cancelAll()
            return winner
        }
        if let listener { _ = shutdown(listener, Int32(SHUT_RDWR)) }
        guard let result else {
            let why = race.failures.withLock { $0.isEmpty ? "" : ": " + $0.prefix(4).joined(separator: "; ") }
            throw WormholeError(.transit, "no transit connection could be made (direct or through a relay)\(why)")
        }
        return result
    }

    /// What the tasks of ``acceptLoop(_:deadline:race:)`` report.
    private enum AcceptEvent: Sendable {
        case accepted(ByteStream)
        case won(TransitConnection)
        case handshakeEnded
        case listenerDone
    }

    /// Accepts connections to our listener, each trying the handshake, until one wins: at most
    /// ``maximumPendingHandshakes`` at once, each within ``handshakeTimeout``. While every slot is
    /// taken nothing is accepted (connections wait in the kernel's queue), so a flood of connections
    /// that never complete a handshake delays the peer by one timeout at most per slot's worth of
    /// them, and never makes us stop answering handshakes.
    private func acceptLoop(_ listener: Int32, deadline: Deadline, race: TransitRace) async -> TransitConnection? {
        let slots = maximumPendingHandshakes
        let timeout = handshakeTimeout
        return await withTaskGroup(of: AcceptEvent.self) { group in
            var pending = 0
            var accepting = true
            var listenerOpen = true
            group.addTask { await Self.waitAccept(listener, deadline: deadline).map { .accepted($0) } ?? .listenerDone }
            while let event = await group.next() {
                switch event {
                case .accepted(let s):
                    pending += 1
                    group.addTask {
                        let handshakeDeadline = deadline.earlier(self.clock.deadline(after: timeout))
                        let won = await self.attempt(route: "direct from \(s.peer)", relayed: false, deadline: deadline,
                                                     handshakeDeadline: handshakeDeadline, race: race) { () async throws(WormholeError) -> ByteStream in s }
                        return won.map { .won($0) } ?? .handshakeEnded
                    }
                    if pending < slots {
                        group.addTask { await Self.waitAccept(listener, deadline: deadline).map { .accepted($0) } ?? .listenerDone }
                    } else {
                        accepting = false
                    }
                case .handshakeEnded:
                    pending -= 1
                    if !accepting, listenerOpen, !race.decided.load(ordering: .relaxed), !deadline.hasPassed {
                        accepting = true
                        group.addTask { await Self.waitAccept(listener, deadline: deadline).map { .accepted($0) } ?? .listenerDone }
                    }
                case .won(let c):
                    group.cancelAll()
                    return c
                case .listenerDone:
                    accepting = false
                    listenerOpen = false
                }
                // Not on `race.decided` alone: one of our own attempts may have decided and its `.won`
                // be still on its way (returning then dropped the winning connection). Another route's
                // win ends this loop by cancelling it.
                if deadline.hasPassed || Task.isCancelled || (!accepting && pending == 0) {
                    group.cancelAll()
                    return nil
                }
            }
            return nil
        }
    }

    /// The next connection to the listener; nil at the deadline, on cancellation or when the listener is shut.
    private static func waitAccept(_ listener: Int32, deadline: Deadline) async -> ByteStream? {
        while !Task.isCancelled, !deadline.hasPassed {
            switch TCPSocket.accept(listener) {
            case .connection(let fd, let peer):
                return ByteStream(fd: fd, peer: peer)
            case .none:
                if await SocketWaiter.shared.wait(fd: listener, for: .readable, until: deadline) != .ready { return nil }
            case .failed(let code):
                if code == EINVAL || code == EBADF { return nil }
                // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS): a moment's pause before the
                // next try, on the deadline's clock.
                try? await deadline.clock.sleep(0.05)
            }
        }
        return nil
    }

    /// One route: open the stream, run the handshake (by `handshakeDeadline`, default the route's
    /// deadline), and (sender) decide or (receiver) wait for `go` (by the same handshake deadline). The peer's handshake line is compared
    /// in constant time: it is derived from the transit key.
    private func attempt(route: String, relayed: Bool, deadline: Deadline,
                         handshakeDeadline: Deadline? = nil, race: TransitRace,
                         open: @Sendable () async throws(WormholeError) -> ByteStream) async -> TransitConnection? {
        var stream: ByteStream?
        do throws(WormholeError) {
            let s = try await open()
            stream = s
            let handshakeBy = handshakeDeadline ?? deadline
            try await s.write(ourHandshake, deadline: handshakeBy)
            let theirs = try await s.read(exactly: theirHandshake.count, deadline: handshakeBy)
            guard constantTimeEqual(theirs, theirHandshake) else { throw WormholeError(.transit, "\(route): the peer's transit handshake does not match (another key)") }
            switch role {
            case .sender:
                if race.decide() {
                    try? await s.write(Array("nevermind\n".utf8), deadline: deadline)
                    s.close()
                    return nil
                }
                try await s.write(Array("go\n".utf8), deadline: deadline)
            case .receiver:
                // `go` comes as soon as the sender has read our handshake: it is waited for only by the
                // handshake's deadline (a listener slot's timeout), never the whole attempt's. The
                // sender's handshake line crosses relays in the clear, so a replay of it must not hold
                // a slot for longer than a silent connection does.
                let word = try await s.read(exactly: 3, deadline: handshakeBy)
                guard word == Array("go\n".utf8) else { s.close(); return nil }  // nevermind: another route won
                if race.decide() { s.close(); return nil }
            }
            return TransitConnection(stream: s, route: route, relayed: relayed)
        } catch {
            stream?.close()
            if !Task.isCancelled { race.failures.withLock { if $0.count < 16 { $0.append(error.description) } } }
            return nil
        }
    }
}

/// What the routes of one connection attempt share: whether one won, how many direct ones are left,
/// and why the others failed.
final class TransitRace: Sendable {
    let decided = Atomic<Bool>(false)
    let directLeft: Atomic<Int>
    let failures = Mutex<[String]>([])
    /// Tasks waiting for every direct route to end or one route to win; `over` once either happened.
    private let directWatch = Mutex<(over: Bool, waiters: [UInt64: CheckedContinuation<Void, Never>], next: UInt64)>((false, [:], 0))
    init(directs: Int) { directLeft = Atomic(directs) }

    /// Claims the win; returns whether another route had it already.
    func decide() -> Bool {
        let already = decided.exchange(true, ordering: .acquiringAndReleasing)
        if !already { directsOver() }
        return already
    }

    /// A direct route ended (won or failed).
    func directEnded() {
        if directLeft.subtract(1, ordering: .relaxed).newValue <= 0 { directsOver() }
    }

    private func directsOver() {
        let waiters = directWatch.withLock { w -> [CheckedContinuation<Void, Never>] in
            w.over = true
            defer { w.waiters = [:] }
            return Array(w.waiters.values)
        }
        for c in waiters { c.resume() }
    }

    /// Returns when every direct route ended or one route won, or when the task is cancelled.
    func directsOverOrDecided() async {
        let id = directWatch.withLock { w in defer { w.next += 1 }; return w.next }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = directWatch.withLock { w -> Bool in
                    if w.over || Task.isCancelled { return true }
                    w.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            directWatch.withLock { w in w.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
