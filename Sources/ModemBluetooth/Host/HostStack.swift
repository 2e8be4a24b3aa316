/// One RFCOMM data channel of the host: the ACL link it runs on and its DLCI.
public struct SerialChannelID: Sendable, Hashable, CustomStringConvertible {
    /// The ACL connection handle.
    public var handle: UInt16
    /// The RFCOMM DLCI (server channel × 2, plus the direction bit).
    public var dlci: UInt8
    /// Creates an identifier.
    public init(handle: UInt16, dlci: UInt8) {
        self.handle = handle
        self.dlci = dlci
    }
    /// The RFCOMM server channel (1-30).
    public var serverChannel: UInt8 { dlci >> 1 }
    public var description: String { "RFCOMM channel \(serverChannel) on link 0x\(String(handle, radix: 16))" }
}

/// How the host runs: as the phone (central: inquiry and outgoing connections) or as a device
/// (discoverable, connectable, publishing a Serial Port service).
public struct HostConfiguration: Sendable, Hashable {
    /// The controller set-up: role, name, ACL overrides.
    public var gap: GAPConfiguration
    /// The RFCOMM server channel this host publishes and accepts (device role), nil for none.
    public var serverChannel: UInt8?
    /// The service name in the SDP record.
    public var serviceName: String
    /// Our L2CAP MTU.
    public var l2capMTU: UInt16
    /// RFCOMM parameters (frame size, credits, timers).
    public var rfcomm: RFCOMMConfiguration
    /// How long an outgoing connection (page, SDP, L2CAP, RFCOMM) may take in all, in seconds.
    public var openTimeout: Double

    /// Creates a configuration.
    public init(gap: GAPConfiguration, serverChannel: UInt8? = nil, serviceName: String = "SwiftModem Serial Port",
                l2capMTU: UInt16 = 1691, rfcomm: RFCOMMConfiguration = RFCOMMConfiguration(), openTimeout: Double = 20) {
        self.gap = gap
        self.serverChannel = serverChannel
        self.serviceName = serviceName
        self.l2capMTU = l2capMTU
        self.rfcomm = rfcomm
        self.openTimeout = openTimeout
    }
}

/// What the host reports to its driver.
public enum HostAction: Sendable, Hashable {
    /// Send this packet to the controller.
    case send(HCIPacket)
    /// The controller is set up; our address.
    case ready(address: BDAddress)
    /// The controller cannot be used (fatal).
    case failed(String)
    /// A device answered an inquiry (again when its name arrives).
    case found(address: BDAddress, name: String?)
    /// The inquiry ended (`failure` names why it failed, nil when it completed).
    case inquiryComplete(failure: String?)
    /// A serial channel is open (ours, or a peer's connection to our server channel).
    case opened(SerialChannelID, address: BDAddress, incoming: Bool)
    /// An open failed before the channel was up; `request` is what ``HostStack/openSerialPort(to:channel:now:)`` returned.
    case openFailed(request: Int, reason: String)
    /// Bytes arrived on a channel.
    case received(SerialChannelID, [UInt8])
    /// `bytes` written to the channel left our queues for the controller.
    case sent(SerialChannelID, bytes: Int)
    /// The channel closed; `reason` names why in words ("the device disconnected: HCI reason 0x13 (...)";
    /// a host in the device role says "the phone").
    case closed(SerialChannelID, reason: String, byPeer: Bool)
    /// A damaged packet or frame was dropped (counted).
    case damaged(String)
}

/// The host stack as one value: the controller (``GAPMachine``), and per ACL link its L2CAP
/// channels, the SDP client or server, and the RFCOMM session, routing each layer's actions to the
/// next. Inputs are packets from the controller, time, and API calls; outputs are ``HostAction``s.
/// No threads, clocks or I/O: ``HostDriver`` runs it; tests drive two of them against each other.
public struct HostStack: Sendable {
    /// The configuration.
    public let configuration: HostConfiguration
    private var gap: GAPMachine
    private var links: [UInt16: Link] = [:]
    /// Outgoing serial-port opens not yet on a link: request id → its progress.
    private var requests: [Int: Request] = [:]
    private var nextRequest = 1
    private var sdpRecords: [ServiceRecord] = []
    /// Our address once the controller is ready.
    public private(set) var localAddress: BDAddress?
    /// Packets and frames dropped as damaged, all layers together (each also reported as
    /// ``HostAction/damaged(_:)``): HCI reassembly, L2CAP, and RFCOMM frames with a bad FCS or malformed.
    public private(set) var damaged = 0

    private struct Link: Sendable {
        var address: BDAddress
        var incoming: Bool
        var l2cap: L2CAPLink
        /// SDP client channel → the request it serves and the client.
        var sdpClients: [UInt16: (request: Int, client: SDPClient)] = [:]
        /// L2CAP channels carrying SDP for a peer's client (we answer).
        var sdpServerChannels: [UInt16: UInt16] = [:]
        /// The RFCOMM session's L2CAP channel and the session.
        var rfcommCID: UInt16?
        var rfcommPending = false
        var rfcomm: RFCOMMSession?
        /// DLCIs open on the session.
        var open: Set<UInt8> = []
        /// DLCIs this host is closing (their close is not the peer's doing).
        var closingLocally: Set<UInt8> = []
        /// Why the link is going down (set before the controller confirms).
        var closing: String?
    }

    private struct Request: Sendable {
        enum Step: Sendable { case paging, sdp, l2cap, rfcomm }
        var address: BDAddress
        var channel: UInt8?
        var step: Step
        var deadline: Double
        var handle: UInt16?
    }

    /// Creates a host (the controller is set up by ``start(now:)``).
    public init(configuration: HostConfiguration) {
        self.configuration = configuration
        gap = GAPMachine(configuration: configuration.gap)
        if let channel = configuration.serverChannel {
            sdpRecords = [ServiceRecord.serialPort(channel: channel, name: configuration.serviceName)]
        }
    }

    // MARK: Inputs

    /// Resets and sets up the controller.
    public mutating func start(now: Double) -> [HostAction] {
        route(gap.start(now: now), now: now)
    }

    /// A packet from the controller.
    public mutating func received(_ packet: HCIPacket, now: Double) -> [HostAction] {
        route(gap.received(packet, now: now), now: now)
    }

    /// Time passes: every layer's timers.
    public mutating func tick(now: Double) -> [HostAction] {
        var out = route(gap.tick(now: now), now: now)
        for handle in links.keys.sorted() {
            guard var link = links[handle] else { continue }
            let l2 = link.l2cap.tick(now: now)
            var rf: [RFCOMMAction] = []
            if link.rfcomm != nil { rf = link.rfcomm!.tick(now: now) }
            links[handle] = link
            out += handleL2CAP(l2, handle: handle, now: now)
            out += handleRFCOMM(rf, handle: handle, now: now)
        }
        for (id, request) in requests.sorted(by: { $0.key < $1.key }) where now >= request.deadline {
            out += fail(request: id, "no answer from \(request.address) within \(Int(configuration.openTimeout)) s", now: now)
        }
        return out
    }

    /// Starts an inquiry of `seconds` (results come as ``HostAction/found(address:name:)``).
    public mutating func inquire(seconds: Double, now: Double) -> [HostAction] {
        route(gap.inquire(seconds: seconds, now: now), now: now)
    }

    /// Opens a serial port (RFCOMM) to `address`: connects the ACL link if needed, finds the
    /// channel by SDP when `channel` is nil, opens RFCOMM. Returns the request's number, named again
    /// by ``HostAction/openFailed(request:reason:)``; success is ``HostAction/opened(_:address:incoming:)``.
    public mutating func openSerialPort(to address: BDAddress, channel: UInt8?, now: Double) -> (request: Int, actions: [HostAction]) {
        let id = nextRequest
        nextRequest += 1
        requests[id] = Request(address: address, channel: channel, step: .paging, deadline: now + configuration.openTimeout)
        if let (handle, _) = links.first(where: { $0.value.address == address && $0.value.closing == nil }) {
            requests[id]?.handle = handle
            return (id, linkUp(request: id, handle: handle, now: now))
        }
        return (id, route(gap.connect(address, now: now), now: now))
    }

    /// Queues bytes on an open channel; they leave as RFCOMM credits and controller buffers allow.
    public mutating func write(_ channel: SerialChannelID, _ bytes: [UInt8], now: Double) -> [HostAction] {
        guard var link = links[channel.handle], link.open.contains(channel.dlci), link.rfcomm != nil else { return [] }
        let rf = link.rfcomm!.send(dlci: channel.dlci, bytes)
        links[channel.handle] = link
        return handleRFCOMM(rf, handle: channel.handle, now: now)
    }

    /// Bytes written to `channel` that have not yet left for the controller.
    public func queuedBytes(_ channel: SerialChannelID) -> Int {
        guard let link = links[channel.handle] else { return 0 }
        return (link.rfcomm?.queuedBytes(dlci: channel.dlci) ?? 0) + gap.queuedACLBytes(handle: channel.handle)
    }

    /// Closes a channel (RFCOMM DISC; the session and the link follow when nothing else uses them).
    public mutating func close(_ channel: SerialChannelID, now: Double) -> [HostAction] {
        guard var link = links[channel.handle], link.rfcomm != nil else { return [] }
        link.closingLocally.insert(channel.dlci)
        let rf = link.rfcomm!.close(dlci: channel.dlci, now: now)
        links[channel.handle] = link
        return handleRFCOMM(rf, handle: channel.handle, now: now)
    }

    /// Drops the ACL link under a channel at once (HCI Disconnect, reason 0x13).
    public mutating func disconnect(handle: UInt16, now: Double) -> [HostAction] {
        guard links[handle] != nil else { return [] }
        links[handle]?.closing = "disconnected by this host"
        return route(gap.disconnect(handle: handle, reason: 0x13, now: now), now: now)
    }

    /// The counters of the RFCOMM session on link `handle` (frames and bytes, bad FCS, malformed
    /// frames, credit violations, ...); nil when the link has no session.
    public func rfcommStatistics(handle: UInt16) -> RFCOMMStatistics? {
        links[handle]?.rfcomm?.statistics
    }

    /// The open channels.
    public var openChannels: [SerialChannelID] {
        links.flatMap { handle, link in link.open.map { SerialChannelID(handle: handle, dlci: $0) } }
    }

    // MARK: Routing

    private mutating func route(_ actions: [GAPAction], now: Double) -> [HostAction] {
        var out: [HostAction] = []
        for action in actions {
            switch action {
            case .send(let packet): out.append(.send(packet))
            case .ready(let address):
                localAddress = address
                out.append(.ready(address: address))
            case .failed(let reason):
                out.append(.failed(reason))
            case .found(let address, let name): out.append(.found(address: address, name: name))
            case .inquiryComplete(let failure): out.append(.inquiryComplete(failure: failure))
            case .connected(let handle, let address, let incoming):
                var l2 = L2CAPLink(localMTU: configuration.l2capMTU)
                if configuration.serverChannel != nil {
                    l2.listen(psm: PSM.sdp)
                    l2.listen(psm: PSM.rfcomm)
                }
                links[handle] = Link(address: address, incoming: incoming, l2cap: l2)
                for (id, request) in requests.sorted(by: { $0.key < $1.key }) where request.address == address && request.handle == nil {
                    requests[id]?.handle = handle
                    out += linkUp(request: id, handle: handle, now: now)
                }
            case .connectFailed(let address, let reason):
                for (id, request) in requests.sorted(by: { $0.key < $1.key }) where request.address == address && request.handle == nil {
                    requests[id] = nil
                    out.append(.openFailed(request: id, reason: reason))
                }
            case .disconnected(let handle, let reason, let description):
                out += linkDown(handle: handle, reason: reason, description: description, now: now)
            case .l2cap(let handle, let pdu):
                guard var link = links[handle] else { damaged += 1; continue }
                let l2 = link.l2cap.received(pdu, now: now)
                links[handle] = link
                out += handleL2CAP(l2, handle: handle, now: now)
            case .aclTransmitted:
                break
            case .damaged(let what):
                damaged += 1
                out.append(.damaged(what))
            }
        }
        return out
    }

    /// The link for a request is up: SDP first when no channel was given, else RFCOMM.
    private mutating func linkUp(request id: Int, handle: UInt16, now: Double) -> [HostAction] {
        guard var request = requests[id], var link = links[handle] else { return [] }
        if request.channel == nil {
            request.step = .sdp
            let (cid, l2) = link.l2cap.connect(psm: PSM.sdp, now: now)
            link.sdpClients[cid] = (id, SDPClient())
            requests[id] = request
            links[handle] = link
            return handleL2CAP(l2, handle: handle, now: now)
        }
        requests[id] = request
        return openRFCOMM(request: id, handle: handle, now: now)
    }

    /// Opens the RFCOMM session (L2CAP PSM 3) if needed, then the request's channel on it.
    private mutating func openRFCOMM(request id: Int, handle: UInt16, now: Double) -> [HostAction] {
        guard var request = requests[id], var link = links[handle], let channel = request.channel else { return [] }
        if link.rfcomm != nil {
            request.step = .rfcomm
            requests[id] = request
            let rf = link.rfcomm!.open(channel: channel, now: now)
            links[handle] = link
            return handleRFCOMM(rf, handle: handle, now: now)
        }
        request.step = .l2cap
        requests[id] = request
        if link.rfcommPending { return [] }      // the session's channel is on its way; opened below
        link.rfcommPending = true
        let (cid, l2) = link.l2cap.connect(psm: PSM.rfcomm, now: now)
        link.rfcommCID = cid
        links[handle] = link
        return handleL2CAP(l2, handle: handle, now: now)
    }

    private mutating func handleL2CAP(_ actions: [L2CAPAction], handle: UInt16, now: Double) -> [HostAction] {
        var out: [HostAction] = []
        for action in actions {
            switch action {
            case .transmit(let frame):
                out += route(gap.sendL2CAP(handle: handle, pdu: frame), now: now)
            case .opened(let cid, let psm, let peerMTU, let incoming):
                guard var link = links[handle] else { continue }
                if psm == PSM.sdp && incoming {
                    link.sdpServerChannels[cid] = peerMTU
                    links[handle] = link
                } else if psm == PSM.sdp, var entry = link.sdpClients[cid] {
                    let pdu = entry.client.start()
                    link.sdpClients[cid] = entry
                    links[handle] = link
                    out += sendL2CAP(handle: handle, cid: cid, pdu, now: now)
                } else if psm == PSM.rfcomm {
                    var session = RFCOMMSession(initiator: !incoming, peerMTU: Int(peerMTU),
                                                localMTU: Int(configuration.l2capMTU), configuration: configuration.rfcomm)
                    if let channel = configuration.serverChannel { session.listen(channel: channel) }
                    var rf = session.start(now: now)
                    link.rfcommCID = cid
                    link.rfcommPending = false
                    for (id, request) in requests.sorted(by: { $0.key < $1.key })
                    where request.handle == handle && request.step == .l2cap {
                        requests[id]?.step = .rfcomm
                        if let channel = request.channel { rf += session.open(channel: channel, now: now) }
                    }
                    link.rfcomm = session
                    links[handle] = link
                    out += handleRFCOMM(rf, handle: handle, now: now)
                }
            case .received(let cid, let sdu):
                guard var link = links[handle] else { continue }
                if cid == link.rfcommCID, link.rfcomm != nil {
                    let before = link.rfcomm!.statistics
                    let rf = link.rfcomm!.received(sdu, now: now)
                    let after = link.rfcomm!.statistics
                    links[handle] = link
                    if after.badFCS > before.badFCS {
                        damaged += 1
                        out.append(.damaged("RFCOMM frame of \(sdu.count) bytes on link 0x\(String(handle, radix: 16)) with a bad FCS dropped"))
                    } else if after.malformed > before.malformed {
                        damaged += 1
                        out.append(.damaged("malformed RFCOMM frame of \(sdu.count) bytes on link 0x\(String(handle, radix: 16)) dropped"))
                    }
                    out += handleRFCOMM(rf, handle: handle, now: now)
                } else if let mtu = link.sdpServerChannels[cid], !sdpRecords.isEmpty {
                    let server = SDPServer(records: sdpRecords, mtu: Int(mtu))
                    out += sendL2CAP(handle: handle, cid: cid, server.respond(to: sdu), now: now)
                } else if var entry = link.sdpClients[cid] {
                    let step = entry.client.received(sdu)
                    link.sdpClients[cid] = entry
                    links[handle] = link
                    out += sdpStep(step, request: entry.request, handle: handle, cid: cid, now: now)
                } else {
                    damaged += 1
                }
            case .closed(let cid, let reason):
                guard var link = links[handle] else { continue }
                link.sdpServerChannels[cid] = nil
                if let entry = link.sdpClients.removeValue(forKey: cid) {
                    links[handle] = link
                    if requests[entry.request]?.step == .sdp {
                        out += fail(request: entry.request, "SDP with \(link.address) failed: \(reason)", now: now)
                    }
                } else if cid == link.rfcommCID {
                    link.rfcommCID = nil
                    link.rfcommPending = false
                    var rf: [RFCOMMAction] = []
                    if link.rfcomm != nil { rf = link.rfcomm!.lowerLayerClosed(reason: reason) }
                    links[handle] = link
                    out += handleRFCOMM(rf, handle: handle, now: now)
                    for (id, request) in requests where request.handle == handle && (request.step == .l2cap || request.step == .rfcomm) {
                        out += fail(request: id, "RFCOMM to \(link.address) failed: \(reason)", now: now)
                    }
                    links[handle]?.rfcomm = nil
                    out += releaseIfUnused(handle: handle, now: now)
                } else {
                    links[handle] = link
                }
            case .damaged(let what):
                damaged += 1
                out.append(.damaged(what))
            }
        }
        return out
    }

    private mutating func sdpStep(_ step: SDPClientStep, request id: Int, handle: UInt16, cid: UInt16, now: Double) -> [HostAction] {
        switch step {
        case .send(let pdu):
            return sendL2CAP(handle: handle, cid: cid, pdu, now: now)
        case .found(let channel):
            var out = closeSDP(handle: handle, cid: cid, now: now)
            guard requests[id] != nil else { return out }
            requests[id]?.channel = channel
            out += openRFCOMM(request: id, handle: handle, now: now)
            return out
        case .notFound:
            let address = links[handle]?.address.description ?? "the device"
            var out = closeSDP(handle: handle, cid: cid, now: now)
            out += fail(request: id, "\(address) has no Serial Port service (SDP)", now: now)
            return out
        case .failed(let reason):
            var out = closeSDP(handle: handle, cid: cid, now: now)
            out += fail(request: id, "SDP failed: \(reason)", now: now)
            return out
        }
    }

    private mutating func closeSDP(handle: UInt16, cid: UInt16, now: Double) -> [HostAction] {
        guard var link = links[handle] else { return [] }
        link.sdpClients[cid] = nil
        let l2 = link.l2cap.disconnect(cid: cid, now: now)
        links[handle] = link
        return handleL2CAP(l2, handle: handle, now: now)
    }

    private mutating func sendL2CAP(handle: UInt16, cid: UInt16, _ sdu: [UInt8], now: Double) -> [HostAction] {
        guard var link = links[handle] else { return [] }
        let l2 = link.l2cap.send(cid: cid, sdu)
        links[handle] = link
        return handleL2CAP(l2, handle: handle, now: now)
    }

    private mutating func handleRFCOMM(_ actions: [RFCOMMAction], handle: UInt16, now: Double) -> [HostAction] {
        var out: [HostAction] = []
        for action in actions {
            switch action {
            case .transmit(let sdu):
                guard let cid = links[handle]?.rfcommCID else { continue }
                out += sendL2CAP(handle: handle, cid: cid, sdu, now: now)
            case .channelOpened(let dlci, _, let incoming):
                guard let address = links[handle]?.address else { continue }
                links[handle]?.open.insert(dlci)
                let id = SerialChannelID(handle: handle, dlci: dlci)
                if !incoming, let (rid, _) = requests.first(where: { $0.value.handle == handle && $0.value.step == .rfcomm
                                                                  && $0.value.channel == dlci >> 1 }) {
                    requests[rid] = nil
                }
                out.append(.opened(id, address: address, incoming: incoming))
            case .received(let dlci, let bytes):
                out.append(.received(SerialChannelID(handle: handle, dlci: dlci), bytes))
            case .sent(let dlci, let bytes):
                out.append(.sent(SerialChannelID(handle: handle, dlci: dlci), bytes: bytes))
            case .channelClosed(let dlci, let reason):
                let wasOpen = links[handle]?.open.remove(dlci) != nil
                if wasOpen {
                    let byPeer = links[handle]?.closing == nil && links[handle]?.closingLocally.remove(dlci) == nil
                    let words = byPeer && reason == "closed by the device" ? "\(peerName) closed RFCOMM channel \(dlci >> 1)" : inPeerTerms(reason)
                    out.append(.closed(SerialChannelID(handle: handle, dlci: dlci), reason: words, byPeer: byPeer))
                } else if let (rid, _) = requests.first(where: { $0.value.handle == handle && $0.value.channel == dlci >> 1 }) {
                    out += fail(request: rid, "RFCOMM channel \(dlci >> 1) of \(links[handle]?.address.description ?? "the device"): \(reason)", now: now)
                }
            case .sessionClosed:
                guard var link = links[handle], let cid = link.rfcommCID else { continue }
                link.rfcomm = nil
                link.rfcommCID = nil
                let l2 = link.l2cap.disconnect(cid: cid, now: now)
                links[handle] = link
                out += handleL2CAP(l2, handle: handle, now: now)
                out += releaseIfUnused(handle: handle, now: now)
            }
        }
        return out
    }

    /// An outgoing link that carries nothing any more is disconnected (the device side keeps its links:
    /// the phone decides).
    private mutating func releaseIfUnused(handle: UInt16, now: Double) -> [HostAction] {
        guard let link = links[handle], !link.incoming, link.closing == nil, link.rfcomm == nil,
              link.sdpClients.isEmpty, !requests.values.contains(where: { $0.handle == handle }) else { return [] }
        links[handle]?.closing = "closed by this host"
        return route(gap.disconnect(handle: handle, reason: 0x13, now: now), now: now)
    }

    private mutating func linkDown(handle: UInt16, reason: UInt8, description: String, now: Double) -> [HostAction] {
        guard var link = links.removeValue(forKey: handle) else { return [] }
        var out: [HostAction] = []
        let words: String
        let code = "HCI reason 0x\(reason < 16 ? "0" : "")\(String(reason, radix: 16, uppercase: true)) (\(description))"
        if let local = link.closing {
            words = local
        } else if reason == 0x08 || reason == 0x22 {
            words = "link lost: \(code)"
        } else {
            words = "\(peerName) disconnected: \(code)"
        }
        _ = link.l2cap.linkLost()
        for dlci in link.open.sorted() {
            out.append(.closed(SerialChannelID(handle: handle, dlci: dlci), reason: words, byPeer: link.closing == nil))
        }
        for (id, request) in requests where request.handle == handle {
            requests[id] = nil
            out.append(.openFailed(request: id, reason: words))
        }
        return out
    }

    /// Who is at the other end, in reasons: "the phone" when we are the device, else "the device".
    private var peerName: String {
        if case .device = configuration.gap.role { return "the phone" }
        return "the device"
    }

    /// A lower layer's reason in this host's terms (RFCOMM names its peer "the device").
    private func inPeerTerms(_ reason: String) -> String {
        peerName == "the device" ? reason : reason.replacing("the device", with: peerName)
    }

    private mutating func fail(request id: Int, _ reason: String, now: Double) -> [HostAction] {
        guard let request = requests.removeValue(forKey: id) else { return [] }
        var out: [HostAction] = [.openFailed(request: id, reason: reason)]
        if let handle = request.handle { out += releaseIfUnused(handle: handle, now: now) }
        return out
    }
}

/// The protocol/service multiplexers of L2CAP this host uses (Bluetooth Assigned Numbers).
public enum PSM {
    /// Service Discovery Protocol.
    public static let sdp: UInt16 = 0x0001
    /// RFCOMM.
    public static let rfcomm: UInt16 = 0x0003
}
