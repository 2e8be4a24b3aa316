import ModemCrypto
import Foundation
import ModemMessaging
import ProcessTestSupport
import Synchronization
import Testing

/// Seeded bytes for test files.
func dataTestBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var s = seed
    return (0..<count).map { _ in
        s = s &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: s >> 33)
    }
}

/// A session wrapper that counts records handed over and can change one byte of a chosen DATA record.
final class WatchedSession: RecordSession {
    let inner: any RecordSession
    /// Counts of records whose send returned, and of DATA records among them (a Mutex: sends run on many tasks).
    let counts = Mutex<(sent: Int, data: Int)>((0, 0))
    /// Flip a byte in the payload of the DATA record with this index (0-based), if set.
    let corruptDataRecord: Int?

    init(_ inner: any RecordSession, corruptDataRecord: Int? = nil) {
        self.inner = inner
        self.corruptDataRecord = corruptDataRecord
    }

    var peer: PeerIdentity { inner.peer }
    var maximumRecordBody: Int { inner.maximumRecordBody }
    var sent: Int { counts.withLock { $0.sent } }

    func send(kind: UInt8, body: [UInt8]) async throws(SessionSendError) {
        var body = body
        if kind == DataRecordKind.data {
            let index = counts.withLock { c -> Int in c.data += 1; return c.data - 1 }
            if index == corruptDataRecord { body[body.count - 1] ^= 0x01 }
        }
        try await inner.send(kind: kind, body: body)
        counts.withLock { $0.sent += 1 }
    }

    func receive() async -> SessionIncoming { await inner.receive() }
    func close() async { await inner.close() }
}

/// Small blocks so tests are quick: 16 KiB blocks in records of 5,000 bytes (4 records per block).
func smallBlocks(folder: ReceiveFolder? = nil, auto: Bool = true) -> DataConfiguration {
    DataConfiguration(folder: folder, blockSize: 16_384, recordPayload: 5_000, autoAcceptConnections: auto,
                      freeSpaceMargin: 0, progressEveryBlocks: 4)
}

/// Collects events of one side in a task until a predicate says stop (or the session ends).
func collect(_ dc: DataConnections, until stop: @escaping @Sendable (DataEvent) async -> Bool) -> Task<[DataEvent], Never> {
    Task {
        var seen: [DataEvent] = []
        for await e in dc.events {
            seen.append(e)
            if await stop(e) { break }
        }
        return seen
    }
}

func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256Hasher.hash(bytes)) }

@Suite("Data connections over an in-memory session")
struct DataConnectionsTests {
    @Test("offer with 4096 bytes of metadata is accepted; 4097 is refused here; a declined offer throws")
    func offers() async throws {
        let (sa, sb) = InMemorySessionLine.pair()
        let a = DataConnections(session: sa, configuration: smallBlocks(auto: false))
        let b = DataConnections(session: sb, configuration: smallBlocks(auto: false))
        let answering = Task {
            var answered: [(ConnectionID, Int)] = []
            for await e in b.events {
                if case .offered(let id, let metadata) = e {
                    answered.append((id, metadata.count))
                    if answered.count == 1 { try await b.accept(id) } else { try await b.decline(id) }
                    if answered.count == 2 { break }
                }
            }
            return answered.map(\.1)
        }
        let id = try await a.start(metadata: Array(repeating: 0x61, count: 4096))
        #expect(await a.state(of: id) == .connected)
        await #expect(throws: DataError.metadataTooLarge(4097, 4096)) {
            _ = try await a.start(metadata: Array(repeating: 0x61, count: 4097))
        }
        await #expect(throws: DataError.refused(.declined)) { _ = try await a.start(metadata: [1]) }
        #expect(try await answering.value == [4096, 1])
        await a.close()
        #expect(await b.ended() == .otherUserQuit)
    }

    @Test("streams: blocks arrive in order; closing cancels what is still queued")
    func streams() async throws {
        let (sa, sb) = InMemorySessionLine.pair(capacity: 2)
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks())
        let id = try await a.start()
        let ch = try await a.createStream(on: id, description: "numbers")
        // First, ten blocks with the receiver reading.
        for i in 0..<10 { try await a.send([UInt8(i), 0xEE], on: ch, of: id) }
        var got: [[UInt8]] = []
        var it = b.events.makeAsyncIterator()
        while got.count < 10, let e = await it.next() {
            if case .streamData(_, _, let bytes) = e { got.append(bytes) }
            if case .streamOpened(_, _, let d) = e { #expect(d == "numbers") }
        }
        #expect(got == (0..<10).map { [UInt8($0), 0xEE] })
        // Now the receiver stops reading: 300 blocks queue up behind a full line; close cancels the rest.
        let handedOver = Observed(0)
        let senders = (0..<300).map { i in
            Task { () -> Bool in
                do throws(DataError) {
                    try await a.send([UInt8(i % 256), UInt8(i / 256)], on: ch, of: id)
                    handedOver.add(1)
                    return true
                } catch {
                    #expect(error == .cancelled)
                    return false
                }
            }
        }
        // Close once some blocks were handed over (an event; real time only guards against a hang).
        try await handedOver.wait(for: "a block handed over") { $0 > 0 }
        await a.closeStream(ch, of: id)
        // The receiver reads again: what was handed over arrives, then the close.
        var later: [[UInt8]] = []
        loop: while let e = await it.next() {
            switch e {
            case .streamData(_, _, let bytes): later.append(bytes)
            case .streamClosed: break loop
            default: break
            }
        }
        var delivered: Set<[UInt8]> = []
        for (i, s) in senders.enumerated() where await s.value { delivered.insert([UInt8(i % 256), UInt8(i / 256)]) }
        #expect(delivered.count > 0)
        #expect(delivered.count < 300)
        #expect(Set(later) == delivered && later.count == delivered.count)
        await #expect(throws: DataError.cancelled) { try await a.send([1], on: ch, of: id) }
        await a.close()
    }

    @Test("a blob arrives whole with progress on both sides")
    func blob() async throws {
        let (sa, sb) = InMemorySessionLine.pair(capacity: 8)
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks())
        let data = dataTestBytes(100_000, seed: 5)
        let events = collect(b) { if case .blobReceived = $0 { true } else { false } }
        let id = try await a.start()
        let seen = Mutex<[UInt64]>([])
        try await a.sendBlob(data, description: "picture", on: id) { done, total in
            #expect(total == 100_000)
            seen.withLock { $0.append(done) }
        }
        let progress = seen.withLock { $0 }
        #expect(progress == progress.sorted() && progress.last == 100_000 && progress.count == 7)
        let got = await events.value
        #expect(got.contains(.blobReceived(ConnectionID(local: false, number: id.number), ChannelID(local: false, number: 1),
                                           description: "picture", data: data)))
        let incoming = got.compactMap { if case .progress(_, _, let n, 100_000) = $0 { n } else { nil } }
        #expect(incoming.last == 100_000)
        await a.close()
    }

    @Test("a file lands byte-exact under its name with a matching SHA-256; nothing left in .modem-partial")
    func file() async throws {
        let dir = dataTestFolder("file")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        let data = dataTestBytes(300_001, seed: 9)
        writeTestFile(atPath: source, contents: Data(data))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let (sa, sb) = InMemorySessionLine.pair(capacity: 4)
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks(folder: try ReceiveFolder(path: dir)))
        let events = collect(b) { if case .fileReceived = $0 { true } else { false } }
        let id = try await a.start(metadata: Array("files".utf8))
        let sent = try await a.sendFile(path: source, as: "data.bin", on: id)
        #expect(sent.sha256 == sha256(data))
        #expect(sent.sentBlocks == 19 && sent.skippedBlocks == 0)
        // CH-RESULT came back, so the file is already in place.
        #expect(FileManager.default.contents(atPath: dir + "/data.bin") == Data(data))
        guard case .fileReceived(_, _, let received)? = await events.value.last else { Issue.record("no file event"); return }
        #expect(received.name == "data.bin" && received.size == 300_001 && received.sha256 == sha256(data))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/.modem-partial").isEmpty)
        // The same name again collides: stored as "data (2).bin". An empty file works too.
        writeTestFile(atPath: source, contents: Data())
        _ = try await a.sendFile(path: source, as: "data.bin", on: id)
        #expect(FileManager.default.contents(atPath: dir + "/data (2).bin") == Data())
        await a.close()
    }

    @Test("hostile names never leave the folder; a name with nothing usable is refused")
    func hostileNames() async throws {
        let root = dataTestFolder("hostile")
        let dir = root + "/in"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let source = root + "/src.bin"
        writeTestFile(atPath: source, contents: Data([1, 2, 3]))
        let (sa, sb) = InMemorySessionLine.pair()
        let a = DataConnections(session: sa, configuration: smallBlocks())
        _ = DataConnections(session: sb, configuration: smallBlocks(folder: try ReceiveFolder(path: dir)))
        let id = try await a.start()
        for name in ["../escaped.bin", "/tmp/../\(root)/abs.bin", "..\\..\\win.bin", "nul\u{0}byte.bin", "CON"] {
            _ = try await a.sendFile(path: source, as: name, on: id)
        }
        await #expect(throws: DataError.refused(.badName)) { _ = try await a.sendFile(path: source, as: "..", on: id) }
        let inside = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        #expect(inside == [".modem-partial", "escaped.bin", "abs.bin", "win.bin", "nulbyte.bin", "_CON"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: root)) == ["in", "src.bin"])
        await a.close()
    }

    @Test("a cut mid-file, then a new session resumes: at most one block is sent twice; a block changed on disk is caught")
    func resume() async throws {
        let dir = dataTestFolder("resume")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        let data = dataTestBytes(40 * 16_384 + 123, seed: 3)
        writeTestFile(atPath: source, contents: Data(data))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let folder = try ReceiveFolder(path: dir)

        // Session 1: cut once the receiver has verified 12 blocks' worth.
        let (sa, sb) = InMemorySessionLine.pair(capacity: 2)
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks(folder: folder))
        let cutter = collect(b) { e in
            if case .progress(_, _, let bytes, _) = e, bytes >= 12 * 16_384 { await sa.line.cut(); return true }
            return false
        }
        let id = try await a.start()
        let handed = Mutex<UInt64>(0)
        await #expect(throws: DataError.self) {
            _ = try await a.sendFile(path: source, on: id) { done, _ in handed.withLock { $0 = max($0, done) } }
        }
        _ = await cutter.value
        let sentBefore = Int(handed.withLock { $0 } / 16_384)
        #expect(sentBefore >= 12)

        // Session 2: resume.
        let (sa2, sb2) = InMemorySessionLine.pair(capacity: 2)
        let a2 = DataConnections(session: sa2, configuration: smallBlocks())
        _ = DataConnections(session: sb2, configuration: smallBlocks(folder: folder))
        let id2 = try await a2.start()
        let second = try await a2.sendFile(path: source, on: id2)
        #expect(second.skippedBlocks >= sentBefore - 1, "skipped \(second.skippedBlocks), handed \(sentBefore)")
        #expect(second.skippedBlocks + second.sentBlocks == 41)
        #expect(FileManager.default.contents(atPath: dir + "/" + (source as NSString).lastPathComponent) == Data(data))
        await a2.close()

        // Session 3 and 4: cut again, change one byte of block 2 in the partial file, resume.
        let other = dir + "-other.bin"
        writeTestFile(atPath: other, contents: Data(data.reversed()))
        defer { try? FileManager.default.removeItem(atPath: other) }
        let (sa3, sb3) = InMemorySessionLine.pair(capacity: 2)
        let a3 = DataConnections(session: sa3, configuration: smallBlocks())
        let b3 = DataConnections(session: sb3, configuration: smallBlocks(folder: folder))
        let cutter3 = collect(b3) { e in
            if case .progress(_, _, let bytes, _) = e, bytes >= 8 * 16_384 { await sa3.line.cut(); return true }
            return false
        }
        let id3 = try await a3.start()
        await #expect(throws: DataError.self) { _ = try await a3.sendFile(path: other, on: id3) }
        _ = await cutter3.value
        let partial = try FileManager.default.contentsOfDirectory(atPath: dir + "/.modem-partial").filter { $0.hasSuffix(".part") }
        #expect(partial.count == 1)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: dir + "/.modem-partial/" + partial[0]))
        try handle.seek(toOffset: 2 * 16_384 + 100)
        let old = try handle.read(upToCount: 1)![0]
        try handle.seek(toOffset: 2 * 16_384 + 100)
        try handle.write(contentsOf: [old ^ 0x40])
        try handle.close()
        let (sa4, sb4) = InMemorySessionLine.pair(capacity: 2)
        let a4 = DataConnections(session: sa4, configuration: smallBlocks())
        _ = DataConnections(session: sb4, configuration: smallBlocks(folder: folder))
        let id4 = try await a4.start()
        let fourth = try await a4.sendFile(path: other, on: id4)
        #expect(fourth.skippedBlocks == 2)
        #expect(FileManager.default.contents(atPath: dir + "/" + (other as NSString).lastPathComponent) == Data(data.reversed()))
        await a4.close()
    }

    @Test("the sender's file changed under the same name, size and mtime: the claimed blocks do not match, all is sent again")
    func resumeChangedSource() async throws {
        let dir = dataTestFolder("changed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        var data = dataTestBytes(30 * 16_384, seed: 8)
        writeTestFile(atPath: source, contents: Data(data))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let folder = try ReceiveFolder(path: dir)
        let (sa, sb) = InMemorySessionLine.pair(capacity: 2)
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks(folder: folder))
        let cutter = collect(b) { e in
            if case .progress(_, _, let bytes, _) = e, bytes >= 10 * 16_384 { await sa.line.cut(); return true }
            return false
        }
        let id = try await a.start()
        await #expect(throws: DataError.self) { _ = try await a.sendFile(path: source, on: id) }
        _ = await cutter.value
        // Change block 0 in place, keeping the size and the modification time to the nanosecond.
        var st = stat()
        #expect(stat(source, &st) == 0)
        data[5] ^= 0xFF
        let fd = open(source, O_WRONLY)
        _ = data.withUnsafeBytes { pwrite(fd, $0.baseAddress!, 16, 0) }
        close(fd)
        var times = [st.st_atim, st.st_mtim]
        #expect(utimensat(AT_FDCWD, source, &times, 0) == 0)

        let (sa2, sb2) = InMemorySessionLine.pair(capacity: 2)
        let a2 = DataConnections(session: sa2, configuration: smallBlocks())
        _ = DataConnections(session: sb2, configuration: smallBlocks(folder: folder))
        let id2 = try await a2.start()
        let sent = try await a2.sendFile(path: source, on: id2)
        #expect(sent.skippedBlocks == 0 && sent.sentBlocks == 30)
        #expect(FileManager.default.contents(atPath: dir + "/" + (source as NSString).lastPathComponent) == Data(data))
        await a2.close()
    }

    @Test("two connections at once, files both ways over a narrow line; a file larger than the free space is declined")
    func bothWaysAndNoSpace() async throws {
        let dirA = dataTestFolder("both-a"), dirB = dataTestFolder("both-b")
        defer { try? FileManager.default.removeItem(atPath: dirA); try? FileManager.default.removeItem(atPath: dirB) }
        let one = dataTestBytes(200_000, seed: 21), two = dataTestBytes(150_000, seed: 22)
        writeTestFile(atPath: dirA + "/one.bin", contents: Data(one))
        writeTestFile(atPath: dirB + "/two.bin", contents: Data(two))
        let (sa, sb) = InMemorySessionLine.pair(capacity: 2)
        let a = DataConnections(session: sa, configuration: smallBlocks(folder: try ReceiveFolder(path: dirA + "/in")))
        let b = DataConnections(session: sb, configuration: smallBlocks(folder: try ReceiveFolder(path: dirB + "/in")))
        async let fromA = a.start(metadata: Array("a".utf8))
        async let fromB = b.start(metadata: Array("b".utf8))
        let (idA, idB) = try await (fromA, fromB)
        async let sentA = a.sendFile(path: dirA + "/one.bin", on: idA)
        async let sentB = b.sendFile(path: dirB + "/two.bin", on: idB)
        let (ra, rb) = try await (sentA, sentB)
        #expect(ra.sha256 == sha256(one) && rb.sha256 == sha256(two))
        #expect(FileManager.default.contents(atPath: dirB + "/in/one.bin") == Data(one))
        #expect(FileManager.default.contents(atPath: dirA + "/in/two.bin") == Data(two))
        await a.close()

        // A receiver whose folder lacks room (a margin larger than any disk) declines before writing.
        let (sc, sd) = InMemorySessionLine.pair()
        let c = DataConnections(session: sc, configuration: smallBlocks())
        var tight = smallBlocks(folder: try ReceiveFolder(path: dirB + "/tight"))
        tight.freeSpaceMargin = UInt64(1) << 62
        _ = DataConnections(session: sd, configuration: tight)
        let id = try await c.start()
        await #expect(throws: DataError.refused(.noSpace)) { _ = try await c.sendFile(path: dirA + "/one.bin", on: id) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dirB + "/tight").isEmpty)
        await c.close()
    }

    @Test("a hostile peer: blobs past the memory budget and a 4097-byte offer are refused, stray records ignored")
    func hostilePeer() async throws {
        let (raw, sb) = InMemorySessionLine.pair()
        let b = DataConnections(session: sb, configuration: DataConfiguration(maximumBlob: 1 << 20, autoAcceptConnections: true))
        let events = collect(b) { if case .refused = $0 { true } else { false } }
        func send(_ m: DataMessage) async throws { let (k, body) = m.encoded(); try await raw.send(kind: k, body: body) }
        try await send(.offer(conn: 1, metadata: []))
        guard case .record(DataRecordKind.answer, let answer) = await raw.receive() else { Issue.record("no answer"); return }
        #expect(DataMessage.decode(kind: DataRecordKind.answer, body: answer) == .answer(conn: 0x8000_0001, accept: true, reason: .none))
        // Data for channels nobody opened, a CH-HAVE for a channel b never opened: ignored.
        try await send(.data(conn: 1, channel: 9, block: 0, offset: 0, last: true, hash: nil, bytes: [1, 2]))
        try await send(.channelHave(conn: 0x8000_0001, channel: 0x8001, blocks: 0, aggregate: Array(repeating: 0, count: 32), bitmap: []))
        // Blobs of 1 MiB each: four fit the budget of 4 MiB held at once, the fifth is refused.
        for ch in UInt16(1)...5 {
            try await send(.channelOpen(conn: 1, channel: ch, kind: .blob, size: 1 << 20, blockSize: 16_384, fileKey: [],
                                        description: "b\(ch)", name: ""))
        }
        guard case .record(DataRecordKind.channelResult, let result) = await raw.receive() else { Issue.record("no result"); return }
        #expect(DataMessage.decode(kind: DataRecordKind.channelResult, body: result)
                == .channelResult(conn: 0x8000_0001, channel: 0x8005, ok: false, reason: .tooLarge, badBlocks: []))
        // An offer over 4096 bytes is refused by the receiver, whatever the sender's library allowed.
        try await send(.offer(conn: 2, metadata: Array(repeating: 0, count: 4097)))
        guard case .record(DataRecordKind.answer, let refusal) = await raw.receive() else { Issue.record("no refusal"); return }
        #expect(DataMessage.decode(kind: DataRecordKind.answer, body: refusal) == .answer(conn: 0x8000_0002, accept: false, reason: .metadataTooLarge))
        let seen = await events.value
        #expect(seen.contains(.refused(ConnectionID(local: false, number: 2), .metadataTooLarge)))
        #expect(seen.contains(.channelFailed(ConnectionID(local: false, number: 1), ChannelID(local: false, number: 5), name: "b5", .tooLarge, detail: nil)))
        await raw.close()
        #expect(await b.ended() == .otherUserQuit)
    }

    @Test("the same file sent twice at once: one writer per partial file, the other is declined")
    func sameFileTwice() async throws {
        let dir = dataTestFolder("twice")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        let data = dataTestBytes(20 * 16_384, seed: 30)
        writeTestFile(atPath: source, contents: Data(data))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let (sa, sb) = InMemorySessionLine.pair(capacity: 2)
        let a = DataConnections(session: sa, configuration: smallBlocks())
        _ = DataConnections(session: sb, configuration: smallBlocks(folder: try ReceiveFolder(path: dir)))
        let id = try await a.start()
        @Sendable func attempt() async -> Result<SentFile, DataError> {
            do throws(DataError) { return .success(try await a.sendFile(path: source, on: id)) } catch { return .failure(error) }
        }
        async let first = attempt()
        async let second = attempt()
        let results = await [first, second]
        let ok = results.filter { if case .success = $0 { true } else { false } }
        #expect(ok.count == 1)
        #expect(results.contains { if case .failure(.refused(.declined)) = $0 { true } else { false } })
        #expect(FileManager.default.contents(atPath: dir + "/" + (source as NSString).lastPathComponent) == Data(data))
        await a.close()
    }

    @Test("a byte changed in transit fails the block's hash: the sender is told, nothing is kept under the name")
    func tamperedInTransit() async throws {
        let dir = dataTestFolder("tamper")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        writeTestFile(atPath: source, contents: Data(dataTestBytes(100_000, seed: 1)))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let (sa, sb) = InMemorySessionLine.pair()
        let a = DataConnections(session: WatchedSession(sa, corruptDataRecord: 7), configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks(folder: try ReceiveFolder(path: dir)))
        let failed = collect(b) { if case .channelFailed = $0 { true } else { false } }
        let id = try await a.start()
        await #expect(throws: DataError.refused(.hashMismatch)) { _ = try await a.sendFile(path: source, as: "t.bin", on: id) }
        guard case .channelFailed(_, _, "t.bin", .hashMismatch, nil)? = await failed.value.last else { Issue.record("no failure event"); return }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [".modem-partial"])
        await a.close()
    }

    @Test("a local I/O failure is named on the receiving side (path and the system's reason); the peer hears only io-error")
    func localFailureIsNamed() async throws {
        let dir = dataTestFolder("localfail")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        writeTestFile(atPath: source, contents: Data(dataTestBytes(10_000, seed: 3)))
        defer { try? FileManager.default.removeItem(atPath: source) }
        // The partial files' folder is taken by a plain file: opening it fails with ENOTDIR (root
        // passes permission checks, so a mode cannot make it fail).
        let folder = try ReceiveFolder(path: dir)
        writeTestFile(atPath: dir + "/.modem-partial", contents: Data("in the way".utf8))
        let (sa, sb) = InMemorySessionLine.pair()
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks(folder: folder))
        let failed = collect(b) { if case .channelFailed = $0 { true } else { false } }
        let id = try await a.start()
        await #expect(throws: DataError.refused(.ioError)) { _ = try await a.sendFile(path: source, as: "f.bin", on: id) }
        guard case .channelFailed(_, _, "f.bin", .ioError, let detail?)? = await failed.value.last else {
            Issue.record("no failure event with a detail"); return
        }
        #expect(detail.contains(dir + "/.modem-partial") && detail.contains(String(cString: strerror(ENOTDIR))), "\(detail)")
        await a.close()
    }

    @Test("a receiver that stops reading stalls the sender: records in flight stay bounded by the line")
    func stalledReceiver() async throws {
        let dir = dataTestFolder("stall")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "-src.bin"
        writeTestFile(atPath: source, contents: Data(dataTestBytes(4 << 20, seed: 2)))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let (sa, raw) = InMemorySessionLine.pair(capacity: 8)
        let watched = WatchedSession(sa)
        let a = DataConnections(session: watched, configuration: smallBlocks())
        // The far end by hand: accept, answer CH-HAVE with nothing, then never read again.
        let far = Task { () throws -> Void in
            guard case .record(DataRecordKind.offer, let offer) = await raw.receive() else { throw CancellationError() }
            let conn = UInt32(offer[0]) << 24 | UInt32(offer[1]) << 16 | UInt32(offer[2]) << 8 | UInt32(offer[3])
            let answer = DataMessage.answer(conn: conn | 0x8000_0000, accept: true, reason: .none).encoded()
            try await raw.send(kind: answer.kind, body: answer.body)
            guard case .record(DataRecordKind.channelOpen, let open) = await raw.receive(),
                  case .channelOpen(_, let ch, _, let size, let bs, _, _, _)? = DataMessage.decode(kind: DataRecordKind.channelOpen, body: open)
            else { throw CancellationError() }
            let blocks = Int((size + UInt64(bs) - 1) / UInt64(bs))
            let have = DataMessage.channelHave(conn: conn | 0x8000_0000, channel: ch | 0x8000, blocks: UInt32(blocks),
                                               aggregate: Array(repeating: 0, count: 32),
                                               bitmap: Array(repeating: 0, count: (blocks + 7) / 8)).encoded()
            try await raw.send(kind: have.kind, body: have.body)
        }
        let id = try await a.start()
        let sending = Task { () -> DataError? in
            do throws(DataError) { _ = try await a.sendFile(path: source, on: id); return nil } catch { return error }
        }
        try await far.value
        // OFFER and CH-OPEN were read; after that at most `capacity` records fit in the line: wait
        // until the count stops moving (real time only as a hang guard), then it must be within the bound.
        var last = -1
        let guardTime = ContinuousClock.now + .seconds(120)
        while watched.sent != last && ContinuousClock.now < guardTime {
            last = watched.sent
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(watched.sent <= 2 + 8)
        await sa.line.cut()
        #expect(await sending.value != nil)
    }
}

/// Records the seed-named delegate calls it gets.
final class RecordingDelegate: DataConnectionDelegate {
    let calls = Mutex<[String]>([])
    let blob = Mutex<[UInt8]>([])
    func incomingDataConnectionOffered(_ connection: ConnectionID, metadata: [UInt8]) async {
        calls.withLock { $0.append("offered \(String(decoding: metadata, as: UTF8.self))") }
    }
    func dataConnectionConnected(_ connection: ConnectionID) async { calls.withLock { $0.append("connected") } }
    func dataConnectionEnded(_ connection: ConnectionID, reason: DataReason) async { calls.withLock { $0.append("ended \(reason)") } }
    func dataAvailable(_ connection: ConnectionID, channel: ChannelID, data: [UInt8], progress: (UInt64, UInt64)?, done: Bool) async {
        if done { blob.withLock { $0 = data }; calls.withLock { $0.append("data done") } }
    }
    func sessionEnded(_ end: SessionEnd) async { calls.withLock { $0.append(end.seedName) } }
}

@Suite("Data connections: the seed's delegate facade")
struct DataDelegateTests {
    @Test("offered, connected, data done, ended and the session's end arrive under the seed's names")
    func delegate() async throws {
        let (sa, sb) = InMemorySessionLine.pair()
        let a = DataConnections(session: sa, configuration: smallBlocks())
        let b = DataConnections(session: sb, configuration: smallBlocks())
        let recorder = RecordingDelegate()
        let pump = Task { await b.deliverEvents(to: recorder) }
        let id = try await a.start(metadata: Array("hello".utf8))
        try await a.sendBlob([1, 2, 3], description: "x", on: id)
        await a.close()
        await pump.value
        #expect(recorder.blob.withLock { $0 } == [1, 2, 3])
        #expect(recorder.calls.withLock { $0 } == ["offered hello", "connected", "data done", "ended ended by the user",
                                                   "END_OTHER_USER_QUIT"])
    }
}
