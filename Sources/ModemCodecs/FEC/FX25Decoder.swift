/// Finds FX.25 blocks in a stream of HDLC-level bits (after NRZI), corrects them and takes the AX.25
/// frames out.
///
/// Every bit is compared with the eleven correlation tags (a tag matches with up to
/// ``tagTolerance`` bits wrong); after a match the next block's bits are gathered, the Reed-Solomon
/// code corrects them, and an HDLC decoder reads the frames between the flags of the corrected data.
/// When errors alone are too many, the bytes the demodulator was least sure of are tried as erasures
/// (each erasure costs half what an error does). A frame is only delivered with a good FCS; a block
/// beyond correction gives no frame and is counted. Several blocks may be gathered at once, so a tag
/// matched by chance in noise cannot hide a real one behind it.
///
/// The caller passes a `stamp` with every bit (e.g. its sample index); blocks report the stamps of
/// their frames' last bits, so the frames can be placed on the air.
public struct FX25Decoder: Sendable {
    /// Bits that may differ from a tag for it to match (the tags are 32 or more apart).
    public let tagTolerance: Int
    /// Frame length limits handed to the inner HDLC decoder, in bytes with the FCS.
    public let minimumFrameLength: Int
    public let maximumFrameLength: Int

    /// Blocks found so far, corrected or not.
    public private(set) var blocksFound = 0
    /// Of those, the blocks beyond correction.
    public private(set) var blocksUncorrectable = 0

    private var shift: UInt64 = 0
    private var bitsSeen = 0
    private var active: [Gathering] = []
    private var confidenceHistory: UInt64 = 0

    /// How many blocks may be gathered at the same time.
    static let maximumGatherings = 4

    private struct Gathering: Sendable {
        var mode: FX25Mode
        var tagErrors: Int
        var bits: [Bool]
        var confidence: [Float]
        var stamps: [Int]
        var tagStamp: Int
    }

    /// Creates a decoder.
    /// - Parameters:
    ///   - tagTolerance: bits a correlation tag may have wrong, 0...15 (default 8).
    ///   - minimumFrameLength: shortest frame, FCS included (default AX.25's 17).
    ///   - maximumFrameLength: longest frame, FCS included (default 400).
    public init(tagTolerance: Int = 8, minimumFrameLength: Int = HDLCDecoder.ax25MinimumLength, maximumFrameLength: Int = 400) {
        precondition((0...15).contains(tagTolerance), "FX25Decoder tagTolerance must be 0...15, got \(tagTolerance)")
        self.tagTolerance = tagTolerance
        self.minimumFrameLength = minimumFrameLength
        self.maximumFrameLength = maximumFrameLength
    }

    /// The stamp of the earliest tag whose block is still being gathered (frames inside it will end
    /// after this), or nil.
    public var oldestPendingStamp: Int? { active.map(\.tagStamp).min() }

    /// Takes one bit.
    /// - Parameters:
    ///   - bit: the HDLC-level bit (after NRZI).
    ///   - confidence: how sure the demodulator is of it (any scale where larger is surer; used to
    ///     choose erasures).
    ///   - stamp: where the bit is (e.g. its sample index), reported back for frames.
    /// - Returns: a block completed with this bit, or nil.
    public mutating func decode(_ bit: Bool, confidence: Float = 1, stamp: Int = 0) -> FX25Block? {
        bitsSeen += 1
        shift = shift >> 1 | (bit ? 1 << 63 : 0)
        var done: FX25Block?
        var i = 0
        while i < active.count {
            active[i].bits.append(bit)
            active[i].confidence.append(confidence)
            active[i].stamps.append(stamp)
            if active[i].bits.count == active[i].mode.blockLength * 8 {
                let g = active.remove(at: i)
                let block = finish(g)
                // Two blocks ending on the same bit cannot both be real; keep the first.
                if done == nil { done = block }
                continue
            }
            i += 1
        }
        if bitsSeen >= 64, active.count < Self.maximumGatherings {
            for mode in FX25Mode.all {
                let errors = (shift ^ mode.tag).nonzeroBitCount
                if errors <= tagTolerance {
                    let n = mode.blockLength * 8
                    var g = Gathering(mode: mode, tagErrors: errors, bits: [], confidence: [], stamps: [], tagStamp: stamp)
                    g.bits.reserveCapacity(n); g.confidence.reserveCapacity(n); g.stamps.reserveCapacity(n)
                    active.append(g)
                    break
                }
            }
        }
        return done
    }

    /// Forgets everything, as at creation (the counts too).
    public mutating func reset() {
        self = FX25Decoder(tagTolerance: tagTolerance, minimumFrameLength: minimumFrameLength, maximumFrameLength: maximumFrameLength)
    }

    /// Erasure counts tried, as fractions of the check bytes, after errors alone fail.
    static let erasureShares: [Double] = [0.25, 0.5, 0.75]

    private mutating func finish(_ g: Gathering) -> FX25Block {
        blocksFound += 1
        let n = g.mode.blockLength
        var received = [UInt8](repeating: 0, count: n)
        var byteConfidence = [Float](repeating: .infinity, count: n)
        for (i, bit) in g.bits.enumerated() {
            if bit { received[i >> 3] |= 1 << UInt8(i & 7) }
            byteConfidence[i >> 3] = min(byteConfidence[i >> 3], g.confidence[i])
        }
        let code = g.mode.code
        let byConfidence = Array(0..<n).sorted { byteConfidence[$0] < byteConfidence[$1] }
        var attempts: [[Int]] = [[]]
        for share in Self.erasureShares { attempts.append(Array(byConfidence.prefix(Int(Double(code.parityCount) * share)))) }
        for (k, erasures) in attempts.enumerated() {
            var block = received
            guard let positions = g.mode.correct(&block, erasures: erasures) else { continue }
            let frames = Self.frames(in: block[0..<g.mode.dataCount], stamps: g.stamps,
                                     minimumLength: minimumFrameLength, maximumLength: maximumFrameLength)
            if frames.isEmpty { continue }
            return FX25Block(mode: g.mode, tagErrors: g.tagErrors, correctedBytes: positions.count, erasures: erasures.count,
                             usedErasures: k > 0, frames: frames, tagStamp: g.tagStamp, endStamp: g.stamps.last ?? g.tagStamp)
        }
        blocksUncorrectable += 1
        return FX25Block(mode: g.mode, tagErrors: g.tagErrors, correctedBytes: nil, erasures: 0, usedErasures: false, frames: [],
                         tagStamp: g.tagStamp, endStamp: g.stamps.last ?? g.tagStamp)
    }


    /// The frames with a good FCS between the flags of a block's data, with their last bits' stamps.
    private static func frames(in data: ArraySlice<UInt8>, stamps: [Int], minimumLength: Int, maximumLength: Int)
        -> [(frame: HDLCFrame, endStamp: Int)] {
        var hdlc = HDLCDecoder(minimumLength: minimumLength, maximumLength: maximumLength, reportsCandidates: false)
        var out: [(frame: HDLCFrame, endStamp: Int)] = []
        var index = 0
        for byte in data {
            for i in 0..<8 {
                if case .frame(let f) = hdlc.decode(byte >> UInt8(i) & 1 != 0) {
                    out.append((f, stamps[min(index, stamps.count - 1)]))
                }
                index += 1
            }
        }
        return out
    }
}

/// An FX.25 block as ``FX25Decoder`` found it.
public struct FX25Block: Sendable {
    /// Its format.
    public var mode: FX25Mode
    /// Bits of the correlation tag that were wrong.
    public var tagErrors: Int
    /// Bytes the Reed-Solomon code changed, or nil when the block was beyond correction.
    public var correctedBytes: Int?
    /// Bytes treated as erasures in the decoding that succeeded.
    public var erasures: Int
    /// Whether errors alone were too many and erasures made the difference.
    public var usedErasures: Bool
    /// The frames with a good FCS in the corrected data (usually one), with the stamp of each one's last
    /// bit (its closing flag).
    public var frames: [(frame: HDLCFrame, endStamp: Int)]
    /// The stamp of the tag's last bit.
    public var tagStamp: Int
    /// The stamp of the block's last bit.
    public var endStamp: Int

    /// Whether the code could correct it (and a frame with a good FCS was inside).
    public var isCorrected: Bool { correctedBytes != nil }
}
