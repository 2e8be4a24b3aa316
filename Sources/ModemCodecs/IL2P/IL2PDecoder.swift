/// Finds IL2P frames in a stream of line bits (as demodulated: no NRZI, no G3RUH descrambling),
/// corrects them and returns the AX.25 frames inside.
///
/// Every bit is compared with the sync word 0xF15E48 and with its inverse (a receiver of either
/// polarity: Dire Wolf's `-I` and `-i`, a radio that inverts), each allowed ``syncTolerance`` bits
/// wrong. After a match the header's 15 bytes are gathered and corrected (two check bytes: one wrong
/// byte), then as many payload bytes as the header announces; each payload block is corrected with
/// errors alone first, then (blocks of 6 or more check bytes) with the bytes the demodulator was least
/// sure of as erasures (each costs half what an error does) when errors alone are too many. Several frames may be gathered at once, so
/// a sync word matched by chance in noise cannot hide a real one behind it.
///
/// IL2P (as Dire Wolf 1.8 sends it) has no frame check sequence: a frame is as good as its code says.
/// The header's type 1 callsigns must be A-Z and 0-9 (what a miscorrected header usually breaks), and
/// a caller should judge frames whose blocks needed erasures (``IL2PReception/usedErasures``) or whose
/// small blocks (2 or 4 check bytes) were corrected at all, as a receiver judges repaired AX.25 frames.
///
/// The caller passes a `stamp` with every bit (e.g. its sample index); receptions report the stamps of
/// the sync word's and the frame's last bits.
public struct IL2PDecoder: Sendable {
    /// Bits of the 24-bit sync word that may be wrong for it to match (Dire Wolf allows 1).
    public let syncTolerance: Int
    /// A code with 2 or 4 check bytes (the header's; small payload blocks' without max FEC) corrects one
    /// or two bytes and checks little beyond them: a 63-byte block damaged in many bytes lies within reach
    /// of some codeword about a third of the time and is "corrected" into it. Such a payload block's
    /// correction is taken only when every byte it changed is among this many of the block's least
    /// confident bytes (fewer bytes were less sure than it), where a real error usually lies and a
    /// miscorrection's byte, anywhere in the block, seldom does.
    public let smallBlockSuspects: Int
    /// The same for the header's 15 bytes (a wrong header usually announces a length or callsign no
    /// frame has, which is checked too).
    public let headerSuspects: Int
    /// Sync words matched (either polarity), including those that led to no header.
    public private(set) var syncsFound = 0
    /// Of those, headers that their code could not correct, or that announce nothing a frame can be.
    public private(set) var headersRejected = 0
    /// Frames with a good header whose payload was beyond correction.
    public private(set) var payloadsUncorrectable = 0

    private var shift: UInt32 = 0
    private var bitsSeen = 0
    private var active: [Gathering] = []

    /// How many frames may be gathered at the same time.
    static let maximumGatherings = 4

    private struct Gathering: Sendable {
        var inverted: Bool
        var syncErrors: Int
        var syncStamp: Int
        var byte: UInt8 = 0
        var bitCount = 0
        var byteConfidence: Float = .infinity
        var bytes: [UInt8] = []
        var confidence: [Float] = []
        var header: IL2PHeader?
        var headerCorrected = 0
        var needed = 15
    }

    /// Creates a decoder.
    /// - Parameters:
    ///   - syncTolerance: bits of the sync word that may be wrong, 0...3 (default 1, as Dire
    ///     Wolf; each more multiplies the chance matches in noise by about 12).
    ///   - smallBlockSuspects: see ``smallBlockSuspects``, 1...255 (default 3; 255 takes every correction).
    ///   - headerSuspects: see ``headerSuspects``, 1...15 (default 8; 15 takes every correction).
    ///
    /// The defaults: on gen_packets' noise files (`-I 0`/`-i 0`, 2 check bytes per 61-byte block, at 300,
    /// 1200 and 9600 baud: six files of 100 frames) taking every correction delivered 4 frames never sent
    /// (atest 1.8 delivers 3-5 per file); 3 and 8 deliver none and lose 2 true frames of 473; on the
    /// `-I 1`/`-i 1` files they lose none. 2 for payload blocks lost 1-3 more per file; 2 or 4 for the
    /// header, one on each `-i 1` file (docs/packet-radio.md, "IL2P").
    public init(syncTolerance: Int = 1, smallBlockSuspects: Int = 3, headerSuspects: Int = 8) {
        precondition((0...3).contains(syncTolerance), "IL2PDecoder syncTolerance must be 0...3, got \(syncTolerance)")
        precondition((1...255).contains(smallBlockSuspects), "IL2PDecoder smallBlockSuspects must be 1...255, got \(smallBlockSuspects)")
        precondition((1...15).contains(headerSuspects), "IL2PDecoder headerSuspects must be 1...15, got \(headerSuspects)")
        self.syncTolerance = syncTolerance
        self.smallBlockSuspects = smallBlockSuspects
        self.headerSuspects = headerSuspects
    }

    /// The stamp of the earliest sync word whose frame is still being gathered (a frame found later
    /// will end after this), or nil.
    public var oldestPendingStamp: Int? { active.map(\.syncStamp).min() }

    /// Takes one line bit.
    /// - Parameters:
    ///   - bit: the bit as demodulated (mark or positive: true).
    ///   - confidence: how sure the demodulator is of it (any scale where larger is surer; used to
    ///     choose erasures).
    ///   - stamp: where the bit is (e.g. its sample index), reported back.
    /// - Returns: a frame completed with this bit (decoded or beyond correction), or nil.
    public mutating func decode(_ bit: Bool, confidence: Float = 1, stamp: Int = 0) -> IL2PReception? {
        bitsSeen += 1
        shift = (shift << 1 | (bit ? 1 : 0)) & 0xFF_FFFF
        var done: IL2PReception?
        var i = 0
        while i < active.count {
            // In place (a copy of the gathering would copy its bytes on every append).
            switch Self.advance(&active[i], bit: bit, confidence: confidence, headerSuspects: headerSuspects) {
            case .gathering:
                i += 1
            case .rejected:
                headersRejected += 1
                active.remove(at: i)
            case .complete:
                let g = active.remove(at: i)
                // Two frames ending on the same bit cannot both be real; keep the first.
                let r = finish(g, endStamp: stamp)
                if done == nil { done = r }
            }
        }
        if bitsSeen >= 24, active.count < Self.maximumGatherings {
            let errors = (shift ^ IL2PEncoder.syncWord).nonzeroBitCount
            if errors <= syncTolerance || 24 - errors <= syncTolerance {
                syncsFound += 1
                let inverted = errors > syncTolerance
                var g = Gathering(inverted: inverted, syncErrors: inverted ? 24 - errors : errors, syncStamp: stamp)
                g.bytes.reserveCapacity(64)
                g.confidence.reserveCapacity(64)
                active.append(g)
            }
        }
        return done
    }

    /// Forgets everything, as at creation (the counts too).
    public mutating func reset() {
        self = IL2PDecoder(syncTolerance: syncTolerance, smallBlockSuspects: smallBlockSuspects, headerSuspects: headerSuspects)
    }

    private enum Progress { case gathering, rejected, complete }

    /// Adds one bit to a gathering; reads the header once its 15 bytes are in.
    private static func advance(_ g: inout Gathering, bit: Bool, confidence: Float, headerSuspects: Int) -> Progress {
        g.byte = g.byte << 1 | ((bit != g.inverted) ? 1 : 0)
        g.byteConfidence = min(g.byteConfidence, confidence)
        g.bitCount += 1
        guard g.bitCount == 8 else { return .gathering }
        g.bytes.append(g.byte)
        g.confidence.append(g.byteConfidence)
        g.byte = 0
        g.bitCount = 0
        g.byteConfidence = .infinity
        if g.header == nil && g.bytes.count == 15 {
            guard readHeader(&g, suspects: headerSuspects) else { return .rejected }
        }
        return g.bytes.count == g.needed ? .complete : .gathering
    }

    /// Corrects and reads the header; false when it is beyond correction or announces nothing a frame
    /// can be (a type 0 payload shorter than an AX.25 frame, a type 1 callsign that is not one).
    private static func readHeader(_ g: inout Gathering, suspects: Int) -> Bool {
        var block = g.bytes
        guard case .corrected(let positions) = IL2PCodes.code(parityCount: IL2PHeader.parityCount).decode(&block),
              isBelievable(positions, confidence: g.confidence[...], suspects: suspects) else { return false }
        let header = IL2PHeader(bytes: IL2PScrambler.descramble(block[0..<IL2PHeader.byteCount]))
        // The callsigns and the type 0 length can be judged before the payload comes.
        guard IL2PFrameMapping.decode(header: header, payload: [UInt8](repeating: 0, count: header.payloadCount)) != nil else { return false }
        g.header = header
        g.headerCorrected = positions.count
        g.needed = 15 + header.payloadLayout.encodedCount
        return true
    }

    /// Whether every position changed is among the `suspects` least confident of the block
    /// (`confidence`: the block's bytes', indexed from its start index).
    private static func isBelievable(_ positions: [Int], confidence: ArraySlice<Float>, suspects: Int) -> Bool {
        positions.allSatisfy { p in
            let c = confidence[confidence.startIndex + p]
            return confidence.lazy.filter { $0 < c }.count < suspects
        }
    }

    /// Erasure counts tried, as fractions of a block's check bytes, after errors alone fail (those that
    /// leave at least 4 check bytes: none for blocks of 2 or 4).
    static let erasureShares: [Double] = [0.25, 0.5, 0.75]

    private mutating func finish(_ g: Gathering, endStamp: Int) -> IL2PReception {
        let header = g.header!
        let layout = header.payloadLayout
        var payload: [UInt8] = []
        payload.reserveCapacity(header.payloadCount)
        var corrected = g.headerCorrected, erasures = 0, usedErasures = false, smallBlockCorrected = false
        var offset = 15
        let code = layout.parityCount > 0 ? IL2PCodes.code(parityCount: layout.parityCount) : nil
        for size in layout.blockSizes {
            let n = size + layout.parityCount
            let received = Array(g.bytes[offset..<(offset + n)])
            let confidence = g.confidence[offset..<(offset + n)]
            let byConfidence = Array(0..<n).sorted { confidence[offset + $0] < confidence[offset + $1] }
            var counts: [Int] = [0]
            for share in Self.erasureShares {
                // At least 4 check bytes left for errors and for checking the result: with fewer, a wrong
                // block passes as one in 256 or so.
                let k = Int(Double(layout.parityCount) * share)
                if k > counts.last! && layout.parityCount - k >= 4 { counts.append(k) }
            }
            var fixed: [UInt8]?
            for k in counts {
                var block = received
                let erased = Array(byConfidence.prefix(k))
                guard case .corrected(let positions) = code!.decode(&block, erasures: erased),
                      layout.parityCount > 4 || Self.isBelievable(positions, confidence: confidence, suspects: smallBlockSuspects) else { continue }
                fixed = block
                corrected += positions.count
                if k > 0 { usedErasures = true; erasures += k }
                if !positions.isEmpty && layout.parityCount <= 4 { smallBlockCorrected = true }
                break
            }
            guard let fixed else {
                payloadsUncorrectable += 1
                return IL2PReception(frame: nil, header: header, correctedSymbols: nil, erasures: 0, usedErasures: false,
                                     smallBlockCorrected: false, inverted: g.inverted, syncErrors: g.syncErrors,
                                     syncStamp: g.syncStamp, endStamp: endStamp)
            }
            payload += IL2PScrambler.descramble(fixed[0..<size])
            offset += n
        }
        let frame = IL2PFrameMapping.decode(header: header, payload: payload)
        if frame == nil { payloadsUncorrectable += 1 }
        return IL2PReception(frame: frame, header: header, correctedSymbols: frame == nil ? nil : corrected, erasures: erasures,
                             usedErasures: usedErasures, smallBlockCorrected: smallBlockCorrected || (g.headerCorrected > 0),
                             inverted: g.inverted, syncErrors: g.syncErrors, syncStamp: g.syncStamp, endStamp: endStamp)
    }
}

/// An IL2P frame as ``IL2PDecoder`` found it.
public struct IL2PReception: Sendable {
    /// The AX.25 frame (bytes without FCS), or nil when the payload was beyond correction.
    public var frame: [UInt8]?
    /// The corrected header.
    public var header: IL2PHeader
    /// Bytes the Reed-Solomon codes changed in the header and the payload, or nil when beyond correction.
    public var correctedSymbols: Int?
    /// Bytes treated as erasures in the decodings that succeeded.
    public var erasures: Int
    /// Whether errors alone were too many in some block and erasures made the difference.
    public var usedErasures: Bool
    /// Whether a block with 2 or 4 check bytes (the header, or a small payload without max FEC) had
    /// bytes corrected: such a code corrects one or two bytes and checks little beyond them.
    public var smallBlockCorrected: Bool
    /// Whether the line's polarity was inverted (the sync word came as its complement).
    public var inverted: Bool
    /// Bits of the sync word that were wrong.
    public var syncErrors: Int
    /// The stamp of the sync word's last bit.
    public var syncStamp: Int
    /// The stamp of the frame's last bit.
    public var endStamp: Int

    /// Whether the frame was decoded.
    public var isDecoded: Bool { frame != nil }
}
