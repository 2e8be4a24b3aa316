#if canImport(Glibc)
import Glibc
#endif
import ModemCrypto
import ModemMessaging
import ModemRuntime

/// What the peer offers, as magic-wormhole's file-transfer protocol (v1) describes it.
public enum WormholeOffer: Sendable, Equatable {
    /// A text message.
    case text(String)
    /// A file: its name as offered and its size in bytes.
    case file(name: String, size: UInt64)
    /// A folder as a zip file: its name, the zip's size, the bytes and files inside.
    case directory(name: String, zipSize: UInt64, bytes: UInt64, files: UInt64)
}

/// What a receive brought.
public enum WormholeReceived: Sendable, Equatable {
    /// A text message.
    case text(String)
    /// A file, stored under `name` in the folder, with its SHA-256.
    case file(name: String, size: UInt64, sha256: [UInt8])
    /// A folder, stored under `name`, with the number of files and bytes unpacked.
    case directory(name: String, files: Int, bytes: UInt64)
}

/// How a send or receive goes about its transit connection.
public struct WormholeTransitOptions: Sendable {
    /// Our transit relays (`--transit-helper`).
    public var relays: [TransitHint]
    /// Whether to listen for direct connections (false: `--no-listen`, only outgoing routes).
    public var listen: Bool
    /// Hang guard for making the connection, seconds.
    public var timeout: Double
    /// The clock of the transit deadlines (the connection's, each route's, waiting for the last
    /// record); a test passes a manual one.
    public var clock: TimerClock
    /// Creates options.
    public init(relays: [TransitHint] = [], listen: Bool = true, timeout: Double = 120, clock: TimerClock = .continuous) {
        self.relays = relays
        self.listen = listen
        self.timeout = timeout
        self.clock = clock
    }
}

/// magic-wormhole's file-transfer protocol, version 1, over an established ``Wormhole``: the sender
/// offers a text, a file or a folder (as a zip); the receiver answers; for files both send their
/// transit hints, connect (``TransitConnector``), and the bytes go as encrypted records, the
/// receiver acknowledging the whole with its SHA-256.
public enum WormholeTransfer {
    /// The application id of the file transfer (what stock `wormhole send` uses).
    public static let appID = "lothar.com/wormhole/text-or-file-xfer"
    /// The purpose of the transit key.
    public static let transitPurpose = appID + "/transit-key"
    /// Bytes per record sent.
    static let recordBytes = 65_536

    /// Progress: bytes done and the total.
    public typealias Progress = @Sendable (UInt64, UInt64) -> Void

    static func transitKey(_ w: Wormhole) throws(WormholeError) -> [UInt8] {
        guard let k = w.deriveKey(purpose: transitPurpose) else { throw WormholeError(.local, "no key yet") }
        return k
    }

    /// Sends a text message and waits for the receiver's acknowledgement.
    public static func sendText(_ text: String, over w: Wormhole) async throws(WormholeError) {
        try await w.send(["offer": ["message": .string(text)]])
        while true {
            let m = try await w.receiveJSON()
            if let e = m["error"]?.string { throw WormholeError(.peer, "the receiver refused: \(printableText(e))") }
            if let a = m["answer"] {
                guard a["message_ack"]?.string == "ok" else { throw WormholeError(.peer, "the receiver did not acknowledge the text") }
                return
            }
        }
    }

    /// Sends the file at `path` (offered under `name`, or the path's last component); a folder is
    /// sent as a zip of its files. Returns once the receiver confirmed the SHA-256.
    public static func sendFile(path: String, as name: String? = nil, over w: Wormhole, transit: WormholeTransitOptions,
                                progress: Progress? = nil) async throws(WormholeError) {
        var st = stat()
        guard stat(path, &st) == 0 else { throw WormholeError(.local, "\(path): \(String(cString: strerror(errno)))") }
        let base = name ?? String(path.split(separator: "/").last ?? Substring(path))
        let isFolder = (st.st_mode & S_IFMT) == S_IFDIR
        var zip: ZipWriter.Result?
        if isFolder {
            zip = try ZipWriter.write(folder: path)
        }
        defer { if let zip { unlink(zip.path) } }
        let source = zip?.path ?? path
        let fd = open(source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw WormholeError(.local, "\(source): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var fst = stat()
        fstat(fd, &fst)
        let size = UInt64(fst.st_size)
        let connector = try TransitConnector(role: .sender, transitKey: transitKey(w), relays: transit.relays, listen: transit.listen, clock: transit.clock)
        try await w.send(["transit": connector.hints.message])
        let offer: JSONValue = if let zip {
            ["directory": ["mode": "zipfile/deflated", "dirname": .string(base), "zipsize": .number(Double(size)),
                           "numbytes": .number(Double(zip.bytes)), "numfiles": .number(Double(zip.files))]]
        } else {
            ["file": ["filename": .string(base), "filesize": .number(Double(size))]]
        }
        try await w.send(["offer": offer])
        var peer: TransitHints?
        while true {
            let m = try await w.receiveJSON()
            if let e = m["error"]?.string { throw WormholeError(.peer, "the receiver refused: \(printableText(e))") }
            if let t = m["transit"] { peer = TransitHints(message: t) }
            if let a = m["answer"] {
                guard a["file_ack"]?.string == "ok" else { throw WormholeError(.peer, "the receiver did not accept the file") }
                break
            }
        }
        guard let peer else { throw WormholeError(.peer, "the receiver sent no transit hints") }
        let connection = try await connector.connect(to: peer, timeout: transit.timeout)
        let records = TransitRecords(connection, keys: connector.keys, role: .sender)
        defer { records.close() }
        var hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: recordBytes)
        var done: UInt64 = 0
        while done < size {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, Int(size - done))) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw WormholeError(.local, "\(source): read failed or the file shrank") }
            let chunk = Array(buffer[0..<n])
            hasher.update(chunk)
            try await records.send(chunk)
            done += UInt64(n)
            progress?(done, size)
        }
        guard let ackBytes = try await records.receive(deadline: transit.clock.deadline(after: 300)), let ack = JSONValue.parse(ackBytes) else {
            throw WormholeError(.peer, "the receiver closed without confirming the file")
        }
        guard ack["ack"]?.string == "ok" else { throw WormholeError(.peer, "the receiver did not confirm the file") }
        if let theirs = ack["sha256"]?.string, theirs.lowercased() != Hex.encode(hasher.finalize()) {
            throw WormholeError(.peer, "the receiver's SHA-256 differs: the file was changed on the way")
        }
        _ = connection
    }
}
