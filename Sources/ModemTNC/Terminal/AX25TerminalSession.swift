import ModemCodecs

/// One person's connected-mode AX.25 session at a terminal (`modem ax25 connect` and `modem ax25 listen`):
/// what they type goes to the other station as I frames, what arrives is shown, and the session ends
/// cleanly when either side is done. A pure value over an ``AX25LinkStation``: the caller moves the bytes
/// (a KISS connection, a sound card) and keeps the time, and acts on the ``Output``s each call returns.
///
/// - Typed text goes out with packet radio's line ending, carriage return (a line feed, or CR LF,
///   becomes one CR), and received CRs are shown as line feeds, unless ``translatesLineEndings`` is off
///   (`--binary`): then bytes pass unchanged both ways.
/// - Input is taken only while ``wantsInput`` is true: once connected, and while fewer than
///   ``maximumOutstandingFrames`` frames wait for acknowledgement, so a fast source (a file piped in)
///   never fills the link's queue.
/// - When the input ends and ``closesWhenInputEnds`` is set, the session waits until every frame sent
///   has been acknowledged, then disconnects (DISC, UA) and finishes with ``End/completed``; otherwise
///   it stays connected until the other station disconnects.
/// - Listening, the first station that connects is served; a second one is disconnected at once.
public struct AX25TerminalSession: Sendable {
    /// What the session does first.
    public enum Mode: Sendable, Hashable {
        /// Connect to `remote` through the digipeaters `via`.
        case connect(remote: AX25Address, via: [AX25Address])
        /// Wait for a station to connect to the local call.
        case listen
    }

    /// How a session ended.
    public enum End: Sendable, Hashable {
        /// The input ended, everything sent was acknowledged and the link was closed from here.
        case completed
        /// The other station disconnected.
        case peerDisconnected
        /// No link could be made: the reason in words (DM, no answer after the retries).
        case connectFailed(String)
        /// The link failed while connected: the reason in words (retries exhausted, FRMR).
        case linkLost(String)
    }

    /// What the caller does after a call.
    public enum Output: Sendable, Hashable {
        /// Send this AX.25 frame (bytes without FCS) on the channel.
        case transmit([UInt8])
        /// Show these received bytes (standard output).
        case display([UInt8])
        /// Report this line (standard error): connected, disconnected, refusals.
        case status(String)
        /// The session is over.
        case finished(End)
    }

    /// The local station's call.
    public let local: AX25Address
    /// How the session started.
    public let mode: Mode
    /// Whether line endings are translated (CR on the air, LF on the terminal).
    public let translatesLineEndings: Bool
    /// Input is paused while this many frames (or more) wait for acknowledgement.
    public let maximumOutstandingFrames: Int
    /// Whether the end of the input closes the link (once everything sent is acknowledged).
    public let closesWhenInputEnds: Bool
    /// The station under the session (its link's counters and state are there).
    public private(set) var station: AX25LinkStation
    /// The station at the other end: the called one, or the first that connected.
    public private(set) var remote: AX25Address?
    /// Whether the link is up.
    public private(set) var isConnected = false
    /// How it ended, once it has.
    public private(set) var end: End?
    /// Bytes sent (before line-ending translation) and received (after it).
    public private(set) var bytesSent = 0
    public private(set) var bytesReceived = 0

    /// The rate the frames go on the air at, when the channel under the session does not say when it is
    /// busy (a KISS TNC does not): the session then counts the channel busy itself, so T1 does not run
    /// out while frames wait their turn: during its own frames' airtime (at this bit rate, plus
    /// ``keyUpSeconds`` when the transmitter starts), and after each frame it receives for as long as
    /// that frame took (the sender is likely to have more in the same transmission). nil: the caller
    /// reports the channel with ``channelBusy(_:now:)``.
    public var airtimeBitRate: Double?
    /// Seconds a transmission takes to start (TXDELAY), counted with ``airtimeBitRate``.
    public var keyUpSeconds = 0.3
    /// Until when the channel counts as busy (with ``airtimeBitRate``): this station's frames still
    /// going out, or the other station's transmission likely still under way.
    public private(set) var channelBusyUntil: Double?

    private var inputEnded = false
    private var disconnecting = false
    private var lastWasCR = false

    /// Creates a session; nothing is sent before ``start(now:)``.
    /// - Parameters:
    ///   - local: this station's call.
    ///   - mode: connect to a station, or listen.
    ///   - parameters: the data link's parameters (window, N1, T1, N2, v2.0 or v2.2).
    ///   - translatesLineEndings: LF typed becomes CR sent, CR received becomes LF shown (default).
    ///   - closesWhenInputEnds: the end of the input closes the link (default), or the session waits
    ///     for the other station to disconnect.
    public init(local: AX25Address, mode: Mode, parameters: AX25LinkParameters = AX25LinkParameters(),
                translatesLineEndings: Bool = true, closesWhenInputEnds: Bool = true) {
        self.local = local
        self.closesWhenInputEnds = closesWhenInputEnds
        self.mode = mode
        self.translatesLineEndings = translatesLineEndings
        station = AX25LinkStation(parameters: parameters)
        maximumOutstandingFrames = 2 * max(parameters.windowModulo8, parameters.windowModulo128)
        if case .connect(let remote, _) = mode { self.remote = remote }
    }

    /// Whether the caller should read more input now.
    public var wantsInput: Bool {
        guard isConnected, !inputEnded, !disconnecting, end == nil, let remote else { return false }
        return station.outstandingFrames(from: local, to: remote) < maximumOutstandingFrames
    }

    /// The earliest time ``advance(to:)`` has work to do.
    public var nextDeadline: Double? {
        guard end == nil else { return nil }
        return [station.nextDeadline, channelBusyUntil].compactMap { $0 }.min()
    }

    /// Starts: connects (SABME or SABM) or starts accepting connections to ``local``.
    public mutating func start(now: Double) -> [Output] {
        switch mode {
        case .connect(let remote, let via):
            return handle(station.connect(from: local, to: remote, via: via, now: now), now: now)
        case .listen:
            station.register(local)
            return [.status("listening as \(local)")]
        }
    }

    /// Typed (or piped) input; call only while ``wantsInput``.
    public mutating func input(_ bytes: [UInt8], now: Double) -> [Output] {
        guard let remote, isConnected, !bytes.isEmpty else { return [] }
        bytesSent += bytes.count
        return handle(station.send(translateOutgoing(bytes), from: local, to: remote, now: now), now: now)
    }

    /// The input has ended: once everything sent is acknowledged, the link is closed.
    public mutating func inputDidEnd(now: Double) -> [Output] {
        inputEnded = true
        return closeIfDone(now: now)
    }

    /// A frame decoded on the channel (bytes without FCS).
    public mutating func received(frame: [UInt8], now: Double) -> [Output] {
        var out: [Output] = []
        if let rate = airtimeBitRate {
            let hold = now + Self.airtime(frame.count, rate) + 0.1
            if channelBusyUntil == nil { out += handle(station.channelBusy(true, now: now), now: now) }
            channelBusyUntil = max(channelBusyUntil ?? hold, hold)
        }
        return out + handle(station.received(frame, now: now), now: now)
    }

    /// Seconds a frame of `bytes` (no FCS) takes on the air: HDLC adds a flag, the FCS and about 1 bit
    /// in 60 of stuffing.
    static func airtime(_ bytes: Int, _ bitRate: Double) -> Double {
        Double(bytes + 4) * 8 * 1.02 / bitRate
    }

    /// Fires the timers due at `now`.
    public mutating func advance(to now: Double) -> [Output] {
        var out: [Output] = []
        if let until = channelBusyUntil, until <= now {
            channelBusyUntil = nil
            out += handle(station.channelBusy(false, now: now), now: now)
        }
        return out + handle(station.advance(to: now), now: now)
    }

    /// The channel is (not) busy: the data link's T1 stands still while it is.
    public mutating func channelBusy(_ busy: Bool, now: Double) -> [Output] {
        handle(station.channelBusy(busy, now: now), now: now)
    }

    /// Closes the link now (an interrupt): DISC, then UA or the retries.
    public mutating func disconnect(now: Double) -> [Output] {
        guard end == nil else { return [] }
        guard let remote, isConnected || !disconnecting else {
            end = .completed
            return [.finished(.completed)]
        }
        disconnecting = true
        if !isConnected, case .listen = mode {
            end = .completed
            return [.finished(.completed)]
        }
        return handle(station.disconnect(from: local, to: remote, now: now), now: now)
    }

    // MARK: -

    private mutating func closeIfDone(now: Double) -> [Output] {
        guard inputEnded, closesWhenInputEnds, isConnected, !disconnecting, end == nil, let remote,
              station.outstandingFrames(from: local, to: remote) == 0 else { return [] }
        disconnecting = true
        return handle(station.disconnect(from: local, to: remote, now: now), now: now)
    }

    private mutating func handle(_ actions: [AX25LinkAction], now: Double) -> [Output] {
        var out: [Output] = []
        var extra: [AX25LinkAction] = []
        for action in actions {
            switch action {
            case .transmit(let bytes):
                out.append(.transmit(bytes))
                if let rate = airtimeBitRate {
                    let seconds = Self.airtime(bytes.count, rate)
                    let idle = channelBusyUntil == nil
                    channelBusyUntil = (channelBusyUntil ?? now + keyUpSeconds) + seconds
                    if idle { extra += station.channelBusy(true, now: now) }
                }
            case .connected(let l, let r, let incoming):
                if incoming, let remote, remote != r || isConnected {
                    // Already serving one station: the newcomer is sent away.
                    out.append(.status("\(r) connected to \(l) while serving \(remote): disconnecting it"))
                    extra += station.disconnect(from: l, to: r, now: now)
                    continue
                }
                remote = r
                isConnected = true
                let version = station.link(from: l, to: r).map { $0.modulo == .eight ? "modulo 8" : "AX.25 2.2, modulo 128" } ?? ""
                out.append(.status("connected to \(r)\(incoming ? " (incoming)" : "")\(version.isEmpty ? "" : ", " + version)"))
            case .data(_, let r, _, let bytes):
                guard r == remote else { continue }
                bytesReceived += bytes.count
                out.append(.display(translateIncoming(bytes)))
            case .disconnected(_, let r, let reason):
                guard r == remote, end == nil else { continue }
                let finished: End
                switch reason {
                case .requested:
                    finished = .completed
                case .peerDisconnected:
                    finished = .peerDisconnected
                default:
                    finished = isConnected ? .linkLost("\(reason)") : .connectFailed("\(reason)")
                }
                isConnected = false
                end = finished
                out.append(.status("disconnected from \(r): \(reason)"))
                out.append(.finished(finished))
            case .error(_, let r, let problem):
                out.append(.status("link with \(r): \(problem)"))
            case .refused(_, let r, let reason):
                out.append(.status("refused (\(r)): \(reason)"))
                if case .connect = mode, !isConnected, end == nil {
                    end = .connectFailed("\(reason)")
                    out.append(.finished(end!))
                }
            }
        }
        if !extra.isEmpty { out += handle(extra, now: now) }
        if end == nil { out += closeIfDone(now: now) }
        return out
    }

    private mutating func translateOutgoing(_ bytes: [UInt8]) -> [UInt8] {
        guard translatesLineEndings else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for b in bytes {
            if b == 0x0A {
                if !lastWasCR { out.append(0x0D) }
            } else {
                out.append(b)
            }
            lastWasCR = b == 0x0D
        }
        return out
    }

    private func translateIncoming(_ bytes: [UInt8]) -> [UInt8] {
        guard translatesLineEndings else { return bytes }
        return bytes.map { $0 == 0x0D ? 0x0A : $0 }
    }
}
