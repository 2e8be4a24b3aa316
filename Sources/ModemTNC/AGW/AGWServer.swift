#if canImport(Glibc)
import Glibc
#endif
import ModemCodecs
import ModemRuntime

/// An AGW packet-engine server, the protocol of Dire Wolf's port 8000 (``AGWFrame``, ``AGWCommand``),
/// answering as Dire Wolf 1.8's server does.
///
/// The sockets are ``KISSServer``'s (non-blocking, driven by ``poll(timeoutMilliseconds:)`` from one
/// thread, or polled with the other servers by the ``TNC``; per-client bounded output, idle timeout,
/// client limit with eviction of idle clients). Each client's bytes go through its own ``AGWDecoder``; a
/// header with an impossible data length ends that client (``TCPDisconnectReason/protocolError(_:)``),
/// as Dire Wolf closes it, and affects no other.
///
/// It answers by itself what needs no radio: `R` (version), `G` (ports), `g` (capabilities), `X`/`x`
/// (callsign registration), `k`/`m` (raw and monitor frames on or off, toggles), `P` and `H` (no
/// answer, as Dire Wolf). What needs the TNC comes out as ``AGWServerEvent/request(_:from:)``. Frames
/// heard and sent go to the clients that asked for them with ``deliverReceived(_:bytes:port:)`` and
/// ``monitorTransmitted(_:port:)``.
///
/// ```swift
/// let server = try AGWServer(port: 8000)
/// for event in server.poll(timeoutMilliseconds: 100) {
///     if case .request(.sendUnproto(let port, let pid, let from, let to, let via, let info), _) = event { ... }
/// }
/// server.deliverReceived(frame, bytes: bytes)
/// ```
public final class AGWServer {
    /// The address it listens on, as given.
    public var host: String { slots.host }
    /// The TCP port it listens on (the kernel's choice when created with port 0).
    public var port: Int { slots.port }
    /// Connections served at once (see ``KISSServer/maximumClients``).
    public var maximumClients: Int { slots.maximumClients }
    /// What `G` says of each radio port, in order (port 0 first).
    public let portDescriptions: [String]

    let slots: TCPClientSlots
    private let sleeper = SocketWaiter.Sleeper()
    private let timeOfDay: @Sendable () -> AGWTimeOfDay
    private var states: [Int: ClientState] = [:]
    private var departedStatistics = AGWDecoderStatistics()

    private struct ClientState {
        var decoder = AGWDecoder()
        var raw = false
        var monitor = false
        var callsigns: Set<RegisteredCall> = []
    }

    private struct RegisteredCall: Hashable {
        var port: Int
        var callsign: String
    }

    /// Starts listening.
    /// - Parameters:
    ///   - host: the address to listen on (default `127.0.0.1`; `0.0.0.0` or `::` for all interfaces).
    ///   - port: the TCP port, 0...65535; 0 lets the kernel choose (see ``port``). Dire Wolf uses 8000.
    ///   - portDescriptions: one text per radio port for `G` (default Dire Wolf's for one mono sound
    ///     card); `X` succeeds for these ports only.
    ///   - maximumClients, maximumOutputBytes, readChunkBytes, socketSendBufferBytes,
    ///     idleTimeoutSeconds, evictionIdleSeconds, clock: as ``KISSServer``'s.
    ///   - timeOfDay: the local time for monitor frames (default the system's local time).
    /// - Throws: ``KISSServerError`` (the sockets' error) when the address does not resolve, the port is
    ///   in use or not allowed, or a socket call fails.
    public init(host: String = "127.0.0.1", port: Int, portDescriptions: [String] = ["first soundcard mono"],
                maximumClients: Int = 16, maximumOutputBytes: Int = 1 << 20, readChunkBytes: Int = 4096,
                socketSendBufferBytes: Int? = nil, idleTimeoutSeconds: Double? = nil, evictionIdleSeconds: Double = 5,
                clock: some Clock<Duration> = ContinuousClock(),
                timeOfDay: @escaping @Sendable () -> AGWTimeOfDay = AGWServer.localTimeOfDay) throws(KISSServerError) {
        precondition(!portDescriptions.isEmpty, "AGWServer needs at least one port")
        slots = try TCPClientSlots(service: .agw, host: host, port: port, maximumClients: maximumClients,
                                   maximumOutputBytes: maximumOutputBytes, readChunkBytes: readChunkBytes,
                                   socketSendBufferBytes: socketSendBufferBytes, idleTimeoutSeconds: idleTimeoutSeconds,
                                   evictionIdleSeconds: evictionIdleSeconds, clock: clock)
        self.portDescriptions = portDescriptions
        self.timeOfDay = timeOfDay
    }

    deinit { close() }

    /// The system's local time now.
    @Sendable public static func localTimeOfDay() -> AGWTimeOfDay {
        var seconds = time_t(SystemTime.wallSecondsAndMicroseconds().seconds)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return AGWTimeOfDay(hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec))
    }

    /// `127.0.0.1:8000` (IPv6 addresses in brackets).
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    /// Whether ``close()`` was called.
    public var isClosed: Bool { slots.isClosed }
    /// The clients connected now, oldest first.
    public var connectedClients: [TCPClientInfo] { slots.connectedClients }
    /// Bytes queued for a client (0 for an unknown id).
    public func queuedBytes(for id: Int) -> Int { slots.queuedBytes(for: id) }
    /// Connections accepted since creation.
    public var clientsServed: Int { slots.clientsServed }
    /// Clients dropped because they read too slowly.
    public var clientsDroppedAsSlow: Int { slots.clientsDroppedAsSlow }
    /// Connections refused because ``maximumClients`` were connected and none was idle.
    public var clientsRefused: Int { slots.clientsRefused }
    /// Clients disconnected because they were idle.
    public var clientsDroppedAsIdle: Int { slots.clientsDroppedAsIdle }

    /// What all clients' AGW decoders counted, those connected and those gone.
    public var agwStatistics: AGWDecoderStatistics {
        states.values.reduce(departedStatistics) { Self.sum($0, $1.decoder.statistics) }
    }

    /// Whether a client asked for raw (`K`) frames.
    public func sendsRawFrames(to id: Int) -> Bool { states[id]?.raw ?? false }
    /// Whether a client asked for monitor (`U`, `I`, `S`, `T`) frames.
    public func sendsMonitorFrames(to id: Int) -> Bool { states[id]?.monitor ?? false }

    /// The client that registered `callsign` on `port` (`X`), the first if several did: where a
    /// connected-mode link for that callsign is reported.
    public func client(registeredFor callsign: String, port: Int = 0) -> TCPClientInfo? {
        let wanted = RegisteredCall(port: port, callsign: callsign.uppercased())
        return slots.connectedClients.first { states[$0.id]?.callsigns.contains(wanted) ?? false }
    }

    /// Ends the current (or the next) ``poll(timeoutMilliseconds:)`` wait early, from any thread.
    public var interrupter: @Sendable () -> Void {
        { [sleeper] in sleeper.interrupt() }
    }

    /// Waits up to `timeoutMilliseconds` for network activity, then accepts, reads, answers and
    /// writes what is ready.
    ///
    /// `requests` is called for each ``AGWServerEvent/request(_:from:)`` at its place among the
    /// client's messages, before the next one is answered, so that answers go out in the order of the
    /// questions (a `y` after an `M` counts the frame the `M` queued, as in Dire Wolf). Without it
    /// (the default does nothing) the requests are only reported, after the server's own answers to
    /// the same read.
    /// - Returns: what happened, in order.
    public func poll(timeoutMilliseconds: Int,
                     handlingRequests requests: (AGWCommand, TCPClientInfo) -> Void = { _, _ in }) -> [AGWServerEvent] {
        handle(sleeper.wait(servicing: [slots], timeoutMilliseconds: timeoutMilliseconds)[0], requests: requests)
    }

    /// Queues `frame` for a client; false when it is not connected (or was dropped as too slow).
    @discardableResult
    public func send(_ frame: AGWFrame, to id: Int) -> Bool {
        slots.send(frame.encode(), to: id)
    }

    /// Sends a frame heard on `port` to the clients that asked: `K` (raw) and a monitor message.
    /// - Returns: the number of clients that got it in some form.
    @discardableResult
    public func deliverReceived(_ frame: AX25Frame, bytes: [UInt8], port: UInt8 = 0) -> Int {
        guard !states.isEmpty else { return 0 }
        let raw = AGWFrame.rawFrame(port: port, frame: frame, bytes: bytes).encode()
        let monitor = AGWFrame.monitorFrame(port: port, frame: frame, ownTransmission: false, time: timeOfDay()).encode()
        var reached = Set<Int>()
        for client in slots.connectedClients {
            guard let state = states[client.id] else { continue }
            if state.raw, slots.send(raw, to: client.id) { reached.insert(client.id) }
            if state.monitor, slots.send(monitor, to: client.id) { reached.insert(client.id) }
        }
        return reached.count
    }

    /// Sends a frame this TNC transmitted on `port` to the clients that asked for monitor frames (`T`).
    /// - Returns: the number of clients.
    @discardableResult
    public func monitorTransmitted(_ frame: AX25Frame, port: UInt8 = 0) -> Int {
        guard states.values.contains(where: \.monitor) else { return 0 }
        let bytes = AGWFrame.monitorFrame(port: port, frame: frame, ownTransmission: true, time: timeOfDay()).encode()
        return slots.broadcast(bytes) { self.states[$0.id]?.monitor ?? false }
    }

    /// Closes every connection and the listening socket. Calling it again does nothing.
    public func close() {
        slots.close()
        for state in states.values { departedStatistics = Self.sum(departedStatistics, state.decoder.statistics) }
        states.removeAll()
    }

    // MARK: - Commands

    /// Turns what the sockets did into AGW events, answering what needs no radio.
    func handle(_ slotEvents: [TCPClientSlots.Event], requests: (AGWCommand, TCPClientInfo) -> Void) -> [AGWServerEvent] {
        var events: [AGWServerEvent] = []
        for event in slotEvents {
            switch event {
            case .connected(let info):
                states[info.id] = ClientState()
                events.append(.connected(info))
            case .refused(let peer, let count):
                events.append(.refused(peer: peer, connectedClients: count))
            case .received(let info, let bytes):
                guard var state = states[info.id] else { continue }
                let frames = state.decoder.decode(bytes)
                let failure = state.decoder.failure
                states[info.id] = state
                for frame in frames where slots.isConnected(info.id) {
                    let event = answer(frame, from: info)
                    if case .request(let command, _) = event { requests(command, info) }
                    events.append(event)
                }
                if let failure { slots.drop(info.id, reason: .protocolError(failure)) }
            case .disconnected(let info, let reason):
                let s = states.removeValue(forKey: info.id)?.decoder.statistics ?? AGWDecoderStatistics()
                departedStatistics = Self.sum(departedStatistics, s)
                events.append(.disconnected(info, reason: reason, statistics: s))
            }
        }
        // Drops made while answering (a protocol error, a client too slow) are reported now.
        if slots.hasPendingEvents { events += handle(slots.service([]), requests: requests) }
        return events
    }

    private func answer(_ frame: AGWFrame, from client: TCPClientInfo) -> AGWServerEvent {
        let command = AGWCommand(frame)
        switch command {
        case .version:
            send(.versionReply(), to: client.id)
        case .portInformation:
            send(.portInformationReply(portDescriptions), to: client.id)
        case .portCapabilities:
            send(.portCapabilitiesReply(port: frame.port), to: client.id)
        case .register(let port, let callsign):
            // Dire Wolf reports success for any valid radio port, the same callsign twice included.
            let ok = port < portDescriptions.count
            if ok { states[client.id]?.callsigns.insert(RegisteredCall(port: port, callsign: callsign.uppercased())) }
            send(.registrationReply(port: frame.port, callsign: frame.callFrom, success: ok), to: client.id)
        case .unregister(let port, let callsign):
            states[client.id]?.callsigns.remove(RegisteredCall(port: port, callsign: callsign.uppercased()))
        case .toggleRawFrames:
            states[client.id]?.raw.toggle()
        case .toggleMonitorFrames:
            states[client.id]?.monitor.toggle()
        case .login, .heardStations:
            break
        default:
            return .request(command, from: client)
        }
        return .answered(command, from: client)
    }

    private static func sum(_ a: AGWDecoderStatistics, _ b: AGWDecoderStatistics) -> AGWDecoderStatistics {
        var s = a
        s.frames += b.frames
        s.invalidPorts += b.invalidPorts
        s.oversized += b.oversized
        return s
    }
}
