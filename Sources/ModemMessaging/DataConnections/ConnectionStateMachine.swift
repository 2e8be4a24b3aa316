/// A data connection, named from this side: `local` when we offered it.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// True when this side offered the connection.
    public let local: Bool
    /// The offerer's number for it.
    public let number: UInt32
    public init(local: Bool, number: UInt32) { self.local = local; self.number = number }
    public var description: String { "\(local ? "out" : "in")#\(number)" }

    /// The number as this side writes it on the wire (the top bit set when it is the peer's).
    var wire: UInt32 { local ? number : number | 0x8000_0000 }
    init(wire: UInt32) {
        local = wire & 0x8000_0000 != 0
        number = wire & 0x7FFF_FFFF
    }
}

/// A channel inside a connection, named from this side: `local` when we opened it (we send its data).
public struct ChannelID: Hashable, Sendable, CustomStringConvertible {
    /// True when this side opened the channel.
    public let local: Bool
    /// The opener's number for it.
    public let number: UInt16
    public init(local: Bool, number: UInt16) { self.local = local; self.number = number }
    public var description: String { "\(local ? "out" : "in")#\(number)" }
    var wire: UInt16 { local ? number : number | 0x8000 }
    init(wire: UInt16) {
        local = wire & 0x8000 != 0
        number = wire & 0x7FFF
    }
}

/// Errors of the data-connection API.
public enum DataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Metadata over the limit: (given, allowed) bytes.
    case metadataTooLarge(Int, Int)
    /// No such connection or channel here.
    case unknown(String)
    /// The operation does not fit the connection's or channel's state.
    case invalidState(String)
    /// The peer declined or failed the connection or channel.
    case refused(DataReason)
    /// The connection or session ended first.
    case ended(DataReason)
    /// A queued stream block was dropped because its channel was closed.
    case cancelled
    /// A file could not be read or written.
    case io(String)
    /// The session refused to send.
    case session(SessionSendError)

    public var description: String {
        switch self {
        case .metadataTooLarge(let n, let max): "metadata of \(n) bytes is over the limit of \(max) bytes"
        case .unknown(let what): "unknown \(what)"
        case .invalidState(let text): text
        case .refused(let reason): "refused by the peer: \(reason)"
        case .ended(let reason): "the connection ended: \(reason)"
        case .cancelled: "cancelled: the channel was closed"
        case .io(let text): text
        case .session(let e): e.description
        }
    }
}

/// What the connection machine asks its driver to do.
public enum DataAction: Sendable, Equatable {
    /// Send this record.
    case send(kind: UInt8, body: [UInt8])
    /// Tell the user.
    case event(DataEvent)
    /// A validated channel-level input for the data plane.
    case channel(ChannelInput)
}

/// Validated channel-level inputs, with identifiers resolved to this side's names.
public enum ChannelInput: Sendable, Equatable {
    case opened(ConnectionID, ChannelID, kind: ChannelKind, size: UInt64, blockSize: UInt32, fileKey: [UInt8],
                description: String, name: String)
    case have(ConnectionID, ChannelID, blocks: UInt32, aggregate: [UInt8], bitmap: [UInt8])
    case data(ConnectionID, ChannelID, block: UInt32, offset: UInt32, last: Bool, hash: [UInt8]?, bytes: ArraySlice<UInt8>)
    case done(ConnectionID, ChannelID, root: [UInt8])
    case result(ConnectionID, ChannelID, ok: Bool, reason: DataReason, badBlocks: [UInt32])
    case closed(ConnectionID, ChannelID, reason: DataReason)
    case progress(ConnectionID, ChannelID, bytes: UInt64)
    /// The connection ended: all its channels are over.
    case connectionEnded(ConnectionID, reason: DataReason)
}

/// The lifecycle of data connections in one session (the data-connection API), as a pure value: offers, answers,
/// ends, channel opening and closing, and validation of every record against that state. Several
/// connections may be open at once, started by either side.
public struct ConnectionStateMachine: Sendable {
    /// A connection's state.
    public enum State: Sendable, Equatable {
        /// We offered; waiting for the answer.
        case offering
        /// The peer offered; waiting for our accept or decline.
        case offered
        /// Both sides may open channels.
        case connected
        /// Over, with the reason.
        case ended(DataReason)
    }

    struct Channel: Sendable {
        var kind: ChannelKind
        var open = true
    }

    struct Connection: Sendable {
        var state: State
        var channels: [ChannelID: Channel] = [:]
        var nextChannel: UInt16 = 1
    }

    private var connections: [ConnectionID: Connection] = [:]
    private var nextConnection: UInt32 = 1
    /// Connections (not ended) allowed at once; offers beyond are declined.
    public var maximumConnections = 64
    /// Channels per connection the peer may open (over the connection's life; open or finished).
    /// One over it is refused (CH-RESULT `protocolError`) and not remembered.
    public var maximumChannels = 1024
    /// Ended connections remembered (their state for ``state(of:)``, and so that late records for
    /// them are ignored as such); the oldest is forgotten past this. An ended connection keeps no
    /// channels. With ``maximumConnections`` and ``maximumChannels`` this bounds what a peer's offers,
    /// ends and channel opens can make this machine hold, however many it sends.
    public var maximumEndedConnections = 256
    /// Ended connections, oldest first (from `endedHead`), for forgetting the oldest.
    private var endedOrder: [ConnectionID] = []
    private var endedHead = 0
    /// Records that did not fit the state or could not be decoded (ignored, counted).
    public private(set) var ignoredRecords = 0

    public init() {}

    /// The state of a connection, or nil if unknown (or ended long enough ago to be forgotten).
    public func state(of id: ConnectionID) -> State? { connections[id]?.state }

    /// Connections this machine holds: live ones and the ended ones it remembers (at most
    /// ``maximumConnections`` plus ``maximumEndedConnections`` plus our own live offers).
    public var heldConnections: Int { connections.count }

    /// Channels this machine holds for a connection (at most ``maximumChannels`` of the peer's plus
    /// ours; none once it ended).
    public func heldChannels(of id: ConnectionID) -> Int { connections[id]?.channels.count ?? 0 }

    /// Records that a connection ended (with or without an entry before): its channels are dropped,
    /// and the oldest ended connection is forgotten once more than ``maximumEndedConnections`` are.
    private mutating func markEnded(_ id: ConnectionID, _ reason: DataReason) {
        if connections[id] == nil { connections[id] = Connection(state: .ended(reason)) } else {
            connections[id]!.state = .ended(reason)
            connections[id]!.channels = [:]
        }
        endedOrder.append(id)
        while endedOrder.count - endedHead > max(0, maximumEndedConnections) {
            let old = endedOrder[endedHead]
            endedHead += 1
            if case .ended = connections[old]?.state { connections[old] = nil }
        }
        if endedHead > 64, endedHead * 2 > endedOrder.count {
            endedOrder.removeFirst(endedHead)
            endedHead = 0
        }
    }

    /// Connections not yet ended.
    public func liveConnections() -> [ConnectionID] {
        connections.filter { if case .ended = $0.value.state { false } else { true } }.keys
            .sorted { ($0.local ? 0 : 1, $0.number) < ($1.local ? 0 : 1, $1.number) }
    }

    private var liveCount: Int {
        connections.values.filter { if case .ended = $0.state { false } else { true } }.count
    }

    // MARK: local operations

    /// Offers a new connection with metadata (at most 4096 bytes).
    public mutating func offer(metadata: [UInt8]) throws(DataError) -> (ConnectionID, [DataAction]) {
        guard metadata.count <= DataMessage.maximumMetadata else {
            throw .metadataTooLarge(metadata.count, DataMessage.maximumMetadata)
        }
        guard nextConnection < 0x7FFF_FFFF else { throw .invalidState("no connection numbers left") }
        let id = ConnectionID(local: true, number: nextConnection)
        nextConnection += 1
        connections[id] = Connection(state: .offering)
        return (id, [send(.offer(conn: id.wire, metadata: metadata))])
    }

    /// Accepts a connection the peer offered.
    public mutating func accept(_ id: ConnectionID) throws(DataError) -> [DataAction] {
        guard let c = connections[id] else { throw .unknown("connection \(id)") }
        guard c.state == .offered else { throw .invalidState("connection \(id) is not waiting for an answer") }
        connections[id]!.state = .connected
        return [send(.answer(conn: id.wire, accept: true, reason: .none)), .event(.connected(id))]
    }

    /// Declines a connection the peer offered.
    public mutating func decline(_ id: ConnectionID, reason: DataReason = .declined) throws(DataError) -> [DataAction] {
        guard let c = connections[id] else { throw .unknown("connection \(id)") }
        guard c.state == .offered else { throw .invalidState("connection \(id) is not waiting for an answer") }
        markEnded(id, reason)
        return [send(.answer(conn: id.wire, accept: false, reason: reason)), .event(.ended(id, reason))]
    }

    /// Ends a connection (ours or the peer's) from this side.
    public mutating func end(_ id: ConnectionID, reason: DataReason = .userEnded) -> [DataAction] {
        guard let c = connections[id] else { return [] }
        if case .ended = c.state { return [] }
        markEnded(id, reason)
        return [send(.end(conn: id.wire, reason: reason)), .channel(.connectionEnded(id, reason: reason)),
                .event(.ended(id, reason))]
    }

    /// Opens a channel on a connected connection; we will send its data.
    public mutating func openChannel(_ id: ConnectionID, kind: ChannelKind, size: UInt64 = 0, blockSize: UInt32 = 0,
                                     fileKey: [UInt8] = [], description: String = "", name: String = "")
        throws(DataError) -> (ChannelID, [DataAction]) {
        guard let c = connections[id] else { throw .unknown("connection \(id)") }
        guard c.state == .connected else { throw .invalidState("connection \(id) is not connected") }
        guard description.utf8.count <= DataMessage.maximumDescription else {
            throw .invalidState("a channel description is limited to \(DataMessage.maximumDescription) bytes")
        }
        // The peer drops a channel whose name is over the limit, so the opener would wait for an answer
        // that never comes: refused here, before anything is sent.
        guard name.utf8.count <= DataMessage.maximumName else {
            throw .invalidState("a name of \(name.utf8.count) bytes is over the limit of \(DataMessage.maximumName) bytes")
        }
        guard c.nextChannel < 0x7FFF else { throw .invalidState("no channel numbers left on \(id)") }
        let ch = ChannelID(local: true, number: c.nextChannel)
        connections[id]!.nextChannel += 1
        connections[id]!.channels[ch] = Channel(kind: kind)
        return (ch, [send(.channelOpen(conn: id.wire, channel: ch.wire, kind: kind, size: size, blockSize: blockSize,
                                       fileKey: fileKey, description: description, name: name))])
    }

    /// Closes a channel from this side (the opener's close or the receiver's refusal).
    public mutating func closeChannel(_ id: ConnectionID, _ ch: ChannelID, reason: DataReason = .none) -> [DataAction] {
        guard connections[id]?.channels[ch]?.open == true else { return [] }
        connections[id]!.channels[ch]!.open = false
        guard connections[id]!.state == .connected else { return [] }
        return [send(.channelClose(conn: id.wire, channel: ch.wire, reason: reason))]
    }

    /// Marks a channel finished without sending anything (a file or blob whose result was exchanged).
    public mutating func finishChannel(_ id: ConnectionID, _ ch: ChannelID) {
        if connections[id]?.channels[ch] != nil { connections[id]!.channels[ch]!.open = false }
    }

    /// True when the channel exists and is open on a connected connection.
    public func isOpen(_ id: ConnectionID, _ ch: ChannelID) -> Bool {
        connections[id]?.state == .connected && connections[id]?.channels[ch]?.open == true
    }

    /// The session ended: every connection not yet ended ends with `.sessionEnded`.
    public mutating func sessionEnded() -> [DataAction] {
        var actions: [DataAction] = []
        for (id, c) in connections.sorted(by: { $0.key.number < $1.key.number }) {
            if case .ended = c.state { continue }
            markEnded(id, .sessionEnded)
            actions.append(.channel(.connectionEnded(id, reason: .sessionEnded)))
            actions.append(.event(.ended(id, .sessionEnded)))
        }
        return actions
    }

    // MARK: records from the peer

    /// Takes one record from the peer and returns what to do.
    public mutating func input(kind: UInt8, body: [UInt8]) -> [DataAction] {
        guard let message = DataMessage.decode(kind: kind, body: body) else { ignoredRecords += 1; return [] }
        switch message {
        case .offer(let wire, let metadata):
            let id = ConnectionID(wire: wire)
            guard !id.local, connections[id] == nil else { ignoredRecords += 1; return [] }
            if metadata.count > DataMessage.maximumMetadata {
                markEnded(id, .metadataTooLarge)
                return [send(.answer(conn: id.wire, accept: false, reason: .metadataTooLarge)),
                        .event(.refused(id, .metadataTooLarge))]
            }
            if liveCount >= maximumConnections {
                markEnded(id, .tooLarge)
                return [send(.answer(conn: id.wire, accept: false, reason: .tooLarge)), .event(.refused(id, .tooLarge))]
            }
            connections[id] = Connection(state: .offered)
            return [.event(.offered(id, metadata: metadata))]
        case .answer(let wire, let accept, let reason):
            let id = ConnectionID(wire: wire)
            guard id.local, connections[id]?.state == .offering else { ignoredRecords += 1; return [] }
            if accept {
                connections[id]!.state = .connected
                return [.event(.accepted(id)), .event(.connected(id))]
            }
            let r = reason == .none ? DataReason.declined : reason
            markEnded(id, r)
            return [.event(.declined(id, r)), .event(.ended(id, r))]
        case .end(let wire, let reason):
            let id = ConnectionID(wire: wire)
            guard let c = connections[id] else { ignoredRecords += 1; return [] }
            if case .ended = c.state { return [] }
            let r = reason == .none ? DataReason.peerEnded : reason
            markEnded(id, r)
            return [.channel(.connectionEnded(id, reason: r)), .event(.ended(id, r))]
        case .channelOpen(let wire, let chWire, let kind, let size, let blockSize, let fileKey, let description, let name):
            let id = ConnectionID(wire: wire)
            let ch = ChannelID(wire: chWire)
            guard !ch.local, let c = connections[id], c.state == .connected, c.channels[ch] == nil else {
                ignoredRecords += 1; return []
            }
            let theirs = c.channels.keys.filter { !$0.local }.count
            if theirs >= maximumChannels || (kind != .stream && (blockSize == 0 || blockSize > 16 << 20)) {
                // Refused and not remembered: later records on it are unknown (ignored, counted).
                return [send(.channelResult(conn: id.wire, channel: ch.wire, ok: false, reason: .protocolError, badBlocks: []))]
            }
            connections[id]!.channels[ch] = Channel(kind: kind)
            return [.channel(.opened(id, ch, kind: kind, size: size, blockSize: blockSize, fileKey: fileKey,
                                     description: description, name: name))]
        case .channelHave(let wire, let chWire, let blocks, let aggregate, let bitmap):
            guard let (id, ch) = ours(wire, chWire) else { return [] }
            return [.channel(.have(id, ch, blocks: blocks, aggregate: aggregate, bitmap: bitmap))]
        case .channelResult(let wire, let chWire, let ok, let reason, let bad):
            guard let (id, ch) = ours(wire, chWire) else { return [] }
            connections[id]!.channels[ch]!.open = false
            return [.channel(.result(id, ch, ok: ok, reason: reason, badBlocks: bad))]
        case .progress(let wire, let chWire, let bytes):
            guard let (id, ch) = ours(wire, chWire) else { return [] }
            return [.channel(.progress(id, ch, bytes: bytes))]
        case .data(let wire, let chWire, let block, let offset, let last, let hash, let bytes):
            guard let (id, ch) = theirs(wire, chWire) else { return [] }
            return [.channel(.data(id, ch, block: block, offset: offset, last: last, hash: hash, bytes: bytes))]
        case .channelDone(let wire, let chWire, let root):
            guard let (id, ch) = theirs(wire, chWire) else { return [] }
            return [.channel(.done(id, ch, root: root))]
        case .channelClose(let wire, let chWire, let reason):
            let id = ConnectionID(wire: wire)
            let ch = ChannelID(wire: chWire)
            guard connections[id]?.channels[ch]?.open == true else { ignoredRecords += 1; return [] }
            connections[id]!.channels[ch]!.open = false
            return [.channel(.closed(id, ch, reason: reason))]
        }
    }

    /// A channel we opened, on a connected connection (records the receiver sends back).
    private mutating func ours(_ wire: UInt32, _ chWire: UInt16) -> (ConnectionID, ChannelID)? {
        let id = ConnectionID(wire: wire)
        let ch = ChannelID(wire: chWire)
        guard ch.local, connections[id]?.state == .connected, connections[id]?.channels[ch]?.open == true else {
            ignoredRecords += 1; return nil
        }
        return (id, ch)
    }

    /// A channel the peer opened and still has open (its data).
    private mutating func theirs(_ wire: UInt32, _ chWire: UInt16) -> (ConnectionID, ChannelID)? {
        let id = ConnectionID(wire: wire)
        let ch = ChannelID(wire: chWire)
        guard !ch.local, connections[id]?.state == .connected, connections[id]?.channels[ch]?.open == true else {
            ignoredRecords += 1; return nil
        }
        return (id, ch)
    }

    private func send(_ message: DataMessage) -> DataAction {
        let (kind, body) = message.encoded()
        return .send(kind: kind, body: body)
    }
}
