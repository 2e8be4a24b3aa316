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
    public var host: String { slots.host }
    /// The TCP port it listens on (the kernel's choice when created with port 0).
    public var port: Int { slots.port }
    /// Connections served at once. When all are taken, a new connection replaces the client idle
    /// longest if that one has been idle at least ``evictionIdleSeconds``; otherwise it is closed.
    public var maximumClients: Int { slots.maximumClients }
    /// Seconds without traffic (nothing read from the client, nothing written to it) after which a
    /// client is disconnected; nil: never.
    public var idleTimeoutSeconds: Double? { slots.idleTimeoutSeconds }
    /// How long a client must have been idle before a new connection may take its place when the
    /// server is full, so idle connections cannot lock newcomers out.
    public var evictionIdleSeconds: Double { slots.evictionIdleSeconds }
    /// The most bytes queued for one client before it is dropped as too slow.
    public var maximumOutputBytes: Int { slots.maximumOutputBytes }
    /// The most bytes read from one client per ``poll(timeoutMilliseconds:)``.
    public var readChunkBytes: Int { slots.readChunkBytes }
    /// The kernel send buffer asked for on each connection (nil: the system's default).
    public var socketSendBufferBytes: Int? { slots.socketSendBufferBytes }

    /// The sockets and client places (shared with ``AGWServer``).
    let slots: TCPClientSlots
    /// Blocks ``poll(timeoutMilliseconds:)`` on the process's one descriptor loop.
    private let sleeper = SocketWaiter.Sleeper()
    /// Each connected client's KISS decoder, and whether its garbage was reported.
    private var decoders: [Int: (decoder: KISSDecoder, reportedGarbage: Bool)] = [:]
    private var departedStatistics = KISSDecoderStatistics()
    /// Connections accepted since creation (refused ones not included).
    public var clientsServed: Int { slots.clientsServed }
    /// Clients dropped because they read too slowly.
    public var clientsDroppedAsSlow: Int { slots.clientsDroppedAsSlow }
    /// Connections refused because ``maximumClients`` were connected and none was idle.
    public var clientsRefused: Int { slots.clientsRefused }
    /// Clients disconnected because they were idle (past the timeout, or to make room).
    public var clientsDroppedAsIdle: Int { slots.clientsDroppedAsIdle }

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
        slots = try TCPClientSlots(service: .kiss, host: host, port: port, maximumClients: maximumClients,
                                   maximumOutputBytes: maximumOutputBytes, readChunkBytes: readChunkBytes,
                                   socketSendBufferBytes: socketSendBufferBytes, idleTimeoutSeconds: idleTimeoutSeconds,
                                   evictionIdleSeconds: evictionIdleSeconds, clock: clock)
    }

    deinit { close() }

    /// `127.0.0.1:8001` (IPv6 addresses in brackets).
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { slots.isClosed }

    /// The clients connected now, oldest first.
    public var connectedClients: [KISSClientInfo] { slots.connectedClients }

    /// Bytes queued for a client (0 for an unknown id).
    public func queuedBytes(for id: Int) -> Int { slots.queuedBytes(for: id) }

    /// What all clients' KISS decoders counted, those connected and those gone: frames, garbage
    /// bytes, bad escapes, unknown commands, oversized frames.
    public var kissStatistics: KISSDecoderStatistics {
        decoders.values.reduce(departedStatistics) { Self.sum($0, $1.decoder.statistics) }
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
        handle(sleeper.wait(servicing: [slots], timeoutMilliseconds: timeoutMilliseconds)[0])
    }

    /// Turns what the sockets did into KISS events: bytes through each client's decoder.
    func handle(_ slotEvents: [TCPClientSlots.Event]) -> [KISSServerEvent] {
        var events: [KISSServerEvent] = []
        for event in slotEvents {
            switch event {
            case .connected(let info):
                decoders[info.id] = (KISSDecoder(), false)
                events.append(.connected(info))
            case .refused(let peer, let count):
                events.append(.refused(peer: peer, connectedClients: count))
            case .received(let info, let bytes):
                guard var state = decoders[info.id] else { continue }
                for frame in state.decoder.decode(bytes) { events.append(.frame(frame, from: info)) }
                let s = state.decoder.statistics
                if !state.reportedGarbage, s.garbageBytes > 0 || s.dropped > 0 {
                    state.reportedGarbage = true
                    events.append(.firstGarbage(info, statistics: s))
                }
                decoders[info.id] = state
            case .disconnected(let info, let reason):
                let s = decoders.removeValue(forKey: info.id)?.decoder.statistics ?? KISSDecoderStatistics()
                departedStatistics = Self.sum(departedStatistics, s)
                events.append(.disconnected(info, reason: reason, statistics: s))
            }
        }
        return events
    }

    /// Queues `frame` for every connected client and writes what each socket takes at once. A client
    /// whose queue would pass ``maximumOutputBytes`` is disconnected (reported by the next
    /// ``poll(timeoutMilliseconds:)``).
    /// - Returns: the number of clients the frame was queued for.
    @discardableResult
    public func broadcast(_ frame: KISSFrame) -> Int {
        guard !slots.connectedClients.isEmpty else { return 0 }
        return slots.broadcast(KISSEncoder.encode(frame))
    }

    /// Closes every connection and the listening socket. Calling it again does nothing.
    public func close() {
        slots.close()
        for state in decoders.values { departedStatistics = Self.sum(departedStatistics, state.decoder.statistics) }
        decoders.removeAll()
    }

    /// Seconds on the server's clock.
    func now() -> Double { slots.now() }

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
