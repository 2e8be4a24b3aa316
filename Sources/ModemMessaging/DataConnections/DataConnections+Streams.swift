import ModemRuntime
/// ``DataConnections``' streams: open, send (paced by the session), close.
extension DataConnections {
    // MARK: streams

    /// Opens a stream on a connected connection.
    public func createStream(on id: ConnectionID, description: String) async throws(DataError) -> ChannelID {
        let (ch, actions) = try machine.openChannel(id, kind: .stream, description: description)
        streams[ChannelKey(conn: id, ch: ch)] = OutStream()
        await perform(actions)
        return ch
    }

    /// Queues a block on a stream; returns once it has been handed to the session (the data-connection API's done
    /// callback), or throws ``DataError/cancelled`` if the stream was closed first.
    public func send(_ bytes: [UInt8], on ch: ChannelID, of id: ConnectionID) async throws(DataError) {
        let key = ChannelKey(conn: id, ch: ch)
        guard let s = streams[key] else { throw .unknown("stream \(ch) on \(id)") }
        guard !s.closed, machine.isOpen(id, ch) else { throw .cancelled }
        let result = await withCheckedContinuation { c in
            streams[key]!.queue.append((bytes, c))
            if !streams[key]!.pumping {
                streams[key]!.pumping = true
                Simulation.spawn { await self.pumpStream(key) }
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

    func sendStreamClose(_ key: ChannelKey) async {
        guard streams[key]?.closeSent == false else { return }
        streams[key]!.closeSent = true
        await perform(machine.closeChannel(key.conn, key.ch, reason: .none))
    }

    func pumpStream(_ key: ChannelKey) async {
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
}
