import ModemRuntime
/// Data connections (the data-connection API, with Spark's names) over one ``RecordSession``: offers with metadata, accept or decline,
/// several connections at once, and on each connection streams, in-memory blobs and files.
///
/// Files travel in blocks (``DataConfiguration/blockSize``), read with `pread` and written with
/// `pwrite`, never held whole in memory. Each block's last DATA record carries the SHA-256 of the file
/// up to the end of that block (a chained hash: the running SHA-256 of the file, finalised on a copy at
/// each block boundary), so every block is verified as it lands, the last one's hash is the SHA-256 of
/// the whole file, and each side hashes each byte exactly once. The receiver writes into
/// `DIR/.modem-partial/<peer>-<fileKey>.part` and records verified blocks in a `.state` file beside it;
/// only after the whole-file hash (CH-DONE's root) matches is the file renamed into place, and then
/// CH-RESULT goes back. An interrupted file resumes on a later session: the sender offers the same
/// `fileKey`, the receiver re-verifies its blocks on disk and answers CH-HAVE with the verified prefix,
/// and only the blocks after it are sent.
///
/// Use: create it over an established session, read ``events`` (one consumer), and call the async
/// methods. It reads the session itself from creation on.
public actor DataConnections {
    /// The session underneath.
    public nonisolated let session: any RecordSession
    /// The settings.
    public nonisolated let configuration: DataConfiguration
    /// Who is at the other end: every connection, file and blob of this session is from this peer.
    /// Name it by ``PeerIdentity/trustedName`` (or its description), never by its claimed name alone.
    public nonisolated var peer: PeerIdentity { session.peer }

    var machine = ConnectionStateMachine()
    var sessionEnd: SessionEnd?
    var endWaiters: [CheckedContinuation<SessionEnd, Never>] = []
    var connectWaiters: [ConnectionID: [CheckedContinuation<Result<Void, DataError>, Never>]] = [:]

    struct ChannelKey: Hashable { var conn: ConnectionID; var ch: ChannelID }
    enum Reply: Sendable { case have(blocks: UInt32, aggregate: [UInt8], bitmap: [UInt8]), result(ok: Bool, reason: DataReason), ended(DataReason) }
    var replies: [ChannelKey: [Reply]] = [:]
    var replyWaiters: [ChannelKey: CheckedContinuation<Reply, Never>] = [:]
    var failedOutgoing: Set<ChannelKey> = []

    var incomingFiles: [ChannelKey: IncomingFile] = [:]
    var incomingBlobs: [ChannelKey: IncomingBlob] = [:]

    struct OutStream {
        var queue: [(bytes: [UInt8], done: CheckedContinuation<Result<Void, DataError>, Never>)] = []
        var pumping = false
        var closed = false
        var closeSent = false
        var sequence: UInt32 = 0
    }
    var streams: [ChannelKey: OutStream] = [:]

    var control: [(kind: UInt8, body: [UInt8])] = []
    var controlPumping = false
    var controlSpaceWaiters: [CheckedContinuation<Void, Never>] = []

    var eventQueue: [DataEvent] = []
    var eventHead = 0
    var eventReader: CheckedContinuation<DataEvent?, Never>?
    var eventSpaceWaiters: [CheckedContinuation<Void, Never>] = []
    var eventsFinished = false
    /// Data-bearing events (stream blocks, blobs) wait while this many events are unread.
    let eventCapacity = 64
    /// The session is not read while this many events are unread (control events such as offers,
    /// refusals and ends never wait where they are made, so a peer's records are what is held back:
    /// a peer that sends offers or ends without end while the application does not read events
    /// fills the session's bounded buffers and then waits, instead of growing this queue).
    let maximumUnreadEvents = 1024
    /// The loop, waiting for the application to read events (or to close).
    var loopSpaceWaiter: CheckedContinuation<Void, Never>?

    var activeOutgoing = 0
    var peerClosing = false
    var closeRequested = false
    var loopTask: Task<Void, Never>?
    /// The outgoing channels opened on each connection (blobs and files), for ending them with it.
    var openedOutgoing: Set<ChannelKey> = []

    /// Starts reading the session.
    public init(session: any RecordSession, configuration: DataConfiguration = DataConfiguration()) {
        self.session = session
        self.configuration = configuration
        Simulation.spawn { await self.startLoop() }
    }

    func startLoop() {
        guard loopTask == nil else { return }
        loopTask = Simulation.spawn { await self.loop() }
    }

    // MARK: connections

    /// Offers a connection with metadata (at most 4096 bytes; more is refused here before anything
    /// is sent) and waits for the peer's answer. Returns the connected connection.
    public func start(metadata: [UInt8] = []) async throws(DataError) -> ConnectionID {
        if let e = sessionEnd { throw .ended(.sessionEnded).withSession(e) }
        let (id, actions) = try machine.offer(metadata: metadata)
        await perform(actions)
        let result = await withCheckedContinuation { connectWaiters[id, default: []].append($0) }
        try result.get()
        return id
    }

    /// Accepts a connection the peer offered.
    public func accept(_ id: ConnectionID) async throws(DataError) {
        await perform(try machine.accept(id))
    }

    /// Declines a connection the peer offered.
    public func decline(_ id: ConnectionID, reason: DataReason = .declined) async throws(DataError) {
        await perform(try machine.decline(id, reason: reason))
    }

    /// Ends a connection: its channels stop; pending stream blocks complete with `.cancelled`.
    public func end(_ id: ConnectionID) async {
        await perform(machine.end(id))
    }

    /// The state of a connection.
    public func state(of id: ConnectionID) -> ConnectionStateMachine.State? { machine.state(of: id) }

    /// Ends every connection and half-closes the session; returns how the session ended.
    @discardableResult
    public func close() async -> SessionEnd {
        closeRequested = true
        loopSpaceWaiter?.resume()
        loopSpaceWaiter = nil
        await perform(machine.sessionEndedByUser())
        await drainControl()
        if sessionEnd == nil { await session.close() }
        return await ended()
    }

    /// Waits for the session's end.
    public func ended() async -> SessionEnd {
        if let e = sessionEnd { return e }
        return await withCheckedContinuation { endWaiters.append($0) }
    }

    // MARK: the loop

    func loop() async {
        while true {
            while eventQueue.count - eventHead >= maximumUnreadEvents, !eventsFinished, !closeRequested {
                await withCheckedContinuation { loopSpaceWaiter = $0 }
            }
            switch await session.receive() {
            case .record(let kind, let body):
                guard kind >= 0x20, kind <= 0x2F else { continue }
                await perform(machine.input(kind: kind, body: body))
            case .peerClosing:
                peerClosing = true
                if activeOutgoing == 0 {
                    await drainControl()
                    await session.close()
                }
            case .ended(let end):
                sessionEnd = end
                await perform(machine.sessionEnded())
                for (_, w) in replyWaiters { w.resume(returning: .ended(.sessionEnded)) }
                replyWaiters.removeAll()
                for (_, ws) in connectWaiters { for w in ws { w.resume(returning: .failure(.ended(.sessionEnded))) } }
                connectWaiters.removeAll()
                for w in controlSpaceWaiters { w.resume() }
                controlSpaceWaiters.removeAll()
                await emit(.sessionEnded(end))
                finishEvents()
                for w in endWaiters { w.resume(returning: end) }
                endWaiters.removeAll()
                return
            }
        }
    }

    func perform(_ actions: [DataAction]) async {
        for action in actions {
            switch action {
            case .send(let kind, let body):
                await queueControl(kind, body)
            case .event(let event):
                switch event {
                case .offered(let id, _) where configuration.autoAcceptConnections:
                    await emit(event)
                    if let more = try? machine.accept(id) { await perform(more) }
                    continue
                case .connected(let id), .accepted(let id):
                    for w in connectWaiters.removeValue(forKey: id) ?? [] { w.resume(returning: .success(())) }
                case .declined(let id, let reason), .ended(let id, let reason), .refused(let id, let reason):
                    for w in connectWaiters.removeValue(forKey: id) ?? [] { w.resume(returning: .failure(.refused(reason))) }
                default: break
                }
                await emit(event)
            case .channel(let input):
                await handle(input)
            }
        }
    }

    /// Control records (answers, CH-HAVE, CH-RESULT, PROGRESS) go out in order from one task, so the
    /// loop keeps reading while the line is full; the loop waits only when very many are queued.
    func queueControl(_ kind: UInt8, _ body: [UInt8]) async {
        guard sessionEnd == nil else { return }
        while control.count >= 256, sessionEnd == nil {
            await withCheckedContinuation { controlSpaceWaiters.append($0) }
        }
        control.append((kind, body))
        if !controlPumping {
            controlPumping = true
            Simulation.spawn { await self.pumpControl() }
        }
    }

    func pumpControl() async {
        while !control.isEmpty {
            let item = control.removeFirst()
            if !controlSpaceWaiters.isEmpty { controlSpaceWaiters.removeFirst().resume() }
            do throws(SessionSendError) { try await session.send(kind: item.kind, body: item.body) } catch {
                control.removeAll()
                break
            }
        }
        controlPumping = false
        for w in drainWaiters { w.resume() }
        drainWaiters.removeAll()
    }

    var drainWaiters: [CheckedContinuation<Void, Never>] = []

    func drainControl() async {
        guard controlPumping || !control.isEmpty, sessionEnd == nil else { return }
        await withCheckedContinuation { drainWaiters.append($0) }
    }

}

extension DataError {
    func withSession(_ end: SessionEnd) -> DataError { .ended(.sessionEnded) }
}

extension ConnectionStateMachine {
    /// Ends every live connection from this side (before closing the session).
    mutating func sessionEndedByUser() -> [DataAction] {
        var actions: [DataAction] = []
        for id in liveConnections() { actions += end(id, reason: .userEnded) }
        return actions
    }
}
