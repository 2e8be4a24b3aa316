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
            agwClientLeft(client)
            onEvent(.agwClientLeft(client, reason: reason, statistics: s, clients: count))
        case .answered(let command, let client):
            switch command {
            case .register(let port, let call):
                if port == 0 { registrationChanged(call, registered: true) }
                onEvent(.agwRequest(from: client, what: "registered \(call) on port \(port)" + (port == 0 ? "" : " (refused: one radio port, 0)")))
            case .unregister(let port, let call):
                if port == 0 { registrationChanged(call, registered: false) }
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

    /// An AGW client asked for a link (`C`, `v` with digipeaters, `c` with a PID): the data-link station
    /// calls (SABME, or SABM), and the client hears `C` when the link is up or `d` when it failed.
    func connectRequested(_ request: AGWConnectRequest, by client: TCPClientInfo) {
        guard request.port == 0 else { return reject(client, "AGW port \(request.port): this TNC has one radio port, 0") }
        guard sink != nil else {
            agwServer?.send(.disconnectedReply(port: 0, remote: request.to, own: request.from, retryOut: true), to: client.id)
            return reject(client, "this TNC has no output to transmit to: no link to \(request.to)")
        }
        let local: AX25Address, remote: AX25Address, path: [AX25Address]
        do {
            local = try AX25Address(parsing: request.from, role: "own call")
            remote = try AX25Address(parsing: request.to, role: "remote call")
            path = try request.via.map { text throws(AX25Error) in try AX25Address(parsing: text, role: "digipeater") }
        } catch {
            agwServer?.send(.disconnectedReply(port: 0, remote: request.to, own: request.from, retryOut: true), to: client.id)
            return reject(client, "AGW connect \(request.from)>\(request.to): \(error)")
        }
        onEvent(.agwRequest(from: client, what: "asked to connect \(local) to \(remote)"
                            + (path.isEmpty ? "" : " via \(path.map(\.description).joined(separator: ","))")))
        let actions = station.connect(from: local, to: remote, via: path, now: linkClock)
        let key = AX25LinkStation.LinkKey(local: local, remote: remote)
        if station.links[key] != nil, linkOwners[key] == nil { linkOwners[key] = client }
        perform(actions, asking: client)
    }

    /// An AGW client sent data on a link (`D`): queued on the link (split into I frames of N1 bytes).
    func connectedDataRequested(port: Int, from: String, to: String, pid: UInt8, data: [UInt8], by client: TCPClientInfo) {
        guard let (local, remote) = linkCalls(from, to) else {
            return reject(client, "AGW data \(from)>\(to): not a pair of calls")
        }
        perform(station.send(data, pid: pid == 0 ? AX25Frame.noLayer3PID : pid, from: local, to: remote, now: linkClock), asking: client)
    }

    /// An AGW client asked to end a link (`d`): DISC, then `d` to the client when the other end has
    /// answered (or after the retries). With no link, Dire Wolf's answer for a link already down.
    func disconnectRequested(port: Int, from: String, to: String, by client: TCPClientInfo) {
        guard let (local, remote) = linkCalls(from, to), station.link(from: local, to: remote) != nil else {
            agwServer?.send(.disconnectedReply(port: UInt8(clamping: port), remote: to, own: from, retryOut: false), to: client.id)
            return
        }
        perform(station.disconnect(from: local, to: remote, now: linkClock), asking: client)
    }

    /// An AGW client asked how many frames of a link wait for an acknowledgement (`Y`).
    func outstandingOnConnectionRequested(port: Int, from: String, to: String, by client: TCPClientInfo) {
        let count = linkCalls(from, to).map { station.outstandingFrames(from: $0.0, to: $0.1) } ?? 0
        agwServer?.send(.outstandingOnConnectionReply(port: UInt8(clamping: port), own: from, remote: to, count: count), to: client.id)
    }

    /// An AGW client registered (`X`) or unregistered (`x`) a call: the station accepts incoming links
    /// to the calls some client holds.
    func registrationChanged(_ call: String, registered: Bool) {
        guard let address = try? AX25Address(parsing: call, role: "registered call") else { return }
        if registered {
            station.register(address)
        } else if agwServer?.client(registeredFor: call) == nil {
            station.unregister(address)
        }
    }

    /// An AGW client left: its links are closed (DISC) and its calls no longer take connections. The
    /// link's frames still waiting in the transmit queue (I frames of data nobody will see acknowledged,
    /// acknowledgements) are dropped first, so the DISC is the next thing the link sends.
    func agwClientLeft(_ client: TCPClientInfo) {
        for call in station.registered where agwServer?.client(registeredFor: call.description) == nil {
            station.unregister(call)
        }
        for (key, owner) in linkOwners.sorted(by: { $0.key.remote.description < $1.key.remote.description }) where owner.id == client.id {
            linkOwners[key] = nil
            queue.removeAll { item in
                item.from == Self.dataLinkClient && AX25LinkStation.normalised(item.frame.source) == key.local
                    && AX25LinkStation.normalised(item.frame.destination) == key.remote
            }
            perform(station.disconnect(from: key.local, to: key.remote, now: linkClock))
        }
    }

    /// Once per step: tells the station whether the channel is busy (T1 stands still while it is)
    /// and fires its due timers.
    func runLinks() {
        guard !station.links.isEmpty else { return }
        let busy = channelBusyForLinks
        if busy != stationSawBusy {
            stationSawBusy = busy
            perform(station.channelBusy(busy, now: linkClock))
        }
        if let due = station.nextDeadline, due <= linkClock {
            perform(station.advance(to: linkClock))
        }
    }

    /// Carries out the station's actions: frames to the transmitter, news to the link's AGW client.
    func perform(_ actions: [AX25LinkAction], asking: TCPClientInfo? = nil) {
        for action in actions {
            switch action {
            case .transmit(let bytes):
                let frame = (try? AX25Frame(decoding: bytes, strictCallsigns: false))
                guard let frame else { continue }
                enqueue(frame, bytes: bytes, from: Self.dataLinkClient)
            case .connected(let local, let remote, let incoming):
                let key = AX25LinkStation.LinkKey(local: local, remote: remote)
                if incoming, linkOwners[key] == nil, let owner = agwServer?.client(registeredFor: local.description) {
                    linkOwners[key] = owner
                }
                guard let owner = linkOwners[key] else {
                    // Nobody to report to (the client left meanwhile): the link is closed again.
                    perform(station.disconnect(from: local, to: remote, now: linkClock))
                    continue
                }
                onEvent(.agwRequest(from: owner, what: "link \(local) <> \(remote) up\(incoming ? " (incoming)" : "")"))
                agwServer?.send(.connectedReply(port: 0, remote: remote.description, own: local.description, incoming: incoming), to: owner.id)
            case .data(let local, let remote, let pid, let bytes):
                guard let owner = linkOwners[.init(local: local, remote: remote)] else { continue }
                agwServer?.send(.connectedDataReply(port: 0, remote: remote.description, own: local.description, pid: pid, data: bytes), to: owner.id)
            case .disconnected(let local, let remote, let reason):
                let key = AX25LinkStation.LinkKey(local: local, remote: remote)
                let owner = linkOwners.removeValue(forKey: key)
                if let owner {
                    onEvent(.agwRequest(from: owner, what: "link \(local) <> \(remote) down: \(reason)"))
                    agwServer?.send(.disconnectedReply(port: 0, remote: remote.description, own: local.description,
                                                       retryOut: reason == .retriesExhausted), to: owner.id)
                }
            case .error(let local, let remote, let problem):
                if let owner = linkOwners[.init(local: local, remote: remote)] {
                    onEvent(.agwRequest(from: owner, what: "link \(local) <> \(remote): \(problem)"))
                }
            case .refused(let local, let remote, let reason):
                guard let client = asking ?? linkOwners[.init(local: local, remote: remote)] else { continue }
                reject(client, "link \(local) <> \(remote): \(reason)")
                if reason == .tooManyLinks || reason == .notConnected {
                    agwServer?.send(.disconnectedReply(port: 0, remote: remote.description, own: local.description, retryOut: false), to: client.id)
                }
            }
        }
    }

    /// The own and remote calls of an AGW link request, as the station keys them.
    private func linkCalls(_ own: String, _ remote: String) -> (AX25Address, AX25Address)? {
        guard let local = try? AX25Address(parsing: own, role: "own call"),
              let other = try? AX25Address(parsing: remote, role: "remote call") else { return nil }
        return (AX25LinkStation.normalised(local), AX25LinkStation.normalised(other))
    }

    /// Where the data link's own frames come from, in the transmit queue and the log.
    static let dataLinkClient = TCPClientInfo(id: 0, peer: "connected-mode data link", service: .agw)
}
