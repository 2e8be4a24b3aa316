/// Coded frames: a frame under a concatenated code for channels far below where plain HDLC works
/// (the channel protocol's coded mode).
///
/// On the line, as levels (mark = 1) with no NRZI and no bit stuffing, so the demodulator's confidence
/// in each level goes straight to the decoder:
/// - a 64-level correlation tag (found with up to ``CodedFrame/tagTolerance`` levels wrong);
/// - a header: the payload length (16 bits) and its complement, under the rate-1/2 convolutional code
///   (``ConvolutionalCode``), sent twice (76 levels each);
/// - the body: the frame and its FCS-16, cut into Reed-Solomon codewords of at most 223 data bytes with
///   32 check bytes each (``ReedSolomonCode``, the outer code), all under the convolutional code (the
///   inner code, decoded with soft decisions), the code bits spread over the whole body by a stride
///   interleaver so a burst of bad levels lands on many places of the trellis.
/// Air cost: about 2.3 times the payload's bits plus 216 levels.
public enum CodedFrame {
    /// The correlation tag, sent least significant bit first as line levels.
    public static let tag: UInt64 = 0x9A3C_5E1F_D284_B76B
    /// Tag levels that may be wrong for the tag to match.
    public static let tagTolerance = 12
    /// Check bytes per Reed-Solomon codeword.
    public static let parityCount = 32
    /// The longest payload (frame and FCS) a coded frame carries, in bytes.
    public static let maximumPayload = 4096
    static let headerCodeBits = 2 * (32 + ConvolutionalCode.tailBits)
    static let code = ReedSolomonCode(parityCount: parityCount)

    /// The data bytes of each Reed-Solomon codeword for a payload of `length` bytes (balanced sizes).
    static func codewordSizes(length: Int) -> [Int] {
        let per = ReedSolomonCode.maximumBlockLength - parityCount
        let m = max(1, (length + per - 1) / per)
        return (0..<m).map { length / m + ($0 < length % m ? 1 : 0) }
    }

    /// Code bits in the body of a payload of `length` bytes.
    static func bodyCodeBits(length: Int) -> Int {
        let bytes = length + codewordSizes(length: length).count * parityCount
        return 2 * (bytes * 8 + ConvolutionalCode.tailBits)
    }

    /// The interleaver's stride for `n` code bits: the first number from 41 up with no factor in common with n.
    static func stride(_ n: Int) -> Int {
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        var s = 41
        while gcd(s, n) != 1 { s += 1 }
        return s
    }

    /// Levels on the line for a coded frame of payload `length`, tag included.
    public static func lineLevels(payloadLength length: Int) -> Int {
        64 + 2 * headerCodeBits + bodyCodeBits(length: length)
    }

    /// Appends the line levels (true = mark) of `frame` as a coded frame; its FCS-16 is computed here.
    public static func append(_ frame: some Collection<UInt8>, to levels: inout [Bool]) {
        let payload = Array(frame) + CRC16X25.fcsBytes(of: frame)
        precondition(payload.count <= maximumPayload, "CodedFrame: \(payload.count) bytes is longer than \(maximumPayload)")
        for i in 0..<64 { levels.append(tag >> UInt64(i) & 1 != 0) }
        let n = UInt16(payload.count)
        let header = bits(of: [UInt8(n >> 8), UInt8(n & 0xFF), ~UInt8(n >> 8), ~UInt8(n & 0xFF)])
        let coded = ConvolutionalCode.encode(header)
        levels += coded
        levels += coded
        var body: [UInt8] = []
        var at = 0
        for size in codewordSizes(length: payload.count) {
            let data = Array(payload[at..<(at + size)])
            body += data + code.parity(of: data)
            at += size
        }
        let c = ConvolutionalCode.encode(bits(of: body))
        let s = stride(c.count)
        for j in 0..<c.count { levels.append(c[(j * s) % c.count]) }
    }

    static func bits(of bytes: [UInt8]) -> [Bool] {
        var out: [Bool] = []
        out.reserveCapacity(bytes.count * 8)
        for b in bytes { for i in 0..<8 { out.append(b >> UInt8(i) & 1 != 0) } }
        return out
    }

    static func bytes(of bits: ArraySlice<Bool>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: bits.count / 8)
        for (i, bit) in bits.enumerated() where bit { out[i >> 3] |= 1 << UInt8(i & 7) }
        return out
    }
}

/// Finds coded frames (``CodedFrame``) in a stream of soft line levels and decodes them.
public struct CodedFrameDecoder: Sendable {
    /// The longest frame accepted (FCS included), in bytes.
    public let maximumLength: Int
    /// Coded frames whose header decoded (a frame was announced).
    public private(set) var framesAnnounced = 0
    /// Of those, frames that could not be decoded (Reed-Solomon or FCS failed).
    public private(set) var framesLost = 0

    private var shift: UInt64 = 0
    private var seen = 0
    private var active: [Gathering] = []
    static let maximumGatherings = 4

    private struct Gathering: Sendable {
        var tagStamp: Int
        var header: [Float] = []
        var length = 0
        var body: [Float] = []
        var need = 0
    }

    /// Creates a decoder for frames up to `maximumLength` bytes, FCS included (at most 4096).
    public init(maximumLength: Int) {
        self.maximumLength = min(maximumLength, CodedFrame.maximumPayload)
    }

    /// The stamp of the earliest tag whose frame is still arriving, or nil.
    public var oldestPendingStamp: Int? { active.map(\.tagStamp).min() }

    /// Takes one line level with its soft value.
    /// - Parameters:
    ///   - soft: positive for mark (1), negative for space (0), its size the confidence.
    ///   - stamp: where the level is (e.g. its sample), reported back as the frame's end.
    /// - Returns: when a frame completes: its bytes without the FCS, the stamps of its tag's last level
    ///   and of its own last level, and the share of its body's levels that were wrong (the line's error
    ///   rate, as the code saw it).
    public mutating func decode(_ soft: Float, stamp: Int) -> (bytes: [UInt8], tagStamp: Int, endStamp: Int, levelErrorRate: Double)? {
        seen += 1
        shift = shift >> 1 | (soft > 0 ? 1 << 63 : 0)
        var done: (bytes: [UInt8], tagStamp: Int, endStamp: Int, levelErrorRate: Double)?
        var i = 0
        while i < active.count {
            if active[i].need == 0 {
                active[i].header.append(soft)
                if active[i].header.count == 2 * CodedFrame.headerCodeBits {
                    guard let length = Self.header(active[i].header), length >= 3, length <= maximumLength else {
                        active.remove(at: i)
                        continue
                    }
                    framesAnnounced += 1
                    active[i].length = length
                    active[i].need = CodedFrame.bodyCodeBits(length: length)
                    active[i].body.reserveCapacity(active[i].need)
                }
            } else {
                active[i].body.append(soft)
                if active[i].body.count == active[i].need {
                    let g = active.remove(at: i)
                    if let (bytes, errors) = Self.body(g.body, length: g.length) {
                        if done == nil { done = (bytes, g.tagStamp, stamp, Double(errors) / Double(g.body.count)) }
                    } else {
                        framesLost += 1
                    }
                    continue
                }
            }
            i += 1
        }
        if seen >= 64, active.count < Self.maximumGatherings, (shift ^ CodedFrame.tag).nonzeroBitCount <= CodedFrame.tagTolerance {
            active.append(Gathering(tagStamp: stamp))
        }
        return done
    }

    /// The payload length from the two copies of the header, or nil when it does not check.
    static func header(_ soft: [Float]) -> Int? {
        let n = CodedFrame.headerCodeBits
        let combined = (0..<n).map { soft[$0] + soft[$0 + n] }
        guard let bits = ConvolutionalCode.decode(combined) else { return nil }
        let b = CodedFrame.bytes(of: bits[...])
        guard b[0] == ~b[2], b[1] == ~b[3] else { return nil }
        return Int(b[0]) << 8 | Int(b[1])
    }

    /// The frame (without FCS) from a body's soft levels and the number of levels that were wrong, or nil.
    static func body(_ soft: [Float], length: Int) -> ([UInt8], Int)? {
        let n = soft.count, s = CodedFrame.stride(n)
        var deinterleaved = [Float](repeating: 0, count: n)
        for j in 0..<n { deinterleaved[(j * s) % n] = soft[j] }
        guard let bits = ConvolutionalCode.decode(deinterleaved) else { return nil }
        let body = CodedFrame.bytes(of: bits[...])
        var payload: [UInt8] = []
        var at = 0
        for size in CodedFrame.codewordSizes(length: length) {
            var word = Array(body[at..<(at + size + CodedFrame.parityCount)])
            guard case .corrected = CodedFrame.code.decode(&word) else { return nil }
            payload += word[0..<size]
            at += size + CodedFrame.parityCount
        }
        let frame = Array(payload.dropLast(2))
        guard CRC16X25.fcsBytes(of: frame) == Array(payload.suffix(2)) else { return nil }
        let sent = ConvolutionalCode.encode(bits)
        var errors = 0
        for (v, b) in zip(deinterleaved, sent) where (v > 0) != b { errors += 1 }
        return (frame, errors)
    }
}
