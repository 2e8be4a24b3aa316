#if canImport(Glibc)
import Glibc
#endif
import ModemCodecs
import ModemSockets
import ModemRuntime

/// A KISS-over-TCP server, the protocol of Dire Wolf's port 8001: each connection is a byte stream
/// of KISS frames both ways (``KISSDecoder``, ``KISSEncoder``).
///
/// Plain POSIX sockets, non-blocking, driven by ``poll(timeoutMilliseconds:)`` from one thread (the
/// TNC's audio loop): no thread of its own, no callbacks. Each call accepts new connections, reads
/// what clients sent (at most ``readChunkBytes`` per client per call, so a client that floods cannot
/// starve the others), writes what is queued for them, and returns what happened as events.
///
/// Memory is bounded whatever the clients do: a client's input goes through its own ``KISSDecoder``
/// (a frame longer than the AX.25 maximum is dropped and counted), and its output buffer holds at
/// most ``maximumOutputBytes``; a client that reads so slowly that ``broadcast(_:)`` would pass that
/// limit is disconnected (``KISSDisconnectReason/outputOverflow(queuedBytes:limit:)``), and the
/// others never wait for it. Garbage a client sends is counted, never fatal, and affects no other
/// client.
///
/// ```swift
/// let server = try KISSServer(host: "127.0.0.1", port: 8001)
/// while !stop {
///     for event in server.poll(timeoutMilliseconds: 100) {
///         if case .frame(let frame, _) = event, frame.command == .dataFrame { transmit(frame.payload) }
///     }
///     for packet in received { server.broadcast(.data(packet.bytes)) }
/// }
/// server.close()
/// ```
public final class KISSServer {
    /// The address it listens on, as given (e.g. `127.0.0.1`, `::1`, `0.0.0.0`).
    public let host: String
    /// The TCP port it listens on (the kernel's choice when created with port 0).
    public let port: Int
    /// Connections served at once. When all are taken, a new connection replaces the client idle
    /// longest if that one has been idle at least ``evictionIdleSeconds``; otherwise it is closed.
    public let maximumClients: Int
    /// Seconds without traffic (nothing read from the client, nothing written to it) after which a
    /// client is disconnected; nil: never.
    public let idleTimeoutSeconds: Double?
    /// How long a client must have been idle before a new connection may take its place when the
    /// server is full, so idle connections cannot lock newcomers out.
    public let evictionIdleSeconds: Double
    /// The most bytes queued for one client before it is dropped as too slow.
    public let maximumOutputBytes: Int
    /// The most bytes read from one client per ``poll(timeoutMilliseconds:)``.
    public let readChunkBytes: Int
    /// The kernel send buffer asked for on each connection (nil: the system's default).
    public let socketSendBufferBytes: Int?

    private var listener: Int32
    /// Blocks ``poll(timeoutMilliseconds:)`` on the process's one descriptor loop.
    private let sleeper = SocketWaiter.Sleeper()
    private var clients: [Client] = []
    private var nextID = 1
    private var pendingEvents: [KISSServerEvent] = []
    private var readBuffer: [UInt8]
    private var departedStatistics = KISSDecoderStatistics()
    /// Connections accepted since creation (refused ones not included).
    public private(set) var clientsServed = 0
    /// Clients dropped because they read too slowly.
    public private(set) var clientsDroppedAsSlow = 0
    /// Connections refused because ``maximumClients`` were connected and none was idle.
    public private(set) var clientsRefused = 0
    /// Clients disconnected because they were idle (past the timeout, or to make room).
    public private(set) var clientsDroppedAsIdle = 0

    private final class Client {
        let info: KISSClientInfo
        let fd: Int32
        var decoder = KISSDecoder()
        var output: [UInt8] = []
        var outputStart = 0
        var reportedGarbage = false
        /// Monotonic time of the last byte read from or written to the client.
        var lastActivity: Double
        var queued: Int { output.count - outputStart }
        init(info: KISSClientInfo, fd: Int32, now: Double) {
            self.info = info
            self.fd = fd
            self.lastActivity = now
        }
    }

    /// Starts listening.
    /// - Parameters:
    ///   - host: the address to listen on: `127.0.0.1` (default, this machine only), `0.0.0.0` or
    ///     `::` (all interfaces), or a host name that resolves to one of this machine's addresses.
    ///   - port: the TCP port, 0...65535; 0 lets the kernel choose (see ``port``).
    ///   - maximumClients: connections at once, at least 1 (default 16).
    ///   - maximumOutputBytes: bytes queued per client before it is dropped as too slow, at least
    ///     1024 (default 1 MiB, several thousand frames).
    ///   - readChunkBytes: bytes read per client per poll, at least 1 (default 4096).
    ///   - socketSendBufferBytes: the kernel send buffer per connection, or nil for the default.
    ///   - idleTimeoutSeconds: seconds without traffic before a client is disconnected (> 0), or nil
    ///     (the default) for never.
    ///   - evictionIdleSeconds: idle seconds after which a client gives its place to a new
    ///     connection when the server is full (>= 0, default 5).
    ///   - clock: the clock idle times are measured on (the system's monotonic clock by default; a
    ///     test passes a manual clock and moves it itself).
    /// - Throws: ``KISSServerError`` when the address does not resolve, the port is in use or not
    ///   allowed, or a socket call fails.
    public init(host: String = "127.0.0.1", port: Int, maximumClients: Int = 16, maximumOutputBytes: Int = 1 << 20,
                readChunkBytes: Int = 4096, socketSendBufferBytes: Int? = nil,
                idleTimeoutSeconds: Double? = nil, evictionIdleSeconds: Double = 5,
                clock: some Clock<Duration> = ContinuousClock()) throws(KISSServerError) {
        if let t = idleTimeoutSeconds { precondition(t > 0 && t.isFinite, "KISSServer idleTimeoutSeconds must be positive, got \(t)") }
        precondition(evictionIdleSeconds >= 0 && evictionIdleSeconds.isFinite, "KISSServer evictionIdleSeconds must be 0 or more")
        precondition((0...65535).contains(port), "KISSServer port must be 0...65535, got \(port)")
        precondition(maximumClients >= 1, "KISSServer maximumClients must be at least 1, got \(maximumClients)")
        precondition(maximumOutputBytes >= 1024, "KISSServer maximumOutputBytes must be at least 1024, got \(maximumOutputBytes)")
        precondition(readChunkBytes >= 1, "KISSServer readChunkBytes must be at least 1, got \(readChunkBytes)")
        let (fd, bound) = try KISSServerSocket.listen(host: host, port: port)
        self.host = host
        self.port = bound
        self.listener = fd
        self.maximumClients = maximumClients
        self.maximumOutputBytes = maximumOutputBytes
        self.readChunkBytes = readChunkBytes
        self.socketSendBufferBytes = socketSendBufferBytes
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.evictionIdleSeconds = evictionIdleSeconds
        readBuffer = [UInt8](repeating: 0, count: readChunkBytes)
        let origin = clock.now
        secondsNow = {
            let d = origin.duration(to: clock.now)
            return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        }
    }

    /// Seconds on the server's clock since it was made.
    private let secondsNow: () -> Double

    deinit { close() }

    /// `127.0.0.1:8001` (IPv6 addresses in brackets).
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { listener < 0 }

    /// The clients connected now, oldest first.
    public var connectedClients: [KISSClientInfo] { clients.map(\.info) }

    /// Bytes queued for a client (0 for an unknown id).
    public func queuedBytes(for id: Int) -> Int { clients.first { $0.info.id == id }?.queued ?? 0 }

    /// What all clients' KISS decoders counted, those connected and those gone: frames, garbage
    /// bytes, bad escapes, unknown commands, oversized frames.
    public var kissStatistics: KISSDecoderStatistics {
        clients.reduce(departedStatistics) { Self.sum($0, $1.decoder.statistics) }
    }

    /// Ends the current (or the next) ``poll(timeoutMilliseconds:)`` wait early, from any thread: what
    /// a stop request calls so the serving thread sees it at once.
    public var interrupter: @Sendable () -> Void {
        { [sleeper] in sleeper.interrupt() }
    }

    /// Waits up to `timeoutMilliseconds` (0: not at all; ``interrupter`` also ends the wait) for
    /// network activity, then accepts, reads and writes what is ready.
    /// Trouble with one connection ends that connection and is reported as an event.
    /// - Returns: what happened, in order (also the disconnections ``broadcast(_:)`` caused).
    public func poll(timeoutMilliseconds: Int) -> [KISSServerEvent] {
        var events = pendingEvents
        pendingEvents.removeAll()
        guard listener >= 0 else { return events }
        dropIdleClients(into: &events)
        var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
        for c in clients {
            fds.append(pollfd(fd: c.fd, events: Int16(POLLIN) | (c.queued > 0 ? Int16(POLLOUT) : 0), revents: 0))
        }
        let ready = sleeper.wait(&fds, timeoutMilliseconds: events.isEmpty ? max(0, timeoutMilliseconds) : 0).ready
        guard ready > 0 else { return events }
        // Existing clients first (the indexes of `fds` follow `clients` as they were).
        let snapshot = clients
        for (index, client) in snapshot.enumerated() {
            let revents = fds[index + 1].revents
            guard revents != 0 else { continue }
            if revents & Int16(POLLOUT) != 0 {
                if let failure = flush(client) {
                    remove(client, reason: failure, into: &events)
                    continue
                }
            }
            if revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                read(client, into: &events)
            }
        }
        if fds[0].revents & Int16(POLLIN) != 0 {
            acceptClients(into: &events)
        }
        return events
    }

    /// Queues `frame` for every connected client and writes what each socket takes at once. A client
    /// whose queue would pass ``maximumOutputBytes`` is disconnected (reported by the next
    /// ``poll(timeoutMilliseconds:)``).
    /// - Returns: the number of clients the frame was queued for.
    @discardableResult
    public func broadcast(_ frame: KISSFrame) -> Int {
        guard !clients.isEmpty else { return 0 }
        let bytes = KISSEncoder.encode(frame)
        var delivered = 0
        for client in clients {
            if client.queued + bytes.count > maximumOutputBytes {
                clientsDroppedAsSlow += 1
                remove(client, reason: .outputOverflow(queuedBytes: client.queued, limit: maximumOutputBytes),
                       into: &pendingEvents)
                continue
            }
            client.output.append(contentsOf: bytes)
            delivered += 1
            if let failure = flush(client) {
                remove(client, reason: failure, into: &pendingEvents)
            }
        }
        return delivered
    }

    /// Closes every connection and the listening socket. Calling it again does nothing.
    public func close() {
        for client in clients {
            departedStatistics = Self.sum(departedStatistics, client.decoder.statistics)
            KISSServerSocket.close(client.fd)
        }
        clients.removeAll()
        if listener >= 0 {
            KISSServerSocket.close(listener)
            listener = -1
        }
    }

    // MARK: - Connections

    private func acceptClients(into events: inout [KISSServerEvent]) {
        // A bounded number per poll, so a connection storm cannot starve the audio.
        for _ in 0..<16 {
            switch KISSServerSocket.accept(listener) {
            case .none:
                return
            case .failed:
                // ECONNABORTED and the like: that connection is gone; EMFILE: try again next poll.
                return
            case .connection(let fd, let peer):
                let now = now()
                if clients.count >= maximumClients,
                   let idlest = clients.min(by: { $0.lastActivity < $1.lastActivity }),
                   now - idlest.lastActivity >= evictionIdleSeconds {
                    clientsDroppedAsIdle += 1
                    remove(idlest, reason: .idle(seconds: now - idlest.lastActivity), into: &events)
                }
                if clients.count >= maximumClients {
                    KISSServerSocket.close(fd)
                    clientsRefused += 1
                    events.append(.refused(peer: peer, connectedClients: clients.count))
                    continue
                }
                if let bytes = socketSendBufferBytes { KISSServerSocket.setSendBuffer(fd, bytes: bytes) }
                let info = KISSClientInfo(id: nextID, peer: peer)
                nextID += 1
                clientsServed += 1
                clients.append(Client(info: info, fd: fd, now: now))
                events.append(.connected(info))
            }
        }
    }

    private func read(_ client: Client, into events: inout [KISSServerEvent]) {
        let result = readBuffer.withUnsafeMutableBytes { KISSServerSocket.receive(client.fd, into: $0) }
        switch result {
        case .wouldBlock:
            return
        case .closed:
            remove(client, reason: .closedByClient, into: &events)
        case .failed(let code):
            remove(client, reason: .connectionError(code: code), into: &events)
        case .bytes(let n):
            client.lastActivity = now()
            for frame in client.decoder.decode(readBuffer[0..<n]) {
                events.append(.frame(frame, from: client.info))
            }
            let s = client.decoder.statistics
            if !client.reportedGarbage, s.garbageBytes > 0 || s.dropped > 0 {
                client.reportedGarbage = true
                events.append(.firstGarbage(client.info, statistics: s))
            }
        }
    }

    /// Writes what the socket takes; returns why the connection failed, if it did.
    private func flush(_ client: Client) -> KISSDisconnectReason? {
        guard client.queued > 0 else { return nil }
        let result = client.output[client.outputStart...].withUnsafeBytes { KISSServerSocket.send(client.fd, $0) }
        switch result {
        case .failure(let f):
            return f.code == EPIPE ? .closedByClient : .connectionError(code: f.code)
        case .success(let n):
            if n > 0 { client.lastActivity = now() }
            client.outputStart += n
            if client.outputStart == client.output.count {
                client.output.removeAll(keepingCapacity: client.output.capacity <= 65536)
                client.outputStart = 0
            } else if client.outputStart >= 65536, client.outputStart * 2 >= client.output.count {
                client.output.removeFirst(client.outputStart)
                client.outputStart = 0
            }
            return nil
        }
    }

    /// Disconnects the clients idle past ``idleTimeoutSeconds``.
    private func dropIdleClients(into events: inout [KISSServerEvent]) {
        guard let limit = idleTimeoutSeconds, !clients.isEmpty else { return }
        let now = now()
        for client in clients where now - client.lastActivity >= limit {
            clientsDroppedAsIdle += 1
            remove(client, reason: .idle(seconds: now - client.lastActivity), into: &events)
        }
    }

    /// Seconds on the server's clock.
    func now() -> Double { secondsNow() }

    private func remove(_ client: Client, reason: KISSDisconnectReason, into events: inout [KISSServerEvent]) {
        guard let index = clients.firstIndex(where: { $0 === client }) else { return }
        clients.remove(at: index)
        KISSServerSocket.close(client.fd)
        departedStatistics = Self.sum(departedStatistics, client.decoder.statistics)
        events.append(.disconnected(client.info, reason: reason, statistics: client.decoder.statistics))
    }

    private static func sum(_ a: KISSDecoderStatistics, _ b: KISSDecoderStatistics) -> KISSDecoderStatistics {
        var s = a
        s.frames += b.frames
        s.garbageBytes += b.garbageBytes
        s.badEscapes += b.badEscapes
        s.unknownCommands += b.unknownCommands
        s.oversized += b.oversized
        return s
    }
}
