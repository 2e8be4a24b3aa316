import ModemCodecs

/// One connected-mode AX.25 2.2 link between a local and a remote call: the data-link state machine of
/// the specification's SDL (section C4.3), as a value.
///
/// Inputs are the client's requests (``connect(now:)``, ``send(_:pid:now:)``, ``disconnect(now:)``,
/// ``setOwnReceiverBusy(_:now:)``), received frames (``received(_:now:)``), the channel's busy state
/// (``channelBusy(_:now:)``: T1 is paused while the channel is busy, as Dire Wolf does, so a long
/// transmission is not taken for a lost acknowledgement) and the time (``advance(to:)``). Each returns
/// ``AX25LinkAction``s. The machine never reads a clock: `now` is seconds on the caller's clock.
///
/// Sequence variables: V(S) the next N(S) to send, V(R) the next N(S) expected, V(A) the oldest
/// unacknowledged N(S). Timers: T1 (acknowledgement; initial ``AX25LinkParameters/t1Initial`` × (2m + 1),
/// then twice the smoothed round trip), T3 (idle probe), TM201 (XID).
public struct AX25DataLink: Sendable {
    /// The states of the SDL.
    public enum State: Sendable, Hashable {
        /// 0: no link.
        case disconnected
        /// 1: SABM sent, waiting for UA.
        case awaitingConnection
        /// 2: DISC sent, waiting for UA.
        case awaitingRelease
        /// 3: information transfer.
        case connected
        /// 4: T1 expired (or T3): polling the peer.
        case timerRecovery
        /// 5: SABME sent, waiting for UA.
        case awaitingV22Connection
    }

    /// A timer that can be paused while the channel is busy.
    struct Timer: Sendable {
        var deadline: Double?
        var pausedRemaining: Double?
        var isRunning: Bool { deadline != nil || pausedRemaining != nil }
        mutating func start(_ seconds: Double, now: Double, paused: Bool) {
            if paused { pausedRemaining = seconds; deadline = nil } else { deadline = now + seconds; pausedRemaining = nil }
        }
        /// Stops it; returns the time that was left (nil when it was not running).
        @discardableResult mutating func stop(now: Double) -> Double? {
            defer { deadline = nil; pausedRemaining = nil }
            if let d = deadline { return max(0, d - now) }
            return pausedRemaining
        }
        mutating func pause(now: Double) {
            if let d = deadline { pausedRemaining = max(0, d - now); deadline = nil }
        }
        mutating func resume(now: Double) {
            if let r = pausedRemaining { deadline = now + r; pausedRemaining = nil }
        }
        func isDue(_ now: Double) -> Bool { deadline.map { now >= $0 } ?? false }
    }

    /// The local call (the source of frames this end sends).
    public let local: AX25Address
    /// The remote call.
    public let remote: AX25Address
    /// The digipeaters this end's frames go through.
    public let path: [AX25Address]
    /// Whether the peer asked for the link.
    public private(set) var incoming: Bool
    /// The state.
    public private(set) var state: State = .disconnected
    /// The modulo in use.
    public private(set) var modulo: AX25Modulo = .eight
    /// Window k (the most unacknowledged I frames).
    public private(set) var window: Int
    /// N1 (the most bytes per I frame).
    public private(set) var maxInformationBytes: Int
    /// N2.
    public private(set) var retries: Int
    /// Whether lost frames are asked for by SREJ (else REJ).
    public private(set) var selectiveReject = false
    /// The current T1 value, seconds.
    public private(set) var t1Value: Double
    /// The smoothed round-trip time, seconds.
    public private(set) var smoothedRoundTrip: Double
    /// V(S), V(R), V(A).
    public private(set) var vs = 0, vr = 0, va = 0
    /// Whether the peer said RNR.
    public private(set) var peerBusy = false
    /// Whether this end said RNR.
    public private(set) var ownBusy = false

    let parameters: AX25LinkParameters
    var rc = 0
    var layer3Initiated = false
    var rejectException = false
    var acknowledgePending = false
    var channelIsBusy = false
    var t1 = Timer()
    var t3 = Timer()
    var tm201 = Timer()
    var t1HadExpired = false
    var xidNegotiating = false
    var xidRetries = 0
    /// Segments not yet sent, in order.
    var queue: [(pid: UInt8, info: [UInt8])] = []
    /// Frames sent and not acknowledged, by N(S).
    var sent: [Int: (pid: UInt8, info: [UInt8])] = [:]
    /// Frames received out of order (selective reject), by N(S).
    var held: [Int: (pid: UInt8, info: [UInt8])] = [:]
    /// Sequence numbers asked for by SREJ and not yet received.
    var srejRequested: Set<Int> = []

    /// The largest information field accepted from a peer (Dire Wolf's maximum).
    static let largestInformation = 2048

    /// Creates a disconnected link.
    /// - Parameters:
    ///   - local: This end's call.
    ///   - remote: The peer's call.
    ///   - path: Digipeaters for this end's frames (H bits clear).
    ///   - incoming: Whether the peer starts it.
    ///   - parameters: The station's parameters.
    public init(local: AX25Address, remote: AX25Address, path: [AX25Address] = [], incoming: Bool = false,
                parameters: AX25LinkParameters = AX25LinkParameters()) {
        self.local = local
        self.remote = remote
        self.path = path
        self.incoming = incoming
        self.parameters = parameters.checked
        window = self.parameters.window(.eight)
        maxInformationBytes = self.parameters.maxInformationBytes
        retries = self.parameters.retries
        t1Value = self.parameters.t1Initial * Double(2 * path.count + 1)
        smoothedRoundTrip = t1Value / 2
    }

    // MARK: queries

    /// Frames queued or sent and not yet acknowledged.
    public var outstandingFrames: Int { queue.count + sent.count }

    /// Bytes queued or sent and not yet acknowledged.
    public var outstandingBytes: Int { queue.reduce(0) { $0 + $1.info.count } + sent.values.reduce(0) { $0 + $1.info.count } }

    /// The earliest timer deadline, if any timer runs (a paused timer has none).
    public var nextDeadline: Double? {
        [t1.deadline, t3.deadline, tm201.deadline].compactMap { $0 }.min()
    }

    /// Whether the link is up (connected or in timer recovery).
    public var isConnected: Bool { state == .connected || state == .timerRecovery }

    // MARK: client requests

    /// DL-CONNECT request: SABME (when v2.2 is preferred) or SABM.
    public mutating func connect(now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        guard state == .disconnected else { return out }
        incoming = false
        if parameters.preferV22 && parameters.maxV22Attempts > 0 { setVersion22() } else { setVersion20() }
        resetTimers()
        establish(now: now, &out)
        layer3Initiated = true
        state = modulo == .oneTwentyEight ? .awaitingV22Connection : .awaitingConnection
        return out
    }

    /// DL-DISCONNECT request.
    public mutating func disconnect(now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        switch state {
        case .disconnected:
            break
        case .awaitingRelease:
            send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: false, &out)
            finish(.requested, &out)
        case .awaitingConnection, .awaitingV22Connection, .connected, .timerRecovery:
            discardQueue()
            rc = 0
            send(.unnumbered(.disc, pid: nil, info: []), response: false, pf: true, &out)
            t3.stop(now: now)
            tm201.stop(now: now)
            xidNegotiating = false
            t1.stop(now: now)
            startT1(now)
            state = .awaitingRelease
        }
        return out
    }

    /// DL-DATA request: `data` in I frames of at most N1 bytes with `pid`. Allowed while connecting (sent
    /// once connected). Returns `.refused(.queueFull)` beyond ``AX25LinkParameters/maxQueuedBytes``.
    public mutating func send(_ data: [UInt8], pid: UInt8 = AX25Frame.noLayer3PID, now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        switch state {
        case .disconnected, .awaitingRelease:
            out.append(.refused(local: local, remote: remote, reason: .notConnected))
            return out
        default: break
        }
        guard outstandingBytes + data.count <= parameters.maxQueuedBytes else {
            out.append(.refused(local: local, remote: remote, reason: .queueFull))
            return out
        }
        var start = 0
        repeat {
            let end = min(data.count, start + maxInformationBytes)
            queue.append((pid, Array(data[start..<end])))
            start = end
        } while start < data.count
        popQueue(now: now, &out)
        return out
    }

    /// Flow control: this end can (not) take more I frames (RNR / RR).
    public mutating func setOwnReceiverBusy(_ busy: Bool, now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        guard busy != ownBusy else { return out }
        ownBusy = busy
        if isConnected {
            send(.supervisory(busy ? .rnr : .rr, nr: vr, info: []), response: true, pf: false, &out)
            acknowledgePending = false
        }
        return out
    }

    /// The channel is (not) busy: T1 and TM201 stand still while it is; an acknowledgement held back
    /// for the channel to clear goes out when it does.
    public mutating func channelBusy(_ busy: Bool, now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        guard busy != channelIsBusy else { return out }
        channelIsBusy = busy
        if busy {
            t1.pause(now: now)
            tm201.pause(now: now)
        } else {
            t1.resume(now: now)
            tm201.resume(now: now)
            flushAcknowledgement(&out)
        }
        return out
    }

    // MARK: time

    /// Fires the timers that are due at `now`.
    public mutating func advance(to now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        if t1.isDue(now) {
            t1.stop(now: now)
            t1HadExpired = true
            t1Expired(now: now, &out)
        }
        if t3.isDue(now) {
            t3.stop(now: now)
            if state == .connected {
                rc = 0
                transmitEnquiry(now: now, &out)
                state = .timerRecovery
            }
        }
        if tm201.isDue(now) {
            tm201.stop(now: now)
            if xidNegotiating {
                if xidRetries >= retries {
                    xidNegotiating = false
                    out.append(.error(local: local, remote: remote, problem: .xidUnanswered))
                } else {
                    xidRetries += 1
                    sendXIDCommand(now: now, &out)
                }
            }
        }
        return out
    }

    mutating func t1Expired(now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .disconnected:
            break
        case .awaitingConnection, .awaitingV22Connection:
            if state == .awaitingV22Connection && rc >= parameters.maxV22Attempts {
                setVersion20()
                state = .awaitingConnection
                out.append(.error(local: local, remote: remote, problem: .fallingBackToV20))
            }
            if rc >= retries {
                discardQueue()
                finish(.retriesExhausted, &out)
            } else {
                rc += 1
                let sabm: AX25LinkFrame.Unnumbered = state == .awaitingV22Connection ? .sabme : .sabm
                send(.unnumbered(sabm, pid: nil, info: []), response: false, pf: true, &out)
                selectT1Value(remaining: nil)
                startT1(now)
            }
        case .awaitingRelease:
            if rc >= retries {
                finish(.retriesExhausted, &out)
            } else {
                rc += 1
                send(.unnumbered(.disc, pid: nil, info: []), response: false, pf: true, &out)
                selectT1Value(remaining: nil)
                startT1(now)
            }
        case .connected:
            rc = 1
            transmitEnquiry(now: now, &out)
            state = .timerRecovery
        case .timerRecovery:
            if rc >= retries {
                discardQueue()
                send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: false, &out)
                finish(.retriesExhausted, &out)
            } else {
                rc += 1
                transmitEnquiry(now: now, &out)
            }
        }
    }

    // MARK: received frames

    /// A frame addressed to this link (decoded with this link's ``modulo``).
    public mutating func received(_ frame: AX25LinkFrame, now: Double) -> [AX25LinkAction] {
        var out: [AX25LinkAction] = []
        let command = frame.isCommand
        let pf = frame.pollFinal
        switch frame.kind {
        case .unnumbered(let u, _, let info):
            switch u {
            case .sabm, .sabme: receivedSABM(extended: u == .sabme, p: pf, now: now, &out)
            case .disc: receivedDISC(p: pf, now: now, &out)
            case .ua: receivedUA(f: pf, now: now, &out)
            case .dm: receivedDM(f: pf, now: now, &out)
            case .frmr: receivedFRMR(now: now, &out)
            case .xid: receivedXID(command: command, pf: pf, info: info, now: now, &out)
            case .test:
                if command && state != .disconnected {
                    send(.unnumbered(.test, pid: nil, info: Array(info.prefix(Self.largestInformation))), response: true, pf: pf, &out)
                }
            case .ui:
                if command && pf {
                    if isConnected { enquiryResponse(&out) } else { send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: true, &out) }
                }
            }
        case .supervisory(let s, let nr, let info):
            receivedSupervisory(s, nr: nr, info: info, command: command, pf: pf, now: now, &out)
        case .information(let ns, let nr, let pid, let info):
            receivedInformation(ns: ns, nr: nr, pid: pid, info: info, command: command, p: pf, now: now, &out)
        }
        flushAcknowledgement(&out)
        return out
    }

    mutating func receivedSABM(extended: Bool, p: Bool, now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .disconnected:
            if extended && !parameters.acceptV22 {
                send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: p, &out)
                finish(nil, &out)
                return
            }
            incoming = true
            if extended { setVersion22() } else { setVersion20() }
            send(.unnumbered(.ua, pid: nil, info: []), response: true, pf: p, &out)
            clearExceptions()
            vs = 0; vr = 0; va = 0
            resetTimers()
            out.append(.connected(local: local, remote: remote, incoming: true))
            t3.start(parameters.t3, now: now, paused: false)
            rc = 0
            state = .connected
        case .awaitingConnection, .awaitingV22Connection:
            // Both ends asked at once: answer, and wait for our own UA.
            send(.unnumbered(.ua, pid: nil, info: []), response: true, pf: p, &out)
        case .awaitingRelease:
            send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: p, &out)
        case .connected, .timerRecovery:
            let lost = vs != va || !queue.isEmpty
            if (modulo == .oneTwentyEight) != extended { if extended { setVersion22() } else { setVersion20() } }
            send(.unnumbered(.ua, pid: nil, info: []), response: true, pf: p, &out)
            clearExceptions()
            out.append(.error(local: local, remote: remote, problem: .linkReset(lostData: lost)))
            if lost { discardQueue() }
            t1.stop(now: now)
            t3.start(parameters.t3, now: now, paused: false)
            vs = 0; vr = 0; va = 0
            rc = 0
            state = .connected
        }
    }

    mutating func receivedDISC(p: Bool, now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .disconnected, .awaitingConnection, .awaitingV22Connection:
            send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: p, &out)
        case .awaitingRelease:
            send(.unnumbered(.ua, pid: nil, info: []), response: true, pf: p, &out)
        case .connected, .timerRecovery:
            discardQueue()
            send(.unnumbered(.ua, pid: nil, info: []), response: true, pf: p, &out)
            finish(.peerDisconnected, &out)
        }
    }

    mutating func receivedUA(f: Bool, now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .awaitingConnection, .awaitingV22Connection:
            guard f else {
                out.append(.error(local: local, remote: remote, problem: .uaWithoutFinal))
                return
            }
            let wasV22 = state == .awaitingV22Connection
            if layer3Initiated || vs != va {
                if !layer3Initiated { discardQueue() }
                out.append(.connected(local: local, remote: remote, incoming: incoming))
            }
            let remaining = t1.stop(now: now)
            t3.start(parameters.t3, now: now, paused: false)
            vs = 0; vr = 0; va = 0
            sent = [:]
            selectT1Value(remaining: remaining)
            rc = 0
            state = .connected
            if wasV22 && parameters.negotiateXID {
                xidRetries = 0
                sendXIDCommand(now: now, &out)
            }
            popQueue(now: now, &out)
        case .awaitingRelease:
            guard f else {
                out.append(.error(local: local, remote: remote, problem: .uaWithoutFinal))
                return
            }
            finish(.requested, &out)
        case .connected, .timerRecovery:
            // A UA repeated for a retried SABM before anything moved is harmless; otherwise the link
            // restarts (error C).
            if vs == 0 && va == 0 && vr == 0 && sent.isEmpty { return }
            out.append(.error(local: local, remote: remote, problem: .unexpectedUA))
            reestablish(now: now, &out)
        case .disconnected:
            break
        }
    }

    mutating func receivedDM(f: Bool, now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .awaitingConnection:
            guard f else { return }
            discardQueue()
            finish(.refused, &out)
        case .awaitingV22Connection:
            guard f else { return }
            // A 2.0 TNC answers SABME with DM (Dire Wolf: try again with SABM).
            fallBackToV20(now: now, &out)
        case .awaitingRelease:
            guard f else { return }
            finish(.requested, &out)
        case .connected, .timerRecovery:
            discardQueue()
            finish(.peerDisconnectedMode, &out)
        case .disconnected:
            break
        }
    }

    mutating func receivedFRMR(now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .awaitingV22Connection:
            fallBackToV20(now: now, &out)
        case .awaitingConnection:
            discardQueue()
            finish(.frameReject, &out)
        case .connected, .timerRecovery:
            if xidNegotiating && vs == 0 && va == 0 {
                // An XID the peer does not know: keep the defaults.
                xidNegotiating = false
                tm201.stop(now: now)
                out.append(.error(local: local, remote: remote, problem: .xidUnanswered))
                return
            }
            out.append(.error(local: local, remote: remote, problem: .frameRejectReceived))
            reestablish(now: now, &out)
        default:
            break
        }
    }

    mutating func fallBackToV20(now: Double, _ out: inout [AX25LinkAction]) {
        out.append(.error(local: local, remote: remote, problem: .fallingBackToV20))
        setVersion20()
        t1Value = parameters.t1Initial * Double(2 * path.count + 1)
        smoothedRoundTrip = t1Value / 2
        t1.stop(now: now)
        establish(now: now, &out)
        layer3Initiated = true
        state = .awaitingConnection
    }

    // MARK: XID

    mutating func sendXIDCommand(now: Double, _ out: inout [AX25LinkAction]) {
        let xid = AX25XID(fullDuplex: false, reject: parameters.reject, modulo: modulo,
                          iFieldLengthRx: parameters.maxInformationBytes, windowSizeRx: parameters.window(modulo),
                          ackTimerMilliseconds: Int(parameters.t1Initial * 1000), retries: parameters.retries)
        send(.unnumbered(.xid, pid: nil, info: xid.encode()), response: false, pf: true, &out)
        xidNegotiating = true
        tm201.start(t1Value, now: now, paused: channelIsBusy)
    }

    mutating func receivedXID(command: Bool, pf: Bool, info: [UInt8], now: Double, _ out: inout [AX25LinkAction]) {
        guard state != .disconnected else { return }
        guard let offered = try? AX25XID(decoding: info) else { return }
        if command {
            guard pf, !xidNegotiating else { return }
            let agreed = negotiate(offered)
            apply(agreed)
            send(.unnumbered(.xid, pid: nil, info: agreed.encode()), response: true, pf: true, &out)
        } else if xidNegotiating {
            xidNegotiating = false
            tm201.stop(now: now)
            var agreed = offered
            agreed.modulo = modulo
            apply(agreed)
        }
    }

    /// The answer to an XID command: the lesser of sizes, the greater of times, the best reject both do.
    func negotiate(_ offered: AX25XID) -> AX25XID {
        var r = AX25XID(fullDuplex: false, modulo: modulo)
        let ours = parameters.reject
        let theirs = offered.reject ?? (modulo == .oneTwentyEight ? [.rej, .srej] : [.rej])
        r.reject = ours.contains(.srej) && !theirs.isDisjoint(with: [.srej, .multiSREJ]) ? .srej : .rej
        r.iFieldLengthRx = min(offered.iFieldLengthRx ?? 256, parameters.maxInformationBytes)
        r.windowSizeRx = min(offered.windowSizeRx ?? parameters.window(modulo), parameters.window(modulo))
        r.ackTimerMilliseconds = max(offered.ackTimerMilliseconds ?? 3000, Int(parameters.t1Initial * 1000))
        r.retries = max(offered.retries ?? 10, parameters.retries)
        return r
    }

    /// Takes agreed values, each bounded (the modulo never changes on a running link).
    mutating func apply(_ x: AX25XID) {
        if let r = x.reject { selectiveReject = modulo == .oneTwentyEight && !r.isDisjoint(with: [.srej, .multiSREJ]) }
        if let n = x.iFieldLengthRx { maxInformationBytes = min(max(n, 1), parameters.maxInformationBytes) }
        if let k = x.windowSizeRx { window = min(max(k, 1), parameters.window(modulo)) }
        if let t = x.ackTimerMilliseconds {
            t1Value = min(max(Double(t) / 1000, 1), 30) * Double(2 * path.count + 1)
            smoothedRoundTrip = t1Value / 2
        }
        if let n = x.retries { retries = min(max(n, 1), 50) }
    }

    // MARK: supervisory and information frames

    mutating func receivedSupervisory(_ s: AX25LinkFrame.Supervisory, nr: Int, info: [UInt8], command: Bool, pf: Bool,
                                      now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .disconnected, .awaitingConnection, .awaitingV22Connection:
            if command && pf && state == .disconnected { send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: true, &out) }
            return
        case .awaitingRelease:
            return
        case .connected, .timerRecovery:
            break
        }
        if s == .rr || s == .rej { peerBusy = false } else if s == .rnr { peerBusy = true }
        guard isGoodNR(nr) else {
            out.append(.error(local: local, remote: remote, problem: .sequenceError))
            reestablish(now: now, &out)
            return
        }
        if s == .srej {
            // SREJ: F = 1 acknowledges up to N(R) - 1 (Dire Wolf); resend N(R) and any listed in the info.
            if pf { va = nr; dropAcknowledged() }
            var wanted = [nr]
            for byte in info.prefix(128) { wanted.append(modulo == .eight ? Int(byte >> 5) : Int(byte >> 1)) }
            var resent = false
            for n in wanted where sent[n] != nil && inWindow(n) {
                transmitI(ns: n, now: now, &out)
                resent = true
            }
            if resent {
                t3.stop(now: now)
                if !t1.isRunning { startT1(now) }
            }
            return
        }
        if command && pf { enquiryResponse(&out) }
        if state == .timerRecovery && !command && pf {
            // The answer to our poll.
            let remaining = t1.stop(now: now)
            selectT1Value(remaining: remaining)
            va = nr
            dropAcknowledged()
            if vs == va {
                t3.start(parameters.t3, now: now, paused: false)
                state = .connected
                rc = 0
            } else {
                invokeRetransmission(nr)
                t3.stop(now: now)
                startT1(now)
                state = .connected
                rc = 0
            }
            popQueue(now: now, &out)
            return
        }
        if state == .connected, !command, pf {
            out.append(.error(local: local, remote: remote, problem: .unexpectedFinal))
        }
        if s == .rej {
            va = nr
            dropAcknowledged()
            if state == .connected {
                let remaining = t1.stop(now: now)
                selectT1Value(remaining: remaining)
                t3.start(parameters.t3, now: now, paused: false)
            }
            invokeRetransmission(nr)
            popQueue(now: now, &out)
            return
        }
        if state == .connected {
            checkAcknowledged(nr, now: now)
        } else {
            va = nr
            dropAcknowledged()
        }
        popQueue(now: now, &out)
    }

    mutating func receivedInformation(ns: Int, nr: Int, pid: UInt8, info: [UInt8], command: Bool, p: Bool,
                                      now: Double, _ out: inout [AX25LinkAction]) {
        switch state {
        case .disconnected:
            if p { send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: true, &out) }
            return
        case .awaitingConnection, .awaitingV22Connection, .awaitingRelease:
            if p && state == .awaitingRelease { send(.unnumbered(.dm, pid: nil, info: []), response: true, pf: true, &out) }
            return
        case .connected, .timerRecovery:
            break
        }
        guard command else {
            out.append(.error(local: local, remote: remote, problem: .informationResponse))
            return
        }
        guard info.count <= Self.largestInformation else {
            out.append(.error(local: local, remote: remote, problem: .informationTooLong))
            return
        }
        guard isGoodNR(nr) else {
            out.append(.error(local: local, remote: remote, problem: .sequenceError))
            reestablish(now: now, &out)
            return
        }
        if state == .connected { checkAcknowledged(nr, now: now) } else { va = nr; dropAcknowledged() }
        if ownBusy {
            if p {
                send(.supervisory(.rnr, nr: vr, info: []), response: true, pf: true, &out)
                acknowledgePending = false
            }
            popQueue(now: now, &out)
            return
        }
        if ns == vr {
            rejectException = false
            deliver(pid: pid, info, &out)
            vr = (vr + 1) % modulo.rawValue
            while let next = held.removeValue(forKey: vr) {
                deliver(pid: next.pid, next.info, &out)
                vr = (vr + 1) % modulo.rawValue
            }
            srejRequested = srejRequested.filter { distance(vr, $0) < receiveWindow }
            if p {
                enquiryResponse(&out)
            } else {
                acknowledgePending = true
            }
        } else if selectiveReject && distance(vr, ns) < receiveWindow {
            if held[ns] == nil, heldBytes + info.count <= parameters.maxQueuedBytes { held[ns] = (pid, info) }
            var missing: [Int] = []
            var s = vr
            while s != ns {
                if held[s] == nil && !srejRequested.contains(s) { missing.append(s) }
                s = (s + 1) % modulo.rawValue
            }
            for m in missing {
                let f = m == vr
                send(.supervisory(.srej, nr: m, info: []), response: true, pf: f, &out)
                if f { acknowledgePending = false }
                srejRequested.insert(m)
            }
            if p { enquiryResponse(&out) }
        } else if rejectException || distance(vr, ns) >= receiveWindow {
            if p { enquiryResponse(&out) }
        } else {
            rejectException = true
            send(.supervisory(.rej, nr: vr, info: []), response: true, pf: p, &out)
            acknowledgePending = false
        }
        popQueue(now: now, &out)
    }

    mutating func deliver(pid: UInt8, _ info: [UInt8], _ out: inout [AX25LinkAction]) {
        out.append(.data(local: local, remote: remote, pid: pid, bytes: info))
    }

    var heldBytes: Int { held.values.reduce(0) { $0 + $1.info.count } }

    /// Frames this end accepts ahead of V(R).
    var receiveWindow: Int { parameters.window(modulo) }

    /// (b - a) mod the modulo.
    func distance(_ a: Int, _ b: Int) -> Int { ((b - a) % modulo.rawValue + modulo.rawValue) % modulo.rawValue }

    /// V(A) <= N(R) <= V(S), modulo.
    func isGoodNR(_ nr: Int) -> Bool { distance(va, nr) <= distance(va, vs) }

    /// N(S) in V(A) ..< V(S).
    func inWindow(_ n: Int) -> Bool { distance(va, n) < distance(va, vs) }

    /// Forgets the sent frames V(A) no longer covers.
    mutating func dropAcknowledged() {
        sent = sent.filter { inWindow($0.key) }
    }

    /// The SDL's "check I frame acknowledged" (state 3).
    mutating func checkAcknowledged(_ nr: Int, now: Double) {
        if peerBusy {
            va = nr
            dropAcknowledged()
            t3.start(parameters.t3, now: now, paused: false)
            if !t1.isRunning { startT1(now) }
        } else if nr == vs {
            va = nr
            dropAcknowledged()
            let remaining = t1.stop(now: now)
            t3.start(parameters.t3, now: now, paused: false)
            selectT1Value(remaining: remaining)
        } else if nr != va {
            va = nr
            dropAcknowledged()
            t1.stop(now: now)
            startT1(now)
        }
    }

    /// Puts the frames from N(R) to V(S) - 1 back at the head of the queue and sets V(S) to N(R).
    mutating func invokeRetransmission(_ nr: Int) {
        var again: [(pid: UInt8, info: [UInt8])] = []
        var n = nr
        while n != vs {
            if let f = sent.removeValue(forKey: n) { again.append(f) }
            n = (n + 1) % modulo.rawValue
        }
        queue.insert(contentsOf: again, at: 0)
        vs = nr
    }

    /// Sends queued segments while the window and the peer allow.
    mutating func popQueue(now: Double, _ out: inout [AX25LinkAction]) {
        guard isConnected, !peerBusy else { return }
        while !queue.isEmpty, distance(va, vs) < window {
            let segment = queue.removeFirst()
            sent[vs] = segment
            transmitI(ns: vs, now: now, &out)
            vs = (vs + 1) % modulo.rawValue
            if !t1.isRunning {
                t3.stop(now: now)
                startT1(now)
            }
        }
    }

    mutating func transmitI(ns: Int, now: Double, _ out: inout [AX25LinkAction]) {
        guard let f = sent[ns] else { return }
        send(.information(ns: ns, nr: vr, pid: f.pid, info: f.info), response: false, pf: false, &out)
        acknowledgePending = false
    }

    /// Sends RR (RNR) for received I frames once the channel is clear.
    mutating func flushAcknowledgement(_ out: inout [AX25LinkAction]) {
        guard acknowledgePending, !channelIsBusy, isConnected else { return }
        acknowledgePending = false
        send(.supervisory(ownBusy ? .rnr : .rr, nr: vr, info: []), response: true, pf: false, &out)
    }

    /// RR or RNR command with P = 1, T1 started.
    mutating func transmitEnquiry(now: Double, _ out: inout [AX25LinkAction]) {
        send(.supervisory(ownBusy ? .rnr : .rr, nr: vr, info: []), response: false, pf: true, &out)
        acknowledgePending = false
        srejRequested = []
        startT1(now)
    }

    /// RR or RNR response with F = 1.
    mutating func enquiryResponse(_ out: inout [AX25LinkAction]) {
        send(.supervisory(ownBusy ? .rnr : .rr, nr: vr, info: []), response: true, pf: true, &out)
        acknowledgePending = false
        srejRequested = []
    }

    // MARK: helpers

    mutating func establish(now: Double, _ out: inout [AX25LinkAction]) {
        clearExceptions()
        rc = 0
        send(.unnumbered(modulo == .oneTwentyEight ? .sabme : .sabm, pid: nil, info: []), response: false, pf: true, &out)
        t3.stop(now: now)
        t1.stop(now: now)
        startT1(now)
    }

    /// The SDL's recovery from errors J, K, C: establish the link again.
    mutating func reestablish(now: Double, _ out: inout [AX25LinkAction]) {
        xidNegotiating = false
        tm201.stop(now: now)
        establish(now: now, &out)
        layer3Initiated = false
        state = modulo == .oneTwentyEight ? .awaitingV22Connection : .awaitingConnection
    }

    mutating func clearExceptions() {
        peerBusy = false
        rejectException = false
        acknowledgePending = false
        held = [:]
        srejRequested = []
    }

    mutating func discardQueue() {
        queue = []
        sent = [:]
    }

    mutating func resetTimers() {
        t1Value = parameters.t1Initial * Double(2 * path.count + 1)
        smoothedRoundTrip = t1Value / 2
    }

    mutating func setVersion20() {
        modulo = .eight
        selectiveReject = false
        window = parameters.window(.eight)
        maxInformationBytes = parameters.maxInformationBytes
        retries = parameters.retries
    }

    mutating func setVersion22() {
        modulo = .oneTwentyEight
        selectiveReject = parameters.reject.contains(.srej)
        window = parameters.window(.oneTwentyEight)
        maxInformationBytes = parameters.maxInformationBytes
        retries = parameters.retries
    }

    mutating func startT1(_ now: Double) {
        t1.start(t1Value, now: now, paused: channelIsBusy)
        t1HadExpired = false
    }

    /// The specification's T1 choice: after a clean acknowledgement SRT moves 1/8 towards the measured
    /// round trip and T1 = 2 SRT; after expiries T1 backs off as 2^(RC+1) SRT. Bounded: SRT at least
    /// 1 s (+2 s per digipeater, as Dire Wolf), T1 at most twice its initial value.
    mutating func selectT1Value(remaining: Double?) {
        let initial = parameters.t1Initial * Double(2 * path.count + 1)
        if rc == 0 {
            if let remaining, !t1HadExpired {
                smoothedRoundTrip = 7.0 / 8.0 * smoothedRoundTrip + 1.0 / 8.0 * max(0, t1Value - remaining)
            }
            smoothedRoundTrip = max(smoothedRoundTrip, 1 + 2 * Double(path.count))
            t1Value = 2 * smoothedRoundTrip
        } else if t1HadExpired {
            t1Value = Double(1 << min(rc + 1, 10)) * smoothedRoundTrip
        }
        t1Value = min(max(t1Value, 1), 2 * initial)
    }

    mutating func finish(_ reason: AX25DisconnectReason?, _ out: inout [AX25LinkAction]) {
        if let reason { out.append(.disconnected(local: local, remote: remote, reason: reason)) }
        t1 = Timer()
        t3 = Timer()
        tm201 = Timer()
        xidNegotiating = false
        clearExceptions()
        state = .disconnected
    }

    /// Appends a frame to send.
    func send(_ kind: AX25LinkFrame.Kind, response: Bool, pf: Bool, _ out: inout [AX25LinkAction]) {
        let frame = AX25LinkFrame(destination: remote, source: local, digipeaters: path,
                                  commandResponse: response ? .response : .command, pollFinal: pf, kind: kind, modulo: modulo)
        out.append(.transmit(frame.encode()))
    }
}
