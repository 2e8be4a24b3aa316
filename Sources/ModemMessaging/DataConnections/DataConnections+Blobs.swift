import ModemRuntime
import ModemCrypto

/// ``DataConnections``' in-memory blobs, both ways.
extension DataConnections {
    // MARK: blobs

    /// Sends an in-memory blob with a description; `progress` gets bytes handed to the session. Returns
    /// when the peer has verified it.
    public nonisolated func sendBlob(_ data: [UInt8], description: String, on id: ConnectionID,
                                     progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws(DataError) {
        let blockSize = configuration.blockSize
        let key = try await openOutgoing(id, kind: .blob, size: UInt64(data.count), blockSize: UInt32(blockSize),
                                         fileKey: [], description: description, name: "")
        await adjustOutgoing(+1)
        defer { Simulation.spawn { await self.adjustOutgoing(-1) } }
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

    // MARK: incoming blobs

    func blobData(_ key: ChannelKey, block: UInt32, offset: UInt32, last: Bool, hash: [UInt8]?, bytes: ArraySlice<UInt8>) async {
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

    func blobDone(_ key: ChannelKey, root: [UInt8]) async {
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
