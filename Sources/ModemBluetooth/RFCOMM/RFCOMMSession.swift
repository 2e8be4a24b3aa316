/// One RFCOMM multiplexer session on one L2CAP channel (PSM 3): DLCI 0 and every DLC on it, as a
/// pure value (RFCOMM spec 1.2 on ETSI TS 07.10). Inputs carry the time; outputs are actions.
///
/// - The initiator is whoever sends SABM on DLCI 0 (`start`). Server channels of the responder sit
///   at DLCI `channel << 1`, those of the initiator at `channel << 1 | 1` (RFCOMM §5.4).
/// - Opening a DLC: PN (credit-based flow control asked with CL 0xF, k initial credits, N1 that fits
///   both MTUs), SABM, UA, MSC both ways, then `.channelOpened`. Data flows from UA on; what arrives
///   before `.channelOpened` is held and delivered right after it.
/// - Credits (RFCOMM §6.5): each data frame uses one of the sender's credits; we send only while we
///   hold some, and top the peer up (piggybacked on data, or in a credit-only UIH) when its credits
///   fall to half of the target. Without credits: MSC FC and FCon/FCoff are honoured.
/// - Absurd PN values are answered sanely, never trusted: N1 of 0 is read as the default 127, N1
///   above 32767 or above what fits the MTUs is lowered to fit; a convergence layer other than 0xF
///   gets no credit-based flow control; a PN answer for a DLCI we did not ask about is ignored.
///   Each is counted in ``RFCOMMStatistics/clampedNegotiations`` or ``RFCOMMStatistics/unexpectedResponses``.
/// - Damage (bad FCS, unparsable frames or messages, frames for closed DLCs) is dropped and counted;
///   SABM or DISC for a DLC that does not exist is answered with DM (07.10 §5.4.1, §5.3.4).
/// - A Test command is echoed, cut to what one frame fits in the peer's MTU.
public struct RFCOMMSession: Sendable {
    /// DLCI 0's state.
    enum ControlState: Sendable, Equatable {
        /// Nothing sent or received yet.
        case idle
        /// Our SABM on DLCI 0 went out at `since` (T1).
        case waitingUA(since: Double)
        /// The multiplexer is up.
        case open
        /// Our DISC on DLCI 0 went out at `since` (T1).
        case waitingDiscUA(since: Double)
        /// Over; `.sessionClosed` was reported.
        case closed
    }

    /// N1 when PN never happened, or when the peer proposed 0 (07.10 default).
    public static let defaultFrameSize = 127
    /// Bytes a frame adds to N1 at most: address, control, 2 length bytes, credit, FCS.
    public static let frameOverhead = 6
    /// The V.24 signals we send in MSC: EA, RTC, RTR, DV (0x8D); FC = 0.
    public static let localSignals: UInt8 = 0x8D
    /// The FC bit of the MSC signals byte.
    static let flowControlSignal: UInt8 = 0x02
    /// The receive memory the credit target may stand for (target × N1 ≤ 256 KiB).
    static let creditMemory = 256 * 1024

    /// True when we sent (or will send) SABM on DLCI 0.
    public let isInitiator: Bool
    /// The largest SDU the peer accepts (its L2CAP MTU).
    public let peerMTU: Int
    /// The largest SDU we accept (our L2CAP MTU).
    public let localMTU: Int
    /// What we offer and how long we wait.
    public let configuration: RFCOMMConfiguration
    /// What was counted so far.
    public private(set) var statistics = RFCOMMStatistics()

    var control: ControlState = .idle
    var links: [UInt8: RFCOMMDataLink] = [:]
    var listening: Set<UInt8> = []
    /// FCoff from the peer: no data on any DLC until FCon.
    var aggregateFlowStopped = false
    /// The latest time any input carried (for `send`, which has none).
    var lastNow: Double = 0

    /// A session on an L2CAP channel whose MTUs are known.
    public init(initiator: Bool, peerMTU: Int, localMTU: Int, configuration: RFCOMMConfiguration = .init()) {
        self.isInitiator = initiator
        self.peerMTU = peerMTU
        self.localMTU = localMTU
        self.configuration = configuration
    }

    // MARK: - Public inputs

    /// The initiator sends SABM on DLCI 0; a responder does nothing (it waits for the peer's SABM).
    public mutating func start(now: Double) -> [RFCOMMAction] {
        lastNow = now
        guard isInitiator, control == .idle else { return [] }
        var out: [RFCOMMAction] = []
        control = .waitingUA(since: now)
        sendCommand(.sabm, dlci: 0, &out)
        return out
    }

    /// Accept the peer's SABM (and PN) for our server channel `channel` (1-30).
    public mutating func listen(channel: UInt8) {
        listening.insert(channel)
    }

    /// Open the peer's server channel `channel` (1-30): PN, SABM, MSC, queued until DLCI 0 is up
    /// (an initiator that was not started starts here). The DLC is ``dlci(forRemoteChannel:)``.
    public mutating func open(channel: UInt8, now: Double) -> [RFCOMMAction] {
        lastNow = now
        let dlci = dlci(forRemoteChannel: channel)
        guard (1...30).contains(channel) else {
            return [.channelClosed(dlci: dlci, reason: "server channel \(channel) is not 1-30")]
        }
        guard links[dlci] == nil else { return [] }
        var out: [RFCOMMAction] = []
        switch control {
        case .closed, .waitingDiscUA:
            return [.channelClosed(dlci: dlci, reason: "the RFCOMM session is closed")]
        case .idle:
            links[dlci] = RFCOMMDataLink(dlci: dlci, outgoing: true, state: .waitingForSession, frameSize: frameLimit)
            if isInitiator { out += start(now: now) }
        case .waitingUA:
            links[dlci] = RFCOMMDataLink(dlci: dlci, outgoing: true, state: .waitingForSession, frameSize: frameLimit)
        case .open:
            links[dlci] = RFCOMMDataLink(dlci: dlci, outgoing: true, state: .waitingForSession, frameSize: frameLimit)
            negotiate(dlci, now: now, &out)
        }
        return out
    }

    /// One frame (one L2CAP SDU) from the peer.
    public mutating func received(_ sdu: [UInt8], now: Double) -> [RFCOMMAction] {
        lastNow = now
        statistics.framesReceived += 1
        let frame: RFCOMMFrame
        do {
            let parsed = try RFCOMMFrame.parse(sdu)
            guard parsed.fcsValid else {
                statistics.badFCS += 1
                return []
            }
            frame = parsed.frame
        } catch {
            statistics.malformed += 1
            return []
        }
        guard control != .closed else {
            statistics.droppedFrames += 1
            return []
        }
        var out: [RFCOMMAction] = []
        if frame.dlci == 0 {
            receivedControl(frame, now: now, &out)
        } else {
            receivedOnLink(frame, now: now, &out)
        }
        return out
    }

    /// Queue bytes on a DLC; they leave in frames of at most N1 as credits allow (`.sent` says
    /// how many left). Nothing happens for a DLC that does not exist or is closing.
    public mutating func send(dlci: UInt8, _ bytes: [UInt8]) -> [RFCOMMAction] {
        guard !bytes.isEmpty, var link = links[dlci] else { return [] }
        if case .disconnecting = link.state { return [] }
        link.queue.append(bytes)
        links[dlci] = link
        var out: [RFCOMMAction] = []
        pump(dlci, now: lastNow, &out)
        return out
    }

    /// Close a DLC: DISC, then `.channelClosed(dlci, "closed")` on UA (or T1). Queued bytes are
    /// dropped. When no DLC is left, the initiator closes DLCI 0 too.
    public mutating func close(dlci: UInt8, now: Double) -> [RFCOMMAction] {
        lastNow = now
        guard let link = links[dlci] else { return [] }
        var out: [RFCOMMAction] = []
        switch link.state {
        case .waitingForSession, .negotiating, .negotiated:
            remove(dlci, reason: "closed", &out)
            closeSessionIfIdle(now: now, &out)
        case .connecting, .connected, .open:
            disconnect(dlci, reason: "closed", now: now, &out)
        case .disconnecting:
            break
        }
        return out
    }

    /// Timers: T1 (SABM, DISC), T2 (PN, MSC) and the credit timeout.
    public mutating func tick(now: Double) -> [RFCOMMAction] {
        lastNow = now
        var out: [RFCOMMAction] = []
        let t1 = configuration.acknowledgementTimeout
        let t2 = configuration.responseTimeout
        switch control {
        case .waitingUA(let since) where now - since >= t1:
            failSession(reason: "the device did not answer SABM within \(Self.seconds(t1))", &out)
            return out
        case .waitingDiscUA(let since) where now - since >= t1:
            control = .closed
            out.append(.sessionClosed(reason: "closed"))
            return out
        default:
            break
        }
        for dlci in links.keys.sorted() {
            guard var link = links[dlci] else { continue }
            switch link.state {
            case .negotiating(let since) where now - since >= t2:
                failSession(reason: "the device did not answer PN within \(Self.seconds(t2))", &out)
                return out
            case .connecting(let since) where now - since >= t1:
                remove(dlci, reason: "the device did not answer SABM within \(Self.seconds(t1))", &out)
                closeSessionIfIdle(now: now, &out)
                continue
            case .disconnecting(let since, let reason) where now - since >= t1:
                remove(dlci, reason: reason, &out)
                closeSessionIfIdle(now: now, &out)
                continue
            case .connected(let since) where now - since >= t2:
                if !link.mscAnswered {
                    failSession(reason: "the device did not answer MSC within \(Self.seconds(t2))", &out)
                    return out
                }
                link.mscSeen = true   // it never sent its own MSC: open anyway
                links[dlci] = link
                openIfReady(dlci, &out)
            default:
                break
            }
            guard let current = links[dlci], current.creditBased, current.isConnected else { continue }
            if current.queue.isEmpty || current.sendCredits > 0 {
                links[dlci]?.starvedSince = nil
            } else if let since = current.starvedSince {
                if now - since >= configuration.creditTimeout {
                    disconnect(dlci, reason: "the device granted no credits for \(Self.seconds(configuration.creditTimeout))",
                               now: now, &out)
                }
            } else {
                links[dlci]?.starvedSince = now
            }
        }
        return out
    }

    /// The L2CAP channel or the ACL link is gone (RFCOMM §5.2.3): every DLC closes with `reason`,
    /// then `.sessionClosed(reason)` (once; nothing is transmitted).
    public mutating func lowerLayerClosed(reason: String) -> [RFCOMMAction] {
        guard control != .closed else { return [] }
        var out: [RFCOMMAction] = []
        failSession(reason: reason, &out)
        return out
    }

    /// Bytes queued on a DLC and not yet sent.
    public func queuedBytes(dlci: UInt8) -> Int {
        links[dlci]?.queue.count ?? 0
    }

    // MARK: - Public helpers

    /// The DLCI of the peer's server channel `channel`: `channel << 1`, with the direction bit set
    /// when the peer is the session's initiator (RFCOMM §5.4).
    public func dlci(forRemoteChannel channel: UInt8) -> UInt8 {
        Self.dlci(channel: channel, serverIsInitiator: !isInitiator)
    }

    /// The DLCI of server channel `channel` on the initiator (`channel << 1 | 1`) or the responder (`channel << 1`).
    public static func dlci(channel: UInt8, serverIsInitiator: Bool) -> UInt8 {
        (channel & 0x1F) << 1 | (serverIsInitiator ? 1 : 0)
    }

    /// The N1 each frame may carry so the whole frame fits both MTUs (and the configuration, and 32767).
    public var frameLimit: Int {
        max(1, min(configuration.maximumFrameSize, RFCOMMFrame.maximumInformationLength,
                   peerMTU - Self.frameOverhead, localMTU - Self.frameOverhead))
    }

    /// True while the multiplexer (DLCI 0) is up.
    public var isOpen: Bool { control == .open }

    /// The credits we hold on a DLC (nil when it does not exist).
    public func sendCredits(dlci: UInt8) -> Int? { links[dlci]?.sendCredits }

    /// The credits the peer holds on a DLC as far as we know (nil when it does not exist).
    public func peerCredits(dlci: UInt8) -> Int? { links[dlci]?.peerCredits }

    /// The DLCIs that exist in any state, ascending.
    public var dlcis: [UInt8] { links.keys.sorted() }

    // MARK: - Frames on DLCI 0

    private mutating func receivedControl(_ frame: RFCOMMFrame, now: Double, _ out: inout [RFCOMMAction]) {
        switch frame.kind {
        case .sabm:
            if isInitiator {
                sendResponse(.dm, dlci: 0, &out)     // two initiators: we already are one
                return
            }
            sendResponse(.ua, dlci: 0, &out)
            if control == .idle {
                control = .open
                startWaitingLinks(now: now, &out)
            }
        case .ua:
            switch control {
            case .waitingUA:
                control = .open
                startWaitingLinks(now: now, &out)
            case .waitingDiscUA:
                control = .closed
                out.append(.sessionClosed(reason: "closed"))
            default:
                statistics.unexpectedResponses += 1
            }
        case .dm:
            switch control {
            case .waitingUA:
                failSession(reason: "refused", &out)
            case .waitingDiscUA:
                control = .closed
                out.append(.sessionClosed(reason: "closed"))
            default:
                statistics.unexpectedResponses += 1
            }
        case .disc:
            sendResponse(control == .idle ? .dm : .ua, dlci: 0, &out)
            if control != .idle { failSession(reason: "closed by the device", &out) }
        case .uih:
            guard control == .open else {
                statistics.droppedFrames += 1
                return
            }
            let messages: [RFCOMMMultiplexerMessage]
            do {
                messages = try RFCOMMMultiplexerMessage.decodeAll(frame.information)
            } catch {
                statistics.malformed += 1
                return
            }
            for message in messages where control == .open {
                receivedMessage(message, now: now, &out)
            }
        }
    }

    private mutating func receivedMessage(_ message: RFCOMMMultiplexerMessage, now: Double, _ out: inout [RFCOMMAction]) {
        let command = message.isCommand
        switch message.content {
        case .parameterNegotiation(let parameters):
            if command {
                receivedParameterRequest(parameters, &out)
            } else {
                receivedParameterResponse(parameters, now: now, &out)
            }
        case .modemStatus(let dlci, let signals, let breakSignal):
            if command {
                sendMessage(.init(isCommand: false, content: .modemStatus(dlci: dlci, signals: signals, breakSignal: breakSignal)), &out)
                guard var link = links[dlci], link.isConnected else { return }
                link.mscSeen = true
                if !link.creditBased { link.peerFlowStopped = signals & Self.flowControlSignal != 0 }
                links[dlci] = link
                openIfReady(dlci, &out)
                pump(dlci, now: now, &out)
            } else {
                guard var link = links[dlci], case .connected = link.state, !link.mscAnswered else {
                    statistics.unexpectedResponses += 1
                    return
                }
                link.mscAnswered = true
                links[dlci] = link
                openIfReady(dlci, &out)
            }
        case .remotePortNegotiation(let dlci, let settings):
            guard command else { statistics.unexpectedResponses += 1; return }
            sendMessage(.init(isCommand: false, content: .remotePortNegotiation(dlci: dlci, settings: settings ?? .standard)), &out)
        case .remoteLineStatus(let dlci, let status):
            guard command else { statistics.unexpectedResponses += 1; return }
            sendMessage(.init(isCommand: false, content: .remoteLineStatus(dlci: dlci, status: status)), &out)
        case .test(let bytes):
            guard command else { statistics.unexpectedResponses += 1; return }
            // Echoed, cut to what one frame to the peer can carry (type byte and 3 length bytes).
            let room = max(0, min(RFCOMMFrame.maximumInformationLength, peerMTU - Self.frameOverhead) - 4)
            sendMessage(.init(isCommand: false, content: .test(Array(bytes.prefix(room)))), &out)
        case .flowControlOn:
            guard command else { statistics.unexpectedResponses += 1; return }
            sendMessage(.init(isCommand: false, content: .flowControlOn), &out)
            aggregateFlowStopped = false
            for dlci in links.keys.sorted() { pump(dlci, now: now, &out) }
        case .flowControlOff:
            guard command else { statistics.unexpectedResponses += 1; return }
            sendMessage(.init(isCommand: false, content: .flowControlOff), &out)
            aggregateFlowStopped = true
        case .notSupported:
            statistics.nscReceived += 1
        case .unknown(let type, _):
            guard command else { statistics.unexpectedResponses += 1; return }
            statistics.nscSent += 1
            sendMessage(.init(isCommand: false, content: .notSupported(type: type)), &out)
        }
    }

    /// The peer's PN: answer it (the values we take), or DM when nobody listens on that DLCI.
    private mutating func receivedParameterRequest(_ request: RFCOMMParameters, _ out: inout [RFCOMMAction]) {
        let dlci = request.dlci
        guard dlci != 0 else {
            statistics.clampedNegotiations += 1   // PN for DLCI 0 makes no sense: ignored
            return
        }
        if let link = links[dlci], link.state != .negotiated {
            // Already negotiating or connected: answer with what holds, change nothing.
            sendMessage(.init(isCommand: false, content: .parameterNegotiation(RFCOMMParameters(
                dlci: dlci, convergenceLayer: link.creditBased ? RFCOMMParameters.creditBasedResponse : 0,
                priority: request.priority, maximumFrameSize: UInt16(link.frameSize), window: 0))), &out)
            return
        }
        guard links[dlci] != nil || acceptsIncoming(dlci) else {
            sendResponse(.dm, dlci: dlci, &out)
            return
        }
        let proposed = Int(request.maximumFrameSize)
        let frameSize = proposed == 0 ? min(Self.defaultFrameSize, frameLimit) : min(proposed, frameLimit)
        let knownLayer = request.convergenceLayer == 0 || request.convergenceLayer == RFCOMMParameters.creditBasedRequest
        if proposed == 0 || frameSize < proposed || !knownLayer { statistics.clampedNegotiations += 1 }
        let creditBased = configuration.creditBasedFlowControl && request.convergenceLayer == RFCOMMParameters.creditBasedRequest
        var link = RFCOMMDataLink(dlci: dlci, outgoing: false, state: .negotiated, frameSize: frameSize)
        setCredits(&link, creditBased: creditBased, theirWindow: request.window)
        links[dlci] = link
        sendMessage(.init(isCommand: false, content: .parameterNegotiation(RFCOMMParameters(
            dlci: dlci, convergenceLayer: creditBased ? RFCOMMParameters.creditBasedResponse : 0, priority: request.priority,
            maximumFrameSize: UInt16(frameSize), window: creditBased ? ourWindow : 0))), &out)
    }

    /// The answer to our PN: take its values (never more than we offered), then SABM.
    private mutating func receivedParameterResponse(_ response: RFCOMMParameters, now: Double, _ out: inout [RFCOMMAction]) {
        guard var link = links[response.dlci], case .negotiating = link.state else {
            statistics.unexpectedResponses += 1
            return
        }
        let answered = Int(response.maximumFrameSize)
        let frameSize = answered == 0 ? min(Self.defaultFrameSize, frameLimit) : min(answered, frameLimit)
        if answered == 0 || answered > frameLimit { statistics.clampedNegotiations += 1 }
        link.frameSize = frameSize
        let creditBased = configuration.creditBasedFlowControl && response.convergenceLayer == RFCOMMParameters.creditBasedResponse
        setCredits(&link, creditBased: creditBased, theirWindow: response.window)
        link.state = .connecting(since: now)
        links[response.dlci] = link
        sendCommand(.sabm, dlci: response.dlci, &out)
    }

    // MARK: - Frames on DLCs

    private mutating func receivedOnLink(_ frame: RFCOMMFrame, now: Double, _ out: inout [RFCOMMAction]) {
        let dlci = frame.dlci
        guard control == .open else {
            if frame.kind == .sabm || frame.kind == .disc { sendResponse(.dm, dlci: dlci, &out) }
            statistics.droppedFrames += 1
            return
        }
        switch frame.kind {
        case .sabm:
            if let link = links[dlci] {
                switch link.state {
                case .negotiated:
                    accept(dlci, now: now, &out)
                case .connected, .open:
                    sendResponse(.ua, dlci: dlci, &out)   // a repeated SABM
                default:
                    sendResponse(.dm, dlci: dlci, &out)
                }
            } else if acceptsIncoming(dlci) {
                // No PN first: 07.10 defaults, no credits.
                links[dlci] = RFCOMMDataLink(dlci: dlci, outgoing: false, state: .negotiated,
                                             frameSize: min(Self.defaultFrameSize, frameLimit))
                accept(dlci, now: now, &out)
            } else {
                sendResponse(.dm, dlci: dlci, &out)
            }
        case .ua:
            guard let link = links[dlci] else {
                statistics.unexpectedResponses += 1
                return
            }
            switch link.state {
            case .connecting:
                links[dlci]?.state = .connected(since: now)
                sendMessage(.init(isCommand: true, content: .modemStatus(dlci: dlci, signals: Self.localSignals, breakSignal: nil)), &out)
                pump(dlci, now: now, &out)
            case .disconnecting(_, let reason):
                remove(dlci, reason: reason, &out)
                closeSessionIfIdle(now: now, &out)
            default:
                statistics.unexpectedResponses += 1
            }
        case .dm:
            guard let link = links[dlci] else {
                statistics.unexpectedResponses += 1
                return
            }
            switch link.state {
            case .waitingForSession, .negotiated:
                statistics.unexpectedResponses += 1
            case .negotiating, .connecting:
                remove(dlci, reason: "refused", &out)
                closeSessionIfIdle(now: now, &out)
            case .connected, .open:
                remove(dlci, reason: "closed by the device", &out)
                closeSessionIfIdle(now: now, &out)
            case .disconnecting(_, let reason):
                remove(dlci, reason: reason, &out)
                closeSessionIfIdle(now: now, &out)
            }
        case .disc:
            guard let link = links[dlci] else {
                sendResponse(.dm, dlci: dlci, &out)
                return
            }
            switch link.state {
            case .connected, .open:
                sendResponse(.ua, dlci: dlci, &out)
                announceClosingDLC(dlci, &out)
                remove(dlci, reason: "closed by the device", &out)
                closeSessionIfIdle(now: now, &out)
            case .disconnecting(_, let reason):
                sendResponse(.ua, dlci: dlci, &out)   // both closed at once
                remove(dlci, reason: reason, &out)
                closeSessionIfIdle(now: now, &out)
            default:
                sendResponse(.dm, dlci: dlci, &out)
            }
        case .uih:
            guard var link = links[dlci], link.isConnected else {
                statistics.droppedFrames += 1
                return
            }
            if let credits = frame.credits, link.creditBased, credits > 0 {
                link.sendCredits += Int(credits)
                link.starvedSince = nil
            }
            let data = frame.information
            if !data.isEmpty {
                statistics.bytesReceived += data.count
                if data.count > link.frameSize { statistics.oversizedFrames += 1 }
                if link.creditBased {
                    if link.peerCredits > 0 { link.peerCredits -= 1 } else { statistics.creditViolations += 1 }
                }
                if link.state == .open {
                    out.append(.received(dlci: dlci, data))
                } else {
                    link.heldReceived.append(data)
                }
            }
            links[dlci] = link
            pump(dlci, now: now, &out)
        }
    }

    // MARK: - Steps

    /// Our k: the credits we grant in PN.
    private var ourWindow: UInt8 { min(configuration.initialCredits, 7) }

    /// The DLCI is one of our server channels (direction bit) and someone listens on it.
    private func acceptsIncoming(_ dlci: UInt8) -> Bool {
        guard dlci >= 2, dlci <= 61, (dlci & 1 == 1) == isInitiator else { return false }
        return listening.contains(dlci >> 1)
    }

    private func creditTarget(frameSize: Int) -> Int {
        max(0, min(configuration.creditTarget, 255, max(1, Self.creditMemory / max(1, frameSize))))
    }

    private func setCredits(_ link: inout RFCOMMDataLink, creditBased: Bool, theirWindow: UInt8) {
        link.creditBased = creditBased
        link.sendCredits = creditBased ? Int(theirWindow & 0x07) : 0
        link.peerCredits = creditBased ? Int(ourWindow) : 0
        link.creditTarget = creditBased ? creditTarget(frameSize: link.frameSize) : 0
    }

    /// Send PN for an outgoing DLC (always before SABM: Bumble creates a DLC only after PN).
    private mutating func negotiate(_ dlci: UInt8, now: Double, _ out: inout [RFCOMMAction]) {
        guard var link = links[dlci] else { return }
        link.state = .negotiating(since: now)
        links[dlci] = link
        let layer = configuration.creditBasedFlowControl ? RFCOMMParameters.creditBasedRequest : 0
        sendMessage(.init(isCommand: true, content: .parameterNegotiation(RFCOMMParameters(
            dlci: dlci, convergenceLayer: layer, priority: configuration.priority,
            maximumFrameSize: UInt16(frameLimit), window: configuration.creditBasedFlowControl ? ourWindow : 0))), &out)
    }

    private mutating func startWaitingLinks(now: Double, _ out: inout [RFCOMMAction]) {
        for dlci in links.keys.sorted() where links[dlci]?.state == .waitingForSession {
            negotiate(dlci, now: now, &out)
        }
    }

    /// UA for the peer's SABM, then our MSC and the first credits.
    private mutating func accept(_ dlci: UInt8, now: Double, _ out: inout [RFCOMMAction]) {
        sendResponse(.ua, dlci: dlci, &out)
        links[dlci]?.state = .connected(since: now)
        sendMessage(.init(isCommand: true, content: .modemStatus(dlci: dlci, signals: Self.localSignals, breakSignal: nil)), &out)
        pump(dlci, now: now, &out)
    }

    /// A DLC the peer closes after SABM/UA but before the MSC exchange completed was open all the same
    /// (a fast peer opens, writes and closes at once; Bumble does): it is announced, with what it
    /// received, before its close, so neither the connection nor its data goes unreported.
    private mutating func announceClosingDLC(_ dlci: UInt8, _ out: inout [RFCOMMAction]) {
        guard var link = links[dlci], case .connected = link.state, !link.announced else { return }
        link.announced = true
        out.append(.channelOpened(dlci: dlci, frameSize: link.frameSize, incoming: !link.outgoing))
        for data in link.heldReceived { out.append(.received(dlci: dlci, data)) }
        link.heldReceived = []
        links[dlci] = link
    }

    private mutating func openIfReady(_ dlci: UInt8, _ out: inout [RFCOMMAction]) {
        guard var link = links[dlci], case .connected = link.state, link.mscAnswered, link.mscSeen else { return }
        link.state = .open
        link.announced = true
        out.append(.channelOpened(dlci: dlci, frameSize: link.frameSize, incoming: !link.outgoing))
        for data in link.heldReceived { out.append(.received(dlci: dlci, data)) }
        link.heldReceived = []
        links[dlci] = link
    }

    /// Send what the DLC may send now, the credits it owes, and `.sent`.
    private mutating func pump(_ dlci: UInt8, now: Double, _ out: inout [RFCOMMAction]) {
        guard var link = links[dlci], link.isConnected else { return }
        var sentBytes = 0
        while !link.queue.isEmpty, !aggregateFlowStopped,
              link.creditBased ? link.sendCredits > 0 : !link.peerFlowStopped {
            let chunk = link.queue.take(link.frameSize)
            let grant = link.grantDue
            link.peerCredits += grant
            if link.creditBased { link.sendCredits -= 1 }
            sentBytes += chunk.count
            transmit(RFCOMMFrame(kind: .uih, dlci: dlci, commandResponse: isInitiator,
                                 credits: grant > 0 ? UInt8(grant) : nil, information: chunk), &out)
        }
        let grant = link.grantDue
        if grant > 0 {
            link.peerCredits += grant
            transmit(RFCOMMFrame(kind: .uih, dlci: dlci, commandResponse: isInitiator, credits: UInt8(grant)), &out)
        }
        if link.creditBased, !link.queue.isEmpty, link.sendCredits == 0 {
            if link.starvedSince == nil { link.starvedSince = now }
        } else {
            link.starvedSince = nil
        }
        links[dlci] = link
        if sentBytes > 0 {
            statistics.bytesSent += sentBytes
            out.append(.sent(dlci: dlci, bytes: sentBytes))
        }
    }

    /// DISC a connected DLC; `.channelClosed(reason)` follows on UA, DM or T1.
    private mutating func disconnect(_ dlci: UInt8, reason: String, now: Double, _ out: inout [RFCOMMAction]) {
        guard var link = links[dlci] else { return }
        link.state = .disconnecting(since: now, reason: reason)
        link.queue.removeAll()
        link.starvedSince = nil
        links[dlci] = link
        sendCommand(.disc, dlci: dlci, &out)
    }

    /// Forget a DLC and tell the user when they know of it.
    private mutating func remove(_ dlci: UInt8, reason: String, _ out: inout [RFCOMMAction]) {
        guard let link = links.removeValue(forKey: dlci) else { return }
        if link.userKnows { out.append(.channelClosed(dlci: dlci, reason: reason)) }
    }

    /// The initiator closes DLCI 0 once its last DLC is gone (RFCOMM §5.2.2).
    private mutating func closeSessionIfIdle(now: Double, _ out: inout [RFCOMMAction]) {
        guard isInitiator, control == .open, links.isEmpty else { return }
        control = .waitingDiscUA(since: now)
        sendCommand(.disc, dlci: 0, &out)
    }

    /// Every DLC closes with `reason`, then the session.
    private mutating func failSession(reason: String, _ out: inout [RFCOMMAction]) {
        for dlci in links.keys.sorted() { remove(dlci, reason: reason, &out) }
        control = .closed
        aggregateFlowStopped = false
        out.append(.sessionClosed(reason: reason))
    }

    // MARK: - Sending

    private mutating func transmit(_ frame: RFCOMMFrame, _ out: inout [RFCOMMAction]) {
        statistics.framesSent += 1
        out.append(.transmit(frame.encoded))
    }

    /// SABM or DISC with P = 1; C/R 1 from the initiator, 0 from the responder.
    private mutating func sendCommand(_ kind: RFCOMMFrame.Kind, dlci: UInt8, _ out: inout [RFCOMMAction]) {
        transmit(RFCOMMFrame(kind: kind, dlci: dlci, commandResponse: isInitiator, pollFinal: true), &out)
    }

    /// UA or DM with F = 1; C/R 0 from the initiator, 1 from the responder.
    private mutating func sendResponse(_ kind: RFCOMMFrame.Kind, dlci: UInt8, _ out: inout [RFCOMMAction]) {
        transmit(RFCOMMFrame(kind: kind, dlci: dlci, commandResponse: !isInitiator, pollFinal: true), &out)
    }

    /// A multiplexer message in a UIH frame on DLCI 0 (P/F 0; C/R = the sender's command value).
    private mutating func sendMessage(_ message: RFCOMMMultiplexerMessage, _ out: inout [RFCOMMAction]) {
        transmit(RFCOMMFrame(kind: .uih, dlci: 0, commandResponse: isInitiator, information: message.encoded), &out)
    }

    /// "20 s", "0.5 s".
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e9 ? "\(Int(value)) s" : "\(value) s"
    }
}
