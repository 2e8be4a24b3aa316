import ModemRuntime
/// What an ``L2CAPLink`` asks its owner to do or tells it.
public enum L2CAPAction: Sendable, Hashable {
    /// A basic frame for `GAPMachine.sendL2CAP`.
    case transmit([UInt8])
    /// A channel finished configuration: data may flow. `cid` is our end; SDUs we send must fit `peerMTU`.
    case opened(cid: UInt16, psm: UInt16, peerMTU: UInt16, incoming: Bool)
    /// An SDU arrived on an open channel.
    case received(cid: UInt16, [UInt8])
    /// A channel closed (also a refused, failed or timed-out connect: `cid` of the attempt).
    case closed(cid: UInt16, reason: String)
    /// A frame or command was dropped, or a send refused; also counted in ``L2CAPLink/statistics``.
    case damaged(String)
}

/// Counters of what an ``L2CAPLink`` dropped, refused or gave up on.
public struct L2CAPStatistics: Sendable, Hashable {
    /// Frames whose length field did not match their bytes.
    public var malformedFrames = 0
    /// Signalling commands that could not be parsed (truncated, bad options, identifier 0).
    public var malformedCommands = 0
    /// Data frames for a CID with no open channel (including the connectionless channel).
    public var unknownCIDFrames = 0
    /// Command Rejects we sent.
    public var commandRejectsSent = 0
    /// Command Rejects we received.
    public var commandRejectsReceived = 0
    /// `send` calls refused: the SDU was larger than the peer's MTU, or the channel was not open.
    public var refusedSends = 0
    /// Requests that got no answer within RTX (or ERTX after "pending").
    public var timeouts = 0
    /// Creates zeroed counters.
    public init() {}
}

/// The answer to one of our Information Requests.
public struct L2CAPInformation: Sendable, Hashable {
    /// 0 success, 1 not supported (also recorded when the peer rejected the request).
    public var result: UInt16
    /// The answer's data (extended features: 4 bytes; fixed channels: 8 bytes).
    public var data: [UInt8]
    /// Creates an answer.
    public init(result: UInt16, data: [UInt8]) {
        self.result = result
        self.data = data
    }
}

/// All L2CAP channels of one ACL link (Core Vol 3 Part A §4, §6), basic mode only: signalling on CID 1,
/// dynamic channels from 0x0040, configuration of the MTU alone. A pure value: inputs carry the time,
/// outputs are ``L2CAPAction``s.
///
/// Configuration: our request carries only the MTU option (`localMTU`); a peer's request is accepted
/// when its MTU is at least 48 and every non-hint option is known (MTU, flush timeout, QoS, basic
/// retransmission mode, FCS); unknown non-hint options get result 3 listing them, an MTU below 48 or a
/// mode other than basic gets result 1 with the acceptable value. A channel opens once both requests
/// are accepted, in either order.
///
/// `send` with an SDU above the peer's MTU (or on a channel that is not open) transmits nothing,
/// returns one `.damaged` naming the channel and sizes, and counts it in ``statistics``.
public struct L2CAPLink: Sendable {
    /// A channel's progress (§6: CLOSED → WAIT_CONNECT_RSP → CONFIG → OPEN → WAIT_DISCONNECT).
    enum State: Sendable, Hashable {
        case waitConnectResponse
        case config
        case open
        case waitDisconnectResponse(reason: String)
    }

    struct Channel: Sendable, Hashable {
        var localCID: UInt16
        var remoteCID: UInt16
        var psm: UInt16
        var incoming: Bool
        var state: State
        /// The MTU we ask to receive (may move up to a peer's counter-offer).
        var requestedMTU: UInt16
        var ourConfigurationAccepted = false
        var theirConfigurationAccepted = false
        var peerMTU: UInt16 = L2CAP.defaultMTU
        /// Options of a peer request still being continued (C flag set).
        var continuedOptions: [L2CAPConfigurationOption] = []
        var configurationAttempts = 0
    }

    enum RequestKind: Sendable, Hashable {
        case connect(cid: UInt16)
        case configure(cid: UInt16)
        case disconnect(cid: UInt16)
        case echo
        case information(type: UInt16)
    }

    struct PendingRequest: Sendable, Hashable {
        var kind: RequestKind
        var deadline: Double
    }

    /// The MTU we offer for every channel (what we can receive).
    public let localMTU: UInt16
    /// The largest C-frame payload we accept (MTUsig); larger ones are rejected with reason 1.
    public var signallingMTU: UInt16 = L2CAP.defaultMTU
    /// What was dropped or refused.
    public private(set) var statistics = L2CAPStatistics()
    /// Data of every Echo Response received, oldest first.
    public private(set) var echoResponses: [[UInt8]] = []
    /// Answers to our Information Requests, by info type.
    public private(set) var information: [UInt16: L2CAPInformation] = [:]

    private var servers: Set<UInt16> = []
    private var channels: [UInt16: Channel] = [:]
    private var pending: [UInt8: PendingRequest] = [:]
    private var nextIdentifier: UInt8 = 1
    private var nextCID: UInt16 = L2CAP.firstDynamicCID

    /// A link with no channels; `localMTU` is offered in every configuration request (at least 48).
    public init(localMTU: UInt16 = 1691) {
        self.localMTU = max(localMTU, L2CAP.minimumMTU)
    }

    /// Accept incoming Connection Requests for `psm`.
    public mutating func listen(psm: UInt16) {
        servers.insert(psm)
    }

    /// The local CIDs of all channels (any state), ascending.
    public var channelIDs: [UInt16] { channels.keys.sorted() }

    /// True when `cid` is an open channel.
    public func isOpen(cid: UInt16) -> Bool { channels[cid]?.state == .open }

    /// The peer's MTU on an open channel.
    public func peerMTU(cid: UInt16) -> UInt16? {
        guard let channel = channels[cid], channel.state == .open else { return nil }
        return channel.peerMTU
    }

    // MARK: - API

    /// Opens a channel to `psm`: sends a Connection Request. Returns the CID of the attempt; its
    /// outcome is `.opened` or `.closed` with that CID.
    public mutating func connect(psm: UInt16, now: Double) -> (cid: UInt16, actions: [L2CAPAction]) {
        guard let cid = allocateCID() else {
            return (0, [.closed(cid: 0, reason: "no free L2CAP channel identifier")])
        }
        channels[cid] = Channel(localCID: cid, remoteCID: 0, psm: psm, incoming: false,
                                state: .waitConnectResponse, requestedMTU: localMTU)
        let action = request(.connectionRequest(psm: psm, sourceCID: cid), kind: .connect(cid: cid), now: now)
        return (cid, [action])
    }

    /// Sends one SDU on an open channel (see the type's notes for refusals).
    public mutating func send(cid: UInt16, _ sdu: [UInt8]) -> [L2CAPAction] {
        guard let channel = channels[cid], channel.state == .open else {
            statistics.refusedSends += 1
            return [.damaged("L2CAP send on CID 0x\(Hex.digits(cid)) refused: the channel is not open")]
        }
        guard sdu.count <= Int(channel.peerMTU) else {
            statistics.refusedSends += 1
            return [.damaged("L2CAP send on CID 0x\(Hex.digits(cid)) refused: \(sdu.count) bytes exceed the peer's MTU \(channel.peerMTU)")]
        }
        return [.transmit(L2CAPFrame(channelID: channel.remoteCID, payload: sdu).bytes)]
    }

    /// Closes a channel: a Disconnection Request, and `.closed` when answered (or after RTX). A channel
    /// still waiting for its Connection Response closes at once.
    public mutating func disconnect(cid: UInt16, now: Double) -> [L2CAPAction] {
        guard let channel = channels[cid] else { return [] }
        switch channel.state {
        case .waitConnectResponse:
            channels[cid] = nil  // a late success is answered with a Disconnection Request
            return [.closed(cid: cid, reason: "closed locally before the peer answered")]
        case .waitDisconnectResponse:
            return []
        case .config, .open:
            return startDisconnect(cid, reason: "closed locally", now: now)
        }
    }

    /// Sends an Echo Request; the answer lands in ``echoResponses``.
    public mutating func echo(_ data: [UInt8] = [], now: Double) -> [L2CAPAction] {
        [request(.echoRequest(data), kind: .echo, now: now)]
    }

    /// Sends an Information Request; the answer lands in ``information``.
    public mutating func requestInformation(type: UInt16, now: Double) -> [L2CAPAction] {
        [request(.informationRequest(type: type), kind: .information(type: type), now: now)]
    }

    /// Fails requests whose RTX (or ERTX) expired.
    public mutating func tick(now: Double) -> [L2CAPAction] {
        var actions: [L2CAPAction] = []
        let expired = pending.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline || ($0.value.deadline == $1.value.deadline && $0.key < $1.key) }
        for (identifier, request) in expired {
            pending[identifier] = nil
            statistics.timeouts += 1
            switch request.kind {
            case .connect(let cid):
                if channels.removeValue(forKey: cid) != nil {
                    actions.append(.closed(cid: cid, reason: "no answer to the L2CAP connection request"))
                }
            case .configure(let cid):
                if let channel = channels.removeValue(forKey: cid) {
                    actions.append(untrackedSignal(.disconnectionRequest(destinationCID: channel.remoteCID, sourceCID: cid)))
                    actions.append(.closed(cid: cid, reason: "no answer to the L2CAP configuration request"))
                }
            case .disconnect(let cid):
                if let channel = channels.removeValue(forKey: cid), case .waitDisconnectResponse(let reason) = channel.state {
                    actions.append(.closed(cid: cid, reason: reason))
                }
            case .echo, .information:
                break
            }
        }
        return actions
    }

    /// The ACL link is gone: every channel closes, every request is forgotten.
    public mutating func linkLost() -> [L2CAPAction] {
        let closed = channels.keys.sorted().map { L2CAPAction.closed(cid: $0, reason: "the ACL link was lost") }
        channels.removeAll()
        pending.removeAll()
        return closed
    }

    // MARK: - Input

    /// One basic frame from the link (a reassembled ACL PDU).
    public mutating func received(_ frame: [UInt8], now: Double) -> [L2CAPAction] {
        let decoded: L2CAPFrame
        do {
            decoded = try L2CAPFrame(decoding: frame)
        } catch {
            statistics.malformedFrames += 1
            return [.damaged(error.reason)]
        }
        if decoded.channelID == L2CAP.signallingCID {
            return signalling(decoded.payload, now: now)
        }
        if let channel = channels[decoded.channelID], channel.state == .open {
            return [.received(cid: channel.localCID, decoded.payload)]
        }
        statistics.unknownCIDFrames += 1
        return [.damaged("L2CAP frame for CID 0x\(Hex.digits(decoded.channelID)) with no open channel dropped (\(decoded.payload.count) bytes)")]
    }

    private mutating func signalling(_ payload: [UInt8], now: Double) -> [L2CAPAction] {
        if payload.count > Int(signallingMTU) {
            statistics.malformedCommands += 1
            var actions: [L2CAPAction] = [.damaged("L2CAP signalling frame of \(payload.count) bytes exceeds our MTUsig \(signallingMTU)")]
            if payload.count >= 2, payload[1] != 0 {
                var mtu: [UInt8] = []
                mtu.appendLE(signallingMTU)
                actions.append(reject(identifier: payload[1], reason: 0x0001, data: mtu))
            }
            return actions
        }
        let (commands, damage) = L2CAPSignalCommand.split(payload)
        var actions: [L2CAPAction] = []
        for command in commands {
            actions += handle(command, now: now)
        }
        if let damage {
            statistics.malformedCommands += 1
            actions.append(.damaged(damage.reason))
        }
        return actions
    }

    private mutating func handle(_ command: L2CAPSignalCommand, now: Double) -> [L2CAPAction] {
        guard command.identifier != 0 else {
            statistics.malformedCommands += 1
            return [.damaged("L2CAP signalling command 0x\(Hex.digits(command.code)) with identifier 0 ignored")]
        }
        let signal: L2CAPSignal
        do {
            signal = try command.decoded()
        } catch {
            statistics.malformedCommands += 1
            var actions: [L2CAPAction] = [.damaged(error.reason)]
            if [0x02, 0x04, 0x06, 0x08, 0x0A].contains(command.code) {  // a request we could not read
                actions.append(reject(identifier: command.identifier, reason: 0x0000, data: []))
            }
            return actions
        }
        let id = command.identifier
        switch signal {
        case .commandReject(let reason, _):
            return commandRejected(identifier: id, reason: reason, now: now)
        case .connectionRequest(let psm, let sourceCID):
            return connectionRequested(identifier: id, psm: psm, remoteCID: sourceCID, now: now)
        case .connectionResponse(let destinationCID, _, let result, _):
            return connectionAnswered(identifier: id, remoteCID: destinationCID, result: result, now: now)
        case .configurationRequest(let destinationCID, let continuation, let options):
            return configurationRequested(identifier: id, cid: destinationCID, continuation: continuation, options: options, now: now)
        case .configurationResponse(_, let continuation, let result, let options):
            return configurationAnswered(identifier: id, continuation: continuation, result: result, options: options, now: now)
        case .disconnectionRequest(let destinationCID, let sourceCID):
            return disconnectionRequested(identifier: id, cid: destinationCID, remoteCID: sourceCID)
        case .disconnectionResponse:
            return disconnectionAnswered(identifier: id)
        case .echoRequest(let data):
            return [Self.signalAction(.echoResponse(data), identifier: id)]
        case .echoResponse(let data):
            guard pending[id]?.kind == .echo else { return [] }
            pending[id] = nil
            echoResponses.append(data)
            return []
        case .informationRequest(let type):
            return [Self.signalAction(Self.informationAnswer(type), identifier: id)]
        case .informationResponse(let type, let result, let data):
            guard case .information(let asked)? = pending[id]?.kind, asked == type else { return [] }
            pending[id] = nil
            information[type] = L2CAPInformation(result: result, data: data)
            return []
        case .unknown(let code, _):
            if signal.isRequest {
                return [.damaged("L2CAP signalling code 0x\(Hex.digits(code)) not understood"),
                        reject(identifier: id, reason: 0x0000, data: [])]
            }
            statistics.malformedCommands += 1
            return [.damaged("L2CAP signalling response code 0x\(Hex.digits(code)) not understood, ignored")]
        }
    }

    /// Our answer to an Information Request (§4.10-4.11).
    static func informationAnswer(_ type: UInt16) -> L2CAPSignal {
        switch type {
        case 0x0002:
            var mask: [UInt8] = []
            mask.appendLE(UInt32(0x0000_0080))  // fixed channels supported over BR/EDR
            return .informationResponse(type: type, result: 0, data: mask)
        case 0x0003:
            return .informationResponse(type: type, result: 0, data: [0x02, 0, 0, 0, 0, 0, 0, 0])  // signalling only
        default:
            return .informationResponse(type: type, result: 1, data: [])
        }
    }

    // MARK: - Connection

    private mutating func connectionRequested(identifier: UInt8, psm: UInt16, remoteCID: UInt16, now: Double) -> [L2CAPAction] {
        func refuse(_ result: UInt16) -> [L2CAPAction] {
            [Self.signalAction(.connectionResponse(destinationCID: 0, sourceCID: remoteCID, result: result, status: 0), identifier: identifier)]
        }
        guard servers.contains(psm) else { return refuse(0x0002) }
        guard remoteCID >= L2CAP.firstDynamicCID else { return refuse(0x0006) }
        guard !channels.values.contains(where: { $0.remoteCID == remoteCID && $0.state != .waitConnectResponse }) else { return refuse(0x0007) }
        guard let cid = allocateCID() else { return refuse(0x0004) }
        channels[cid] = Channel(localCID: cid, remoteCID: remoteCID, psm: psm, incoming: true, state: .config, requestedMTU: localMTU)
        return [Self.signalAction(.connectionResponse(destinationCID: cid, sourceCID: remoteCID, result: 0, status: 0), identifier: identifier),
                sendConfigurationRequest(cid, now: now)]
    }

    private mutating func connectionAnswered(identifier: UInt8, remoteCID: UInt16, result: UInt16, now: Double) -> [L2CAPAction] {
        guard case .connect(let cid)? = pending[identifier]?.kind else { return [] }
        if result == 0x0001 {  // pending: wait longer
            pending[identifier]?.deadline = now + L2CAP.ertx
            return []
        }
        pending[identifier] = nil
        guard var channel = channels[cid], channel.state == .waitConnectResponse else {
            // The attempt was abandoned locally; close what the peer opened.
            if result == 0 { return [untrackedSignal(.disconnectionRequest(destinationCID: remoteCID, sourceCID: cid))] }
            return []
        }
        guard result == 0 else {
            channels[cid] = nil
            return [.closed(cid: cid, reason: "L2CAP connection refused: \(Self.connectionResultText(result))")]
        }
        channel.remoteCID = remoteCID
        channel.state = .config
        channels[cid] = channel
        return [sendConfigurationRequest(cid, now: now)]
    }

    static func connectionResultText(_ result: UInt16) -> String {
        switch result {
        case 0x0002: return "PSM not supported"
        case 0x0003: return "security block"
        case 0x0004: return "no resources available"
        case 0x0006: return "invalid source CID"
        case 0x0007: return "source CID already allocated"
        default: return "result 0x\(String(result, radix: 16))"
        }
    }

    // MARK: - Configuration

    private mutating func sendConfigurationRequest(_ cid: UInt16, now: Double, options: [L2CAPConfigurationOption]? = nil) -> L2CAPAction {
        let channel = channels[cid]!
        channels[cid]?.configurationAttempts += 1
        let sent = options ?? [.mtu(channel.requestedMTU)]
        return request(.configurationRequest(destinationCID: channel.remoteCID, continuation: false, options: sent),
                       kind: .configure(cid: cid), now: now)
    }

    private mutating func configurationRequested(identifier: UInt8, cid: UInt16, continuation: Bool,
                                                 options: [L2CAPConfigurationOption], now: Double) -> [L2CAPAction] {
        guard var channel = channels[cid], channel.state == .config || channel.state == .open else {
            return [reject(identifier: identifier, reason: 0x0002, data: cidPair(cid, 0))]
        }
        let respond = { (result: UInt16, continued: Bool, options: [L2CAPConfigurationOption]) -> L2CAPAction in
            Self.signalAction(.configurationResponse(sourceCID: channel.remoteCID, continuation: continued, result: result, options: options),
                              identifier: identifier)
        }
        channel.continuedOptions += options
        if continuation {
            channels[cid] = channel
            return [respond(0, true, [])]
        }
        let all = channel.continuedOptions
        channel.continuedOptions = []
        let unknown = all.filter { !$0.isHint && !Self.knownOptionKinds.contains($0.kind) }
        if !unknown.isEmpty {
            channels[cid] = channel
            return [respond(0x0003, false, unknown)]
        }
        var counter: [L2CAPConfigurationOption] = []
        var mtu: UInt16?
        for option in all where !option.isHint || Self.knownOptionKinds.contains(option.kind) {
            switch option.kind {
            case L2CAPConfigurationOption.mtuType:
                guard let value = option.mtu else { counter.append(.mtu(L2CAP.minimumMTU)); continue }
                if value < L2CAP.minimumMTU { counter.append(.mtu(L2CAP.minimumMTU)) } else { mtu = value }
            case L2CAPConfigurationOption.retransmissionType:
                if option.value.first != 0 {
                    counter.append(L2CAPConfigurationOption(type: L2CAPConfigurationOption.retransmissionType, value: [0, 0, 0, 0, 0, 0, 0, 0, 0]))
                }
            default:
                break  // flush timeout, QoS, FCS: nothing to do in basic mode over a reliable link
            }
        }
        if !counter.isEmpty {
            channels[cid] = channel
            return [respond(0x0001, false, counter)]
        }
        if let mtu { channel.peerMTU = mtu }
        channel.theirConfigurationAccepted = true
        var actions = [respond(0, false, [])]
        let wasOpen = channel.state == .open
        channels[cid] = channel
        if !wasOpen { actions += openIfConfigured(cid) }
        return actions
    }

    /// Option kinds we understand (§5.1-5.5); the others in a request are "unknown options".
    static let knownOptionKinds: Set<UInt8> = [0x01, 0x02, 0x03, 0x04, 0x05]

    private mutating func configurationAnswered(identifier: UInt8, continuation: Bool, result: UInt16,
                                                options: [L2CAPConfigurationOption], now: Double) -> [L2CAPAction] {
        guard case .configure(let cid)? = pending[identifier]?.kind else { return [] }
        if result == 0x0004 {  // pending (extended flow spec lockstep): wait longer
            pending[identifier]?.deadline = now + L2CAP.ertx
            return []
        }
        pending[identifier] = nil
        guard var channel = channels[cid], channel.state == .config || channel.state == .open else { return [] }
        switch result {
        case 0x0000:
            if continuation {
                // The peer has more of its response: ask for it with an empty request.
                return [sendConfigurationRequest(cid, now: now, options: [])]
            }
            channel.ourConfigurationAccepted = true
            channels[cid] = channel
            return channel.state == .open ? [] : openIfConfigured(cid)
        case 0x0001 where channel.configurationAttempts < 3:
            // Unacceptable: take the peer's MTU if it names one we can live with, and ask again.
            if let offered = options.compactMap(\.mtu).first, offered >= L2CAP.minimumMTU {
                channel.requestedMTU = offered
                channels[cid] = channel
                return [sendConfigurationRequest(cid, now: now)]
            }
            return startDisconnect(cid, reason: "L2CAP configuration refused: parameters unacceptable", now: now)
        default:
            let text: String
            switch result {
            case 0x0001: text = "parameters unacceptable"
            case 0x0002: text = "rejected"
            case 0x0003: text = "unknown options \(options.map { "0x" + Hex.digits($0.type) }.joined(separator: ", "))"
            default: text = "result 0x\(Hex.digits(result))"
            }
            return startDisconnect(cid, reason: "L2CAP configuration refused: \(text)", now: now)
        }
    }

    private mutating func openIfConfigured(_ cid: UInt16) -> [L2CAPAction] {
        guard var channel = channels[cid], channel.state == .config,
              channel.ourConfigurationAccepted, channel.theirConfigurationAccepted else { return [] }
        channel.state = .open
        channels[cid] = channel
        return [.opened(cid: cid, psm: channel.psm, peerMTU: channel.peerMTU, incoming: channel.incoming)]
    }

    // MARK: - Disconnection

    private mutating func startDisconnect(_ cid: UInt16, reason: String, now: Double) -> [L2CAPAction] {
        guard var channel = channels[cid] else { return [] }
        // Forget any configuration request still outstanding for this channel.
        for (identifier, request) in pending where request.kind == .configure(cid: cid) { pending[identifier] = nil }
        channel.state = .waitDisconnectResponse(reason: reason)
        channels[cid] = channel
        return [request(.disconnectionRequest(destinationCID: channel.remoteCID, sourceCID: cid), kind: .disconnect(cid: cid), now: now)]
    }

    private mutating func disconnectionRequested(identifier: UInt8, cid: UInt16, remoteCID: UInt16) -> [L2CAPAction] {
        guard let channel = channels[cid], channel.remoteCID == remoteCID, channel.state != .waitConnectResponse else {
            return [reject(identifier: identifier, reason: 0x0002, data: cidPair(cid, remoteCID))]
        }
        channels[cid] = nil
        for (id, request) in pending {
            switch request.kind {
            case .configure(let c) where c == cid, .disconnect(let c) where c == cid: pending[id] = nil
            default: break
            }
        }
        return [Self.signalAction(.disconnectionResponse(destinationCID: cid, sourceCID: remoteCID), identifier: identifier),
                .closed(cid: cid, reason: "the peer closed the L2CAP channel")]
    }

    private mutating func disconnectionAnswered(identifier: UInt8) -> [L2CAPAction] {
        guard case .disconnect(let cid)? = pending[identifier]?.kind else { return [] }
        pending[identifier] = nil
        guard let channel = channels.removeValue(forKey: cid), case .waitDisconnectResponse(let reason) = channel.state else { return [] }
        return [.closed(cid: cid, reason: reason)]
    }

    private mutating func commandRejected(identifier: UInt8, reason: UInt16, now: Double) -> [L2CAPAction] {
        statistics.commandRejectsReceived += 1
        guard let request = pending.removeValue(forKey: identifier) else { return [] }
        let text = "L2CAP request rejected by the peer (reason 0x\(Hex.digits(reason)))"
        switch request.kind {
        case .connect(let cid):
            return channels.removeValue(forKey: cid) == nil ? [] : [.closed(cid: cid, reason: text)]
        case .configure(let cid):
            return startDisconnect(cid, reason: text, now: now)
        case .disconnect(let cid):
            return channels.removeValue(forKey: cid) == nil ? [] : [.closed(cid: cid, reason: text)]
        case .echo:
            return []
        case .information(let type):
            information[type] = L2CAPInformation(result: 1, data: [])
            return []
        }
    }

    // MARK: - Helpers

    private mutating func request(_ signal: L2CAPSignal, kind: RequestKind, now: Double) -> L2CAPAction {
        let identifier = takeIdentifier()
        pending[identifier] = PendingRequest(kind: kind, deadline: now + L2CAP.rtx)
        return Self.signalAction(signal, identifier: identifier)
    }

    /// A request whose answer we do not wait for (its response is ignored as unknown).
    private mutating func untrackedSignal(_ signal: L2CAPSignal) -> L2CAPAction {
        Self.signalAction(signal, identifier: takeIdentifier())
    }

    private static func signalAction(_ signal: L2CAPSignal, identifier: UInt8) -> L2CAPAction {
        .transmit(L2CAPFrame(channelID: L2CAP.signallingCID, payload: L2CAPSignalCommand(signal, identifier: identifier).bytes).bytes)
    }

    private mutating func reject(identifier: UInt8, reason: UInt16, data: [UInt8]) -> L2CAPAction {
        statistics.commandRejectsSent += 1
        return Self.signalAction(.commandReject(reason: reason, data: data), identifier: identifier)
    }

    private func cidPair(_ local: UInt16, _ remote: UInt16) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLE(local)
        out.appendLE(remote)
        return out
    }

    private mutating func takeIdentifier() -> UInt8 {
        // Skip 0 and identifiers still waiting for an answer.
        for _ in 0..<255 {
            let id = nextIdentifier
            nextIdentifier = nextIdentifier == 255 ? 1 : nextIdentifier + 1
            if pending[id] == nil { return id }
        }
        let id = nextIdentifier
        nextIdentifier = nextIdentifier == 255 ? 1 : nextIdentifier + 1
        return id
    }

    private mutating func allocateCID() -> UInt16? {
        let span = Int(UInt16.max - L2CAP.firstDynamicCID) + 1
        for _ in 0..<span {
            let cid = nextCID
            nextCID = nextCID == UInt16.max ? L2CAP.firstDynamicCID : nextCID + 1
            if channels[cid] == nil { return cid }
        }
        return nil
    }
}
