import ModemCodecs

/// The connected-mode links of one station (one radio channel), multiplexed by local and remote call:
/// the seam a TNC or a terminal command drives.
///
/// A driver hands it every frame decoded on the channel (``received(_:now:)``), the client's requests
/// (``connect(from:to:via:now:)``, ``send(_:pid:from:to:now:)``, ``disconnect(from:to:now:)``), the
/// channel's busy state (``channelBusy(_:now:)``) and the time (``advance(to:)`` at ``nextDeadline``),
/// and performs the ``AX25LinkAction``s each returns: frames to transmit, data and indications for the
/// client. No clock, no I/O.
///
/// Incoming connections are accepted for the ``register(_:)``ed calls only. A SABM or SABME to any other
/// call is not answered (Dire Wolf's behaviour), or answered DM with
/// ``AX25LinkParameters/answerUnregisteredWithDM``. Bounds: ``AX25LinkParameters/maxLinks`` links (an
/// incoming SABM beyond it is answered DM, a `connect` is refused) and
/// ``AX25LinkParameters/maxQueuedBytes`` per link.
///
/// ```swift
/// var station = AX25LinkStation(parameters: AX25LinkParameters())
/// station.register(try AX25Address(parsing: "N0CALL"))
/// var actions = station.connect(from: me, to: bbs, via: [], now: clock)
/// actions += station.received(frameBytes, now: clock)     // for each decoded frame
/// actions += station.advance(to: clock)                   // when clock reaches station.nextDeadline
/// ```
public struct AX25LinkStation: Sendable {
    /// A link's identity: this end's call and the peer's (C, H and reserved bits ignored).
    public struct LinkKey: Sendable, Hashable {
        /// This end's call.
        public var local: AX25Address
        /// The peer's call.
        public var remote: AX25Address
        /// Creates a key from two calls, normalised.
        public init(local: AX25Address, remote: AX25Address) {
            self.local = AX25LinkStation.normalised(local)
            self.remote = AX25LinkStation.normalised(remote)
        }
    }

    /// The parameters every new link gets.
    public let parameters: AX25LinkParameters
    /// The calls that accept incoming connections.
    public private(set) var registered: Set<AX25Address> = []
    /// The links, up and coming.
    public private(set) var links: [LinkKey: AX25DataLink] = [:]
    var channelIsBusy = false

    /// Creates a station with no registered calls and no links.
    public init(parameters: AX25LinkParameters = AX25LinkParameters()) {
        self.parameters = parameters.checked
    }

    /// The address with C/H bit clear and reserved bits 11.
    static func normalised(_ a: AX25Address) -> AX25Address {
        var a = a
        a.highBit = false
        a.reservedBits = 0b11
        return a
    }

    /// Accept incoming connections to `call`.
    public mutating func register(_ call: AX25Address) { registered.insert(Self.normalised(call)) }

    /// Stop accepting incoming connections to `call` (its links stay).
    public mutating func unregister(_ call: AX25Address) { registered.remove(Self.normalised(call)) }

    /// The link between two calls, if there is one.
    public func link(from local: AX25Address, to remote: AX25Address) -> AX25DataLink? {
        links[LinkKey(local: local, remote: remote)]
    }

    /// Frames queued or sent and not yet acknowledged on a link, 0 when there is none (AGW's `Y`).
    public func outstandingFrames(from local: AX25Address, to remote: AX25Address) -> Int {
        link(from: local, to: remote)?.outstandingFrames ?? 0
    }

    /// The earliest timer deadline of all links.
    public var nextDeadline: Double? { links.values.compactMap(\.nextDeadline).min() }

    // MARK: requests

    /// Connects `local` to `remote` through `digipeaters` (SABME first, or SABM; see ``AX25LinkParameters``).
    public mutating func connect(from local: AX25Address, to remote: AX25Address, via digipeaters: [AX25Address] = [],
                                 now: Double) -> [AX25LinkAction] {
        let key = LinkKey(local: local, remote: remote)
        if let existing = links[key], existing.state != .disconnected {
            return [.refused(local: key.local, remote: key.remote, reason: .alreadyConnected)]
        }
        guard links.count < parameters.maxLinks, digipeaters.count <= AX25Frame.maxDigipeaters else {
            return [.refused(local: key.local, remote: key.remote, reason: .tooManyLinks)]
        }
        var link = AX25DataLink(local: key.local, remote: key.remote, path: digipeaters.map(Self.normalised),
                                parameters: parameters)
        var out = link.channelBusy(channelIsBusy, now: now)
        out += link.connect(now: now)
        links[key] = link
        return out
    }

    /// Sends `data` on the link (split into I frames of at most N1 bytes).
    public mutating func send(_ data: [UInt8], pid: UInt8 = AX25Frame.noLayer3PID, from local: AX25Address,
                              to remote: AX25Address, now: Double) -> [AX25LinkAction] {
        let key = LinkKey(local: local, remote: remote)
        guard links[key] != nil else { return [.refused(local: key.local, remote: key.remote, reason: .notConnected)] }
        return update(key) { $0.send(data, pid: pid, now: now) }
    }

    /// Disconnects the link (DISC, then UA or N2 retries).
    public mutating func disconnect(from local: AX25Address, to remote: AX25Address, now: Double) -> [AX25LinkAction] {
        let key = LinkKey(local: local, remote: remote)
        guard links[key] != nil else { return [.refused(local: key.local, remote: key.remote, reason: .notConnected)] }
        return update(key) { $0.disconnect(now: now) }
    }

    /// Flow control: this end can (not) take more data on the link (RNR / RR).
    public mutating func setReceiverBusy(_ busy: Bool, from local: AX25Address, to remote: AX25Address,
                                         now: Double) -> [AX25LinkAction] {
        let key = LinkKey(local: local, remote: remote)
        guard links[key] != nil else { return [] }
        return update(key) { $0.setOwnReceiverBusy(busy, now: now) }
    }

    /// The channel is (not) busy (carrier detect or this station's own transmission): T1 stands still
    /// while it is, and held acknowledgements go out when it clears.
    public mutating func channelBusy(_ busy: Bool, now: Double) -> [AX25LinkAction] {
        channelIsBusy = busy
        var out: [AX25LinkAction] = []
        for key in links.keys.sorted(by: Self.order) { out += update(key) { $0.channelBusy(busy, now: now) } }
        return out
    }

    /// Fires the timers due at `now`.
    public mutating func advance(to now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        for key in links.keys.sorted(by: Self.order) where (links[key]?.nextDeadline).map({ $0 <= now }) ?? false {
            out += update(key) { $0.advance(to: now) }
        }
        return out
    }

    /// A frame decoded on the channel (bytes without FCS). Frames for other stations, frames still on
    /// their way through digipeaters, and frames that do not parse return nothing.
    public mutating func received(_ bytes: [UInt8], now: Double) -> [AX25LinkAction] {
        guard let header = try? AX25LinkFrame.header(bytes) else { return [] }
        // A frame is ours only once every digipeater has repeated it.
        guard header.digipeaters.allSatisfy(\.highBit) else { return [] }
        let key = LinkKey(local: header.destination, remote: header.source)
        if let link = links[key] {
            guard let frame = try? AX25LinkFrame(decoding: bytes, modulo: link.modulo) else { return [] }
            return update(key) { $0.received(frame, now: now) }
        }
        guard let frame = try? AX25LinkFrame(decoding: bytes, modulo: .eight) else { return [] }
        let path = header.digipeaters.reversed().map(Self.normalised)
        let isSABM: Bool
        if case .unnumbered(let u, _, _) = frame.kind, u == .sabm || u == .sabme { isSABM = true } else { isSABM = false }
        guard registered.contains(key.local) else {
            if isSABM && parameters.answerUnregisteredWithDM { return [dm(key, path: path, f: frame.pollFinal)] }
            return []
        }
        if isSABM {
            guard links.count < parameters.maxLinks else { return [dm(key, path: path, f: frame.pollFinal)] }
            var link = AX25DataLink(local: key.local, remote: key.remote, path: path, incoming: true, parameters: parameters)
            var out = link.channelBusy(channelIsBusy, now: now)
            out += link.received(frame, now: now)
            if link.state != .disconnected { links[key] = link }
            return out
        }
        // No link: the disconnected state's answers (DM to DISC and to polls), without keeping a link.
        var idle = AX25DataLink(local: key.local, remote: key.remote, path: path, parameters: parameters)
        return idle.received(frame, now: now)
    }

    // MARK: helpers

    /// Runs a link's input and drops the link once it is disconnected.
    mutating func update(_ key: LinkKey, _ body: (inout AX25DataLink) -> [AX25LinkAction]) -> [AX25LinkAction] {
        guard var link = links[key] else { return [] }
        let out = body(&link)
        links[key] = link.state == .disconnected ? nil : link
        return out
    }

    func dm(_ key: LinkKey, path: [AX25Address], f: Bool) -> AX25LinkAction {
        .transmit(AX25LinkFrame(destination: key.remote, source: key.local, digipeaters: path, commandResponse: .response,
                                pollFinal: f, kind: .unnumbered(.dm, pid: nil, info: [])).encode())
    }

    static func order(_ a: LinkKey, _ b: LinkKey) -> Bool {
        (a.local.description, a.remote.description) < (b.local.description, b.remote.description)
    }
}
