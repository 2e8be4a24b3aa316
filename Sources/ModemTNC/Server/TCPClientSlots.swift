#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime
import ModemSockets

/// The socket and client-slot machinery a TNC's TCP servers share (``KISSServer``, ``AGWServer``): a
/// non-blocking listening socket, a bounded set of clients with bounded output, idle timeout and
/// eviction, driven by one `poll(2)` that the owner makes (alone, or with other servers' descriptors:
/// the TNC polls every server in one call).
///
/// A round is ``prepare(_:)`` (idle clients dropped; the listener's and clients' descriptors appended),
/// the owner's wait, then ``service(_:)`` with the same descriptors, which accepts, writes and reads
/// (at most ``readChunkBytes`` per client, so a flood cannot starve the others) and returns what
/// happened. The protocol is the owner's: bytes come out as ``Event/received(_:_:)``, and the owner
/// queues answers with ``send(_:to:)`` and ends a client that broke the protocol with ``drop(_:reason:)``.
final class TCPClientSlots {
    enum Event {
        case connected(TCPClientInfo)
        case refused(peer: String, connectedClients: Int)
        case received(TCPClientInfo, ArraySlice<UInt8>)
        case disconnected(TCPClientInfo, reason: TCPDisconnectReason)
    }

    let service: TCPService
    let host: String
    let port: Int
    let maximumClients: Int
    let idleTimeoutSeconds: Double?
    let evictionIdleSeconds: Double
    let maximumOutputBytes: Int
    let readChunkBytes: Int
    let socketSendBufferBytes: Int?

    private(set) var listener: Int32
    private var clients: [Client] = []
    /// The clients as they were when ``prepare(_:)`` appended their descriptors.
    private var polled: [Client] = []
    private var nextID = 1
    private var pending: [Event] = []
    private var readBuffer: [UInt8]
    private let secondsNow: () -> Double
    private(set) var clientsServed = 0
    private(set) var clientsDroppedAsSlow = 0
    private(set) var clientsRefused = 0
    private(set) var clientsDroppedAsIdle = 0

    private final class Client {
        let info: TCPClientInfo
        let fd: Int32
        var output: [UInt8] = []
        var outputStart = 0
        var lastActivity: Double
        var queued: Int { output.count - outputStart }
        init(info: TCPClientInfo, fd: Int32, now: Double) {
            self.info = info
            self.fd = fd
            self.lastActivity = now
        }
    }

    /// Listens; the arguments are the owning server's (checked there).
    init(service: TCPService, host: String, port: Int, maximumClients: Int, maximumOutputBytes: Int,
         readChunkBytes: Int, socketSendBufferBytes: Int?, idleTimeoutSeconds: Double?,
         evictionIdleSeconds: Double, clock: some Clock<Duration>) throws(SocketError) {
        let name = service == .agw ? "AGWServer" : "KISSServer"
        if let t = idleTimeoutSeconds { precondition(t > 0 && t.isFinite, "\(name) idleTimeoutSeconds must be positive, got \(t)") }
        precondition(evictionIdleSeconds >= 0 && evictionIdleSeconds.isFinite, "\(name) evictionIdleSeconds must be 0 or more")
        precondition((0...65535).contains(port), "\(name) port must be 0...65535, got \(port)")
        precondition(maximumClients >= 1, "\(name) maximumClients must be at least 1, got \(maximumClients)")
        precondition(maximumOutputBytes >= 1024, "\(name) maximumOutputBytes must be at least 1024, got \(maximumOutputBytes)")
        precondition(readChunkBytes >= 1, "\(name) readChunkBytes must be at least 1, got \(readChunkBytes)")
        let (fd, bound) = try TCPServerSocket.listen(host: host, port: port)
        self.service = service
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

    deinit { close() }

    var isClosed: Bool { listener < 0 }
    var connectedClients: [TCPClientInfo] { clients.map(\.info) }
    var hasPendingEvents: Bool { !pending.isEmpty }
    func queuedBytes(for id: Int) -> Int { clients.first { $0.info.id == id }?.queued ?? 0 }
    func isConnected(_ id: Int) -> Bool { clients.contains { $0.info.id == id } }
    func now() -> Double { secondsNow() }

    /// Drops the clients idle past the timeout (reported by ``service(_:)``) and appends the
    /// descriptors to wait on: the listener's, then each client's (writable too when output waits).
    /// Nothing is appended once closed.
    func prepare(_ fds: inout [pollfd]) {
        polled = []
        guard listener >= 0 else { return }
        dropIdleClients()
        fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
        for c in clients {
            fds.append(pollfd(fd: c.fd, events: Int16(POLLIN) | (c.queued > 0 ? Int16(POLLOUT) : 0), revents: 0))
        }
        polled = clients
    }

    /// How many descriptors the last ``prepare(_:)`` appended.
    var preparedCount: Int { listener >= 0 ? polled.count + 1 : 0 }

    /// Accepts, writes and reads what `fds` (the descriptors ``prepare(_:)`` appended, with the
    /// wait's results) say is ready; returns what happened, after what was pending.
    func service(_ fds: ArraySlice<pollfd>) -> [Event] {
        var events = pending
        pending.removeAll()
        guard listener >= 0, fds.count == polled.count + 1 else { return events }
        let base = fds.startIndex
        for (index, client) in polled.enumerated() {
            let revents = fds[base + index + 1].revents
            guard revents != 0, clients.contains(where: { $0 === client }) else { continue }
            if revents & Int16(POLLOUT) != 0, let failure = flush(client) {
                remove(client, reason: failure, into: &events)
                continue
            }
            if revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                read(client, into: &events)
            }
        }
        polled = []
        if fds[base].revents & Int16(POLLIN) != 0 { acceptClients(into: &events) }
        return events
    }

    /// Queues `bytes` for a client and writes what its socket takes at once. A client whose queue
    /// would pass ``maximumOutputBytes`` is disconnected (reported by the next ``service(_:)``).
    /// - Returns: whether the bytes were queued (false: unknown client, or dropped as too slow).
    @discardableResult
    func send(_ bytes: [UInt8], to id: Int) -> Bool {
        guard let client = clients.first(where: { $0.info.id == id }) else { return false }
        return send(bytes, to: client)
    }

    /// ``send(_:to:)`` to every client for which `include` holds; returns how many got the bytes.
    @discardableResult
    func broadcast(_ bytes: [UInt8], where include: (TCPClientInfo) -> Bool = { _ in true }) -> Int {
        var delivered = 0
        for client in clients where include(client.info) {
            if send(bytes, to: client) { delivered += 1 }
        }
        return delivered
    }

    /// Disconnects a client (reported by the next ``service(_:)``, or at once into `events`).
    func drop(_ id: Int, reason: TCPDisconnectReason) {
        guard let client = clients.first(where: { $0.info.id == id }) else { return }
        remove(client, reason: reason, into: &pending)
    }

    /// Closes every connection and the listener; returns the clients that were connected.
    @discardableResult
    func close() -> [TCPClientInfo] {
        let gone = clients.map(\.info)
        for client in clients { TCPServerSocket.close(client.fd) }
        clients.removeAll()
        polled.removeAll()
        if listener >= 0 {
            TCPServerSocket.close(listener)
            listener = -1
        }
        return gone
    }

    // MARK: - Connections

    private func send(_ bytes: [UInt8], to client: Client) -> Bool {
        if client.queued + bytes.count > maximumOutputBytes {
            clientsDroppedAsSlow += 1
            remove(client, reason: .outputOverflow(queuedBytes: client.queued, limit: maximumOutputBytes), into: &pending)
            return false
        }
        client.output.append(contentsOf: bytes)
        if let failure = flush(client) {
            remove(client, reason: failure, into: &pending)
            return false
        }
        return true
    }

    private func acceptClients(into events: inout [Event]) {
        // A bounded number per poll, so a connection storm cannot starve the audio.
        for _ in 0..<16 {
            switch TCPServerSocket.accept(listener) {
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
                    TCPServerSocket.close(fd)
                    clientsRefused += 1
                    events.append(.refused(peer: peer, connectedClients: clients.count))
                    continue
                }
                if let bytes = socketSendBufferBytes { TCPServerSocket.setSendBuffer(fd, bytes: bytes) }
                let info = TCPClientInfo(id: nextID, peer: peer, service: service)
                nextID += 1
                clientsServed += 1
                clients.append(Client(info: info, fd: fd, now: now))
                events.append(.connected(info))
            }
        }
    }

    private func read(_ client: Client, into events: inout [Event]) {
        let result = readBuffer.withUnsafeMutableBytes { TCPServerSocket.receive(client.fd, into: $0) }
        switch result {
        case .wouldBlock:
            return
        case .closed:
            remove(client, reason: .closedByClient, into: &events)
        case .failed(let code):
            remove(client, reason: .connectionError(code: code), into: &events)
        case .bytes(let n):
            client.lastActivity = now()
            events.append(.received(client.info, ArraySlice(readBuffer[0..<n])))
        }
    }

    /// Writes what the socket takes; returns why the connection failed, if it did.
    private func flush(_ client: Client) -> TCPDisconnectReason? {
        guard client.queued > 0 else { return nil }
        let result = client.output[client.outputStart...].withUnsafeBytes { TCPServerSocket.send(client.fd, $0) }
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

    private func dropIdleClients() {
        guard let limit = idleTimeoutSeconds, !clients.isEmpty else { return }
        let now = now()
        for client in clients where now - client.lastActivity >= limit {
            clientsDroppedAsIdle += 1
            remove(client, reason: .idle(seconds: now - client.lastActivity), into: &pending)
        }
    }

    private func remove(_ client: Client, reason: TCPDisconnectReason, into events: inout [Event]) {
        guard let index = clients.firstIndex(where: { $0 === client }) else { return }
        clients.remove(at: index)
        TCPServerSocket.close(client.fd)
        events.append(.disconnected(client.info, reason: reason))
    }
}

extension SocketWaiter.Sleeper {
    /// One wait over the descriptors of `servers` (each prepared, then serviced with its own slice):
    /// what a server's `poll` does alone and what the TNC does over all of its servers at once.
    /// A server with events already pending makes the wait not wait.
    func wait(servicing servers: [TCPClientSlots], timeoutMilliseconds: Int) -> [[TCPClientSlots.Event]] {
        var fds: [pollfd] = []
        var ranges: [Range<Int>] = []
        for server in servers {
            let start = fds.count
            server.prepare(&fds)
            ranges.append(start..<fds.count)
        }
        let pending = servers.contains { $0.hasPendingEvents }
        if !fds.isEmpty {
            _ = wait(&fds, timeoutMilliseconds: pending ? 0 : max(0, timeoutMilliseconds))
        }
        return zip(servers, ranges).map { server, range in server.service(fds[range]) }
    }
}
