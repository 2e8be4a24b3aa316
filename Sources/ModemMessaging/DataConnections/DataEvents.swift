/// What happens on the data connections of a session, in order, for the user of ``DataConnections``.
public enum DataEvent: Sendable, Equatable {
    /// The peer offers a connection with its metadata: answer with ``DataConnections/accept(_:)`` or
    /// ``DataConnections/decline(_:reason:)`` (seed: `incomingDataConnectionOffered`).
    case offered(ConnectionID, metadata: [UInt8])
    /// An offer was refused here without asking (metadata over 4096 bytes, too many connections).
    case refused(ConnectionID, DataReason)
    /// The peer accepted our offer (seed: `dataConnectionAccepted`).
    case accepted(ConnectionID)
    /// The peer declined our offer.
    case declined(ConnectionID, DataReason)
    /// Channels may now be opened on the connection (both sides).
    case connected(ConnectionID)
    /// The connection is over (seed: `dataConnectionEnded`).
    case ended(ConnectionID, DataReason)
    /// The peer opened a stream with a description.
    case streamOpened(ConnectionID, ChannelID, description: String)
    /// A block of a peer's stream (seed: `dataAvailableCallback` for streams).
    case streamData(ConnectionID, ChannelID, [UInt8])
    /// The peer closed its stream.
    case streamClosed(ConnectionID, ChannelID, DataReason)
    /// An incoming blob or file has this many verified bytes of `total`.
    case progress(ConnectionID, ChannelID, bytes: UInt64, total: UInt64)
    /// An incoming blob is complete and verified (seed: `dataAvailableCallback`, `transferComplete`).
    case blobReceived(ConnectionID, ChannelID, description: String, data: [UInt8])
    /// An incoming file is complete, verified and renamed into place (seed: `fileAvailableCallback`).
    case fileReceived(ConnectionID, ChannelID, ReceivedFile)
    /// An incoming blob or file was refused or failed; nothing unverified was kept under its name.
    /// `detail` says what failed here when the cause was local (`.ioError`: the path and the system's
    /// reason, e.g. "permission denied" or "no space left on device"); the peer only learns the reason.
    case channelFailed(ConnectionID, ChannelID, name: String, DataReason, detail: String?)
    /// The receiver of one of our files or blobs reports its verified bytes.
    case peerProgress(ConnectionID, ChannelID, bytes: UInt64)
    /// The session ended; no more events follow.
    case sessionEnded(SessionEnd)
}

/// A file received into the folder.
public struct ReceivedFile: Sendable, Equatable {
    /// The name it was stored under (cleaned, maybe with ` (2)`).
    public var name: String
    /// The name the peer gave.
    public var originalName: String
    /// The full path.
    public var path: String
    /// Its size in bytes.
    public var size: UInt64
    /// SHA-256 of the whole file (verified against the sender's).
    public var sha256: [UInt8]
    /// Seconds from the channel's opening to the rename.
    public var seconds: Double
    /// Blocks that were already here from an interrupted earlier transfer.
    public var resumedBlocks: Int
}

/// A file sent and confirmed by the receiver (its CH-RESULT ok).
public struct SentFile: Sendable, Equatable {
    /// The name it was offered under.
    public var name: String
    /// Bytes in the file.
    public var size: UInt64
    /// SHA-256 of the file.
    public var sha256: [UInt8]
    /// Blocks the receiver already had (resume).
    public var skippedBlocks: Int
    /// Blocks sent in this session.
    public var sentBlocks: Int
    /// Payload bytes sent in this session.
    public var sentBytes: UInt64
}

/// An incoming file the user may accept or decline (before anything is written).
public struct FileOffer: Sendable, Equatable {
    public var connection: ConnectionID
    public var channel: ChannelID
    /// The cleaned name it will be stored under (before collision numbering).
    public var name: String
    /// The name the peer gave.
    public var originalName: String
    public var size: UInt64
    public var description: String
    /// Who sends it: ask about it by ``PeerIdentity/trustedName`` (the description shows the claim beside it).
    public var peer: PeerIdentity
}

/// Settings of ``DataConnections``.
public struct DataConfiguration: Sendable {
    /// Where incoming files go; nil refuses incoming files.
    public var folder: ReceiveFolder?
    /// Block size for files and blobs we send (1 MiB for streams such as TCP; 16,256 B on links).
    public var blockSize: Int
    /// The largest DATA payload per record (at most the session's record limit less 47 bytes).
    public var recordPayload: Int
    /// The largest incoming blob held in memory.
    public var maximumBlob: Int
    /// Accept offered connections without asking (the `receive` CLI does).
    public var autoAcceptConnections: Bool
    /// Asked for each incoming file; nil accepts every file (after the free-space check).
    public var fileDecider: (@Sendable (FileOffer) async -> Bool)?
    /// Free bytes that must remain beyond the file's size.
    public var freeSpaceMargin: UInt64
    /// A PROGRESS record goes back to the sender every this many blocks.
    public var progressEveryBlocks: Int

    /// Settings for a byte-stream session (TCP): 1 MiB blocks in records of 64,000 bytes.
    public init(folder: ReceiveFolder? = nil, blockSize: Int = 1 << 20, recordPayload: Int = 64_000,
                maximumBlob: Int = 16 << 20, autoAcceptConnections: Bool = false,
                fileDecider: (@Sendable (FileOffer) async -> Bool)? = nil, freeSpaceMargin: UInt64 = 1 << 20,
                progressEveryBlocks: Int = 64) {
        self.folder = folder
        self.blockSize = max(1, blockSize)
        self.recordPayload = max(1, recordPayload)
        self.maximumBlob = maximumBlob
        self.autoAcceptConnections = autoAcceptConnections
        self.fileDecider = fileDecider
        self.freeSpaceMargin = freeSpaceMargin
        self.progressEveryBlocks = max(1, progressEveryBlocks)
    }
}
