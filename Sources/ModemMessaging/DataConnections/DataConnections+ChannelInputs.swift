/// How ``DataConnections`` handles what the state machine reports of the peer's channels.
extension DataConnections {
    // MARK: channel inputs

    func handle(_ input: ChannelInput) async {
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

    func outgoingKeys(_ id: ConnectionID) -> [ChannelKey] { openedOutgoing.filter { $0.conn == id } }

    func refuse(_ key: ChannelKey, name: String, reason: DataReason, detail: String? = nil) async {
        machine.finishChannel(key.conn, key.ch)
        let (kind, body) = DataMessage.channelResult(conn: key.conn.wire, channel: key.ch.wire, ok: false, reason: reason,
                                                     badBlocks: []).encoded()
        await queueControl(kind, body)
        await emit(.channelFailed(key.conn, key.ch, name: name, reason, detail: detail))
    }
}
