/// The data-connection API's names (Spark's media delegate and connection callbacks) over ``DataConnections``'s
/// events: implement what you need, then call ``DataConnections/deliverEvents(to:)``. Every method has
/// an empty default.
public protocol DataConnectionDelegate: AnyObject, Sendable {
    /// The peer offers a connection (seed: `incomingDataConnectionOffered`); answer with
    /// ``DataConnections/accept(_:)`` or ``DataConnections/decline(_:reason:)``.
    func incomingDataConnectionOffered(_ connection: ConnectionID, metadata: [UInt8]) async
    /// The peer accepted our offer (seed: `dataConnectionAccepted`).
    func dataConnectionAccepted(_ connection: ConnectionID) async
    /// The peer declined our offer.
    func dataConnectionDeclined(_ connection: ConnectionID, reason: DataReason) async
    /// The connection is usable on both sides.
    func dataConnectionConnected(_ connection: ConnectionID) async
    /// The connection ended (seed: `dataConnectionEnded`).
    func dataConnectionEnded(_ connection: ConnectionID, reason: DataReason) async
    /// Stream data, or blob progress and completion (seed: `dataAvailableCallback`): for blobs `done`
    /// is true once with the whole verified data, earlier calls carry progress and no data.
    func dataAvailable(_ connection: ConnectionID, channel: ChannelID, data: [UInt8], progress: (UInt64, UInt64)?, done: Bool) async
    /// File progress and completion (seed: `fileAvailableCallback`): `file` is set once, when done.
    func fileAvailable(_ connection: ConnectionID, channel: ChannelID, file: ReceivedFile?, progress: (UInt64, UInt64)?) async
    /// An incoming channel was refused or failed; `detail` names a local cause (see ``DataEvent/channelFailed(_:_:name:_:detail:)``).
    func channelFailed(_ connection: ConnectionID, channel: ChannelID, name: String, reason: DataReason, detail: String?) async
    /// The session ended.
    func sessionEnded(_ end: SessionEnd) async
}

public extension DataConnectionDelegate {
    func incomingDataConnectionOffered(_ connection: ConnectionID, metadata: [UInt8]) async {}
    func dataConnectionAccepted(_ connection: ConnectionID) async {}
    func dataConnectionDeclined(_ connection: ConnectionID, reason: DataReason) async {}
    func dataConnectionConnected(_ connection: ConnectionID) async {}
    func dataConnectionEnded(_ connection: ConnectionID, reason: DataReason) async {}
    func dataAvailable(_ connection: ConnectionID, channel: ChannelID, data: [UInt8], progress: (UInt64, UInt64)?, done: Bool) async {}
    func fileAvailable(_ connection: ConnectionID, channel: ChannelID, file: ReceivedFile?, progress: (UInt64, UInt64)?) async {}
    func channelFailed(_ connection: ConnectionID, channel: ChannelID, name: String, reason: DataReason, detail: String?) async {}
    func sessionEnded(_ end: SessionEnd) async {}
}

public extension DataConnections {
    /// Reads ``events`` and calls the delegate for each, until the session ends. Use either this or
    /// ``events``, not both.
    func deliverEvents(to delegate: any DataConnectionDelegate) async {
        var incomingKinds: [ChannelID: Bool] = [:]   // true: file
        for await event in events {
            switch event {
            case .offered(let id, let metadata): await delegate.incomingDataConnectionOffered(id, metadata: metadata)
            case .refused(let id, let reason): await delegate.dataConnectionEnded(id, reason: reason)
            case .accepted(let id): await delegate.dataConnectionAccepted(id)
            case .declined(let id, let reason): await delegate.dataConnectionDeclined(id, reason: reason)
            case .connected(let id): await delegate.dataConnectionConnected(id)
            case .ended(let id, let reason): await delegate.dataConnectionEnded(id, reason: reason)
            case .streamOpened: break
            case .streamData(let id, let ch, let bytes):
                await delegate.dataAvailable(id, channel: ch, data: bytes, progress: nil, done: false)
            case .streamClosed(let id, let ch, _):
                await delegate.dataAvailable(id, channel: ch, data: [], progress: nil, done: true)
            case .progress(let id, let ch, let bytes, let total):
                var isFile = incomingKinds[ch]
                if isFile == nil { isFile = isIncomingFile(id, ch) }
                if isFile == true {
                    incomingKinds[ch] = true
                    await delegate.fileAvailable(id, channel: ch, file: nil, progress: (bytes, total))
                } else {
                    incomingKinds[ch] = false
                    await delegate.dataAvailable(id, channel: ch, data: [], progress: (bytes, total), done: false)
                }
            case .blobReceived(let id, let ch, _, let data):
                await delegate.dataAvailable(id, channel: ch, data: data, progress: (UInt64(data.count), UInt64(data.count)), done: true)
            case .fileReceived(let id, let ch, let file):
                await delegate.fileAvailable(id, channel: ch, file: file, progress: (file.size, file.size))
            case .channelFailed(let id, let ch, let name, let reason, let detail):
                await delegate.channelFailed(id, channel: ch, name: name, reason: reason, detail: detail)
            case .peerProgress: break
            case .sessionEnded(let end): await delegate.sessionEnded(end)
            }
        }
    }

}
