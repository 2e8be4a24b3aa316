/// What blobs and files share on the way out: opening a channel, sending its blocks and DONE,
/// the peer's replies (HAVE, RESULT) and the count of transfers under way.
extension DataConnections {
    func adjustOutgoing(_ delta: Int) async {
        activeOutgoing += delta
        if activeOutgoing == 0, peerClosing, sessionEnd == nil {
            await drainControl()
            await session.close()
        }
    }

    func openOutgoing(_ id: ConnectionID, kind: ChannelKind, size: UInt64, blockSize: UInt32, fileKey: [UInt8],
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

    nonisolated func maxPayload(hash: Bool) -> Int {
        max(1, min(configuration.recordPayload, session.maximumRecordBody - DataMessage.dataHeader - (hash ? 32 : 0)))
    }

    /// Sends one block as DATA records; the hash rides in the last one.
    nonisolated func sendBlock(_ key: ChannelKey, block: UInt32, bytes: ArraySlice<UInt8>, hash: [UInt8]) async throws(DataError) {
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

    nonisolated func sendDoneAndWait(_ key: ChannelKey, root: [UInt8]) async throws(DataError) {
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

    func isFailed(_ key: ChannelKey) -> Bool { failedOutgoing.contains(key) }

    func reply(_ key: ChannelKey) async -> Reply {
        if var list = replies[key], !list.isEmpty {
            let r = list.removeFirst()
            replies[key] = list
            return r
        }
        return await withCheckedContinuation { replyWaiters[key] = $0 }
    }

    func deliverReply(_ key: ChannelKey, _ r: Reply) {
        if case .result(let ok, _) = r, !ok { failedOutgoing.insert(key) }
        if case .ended = r { failedOutgoing.insert(key) }
        if let w = replyWaiters.removeValue(forKey: key) {
            w.resume(returning: r)
        } else if replies[key, default: []].count < 4 {
            // At most a few unclaimed replies per channel: a peer repeating them cannot grow memory.
            replies[key, default: []].append(r)
        }
    }
}
