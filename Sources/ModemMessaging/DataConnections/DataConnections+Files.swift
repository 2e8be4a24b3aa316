import ModemRuntime
import ModemCrypto
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ``DataConnections``' files, both ways: sending with resume, and receiving into a folder.
extension DataConnections {
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
        defer { Simulation.spawn { await self.adjustOutgoing(-1) } }
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

    // MARK: incoming files

    /// The largest file a peer may offer: 2^62 bytes (every sum of offsets and lengths within a file
    /// stays far from overflowing 64 bits).
    public static let maximumIncomingFileSize: UInt64 = 1 << 62

    /// The number of blocks of a peer's file offer, or nil when the offer is out of bounds: a block size
    /// of 0 or over 16 MiB, a size of ``maximumIncomingFileSize`` or more, or more than `maximumBlocks`
    /// blocks (CH-HAVE's bitmap must fit one record). Both numbers come from the peer, so each is
    /// bounded before any arithmetic on it, and the count is a division with no addition that could
    /// overflow: every value of them gives an answer, never a trap.
    public static func incomingFileBlocks(size: UInt64, blockSize: UInt32, maximumBlocks: Int) -> Int? {
        guard blockSize > 0, blockSize <= 16 << 20, size < maximumIncomingFileSize, maximumBlocks >= 0 else { return nil }
        let b = UInt64(blockSize)
        let blocks = size / b + (size % b == 0 ? 0 : 1)
        guard blocks <= UInt64(maximumBlocks) else { return nil }
        return Int(blocks)
    }

    func openIncomingFile(_ key: ChannelKey, size: UInt64, blockSize: Int, fileKey: [UInt8],
                                  description: String, name rawName: String) async {
        guard let folder = configuration.folder else { return await refuse(key, name: rawName, reason: .declined) }
        guard incomingFiles.count < 64 else { return await refuse(key, name: rawName, reason: .tooLarge) }
        let cleaned: String
        do throws(NameError) { cleaned = try NameCleaner.clean(rawName) } catch {
            return await refuse(key, name: rawName, reason: .badName)
        }
        guard Self.incomingFileBlocks(size: size, blockSize: UInt32(clamping: blockSize),
                                      maximumBlocks: 8 * max(0, session.maximumRecordBody - 64)) != nil else {
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

    func fileData(_ key: ChannelKey, block: UInt32, offset: UInt32, last: Bool, hash: [UInt8]?, bytes: ArraySlice<UInt8>) async {
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

    func fileDone(_ key: ChannelKey, root: [UInt8]) async {
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

/// One buffer handed from the task that finished with it to the task that reads the next block.
/// Taking it moves it out, so the reader holds the only reference and writes into it in place.
final class SpareBuffer: Sendable {
    let buffer = Mutex<[UInt8]?>(nil)

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
