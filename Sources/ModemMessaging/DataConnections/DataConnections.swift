import ModemCrypto
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Data connections (seed 004) over one ``RecordSession``: offers with metadata, accept or decline,
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

    private var machine = ConnectionStateMachine()
    private var sessionEnd: SessionEnd?
    private var endWaiters: [CheckedContinuation<SessionEnd, Never>] = []
    private var connectWaiters: [ConnectionID: [CheckedContinuation<Result<Void, DataError>, Never>]] = [:]

    private struct ChannelKey: Hashable { var conn: ConnectionID; var ch: ChannelID }
    enum Reply: Sendable { case have(blocks: UInt32, aggregate: [UInt8], bitmap: [UInt8]), result(ok: Bool, reason: DataReason), ended(DataReason) }
    private var replies: [ChannelKey: [Reply]] = [:]
    private var replyWaiters: [ChannelKey: CheckedContinuation<Reply, Never>] = [:]
    private var failedOutgoing: Set<ChannelKey> = []

    private var incomingFiles: [ChannelKey: IncomingFile] = [:]
    private var incomingBlobs: [ChannelKey: IncomingBlob] = [:]

    private struct OutStream {
        var queue: [(bytes: [UInt8], done: CheckedContinuation<Result<Void, DataError>, Never>)] = []
        var pumping = false
        var closed = false
        var closeSent = false
        var sequence: UInt32 = 0
    }
    private var streams: [ChannelKey: OutStream] = [:]

    private var control: [(kind: UInt8, body: [UInt8])] = []
    private var controlPumping = false
    private var controlSpaceWaiters: [CheckedContinuation<Void, Never>] = []

    private var eventQueue: [DataEvent] = []
    private var eventHead = 0
    private var eventReader: CheckedContinuation<DataEvent?, Never>?
    private var eventSpaceWaiters: [CheckedContinuation<Void, Never>] = []
    private var eventsFinished = false
    /// Data-bearing events (stream blocks, blobs) wait while this many events are unread.
    private let eventCapacity = 64

    private var activeOutgoing = 0
    private var peerClosing = false
    private var closeRequested = false
    private var loopTask: Task<Void, Never>?

    /// Starts reading the session.
    public init(session: any RecordSession, configuration: DataConfiguration = DataConfiguration()) {
        self.session = session
        self.configuration = configuration
        Task { await self.startLoop() }
    }

    private func startLoop() {
        guard loopTask == nil else { return }
        loopTask = Task { await self.loop() }
    }

    // MARK: events

    /// The events, in order, for one consumer. Ends after ``DataEvent/sessionEnded(_:)``.
    public nonisolated var events: Events { Events(owner: self) }

    /// An `AsyncSequence` of ``DataEvent``.
    public struct Events: AsyncSequence, Sendable {
        let owner: DataConnections
        public typealias Element = DataEvent
        public struct AsyncIterator: AsyncIteratorProtocol {
            let owner: DataConnections
            public mutating func next() async -> DataEvent? { await owner.nextEvent() }
        }
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(owner: owner) }
    }

    func nextEvent() async -> DataEvent? {
        if eventHead < eventQueue.count {
            let e = eventQueue[eventHead]
            eventHead += 1
            if eventHead > 64, eventHead * 2 > eventQueue.count {
                eventQueue.removeFirst(eventHead); eventHead = 0
            }
            if !eventSpaceWaiters.isEmpty { eventSpaceWaiters.removeFirst().resume() }
            return e
        }
        if eventsFinished { return nil }
        return await withCheckedContinuation { eventReader = $0 }
    }

    /// Queues an event. Data-bearing events wait for room (back-pressure reaches the peer through the
    /// session); control events never wait; progress is dropped when many events are unread.
    private func emit(_ event: DataEvent, wait: Bool = false) async {
        if let r = eventReader {
            eventReader = nil
            r.resume(returning: event)
            return
        }
        let unread = eventQueue.count - eventHead
        if case .progress = event, unread >= eventCapacity { return }
        if case .peerProgress = event, unread >= eventCapacity { return }
        if wait {
            while eventQueue.count - eventHead >= eventCapacity, !eventsFinished {
                await withCheckedContinuation { eventSpaceWaiters.append($0) }
            }
            if let r = eventReader {
                eventReader = nil
                r.resume(returning: event)
                return
            }
        }
        eventQueue.append(event)
    }

    private func finishEvents() {
        eventsFinished = true
        if let r = eventReader { eventReader = nil; r.resume(returning: nil) }
        for w in eventSpaceWaiters { w.resume() }
        eventSpaceWaiters.removeAll()
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

    // MARK: streams

    /// Opens a stream on a connected connection.
    public func createStream(on id: ConnectionID, description: String) async throws(DataError) -> ChannelID {
        let (ch, actions) = try machine.openChannel(id, kind: .stream, description: description)
        streams[ChannelKey(conn: id, ch: ch)] = OutStream()
        await perform(actions)
        return ch
    }

    /// Queues a block on a stream; returns once it has been handed to the session (the seed's done
    /// callback), or throws ``DataError/cancelled`` if the stream was closed first.
    public func send(_ bytes: [UInt8], on ch: ChannelID, of id: ConnectionID) async throws(DataError) {
        let key = ChannelKey(conn: id, ch: ch)
        guard let s = streams[key] else { throw .unknown("stream \(ch) on \(id)") }
        guard !s.closed, machine.isOpen(id, ch) else { throw .cancelled }
        let result = await withCheckedContinuation { c in
            streams[key]!.queue.append((bytes, c))
            if !streams[key]!.pumping {
                streams[key]!.pumping = true
                Task { await self.pumpStream(key) }
            }
        }
        try result.get()
    }

    /// Closes one of our streams: blocks not yet handed to the session complete with `.cancelled`.
    public func closeStream(_ ch: ChannelID, of id: ConnectionID) async {
        let key = ChannelKey(conn: id, ch: ch)
        guard var s = streams[key], !s.closed else { return }
        s.closed = true
        let pending = s.queue
        s.queue.removeAll()
        streams[key] = s
        for p in pending { p.done.resume(returning: .failure(.cancelled)) }
        if !s.pumping { await sendStreamClose(key) }
    }

    private func sendStreamClose(_ key: ChannelKey) async {
        guard streams[key]?.closeSent == false else { return }
        streams[key]!.closeSent = true
        await perform(machine.closeChannel(key.conn, key.ch, reason: .none))
    }

    private func pumpStream(_ key: ChannelKey) async {
        let payload = maxPayload(hash: false)
        while let s = streams[key], !s.queue.isEmpty {
            let item = streams[key]!.queue.removeFirst()
            var result: Result<Void, DataError> = .success(())
            var start = 0
            repeat {
                let end = min(item.bytes.count, start + payload)
                let seq = streams[key]!.sequence
                streams[key]!.sequence &+= 1
                let (kind, body) = DataMessage.data(conn: key.conn.wire, channel: key.ch.wire, block: seq,
                                                    offset: 0, last: end == item.bytes.count, hash: nil,
                                                    bytes: item.bytes[start..<end]).encoded()
                do throws(SessionSendError) {
                    try await session.send(kind: kind, body: body)
                } catch {
                    result = .failure(.session(error)); break
                }
                start = end
            } while start < item.bytes.count
            item.done.resume(returning: result)
        }
        streams[key]?.pumping = false
        if streams[key]?.closed == true { await sendStreamClose(key) }
    }

    // MARK: blobs

    /// Sends an in-memory blob with a description; `progress` gets bytes handed to the session. Returns
    /// when the peer has verified it.
    public nonisolated func sendBlob(_ data: [UInt8], description: String, on id: ConnectionID,
                                     progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws(DataError) {
        let blockSize = configuration.blockSize
        let key = try await openOutgoing(id, kind: .blob, size: UInt64(data.count), blockSize: UInt32(blockSize),
                                         fileKey: [], description: description, name: "")
        await adjustOutgoing(+1)
        defer { Task { await self.adjustOutgoing(-1) } }
        var hasher = SHA256Hasher()
        var block: UInt32 = 0
        var at = 0
        while at < data.count {
            let end = min(data.count, at + blockSize)
            data.withUnsafeBytes { hasher.update(bytes: UnsafeRawBufferPointer(rebasing: $0[at..<end])) }
            let hash = Array(hasher.finalize())
            try await sendBlock(key, block: block, bytes: data[at..<end], hash: hash)
            at = end
            block += 1
            progress?(UInt64(at), UInt64(data.count))
            if await isFailed(key) { break }
        }
        try await sendDoneAndWait(key, root: Array(hasher.finalize()))
    }

    // MARK: files

    /// Sends a file under `name` (default: its base name). Resumes a transfer the receiver already
    /// holds part of. `progress` gets (bytes the receiver holds or we have handed over, total).
    /// Returns after the receiver's CH-RESULT ok: the file is then in place there.
    public nonisolated func sendFile(path: String, as name: String? = nil, description: String = "", on id: ConnectionID,
                                     progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws(DataError) -> SentFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { throw .io("\(path) is not a regular file") }
        let size = UInt64(st.st_size)
        let sendName = name ?? (path.split(separator: "/").last.map(String.init) ?? path)
        let mtime = UInt64(bitPattern: Int64(st.st_mtim.tv_sec)) &* 1_000_000_000 &+ UInt64(st.st_mtim.tv_nsec)
        var keyInput = DataByteWriter()
        keyInput.bytes(Array("SM-file-1".utf8)); keyInput.bytes(Array(sendName.utf8)); keyInput.u64(size); keyInput.u64(mtime)
        let fileKey = Array(SHA256Hasher.hash(keyInput.out).prefix(16))
        let blockSize = configuration.blockSize
        let blocks = Int((size + UInt64(blockSize) - 1) / UInt64(blockSize))

        let key = try await openOutgoing(id, kind: .file, size: size, blockSize: UInt32(blockSize), fileKey: fileKey,
                                         description: description, name: sendName)
        await adjustOutgoing(+1)
        defer { Task { await self.adjustOutgoing(-1) } }
        // The receiver answers with the blocks it holds (or refuses).
        var have = 0
        var aggregate: [UInt8] = []
        switch await reply(key) {
        case .have(let n, let agg, let bitmap):
            guard Int(n) == blocks else { throw .refused(.protocolError) }
            have = Self.leadingOnes(bitmap, limit: blocks)
            aggregate = agg
        case .result(_, let reason): throw .refused(reason == .none ? .declined : reason)
        case .ended(let reason): throw .ended(reason)
        }
        // Re-hash what the receiver claims; on any difference send everything.
        var hasher = SHA256Hasher()
        if have > 0 {
            for b in 0..<have {
                (_, hasher, _) = try Self.readBlock(fd: fd, index: b, blockSize: blockSize, size: size, hasher: hasher)
            }
            if Array(hasher.finalize()) != aggregate { have = 0; hasher = SHA256Hasher() }
        }
        progress?(min(size, UInt64(have) * UInt64(blockSize)), size)
        var sentBytes: UInt64 = 0
        if have < blocks {
            // Two stages: the next block is read and hashed while this one is sent.
            var current = try Self.readBlock(fd: fd, index: have, blockSize: blockSize, size: size, hasher: hasher)
            var index = have
            // The block sent before `current`: its buffer takes the block after it.
            let spare = SpareBuffer()
            while true {
                let next = index + 1
                let running = current.hasher
                async let upcoming = next < blocks
                    ? Self.readBlock(fd: fd, index: next, blockSize: blockSize, size: size, hasher: running, reusing: spare) : nil
                do throws(DataError) {
                    try await sendBlock(key, block: UInt32(index), bytes: current.bytes[...], hash: current.hash)
                } catch {
                    _ = try? await upcoming
                    throw error
                }
                sentBytes += UInt64(current.bytes.count)
                progress?(min(size, UInt64(index + 1) * UInt64(blockSize)), size)
                let failed = await isFailed(key)
                let n: (bytes: [UInt8], hasher: SHA256Hasher, hash: [UInt8])?
                do { n = try await upcoming } catch let e as DataError { throw e } catch { throw .io("\(error)") }
                hasher = current.hasher
                if failed { break }
                guard let n else { break }
                spare.give(current.bytes)
                current = n  // the pool now holds the only reference: the next read writes into it
                index = next
            }
        }
        let root = Array(hasher.finalize())
        try await sendDoneAndWait(key, root: root)
        return SentFile(name: sendName, size: size, sha256: root, skippedBlocks: have, sentBlocks: blocks - have,
                        sentBytes: sentBytes)
    }

    static func leadingOnes(_ bitmap: [UInt8], limit: Int) -> Int {
        var n = 0
        for byte in bitmap {
            if byte == 0xFF { n += 8; continue }
            var b = byte
            while b & 0x80 != 0 { n += 1; b <<= 1 }
            break
        }
        return min(n, limit)
    }

    /// Reads block `index` with `pread` and feeds it to the running hash. Returns the bytes, the hash
    /// state after them, and the chained hash (SHA-256 of the file up to the end of this block).
    /// A buffer from `spare`, when it has the block's length, is read into instead of a new array (the
    /// sender hands back the block it finished sending, so a file's blocks reuse two buffers).
    static func readBlock(fd: Int32, index: Int, blockSize: Int, size: UInt64, hasher: SHA256Hasher,
                          reusing spare: SpareBuffer? = nil) throws(DataError)
        -> (bytes: [UInt8], hasher: SHA256Hasher, hash: [UInt8]) {
        let start = UInt64(index) * UInt64(blockSize)
        let length = Int(min(UInt64(blockSize), size - start))
        var h = hasher
        var failure: String?
        func fill(_ buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
            var done = 0
            while done < length {
                let r = pread(fd, buffer.baseAddress! + done, length - done, off_t(start) + off_t(done))
                if r < 0, errno == EINTR { continue }
                if r <= 0 { failure = r == 0 ? "the file got shorter while being sent" : String(cString: strerror(errno)); break }
                done += r
            }
            h.update(bytes: UnsafeRawBufferPointer(start: buffer.baseAddress, count: done))
            return done
        }
        var bytes: [UInt8]
        if length > 0, var storage = spare?.take(), storage.count == length {
            _ = storage.withUnsafeMutableBufferPointer { fill($0) }
            bytes = storage
        } else {
            bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in count = fill(buffer) }
        }
        if let failure { throw .io("reading block \(index): \(failure)") }
        return (bytes, h, Array(h.finalize()))
    }

    private func adjustOutgoing(_ delta: Int) async {
        activeOutgoing += delta
        if activeOutgoing == 0, peerClosing, sessionEnd == nil {
            await drainControl()
            await session.close()
        }
    }

    private func openOutgoing(_ id: ConnectionID, kind: ChannelKind, size: UInt64, blockSize: UInt32, fileKey: [UInt8],
                              description: String, name: String) async throws(DataError) -> ChannelKey {
        let (ch, actions) = try machine.openChannel(id, kind: kind, size: size, blockSize: blockSize, fileKey: fileKey,
                                                    description: description, name: name)
        for case .send(let kind, let body) in actions {
            do throws(SessionSendError) { try await session.send(kind: kind, body: body) } catch { throw .session(error) }
        }
        let key = ChannelKey(conn: id, ch: ch)
        openedOutgoing.insert(key)
        return key
    }

    private nonisolated func maxPayload(hash: Bool) -> Int {
        max(1, min(configuration.recordPayload, session.maximumRecordBody - DataMessage.dataHeader - (hash ? 32 : 0)))
    }

    /// Sends one block as DATA records; the hash rides in the last one.
    private nonisolated func sendBlock(_ key: ChannelKey, block: UInt32, bytes: ArraySlice<UInt8>, hash: [UInt8]) async throws(DataError) {
        let payload = maxPayload(hash: true)
        var start = bytes.startIndex
        repeat {
            let end = min(bytes.endIndex, start + payload)
            let last = end == bytes.endIndex
            let (kind, body) = DataMessage.data(conn: key.conn.wire, channel: key.ch.wire, block: block,
                                                offset: UInt32(start - bytes.startIndex), last: last,
                                                hash: last ? hash : nil, bytes: bytes[start..<end]).encoded()
            do throws(SessionSendError) { try await session.send(kind: kind, body: body) } catch {
                if case .ended = error { throw .ended(.sessionEnded) }
                throw .session(error)
            }
            start = end
        } while start < bytes.endIndex
    }

    private nonisolated func sendDoneAndWait(_ key: ChannelKey, root: [UInt8]) async throws(DataError) {
        if !(await isFailed(key)) {
            let (kind, body) = DataMessage.channelDone(conn: key.conn.wire, channel: key.ch.wire, root: root).encoded()
            do throws(SessionSendError) { try await session.send(kind: kind, body: body) } catch {
                throw .ended(.sessionEnded)
            }
        }
        switch await reply(key) {
        case .result(let ok, let reason):
            if !ok { throw .refused(reason == .none ? .protocolError : reason) }
        case .have: throw .refused(.protocolError)
        case .ended(let reason): throw .ended(reason)
        }
    }

    private func isFailed(_ key: ChannelKey) -> Bool { failedOutgoing.contains(key) }

    private func reply(_ key: ChannelKey) async -> Reply {
        if var list = replies[key], !list.isEmpty {
            let r = list.removeFirst()
            replies[key] = list
            return r
        }
        return await withCheckedContinuation { replyWaiters[key] = $0 }
    }

    private func deliverReply(_ key: ChannelKey, _ r: Reply) {
        if case .result(let ok, _) = r, !ok { failedOutgoing.insert(key) }
        if case .ended = r { failedOutgoing.insert(key) }
        if let w = replyWaiters.removeValue(forKey: key) {
            w.resume(returning: r)
        } else if replies[key, default: []].count < 4 {
            // At most a few unclaimed replies per channel: a peer repeating them cannot grow memory.
            replies[key, default: []].append(r)
        }
    }

    // MARK: the loop

    private func loop() async {
        while true {
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

    private func perform(_ actions: [DataAction]) async {
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
    private func queueControl(_ kind: UInt8, _ body: [UInt8]) async {
        guard sessionEnd == nil else { return }
        while control.count >= 256, sessionEnd == nil {
            await withCheckedContinuation { controlSpaceWaiters.append($0) }
        }
        control.append((kind, body))
        if !controlPumping {
            controlPumping = true
            Task { await self.pumpControl() }
        }
    }

    private func pumpControl() async {
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

    private var drainWaiters: [CheckedContinuation<Void, Never>] = []

    private func drainControl() async {
        guard controlPumping || !control.isEmpty, sessionEnd == nil else { return }
        await withCheckedContinuation { drainWaiters.append($0) }
    }

    // MARK: channel inputs

    private func handle(_ input: ChannelInput) async {
        switch input {
        case .opened(let id, let ch, let kind, let size, let blockSize, let fileKey, let description, let name):
            let key = ChannelKey(conn: id, ch: ch)
            switch kind {
            case .stream:
                await emit(.streamOpened(id, ch, description: description))
            case .blob:
                let held = incomingBlobs.values.reduce(0) { $0 + $1.size }
                if size > UInt64(configuration.maximumBlob) || UInt64(held) + size > UInt64(configuration.maximumBlob) * 4 {
                    // One blob at most `maximumBlob`, all incoming blobs together at most four times that.
                    await refuse(key, name: description, reason: .tooLarge)
                } else {
                    incomingBlobs[key] = IncomingBlob(size: Int(size), blockSize: Int(blockSize), description: description)
                }
            case .file:
                await openIncomingFile(key, size: size, blockSize: Int(blockSize), fileKey: fileKey,
                                       description: description, name: name)
            }
        case .data(let id, let ch, let block, let offset, let last, let hash, let bytes):
            let key = ChannelKey(conn: id, ch: ch)
            if incomingFiles[key] != nil {
                await fileData(key, block: block, offset: offset, last: last, hash: hash, bytes: bytes)
            } else if incomingBlobs[key] != nil {
                await blobData(key, block: block, offset: offset, last: last, hash: hash, bytes: bytes)
            } else {
                await emit(.streamData(id, ch, Array(bytes)), wait: true)
            }
        case .done(let id, let ch, let root):
            let key = ChannelKey(conn: id, ch: ch)
            if incomingFiles[key] != nil { await fileDone(key, root: root) } else if incomingBlobs[key] != nil { await blobDone(key, root: root) }
        case .closed(let id, let ch, let reason):
            let key = ChannelKey(conn: id, ch: ch)
            if let f = incomingFiles.removeValue(forKey: key) {
                f.closeFiles()
                await emit(.channelFailed(id, ch, name: f.name, reason == .none ? .cancelled : reason, detail: nil))
            } else if let b = incomingBlobs.removeValue(forKey: key) {
                await emit(.channelFailed(id, ch, name: b.description, reason == .none ? .cancelled : reason, detail: nil))
            } else {
                await emit(.streamClosed(id, ch, reason))
            }
        case .have(let id, let ch, let blocks, let aggregate, let bitmap):
            deliverReply(ChannelKey(conn: id, ch: ch), .have(blocks: blocks, aggregate: aggregate, bitmap: bitmap))
        case .result(let id, let ch, let ok, let reason, _):
            deliverReply(ChannelKey(conn: id, ch: ch), .result(ok: ok, reason: reason))
        case .progress(let id, let ch, let bytes):
            await emit(.peerProgress(id, ch, bytes: bytes))
        case .connectionEnded(let id, let reason):
            for (key, f) in incomingFiles where key.conn == id { f.closeFiles(); incomingFiles[key] = nil }
            for key in incomingBlobs.keys where key.conn == id { incomingBlobs[key] = nil }
            for key in Array(replyWaiters.keys) where key.conn == id {
                replyWaiters.removeValue(forKey: key)?.resume(returning: .ended(reason))
            }
            for key in Array(streams.keys) where key.conn == id {
                let pending = streams[key]!.queue
                streams[key]!.queue.removeAll()
                streams[key]!.closed = true
                streams[key]!.closeSent = true
                for p in pending { p.done.resume(returning: .failure(.cancelled)) }
            }
            // Outgoing transfers not yet waiting learn it from the reply buffer.
            for key in outgoingKeys(id) where replies[key] == nil { replies[key] = [.ended(reason)]; failedOutgoing.insert(key) }
        }
    }

    /// True while an incoming file (not a blob) is being received on the channel.
    func isIncomingFile(_ id: ConnectionID, _ ch: ChannelID) -> Bool { incomingFiles[ChannelKey(conn: id, ch: ch)] != nil }

    private var openedOutgoing: Set<ChannelKey> = []
    private func outgoingKeys(_ id: ConnectionID) -> [ChannelKey] { openedOutgoing.filter { $0.conn == id } }

    private func refuse(_ key: ChannelKey, name: String, reason: DataReason, detail: String? = nil) async {
        machine.finishChannel(key.conn, key.ch)
        let (kind, body) = DataMessage.channelResult(conn: key.conn.wire, channel: key.ch.wire, ok: false, reason: reason,
                                                     badBlocks: []).encoded()
        await queueControl(kind, body)
        await emit(.channelFailed(key.conn, key.ch, name: name, reason, detail: detail))
    }

    // MARK: incoming blobs

    private func blobData(_ key: ChannelKey, block: UInt32, offset: UInt32, last: Bool, hash: [UInt8]?, bytes: ArraySlice<UInt8>) async {
        guard var b = incomingBlobs[key] else { return }
        let blockStart = Int(block) * b.blockSize
        let blockLength = min(b.blockSize, b.size - min(b.size, blockStart))
        guard Int(block) == b.nextBlock, Int(offset) == b.offsetInBlock,
              Int(offset) + bytes.count <= blockLength else {
            incomingBlobs[key] = nil
            return await refuse(key, name: b.description, reason: .protocolError)
        }
        b.data.append(contentsOf: bytes)
        bytes.withUnsafeBytes { b.hasher.update(bytes: $0) }
        b.offsetInBlock += bytes.count
        if last {
            guard b.offsetInBlock == blockLength, let hash, Array(b.hasher.finalize()) == hash else {
                incomingBlobs[key] = nil
                return await refuse(key, name: b.description, reason: .hashMismatch)
            }
            b.nextBlock += 1
            b.offsetInBlock = 0
            incomingBlobs[key] = b
            await emit(.progress(key.conn, key.ch, bytes: UInt64(b.data.count), total: UInt64(b.size)))
        } else {
            incomingBlobs[key] = b
        }
    }

    private func blobDone(_ key: ChannelKey, root: [UInt8]) async {
        guard let b = incomingBlobs.removeValue(forKey: key) else { return }
        guard b.data.count == b.size, b.offsetInBlock == 0, Array(b.hasher.finalize()) == root else {
            return await refuse(key, name: b.description, reason: .hashMismatch)
        }
        machine.finishChannel(key.conn, key.ch)
        let (kind, body) = DataMessage.channelResult(conn: key.conn.wire, channel: key.ch.wire, ok: true, reason: .none,
                                                     badBlocks: []).encoded()
        await queueControl(kind, body)
        await emit(.blobReceived(key.conn, key.ch, description: b.description, data: b.data), wait: true)
    }

    // MARK: incoming files

    private func openIncomingFile(_ key: ChannelKey, size: UInt64, blockSize: Int, fileKey: [UInt8],
                                  description: String, name rawName: String) async {
        guard let folder = configuration.folder else { return await refuse(key, name: rawName, reason: .declined) }
        guard incomingFiles.count < 64 else { return await refuse(key, name: rawName, reason: .tooLarge) }
        let cleaned: String
        do throws(NameError) { cleaned = try NameCleaner.clean(rawName) } catch {
            return await refuse(key, name: rawName, reason: .badName)
        }
        let blocks = (size + UInt64(blockSize) - 1) / UInt64(blockSize)
        guard blocks <= UInt64(8 * (session.maximumRecordBody - 64)), size < (UInt64(1) << 62) else {
            return await refuse(key, name: cleaned, reason: .tooLarge)
        }
        if let decider = configuration.fileDecider {
            let offer = FileOffer(connection: key.conn, channel: key.ch, name: cleaned, originalName: rawName, size: size,
                                  description: description, peer: session.peer)
            guard await decider(offer) else { return await refuse(key, name: cleaned, reason: .declined) }
            guard machine.isOpen(key.conn, key.ch) else { return }
        }
        guard let free = try? folder.freeBytes(), free >= size &+ configuration.freeSpaceMargin else {
            return await refuse(key, name: cleaned, reason: .noSpace)
        }
        let base = IncomingFile.base(peerKey: session.peer.publicKey, fileKey: fileKey)
        guard !incomingFiles.values.contains(where: { $0.base == base }) else {
            // The same file is already arriving on another channel: one writer per partial file.
            return await refuse(key, name: cleaned, reason: .declined)
        }
        let file: IncomingFile
        do throws(FolderError) {
            file = try IncomingFile(folder: folder, peerKey: session.peer.publicKey, fileKey: fileKey, size: size,
                                    blockSize: blockSize, name: cleaned, originalName: rawName)
        } catch {
            return await refuse(key, name: cleaned, reason: .ioError, detail: error.description)
        }
        incomingFiles[key] = file
        let (kind, body) = DataMessage.channelHave(conn: key.conn.wire, channel: key.ch.wire, blocks: UInt32(file.blocks),
                                                   aggregate: file.aggregate, bitmap: file.bitmap()).encoded()
        await queueControl(kind, body)
    }

    private func fileData(_ key: ChannelKey, block: UInt32, offset: UInt32, last: Bool, hash: [UInt8]?, bytes: ArraySlice<UInt8>) async {
        guard let f = incomingFiles[key] else { return }
        switch f.write(block: Int(block), offset: Int(offset), last: last, hash: hash, bytes: bytes) {
        case .more:
            return
        case .blockVerified:
            if f.nextBlock % configuration.progressEveryBlocks == 0 || f.nextBlock == f.blocks {
                let (kind, body) = DataMessage.progress(conn: key.conn.wire, channel: key.ch.wire, bytes: f.verifiedBytes).encoded()
                await queueControl(kind, body)
            }
            await emit(.progress(key.conn, key.ch, bytes: f.verifiedBytes, total: f.size))
        case .failed(let reason, let detail):
            incomingFiles[key] = nil
            f.closeFiles()
            await refuse(key, name: f.name, reason: reason, detail: detail)
        }
    }

    private func fileDone(_ key: ChannelKey, root: [UInt8]) async {
        guard let f = incomingFiles.removeValue(forKey: key) else { return }
        guard let folder = configuration.folder else { return }
        switch f.finish(root: root, into: folder) {
        case .failure(let reason, let detail):
            f.closeFiles()
            await refuse(key, name: f.name, reason: reason, detail: detail)
        case .success(let finalName):
            machine.finishChannel(key.conn, key.ch)
            // The file is in place before the sender hears CH-RESULT.
            let (kind, body) = DataMessage.channelResult(conn: key.conn.wire, channel: key.ch.wire, ok: true, reason: .none,
                                                         badBlocks: []).encoded()
            await queueControl(kind, body)
            let received = ReceivedFile(name: finalName, originalName: f.originalName,
                                        path: folder.path + "/" + finalName, size: f.size, sha256: root,
                                        seconds: IncomingFile.now() - f.started, resumedBlocks: f.resumedBlocks)
            await emit(.fileReceived(key.conn, key.ch, received))
        }
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

/// An incoming blob being assembled in memory.
struct IncomingBlob {
    var size: Int
    var blockSize: Int
    var description: String
    var data: [UInt8] = []
    var hasher = SHA256Hasher()
    var nextBlock = 0
    var offsetInBlock = 0
}

/// One buffer handed from the task that finished with it to the task that reads the next block.
/// Taking it moves it out, so the reader holds the only reference and writes into it in place.
final class SpareBuffer: Sendable {
    private let buffer = Mutex<[UInt8]?>(nil)

    /// Keeps `bytes` for the next ``take()`` (replacing one not taken).
    func give(_ bytes: [UInt8]) { buffer.withLock { $0 = bytes } }

    /// The buffer given last, once.
    func take() -> [UInt8]? {
        buffer.withLock { stored in
            var out: [UInt8]?
            swap(&out, &stored)
            return out
        }
    }
}
