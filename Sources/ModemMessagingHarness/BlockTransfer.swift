import ModemCrypto
import ModemMessaging

/// The harness's own file transfer over any ``ModemMessaging/RecordSession``: the payload in blocks,
/// each verified by its SHA-256, resumed on a new session from the receiver's bitmap so that only
/// blocks not held are sent again. Records (harness-private kinds in the data-connection range):
///
/// - `0x2C OFFER` size u64 | blockSize u32 | sha256 32 (sender, first on every session)
/// - `0x2D HAVE` bitmap of verified blocks, bit i of byte i/8 (receiver's answer)
/// - `0x2E BLOCK` index u32 | sha256 32 | bytes
/// - `0x2F DONE` ok u8 (receiver: every block held and the whole payload's SHA-256 equal)
enum BlockRecords {
    static let offer: UInt8 = 0x2C
    static let have: UInt8 = 0x2D
    static let block: UInt8 = 0x2E
    static let done: UInt8 = 0x2F
}

/// How one session of a transfer ended for one side.
enum SessionOutcome: Sendable, Equatable {
    /// The transfer completed (sender: DONE received; receiver: DONE sent), with the verdict.
    case done(ok: Bool)
    /// The session ended first: resume on the next one.
    case interrupted(SessionEnd?)
}

private func be(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64(n - 1 - $0))) } }
private func read(_ b: ArraySlice<UInt8>, _ at: Int, _ n: Int) -> UInt64 {
    var v: UInt64 = 0
    for i in 0..<n { v = v << 8 | UInt64(b[b.startIndex + at + i]) }
    return v
}

/// The sending side: what it gave, per block how often (for `bytesResent`).
struct BlockSender: Sendable {
    let payload: [UInt8]
    let blockSize: Int
    let digest: [UInt8]
    private(set) var sends: [Int]

    init(payload: [UInt8], blockSize: Int) {
        self.payload = payload
        self.blockSize = blockSize
        digest = Array(SHA256Hasher.hash(payload))
        sends = Array(repeating: 0, count: max(1, (payload.count + blockSize - 1) / blockSize))
    }

    var blockCount: Int { sends.count }

    /// Payload bytes of blocks sent more than once (each extra send counts its block's bytes).
    var bytesResent: Int {
        sends.indices.reduce(0) { $0 + max(0, sends[$1] - 1) * range($1).count }
    }

    func range(_ i: Int) -> Range<Int> { i * blockSize ..< min(payload.count, (i + 1) * blockSize) }

    /// One session: offer, learn what the receiver holds, send the rest, wait for the verdict.
    mutating func run(over session: any RecordSession) async -> SessionOutcome {
        do {
            try await session.send(kind: BlockRecords.offer, body: be(UInt64(payload.count), 8) + be(UInt64(blockSize), 4) + digest)
            var held: [UInt8]?
            while held == nil {
                switch await session.receive() {
                case .record(BlockRecords.have, let body): held = body
                case .record(BlockRecords.done, let body): return .done(ok: body.first == 1)
                case .record, .peerClosing: continue
                case .ended(let end): return .interrupted(end)
                }
            }
            for i in 0..<blockCount where !(i / 8 < held!.count && held![i / 8] & (1 << (i % 8)) != 0) {
                let bytes = payload[range(i)]
                sends[i] += 1
                try await session.send(kind: BlockRecords.block, body: be(UInt64(i), 4) + Array(SHA256Hasher.hash(bytes)) + bytes)
            }
            while true {
                switch await session.receive() {
                case .record(BlockRecords.done, let body): return .done(ok: body.first == 1)
                case .record, .peerClosing: continue
                case .ended(let end): return .interrupted(end)
                }
            }
        } catch {
            if case .ended(let end) = error { return .interrupted(end) }
            return .interrupted(nil)
        }
    }
}

/// The receiving side: what was written (verified blocks only) and a bitmap of them.
struct BlockReceiver: Sendable {
    private(set) var written: [UInt8] = []
    private(set) var held: [Bool] = []
    private(set) var delivered = 0
    private(set) var blockSize = 0
    private(set) var expectedDigest: [UInt8] = []
    /// Blocks whose hash did not match (dropped, never written).
    private(set) var badBlocks = 0
    private let maximumSize: Int

    /// - Parameter maximumSize: the largest offer taken (bounded memory).
    init(maximumSize: Int) { self.maximumSize = maximumSize }

    var isComplete: Bool { !held.isEmpty && !held.contains(false) }

    private var bitmap: [UInt8] {
        var b = [UInt8](repeating: 0, count: (held.count + 7) / 8)
        for i in held.indices where held[i] { b[i / 8] |= 1 << (i % 8) }
        return b
    }

    /// One session: answer offers with what is held, take blocks, send the verdict when complete.
    /// - Parameter progress: called with the delivered byte count after each verified block.
    mutating func run(over session: any RecordSession, progress: @Sendable (Int) -> Void) async -> SessionOutcome {
        do {
            while true {
                switch await session.receive() {
                case .record(BlockRecords.offer, let body):
                    guard body.count == 44 else { continue }
                    let size = Int(read(body[...], 0, 8)), block = Int(read(body[...], 8, 4))
                    guard size <= maximumSize, block > 0 else {
                        try await session.send(kind: BlockRecords.done, body: [0])
                        return .done(ok: false)
                    }
                    if held.isEmpty || written.count != size || blockSize != block {
                        written = [UInt8](repeating: 0, count: size)
                        blockSize = block
                        held = Array(repeating: false, count: max(1, (size + block - 1) / block))
                        delivered = 0
                    }
                    expectedDigest = Array(body[12..<44])
                    try await session.send(kind: BlockRecords.have, body: bitmap)
                    if isComplete { return try await finish(session) }
                case .record(BlockRecords.block, let body):
                    guard body.count >= 36, !held.isEmpty else { continue }
                    let i = Int(read(body[...], 0, 4))
                    let bytes = body[36...]
                    guard i < held.count else { continue }
                    let start = i * blockSize, end = min(written.count, start + blockSize)
                    guard bytes.count == end - start, Array(SHA256Hasher.hash(bytes)) == Array(body[4..<36]) else {
                        badBlocks += 1
                        continue
                    }
                    if !held[i] {
                        written.replaceSubrange(start..<end, with: bytes)
                        held[i] = true
                        delivered += bytes.count
                        progress(delivered)
                    }
                    if isComplete { return try await finish(session) }
                case .record, .peerClosing:
                    continue
                case .ended(let end):
                    return .interrupted(end)
                }
            }
        } catch {
            if case .ended(let end) = error { return .interrupted(end) }
            return .interrupted(nil)
        }
    }

    private func finish(_ session: any RecordSession) async throws(SessionSendError) -> SessionOutcome {
        let ok = Array(SHA256Hasher.hash(written)) == expectedDigest
        try await session.send(kind: BlockRecords.done, body: [ok ? 1 : 0])
        return .done(ok: ok)
    }
}
