import ModemCodecs

/// The AGW interface of the TNC: what an ``AGWServer`` hands over (frames to send, the queue's
/// length) and the connected-mode kinds, whose integration point is here.
extension TNC {
    func handle(_ event: AGWServerEvent) {
        let count = agwServer?.connectedClients.count ?? 0
        switch event {
        case .connected(let client):
            clientArrived(client, clients: count)
        case .refused(let peer, let clients):
            onEvent(.clientRefused(peer: peer, clients: clients))
        case .disconnected(let client, let reason, let s):
            onEvent(.agwClientLeft(client, reason: reason, statistics: s, clients: count))
        case .answered(let command, let client):
            switch command {
            case .register(let port, let call):
                onEvent(.agwRequest(from: client, what: "registered \(call) on port \(port)" + (port == 0 ? "" : " (refused: one radio port, 0)")))
            case .unregister(let port, let call):
                onEvent(.agwRequest(from: client, what: "unregistered \(call) on port \(port)"))
            case .toggleMonitorFrames:
                let on = agwServer?.sendsMonitorFrames(to: client.id) ?? false
                onEvent(.agwRequest(from: client, what: "turned monitor frames \(on ? "on" : "off")"))
            case .toggleRawFrames:
                let on = agwServer?.sendsRawFrames(to: client.id) ?? false
                onEvent(.agwRequest(from: client, what: "turned raw frames \(on ? "on" : "off")"))
            default:
                break
            }
        case .request:
            break    // acted on in order while the server read it (pollNetwork)
        }
    }

    func handle(_ command: AGWCommand, from client: TCPClientInfo) {
        switch command {
        case .sendUnproto(let port, let pid, let from, let to, let via, let info):
            guard port == 0 else { return reject(client, "AGW port \(port): this TNC has one radio port, 0") }
            let frame: AX25Frame
            do {
                frame = try Self.unprotoFrame(pid: pid, from: from, to: to, via: via, info: info)
            } catch {
                return reject(client, "AGW UI frame \(from)>\(to): \(error)")
            }
            enqueue(frame, bytes: frame.encode(), from: client)
        case .sendRaw(let port, let bytes):
            guard port == 0 else { return reject(client, "AGW port \(port): this TNC has one radio port, 0") }
            guard let frame = try? AX25Frame(decoding: bytes) else {
                return reject(client, "AGW 'K': not an AX.25 frame (\(bytes.count) bytes)")
            }
            enqueue(frame, bytes: bytes, from: client)
        case .outstandingOnPort(let port):
            // Dire Wolf counts the frames in its transmit queue for the port.
            agwServer?.send(.outstandingOnPortReply(port: UInt8(port), count: port == 0 ? queue.count : 0), to: client.id)
        case .connect(let request):
            connectRequested(request, by: client)
        case .connectedData(let port, let from, let to, let pid, let data):
            connectedDataRequested(port: port, from: from, to: to, pid: pid, data: data, by: client)
        case .disconnect(let port, let from, let to):
            disconnectRequested(port: port, from: from, to: to, by: client)
        case .outstandingOnConnection(let port, let from, let to):
            outstandingOnConnectionRequested(port: port, from: from, to: to, by: client)
        case .malformed(let kind, let reason):
            reject(client, "AGW '\(kind)': \(reason)")
        case .unknown(let kind):
            let shown = (0x21..<0x7F).contains(kind) ? "'\(Character(Unicode.Scalar(kind)))'" : "0x" + String(kind, radix: 16)
            onEvent(.agwRequest(from: client, what: "sent AGW kind \(shown), which this TNC does not know (ignored)"))
        case .version, .portInformation, .portCapabilities, .heardStations, .toggleRawFrames, .toggleMonitorFrames,
             .login, .register, .unregister:
            break
        }
    }

    /// The UI frame of an AGW `M` or `V` as Dire Wolf builds it from text: both C bits set (as APRS
    /// stations send; its monitor shows `PF=0`), PID 0 read as 0xF0.
    static func unprotoFrame(pid: UInt8, from: String, to: String, via: [String], info: [UInt8]) throws -> AX25Frame {
        var destination = try AX25Address(parsing: to, role: "destination")
        destination.highBit = true
        var source = try AX25Address(parsing: from, role: "source")
        source.highBit = true
        let path = try via.enumerated().map { i, text throws(AX25Error) in
            try AX25Address(parsing: text, role: "digipeater \(i + 1)")
        }
        guard info.count <= 2048 else { throw AX25Error(.frameTooShort, "\(info.count) information bytes (at most 2048)") }
        return AX25Frame(destination: destination, source: source, digipeaters: path, control: AX25Frame.uiControl,
                         pid: pid == 0 ? AX25Frame.noLayer3PID : pid, info: info)
    }

    // MARK: - Connected mode

    /// Connected mode: an AGW client asked for a link (`C`, `v` with digipeaters, `c` with a PID).
    /// To be wired to the AX.25 data-link station's `connect(from:to:via:now:)`, whose `.connected`
    /// action answers with ``AGWFrame/connectedReply(port:remote:own:incoming:)`` to the client that
    /// asked. Until then the attempt fails at once, answered as Dire Wolf answers a station that
    /// never replies (`d`, `*** DISCONNECTED RETRYOUT With REMOTE`), so the client is never left waiting.
    func connectRequested(_ request: AGWConnectRequest, by client: TCPClientInfo) {
        onEvent(.agwRequest(from: client, what: "asked to connect \(request.from) to \(request.to)"
                            + (request.via.isEmpty ? "" : " via \(request.via.joined(separator: ","))")
                            + ": connected mode is not available yet, answered as a failed connection"))
        agwServer?.send(.disconnectedReply(port: UInt8(clamping: request.port), remote: request.to, own: request.from,
                                           retryOut: true), to: client.id)
    }

    /// Connected mode: an AGW client sent data on a link (`D`). To be wired to the station's
    /// `send(_:pid:from:to:now:)`; its `.data` actions for the other direction go to the client that
    /// asked for (or registered the callsign of) the link as ``AGWFrame/connectedDataReply(port:remote:own:pid:data:)``.
    /// Until then there is no link, and the data is dropped (Dire Wolf drops data for a link that is
    /// not up too).
    func connectedDataRequested(port: Int, from: String, to: String, pid: UInt8, data: [UInt8], by client: TCPClientInfo) {
        onEvent(.agwRequest(from: client, what: "sent \(data.count) bytes of connected data \(from)>\(to) with no link: dropped"))
    }

    /// Connected mode: an AGW client asked to end a link (`d`). To be wired to the station's
    /// `disconnect(from:to:now:)`, whose `.disconnected` action answers with
    /// ``AGWFrame/disconnectedReply(port:remote:own:retryOut:)``. Until then there is no link, and the
    /// answer is Dire Wolf's for a link already down: `*** DISCONNECTED From Station REMOTE`.
    func disconnectRequested(port: Int, from: String, to: String, by client: TCPClientInfo) {
        agwServer?.send(.disconnectedReply(port: UInt8(clamping: port), remote: to, own: from, retryOut: false), to: client.id)
    }

    /// Connected mode: an AGW client asked how many frames of a link wait for an acknowledgement
    /// (`Y`). To be answered from the station's `outstandingFrames(from:to:)`; until then 0, as Dire
    /// Wolf answers for a link it does not have.
    func outstandingOnConnectionRequested(port: Int, from: String, to: String, by client: TCPClientInfo) {
        agwServer?.send(.outstandingOnConnectionReply(port: UInt8(clamping: port), own: from, remote: to, count: 0), to: client.id)
    }
}
