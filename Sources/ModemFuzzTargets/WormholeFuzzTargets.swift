import ModemWormhole

/// Targets for the magic-wormhole client: what a rendezvous server, a transit peer and a sender send.
enum WormholeFuzzTargets {
    static let all: [FuzzTarget] = [webSocketFrames, wormholeMessages, zipArchive]

    /// Bytes from a WebSocket server, fed in the chunks of ``FuzzChunks``: frames cut out until an
    /// error; every frame re-encodes (unmasked) to bytes that decode to itself.
    static let webSocketFrames = FuzzTarget(
        name: "websocket-frames",
        summary: "WebSocketFrameDecoder fed in chunks; each frame re-encoded and decoded again",
        seeds: {
            let text = WebSocketFrame(fin: true, opcode: 1, payload: Array(#"{"type": "welcome", "welcome": {}}"#.utf8)).encoded(mask: nil)
            let ping = WebSocketFrame(fin: true, opcode: 9, payload: [1, 2]).encoded(mask: [9, 8, 7, 6])
            let long = WebSocketFrame(fin: false, opcode: 2, payload: [UInt8](repeating: 0x61, count: 300)).encoded(mask: nil)
                + WebSocketFrame(fin: true, opcode: 0, payload: [0x62]).encoded(mask: nil)
            return [(name: "text", bytes: FuzzChunks.join([text])), (name: "ping-then-text", bytes: FuzzChunks.join([ping, Array(text.prefix(5)), Array(text.dropFirst(5))])),
                    (name: "fragmented", bytes: FuzzChunks.join([long]))]
        },
        run: { input in
            var decoder = WebSocketFrameDecoder(maximumPayload: 1 << 16)
            for chunk in FuzzChunks.split(input) {
                decoder.feed(chunk)
                while true {
                    guard let frame = try? decoder.next() else { return }
                    var again = WebSocketFrameDecoder(maximumPayload: 1 << 16)
                    again.feed(frame.encoded(mask: nil))
                    precondition((try? again.next()) == frame, "websocket: a frame does not decode back from its encoding")
                }
            }
        }
    )

    /// One message as a peer or server would send it: a JSON document read as a transit message and
    /// an offer, a code, a relay URL and a transit helper made from its text, and (for 33 bytes and up)
    /// a SPAKE2 message finished against a fixed side.
    static let wormholeMessages = FuzzTarget(
        name: "wormhole-messages",
        summary: "JSONValue.parse, TransitHints(message:), WormholeCode, WebSocketURL, TransitHint(helper:), SPAKE2Symmetric.finish",
        seeds: {
            [(name: "transit", bytes: Array(#"{"transit": {"abilities-v1": [{"type": "direct-tcp-v1"}], "hints-v1": [{"type": "direct-tcp-v1", "hostname": "192.0.2.1", "port": 4001, "priority": 0.0}, {"type": "relay-v1", "hints": [{"type": "direct-tcp-v1", "hostname": "relay", "port": 4001}]}]}}"#.utf8)),
             (name: "offer", bytes: Array(#"{"offer": {"file": {"filename": "../x", "filesize": 1048576}}}"#.utf8)),
             (name: "code", bytes: Array("7-guitarist-revenge".utf8)),
             (name: "url", bytes: Array("ws://[::1]:4000/wormhole/v1".utf8))]
        },
        run: { input in
            if let v = JSONValue.parse(input) {
                _ = TransitHints(message: v["transit"] ?? v)
                _ = v["offer"]?["file"]?["filesize"]?.count
                precondition(JSONValue.parse(v.text) != nil, "wormhole: a parsed JSON value does not parse back from its text")
            }
            let text = String(decoding: input, as: UTF8.self)
            _ = try? WormholeCode(text)
            _ = try? WebSocketURL(text)
            _ = try? TransitHint(helper: text)
            if input.count >= 33, let side = try? SPAKE2Symmetric(password: Array("1-a-b".utf8), identity: [], entropy: [UInt8](repeating: 7, count: 64)) {
                _ = try? side.finish(Array(input.prefix(33)))
            }
        }
    )

    /// A zip as a hostile sender would make it: a small archive, one stored and one deflated entry.
    static func zipSeed(deflated: Bool) -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
        let plain = Array("hello hello hello hello\n".utf8)
        // The same text as raw deflate (zlib level 9), and its CRC-32.
        let packed: [UInt8] = [203, 72, 205, 201, 201, 87, 200, 64, 39, 185, 0]
        let crc = 0x0B59_8800
        let entries: [(String, Int, [UInt8])] = deflated ? [("dir/", 0, []), ("dir/a.txt", 8, packed)] : [("a.txt", 0, plain)]
        var out: [UInt8] = [], central: [UInt8] = []
        for (name, method, data) in entries {
            let n = Array(name.utf8), here = out.count
            let (c, size) = data.isEmpty ? (0, 0) : (crc, plain.count)
            out += le32(0x0403_4b50) + le16(20) + le16(0x800) + le16(method) + le16(0) + le16(0x21) + le32(c)
            out += le32(data.count) + le32(size) + le16(n.count) + le16(0) + n + data
            central += le32(0x0201_4b50) + le16(0x314) + le16(20) + le16(0x800) + le16(method) + le16(0) + le16(0x21) + le32(c)
            central += le32(data.count) + le32(size) + le16(n.count) + le16(0) + le16(0) + le16(0) + le16(0)
            central += le32(0o644 << 16) + le32(here) + n
        }
        let cd = out.count
        return out + central + le32(0x0605_4b50) + le16(0) + le16(0) + le16(entries.count) + le16(entries.count)
            + le32(central.count) + le32(cd) + le16(0)
    }

    /// A received folder's zip, checked as the receiver unpacks it (``ZipReader/verify(archive:limits:)``:
    /// the directory, the bounds of ``ZipLimits``, every entry inflated in pieces with its size and
    /// CRC-32) but into nothing, under small bounds so an input cannot make a run slow.
    static let zipArchive = FuzzTarget(
        name: "zip-archive",
        summary: "ZipReader.verify: a folder's zip with its bounds (entries, bytes, ratio, overlap), inflated and checked",
        seeds: { [(name: "stored", bytes: zipSeed(deflated: false)), (name: "deflated", bytes: zipSeed(deflated: true))] },
        run: { input in
            let limits = ZipLimits(maximumEntries: 4096, maximumEntryBytes: 1 << 20, maximumTotalBytes: 4 << 20, maximumRatio: 200)
            if let (files, bytes) = try? ZipReader.verify(archive: input, limits: limits) {
                precondition(files <= limits.maximumEntries && bytes <= limits.maximumTotalBytes,
                             "zip: an archive past its bounds was accepted")
            }
        }
    )
}
