/// A Gray-mapped constellation for the OFDM carriers: BPSK or a square QAM from 4 to 16,384 points,
/// scaled to unit average energy, with max-log soft demapping.
///
/// Bits map to points per dimension: the first half of a point's bits choose the in-phase level,
/// the second half the quadrature level (BPSK has only the in-phase bit), each by a Gray code so
/// neighbouring levels differ in one bit. Level i of L is at `(2i − (L − 1)) · scale`.
public enum QAMConstellation: String, CaseIterable, Sendable, Hashable, Codable {
    case bpsk, qpsk, qam16 = "16qam", qam64 = "64qam", qam256 = "256qam", qam1024 = "1024qam", qam4096 = "4096qam"
    /// 128 levels per dimension: for a line of 40 dB and more (the sound-card cable).
    case qam16384 = "16384qam"

    /// Bits per point (1, 2, 4, 6, 8, 10, 12, 14).
    public var bitsPerPoint: Int {
        switch self {
        case .bpsk: 1
        case .qpsk: 2
        case .qam16: 4
        case .qam64: 6
        case .qam256: 8
        case .qam1024: 10
        case .qam4096: 12
        case .qam16384: 14
        }
    }

    /// Points in the constellation.
    public var pointCount: Int { 1 << bitsPerPoint }

    /// Bits per dimension (BPSK: 1, in phase only).
    var bitsPerDimension: Int { self == .bpsk ? 1 : bitsPerPoint / 2 }

    /// Levels per dimension.
    var levelsPerDimension: Int { 1 << bitsPerDimension }

    /// The distance from a level to the next, divided by two (unit average energy).
    public var halfSpacing: Float {
        if self == .bpsk { return 1 }
        // Square M-QAM: average energy 2(M − 1)/3 for odd-integer levels.
        return Float((3.0 / (2.0 * Double(pointCount - 1))).squareRoot())
    }

    /// A short name for reports ("256-QAM", "QPSK").
    public var displayName: String {
        switch self {
        case .bpsk: "BPSK"
        case .qpsk: "QPSK"
        default: "\(pointCount)-QAM"
        }
    }
}

/// The per-dimension tables of one ``QAMConstellation``: each level's amplitude and Gray bits, and
/// for each level and bit the nearest levels on either side whose bit differs (what max-log
/// demapping compares with).
public struct QAMMapper: Sendable {
    /// The constellation.
    public let constellation: QAMConstellation
    let levels: [Float]
    /// Level index for each Gray bit pattern of one dimension.
    let levelOfBits: [Int]
    /// Gray bit pattern of each level (most significant bit first in transmission order).
    let bitsOfLevel: [Int]
    /// For level i and bit j: the nearest level below i with bit j different (−1: none), and above.
    let oppositeBelow: [Int]
    let oppositeAbove: [Int]

    /// Builds the tables of `constellation`.
    public init(_ constellation: QAMConstellation) {
        self.constellation = constellation
        let b = constellation.bitsPerDimension
        let count = constellation.levelsPerDimension
        let s = constellation.halfSpacing
        levels = (0..<count).map { Float(2 * $0 - (count - 1)) * s }
        // Gray code: level i carries bits i ^ (i >> 1).
        bitsOfLevel = (0..<count).map { $0 ^ ($0 >> 1) }
        var inverse = [Int](repeating: 0, count: count)
        for (i, g) in bitsOfLevel.enumerated() { inverse[g] = i }
        levelOfBits = inverse
        var below = [Int](repeating: -1, count: count * b), above = [Int](repeating: -1, count: count * b)
        for i in 0..<count {
            for j in 0..<b {
                let mask = 1 << (b - 1 - j)
                let mine = bitsOfLevel[i] & mask
                var l = i - 1
                while l >= 0 && bitsOfLevel[l] & mask == mine { l -= 1 }
                below[i * b + j] = l
                var h = i + 1
                while h < count && bitsOfLevel[h] & mask == mine { h += 1 }
                above[i * b + j] = h < count ? h : -1
            }
        }
        oppositeBelow = below
        oppositeAbove = above
    }

    /// The point of `bits` (``QAMConstellation/bitsPerPoint`` values, 0 or 1, from `offset`).
    @inline(__always)
    public func point(_ bits: UnsafeBufferPointer<UInt8>, at offset: Int) -> (re: Float, im: Float) {
        let b = constellation.bitsPerDimension
        var i = 0
        for j in 0..<b { i = i << 1 | Int(bits[offset + j] & 1) }
        if constellation == .bpsk { return (levels[levelOfBits[i]], 0) }
        var q = 0
        for j in 0..<b { q = q << 1 | Int(bits[offset + b + j] & 1) }
        return (levels[levelOfBits[i]], levels[levelOfBits[q]])
    }

    /// The nearest point to `(re, im)` (a hard decision).
    @inline(__always)
    public func decide(_ re: Float, _ im: Float) -> (re: Float, im: Float) {
        let i = nearestLevel(re)
        if constellation == .bpsk { return (levels[i], 0) }
        return (levels[i], levels[nearestLevel(im)])
    }

    @inline(__always)
    func nearestLevel(_ x: Float) -> Int {
        let count = levels.count
        let s = constellation.halfSpacing
        let i = Int(((x / s + Float(count - 1)) * 0.5).rounded())
        return min(count - 1, max(0, i))
    }

    /// Soft bits of one received point: log P(1)/P(0) per bit (max-log), written to
    /// `out[offset ..< offset + bitsPerPoint]`.
    /// - Parameters:
    ///   - re, im: the equalised point (unit-energy scale).
    ///   - noiseVariance: the complex noise variance at this point (both dimensions together).
    @inline(__always)
    public func softBits(_ re: Float, _ im: Float, noiseVariance: Float, into out: UnsafeMutableBufferPointer<Float>, at offset: Int) {
        let scale = 1 / max(noiseVariance, 1e-12)
        let b = constellation.bitsPerDimension
        dimension(re, scale: scale, into: out, at: offset)
        if constellation != .bpsk { dimension(im, scale: scale, into: out, at: offset + b) }
    }

    @inline(__always)
    private func dimension(_ x: Float, scale: Float, into out: UnsafeMutableBufferPointer<Float>, at offset: Int) {
        let b = constellation.bitsPerDimension
        let i = nearestLevel(x)
        let d0 = (x - levels[i]) * (x - levels[i])
        let g = bitsOfLevel[i]
        for j in 0..<b {
            let lo = oppositeBelow[i * b + j], hi = oppositeAbove[i * b + j]
            var d1 = Float.infinity
            if lo >= 0 { let e = x - levels[lo]; d1 = e * e }
            if hi >= 0 { let e = x - levels[hi]; d1 = min(d1, e * e) }
            // The nearest level has this bit; the nearest with the other value is d1 away.
            let llr = (d1 - d0) * scale
            let bit = (g >> (b - 1 - j)) & 1
            out[offset + j] = bit == 1 ? llr : -llr
        }
    }
}
