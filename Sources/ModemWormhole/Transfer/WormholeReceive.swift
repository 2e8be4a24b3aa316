#if canImport(Glibc)
import Glibc
#endif
import ModemCrypto
import ModemMessaging
import ModemRuntime

extension WormholeTransfer {
    /// How the receiver treats offers.
    public struct ReceiveOptions: Sendable {
        /// Where files and folders go (nil: texts only; any file is refused).
        public var folder: WormholeFolder?
        /// Refuse anything but text.
        public var textOnly: Bool
        /// Asked for each file or folder (true accepts); nil accepts everything.
        public var decide: (@Sendable (WormholeOffer) async -> Bool)?
        /// Bounds on unpacking a folder (a zip bomb is refused at the first it passes; see ``ZipLimits``).
        public var zipLimits: ZipLimits
        /// Creates options.
        public init(folder: WormholeFolder?, textOnly: Bool = false, decide: (@Sendable (WormholeOffer) async -> Bool)? = nil,
                    zipLimits: ZipLimits = ZipLimits()) {
            self.folder = folder
            self.textOnly = textOnly
            self.decide = decide
            self.zipLimits = zipLimits
        }
    }

    /// Receives one offer: a text is returned; a file or folder, once accepted, comes over transit,
    /// is checked (its exact size; a folder's zip unpacked with every path checked) and put in place.
    /// - Throws: ``WormholeError``: `.declined` when `decide` said no, `.peer` for another refusal sent
    ///   to the peer (`transfer rejected`) or an offer not of the protocol; `.local` for files that
    ///   cannot be written.
    public static func receive(over w: Wormhole, options: ReceiveOptions, transit: WormholeTransitOptions,
                               offered: (@Sendable (WormholeOffer) -> Void)? = nil,
                               progress: Progress? = nil) async throws(WormholeError) -> WormholeReceived {
        var connector: TransitConnector?
        var peer: TransitHints?
        while true {
            let m = try await w.receiveJSON()
            if let e = m["error"]?.string { throw WormholeError(.peer, "the sender gave up: \(printableText(e))") }
            if let t = m["transit"], connector == nil {
                peer = TransitHints(message: t)
                let c = try TransitConnector(role: .receiver, transitKey: transitKey(w), relays: transit.relays, listen: transit.listen, clock: transit.clock)
                connector = c
                try await w.send(["transit": c.hints.message])
            }
            guard let o = m["offer"] else { continue }
            if let text = o["message"]?.string {
                offered?(.text(text))
                try await w.send(["answer": ["message_ack": "ok"]])
                return .text(text)
            }
            let offer: WormholeOffer
            if let f = o["file"], let name = f["filename"]?.string, let size = f["filesize"]?.count {
                offer = .file(name: name, size: size)
            } else if let d = o["directory"], let name = d["dirname"]?.string, let zipSize = d["zipsize"]?.count,
                      d["mode"]?.string?.hasPrefix("zipfile") == true {
                offer = .directory(name: name, zipSize: zipSize, bytes: d["numbytes"]?.count ?? 0, files: d["numfiles"]?.count ?? 0)
            } else {
                try await w.send(["error": "unknown offer type"])
                throw WormholeError(.peer, "the sender offers something this receiver does not know")
            }
            offered?(offer)
            return try await receive(offer, over: w, options: options, transit: transit, connector: connector, peer: peer, progress: progress)
        }
    }

    private static func refuse(_ w: Wormhole, _ why: String, kind: WormholeError.Kind = .peer) async throws(WormholeError) -> Never {
        try await w.send(["error": "transfer rejected"])
        throw WormholeError(kind, why)
    }

    private static func receive(_ offer: WormholeOffer, over w: Wormhole, options: ReceiveOptions, transit: WormholeTransitOptions,
                                connector: TransitConnector?, peer: TransitHints?, progress: Progress?) async throws(WormholeError) -> WormholeReceived {
        let (name, size, isFolder): (String, UInt64, Bool) = switch offer {
        case .file(let n, let s): (n, s, false)
        case .directory(let n, let z, _, _): (n, z, true)
        case .text: ("", 0, false)
        }
        if options.textOnly { try await refuse(w, "refused \(isFolder ? "a folder" : "a file") (--text-only)") }
        guard let folder = options.folder else { try await refuse(w, "refused a file: no folder to store it in") }
        let cleaned: String
        do { cleaned = try NameCleaner.clean(name) } catch { try await refuse(w, "refused: \(error.description)") }
        if let free = folder.freeBytes(), free < size {
            try await refuse(w, "refused \(printableText(cleaned)): \(size) bytes, \(free) free in \(folder.path)")
        }
        if case .directory(_, let zipSize, let bytes, let files) = offer {
            // What the offer declares is checked now (the archive itself is checked again as it unpacks).
            let limits = options.zipLimits
            if files > UInt64(limits.maximumEntries) {
                try await refuse(w, "refused \(printableText(cleaned)): \(files) files, more than the limit of \(limits.maximumEntries)")
            }
            if bytes > limits.maximumTotalBytes {
                try await refuse(w, "refused \(printableText(cleaned)): it unpacks to \(bytes) bytes, more than the limit of \(limits.maximumTotalBytes)")
            }
            if bytes > limits.ratioBound(archiveBytes: zipSize) {
                try await refuse(w, "refused \(printableText(cleaned)): \(zipSize) bytes that unpack to \(bytes), over the limit of \(limits.maximumRatio) bytes per byte (a zip bomb)")
            }
        }
        if let decide = options.decide, await !decide(offer) { try await refuse(w, "declined \(printableText(cleaned))", kind: .declined) }
        guard let connector, let peer else { try await refuse(w, "the sender sent no transit hints") }
        let (fd, partial) = try folder.createPartial(for: cleaned)
        var kept = false
        defer {
            close(fd)
            if !kept { folder.removePartial(partial) }
        }
        try await w.send(["answer": ["file_ack": "ok"]])
        let connection = try await connector.connect(to: peer, timeout: transit.timeout)
        let records = TransitRecords(connection, keys: connector.keys, role: .receiver)
        defer { records.close() }
        var hasher = SHA256Hasher()
        var done: UInt64 = 0
        while done < size {
            guard let record = try await records.receive(deadline: transit.clock.deadline(after: 300)) else {
                throw WormholeError(.peer, "the sender closed the connection after \(done) of \(size) bytes")
            }
            guard UInt64(record.count) <= size - done else { throw WormholeError(.peer, "the sender sent more than the \(size) bytes offered") }
            hasher.update(record)
            var off = 0
            while off < record.count {
                let n = record.withUnsafeBytes { write(fd, $0.baseAddress! + off, record.count - off) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw WormholeError(.local, "writing into \(folder.path): \(String(cString: strerror(errno)))") }
                off += n
            }
            done += UInt64(record.count)
            progress?(done, size)
        }
        guard fsync(fd) == 0 else { throw WormholeError(.local, "writing into \(folder.path): \(String(cString: strerror(errno)))") }
        let digest = hasher.finalize()
        let result: WormholeReceived
        if isFolder {
            let unpacked = try ZipReader.unpack(folder: folder, zipPartial: partial, name: cleaned, limits: options.zipLimits)
            result = .directory(name: unpacked.name, files: unpacked.files, bytes: unpacked.bytes)
        } else {
            fchmod(fd, 0o644)
            let final = try folder.putInPlace(partial: partial, cleaned: cleaned, isFolder: false)
            kept = true
            result = .file(name: final, size: size, sha256: digest)
        }
        try await records.send(JSONValue.object(["ack": "ok", "sha256": .string(Hex.encode(digest))]).bytes)
        // The sender closes once it has the ack; wait for that (bounded), so the ack is not cut off.
        _ = try? await records.receive(deadline: transit.clock.deadline(after: 10))
        return result
    }
}
