/// One of FX.25's eleven block formats: a 64-bit correlation tag announcing a Reed-Solomon block of
/// `dataCount` bytes (the AX.25 frame with its flags, bit-stuffed, padded with flags) and
/// `parityCount` check bytes.
///
/// The codes are RS(255,239), RS(255,223) and RS(255,191) over GF(2⁸) with x⁸ + x⁴ + x³ + x² + 1 and
/// first root α¹, and shortened forms of each (FX.25, Stensat Group 2006; as Dire Wolf 1.6 sends and
/// decodes them). The tags are at least 32 bits apart from each other.
public struct FX25Mode: Sendable, Hashable, CustomStringConvertible {
    /// The tag's number in the specification (1...11; 0 and 12...15 are reserved).
    public let number: Int
    /// The correlation tag, sent least significant bit first.
    public let tag: UInt64
    /// Data bytes in the block.
    public let dataCount: Int
    /// Check bytes after them (16, 32 or 64).
    public let parityCount: Int

    /// Bytes sent after the tag.
    public var blockLength: Int { dataCount + parityCount }

    /// "RS(144,128)".
    public var description: String { "RS(\(blockLength),\(dataCount))" }

    /// The eleven modes, by tag number.
    public static let all: [FX25Mode] = [
        FX25Mode(number: 1, tag: 0xB74D_B7DF_8A53_2F3E, dataCount: 239, parityCount: 16),
        FX25Mode(number: 2, tag: 0x26FF_60A6_00CC_8FDE, dataCount: 128, parityCount: 16),
        FX25Mode(number: 3, tag: 0xC7DC_0508_F3D9_B09E, dataCount: 64, parityCount: 16),
        FX25Mode(number: 4, tag: 0x8F05_6EB4_3696_60EE, dataCount: 32, parityCount: 16),
        FX25Mode(number: 5, tag: 0x6E26_0B1A_C583_5FAE, dataCount: 223, parityCount: 32),
        FX25Mode(number: 6, tag: 0xFF94_DC63_4F1C_FF4E, dataCount: 128, parityCount: 32),
        FX25Mode(number: 7, tag: 0x1EB7_B9CD_BC09_C00E, dataCount: 64, parityCount: 32),
        FX25Mode(number: 8, tag: 0xDBF8_69BD_2DBB_1776, dataCount: 32, parityCount: 32),
        FX25Mode(number: 9, tag: 0x3ADB_0C13_DEAE_2836, dataCount: 191, parityCount: 64),
        FX25Mode(number: 10, tag: 0xAB69_DB6A_5431_88D6, dataCount: 128, parityCount: 64),
        FX25Mode(number: 11, tag: 0x4A4A_BEC4_A724_B796, dataCount: 64, parityCount: 64),
    ]

    /// The check-byte counts FX.25 offers.
    public static let parityCounts = [16, 32, 64]

    /// The mode for `parityCount` check bytes whose data holds `byteCount` bytes with the least
    /// padding; if none with that many check bytes is big enough, the one with the most check bytes
    /// that is; nil when the frame is too long for FX.25 (more than 239 bytes once stuffed and flagged).
    public static func fitting(byteCount: Int, parityCount: Int) -> FX25Mode? {
        if let m = all.filter({ $0.parityCount == parityCount && $0.dataCount >= byteCount }).min(by: { $0.dataCount < $1.dataCount }) {
            return m
        }
        return all.filter { $0.dataCount >= byteCount }.max { ($0.parityCount, -$0.dataCount) < ($1.parityCount, -$1.dataCount) }
    }

    /// Zero bytes between the data and the check bytes in the full 255-byte codeword. FX.25's shortened
    /// blocks (as Dire Wolf makes them) leave these zeros out of the air: the check bytes are computed
    /// over the data followed by this many zeros, not preceded by them.
    public var padding: Int { ReedSolomonCode.maximumBlockLength - parityCount - dataCount }

    /// The check bytes for a block's data (``dataCount`` bytes).
    public func parity(of data: [UInt8]) -> [UInt8] {
        precondition(data.count == dataCount, "FX.25 \(self) takes \(dataCount) data bytes, got \(data.count)")
        return code.parity(of: data + [UInt8](repeating: 0, count: padding))
    }

    /// Corrects a received block (``blockLength`` bytes: data then check bytes) in place.
    /// - Parameters:
    ///   - block: the block as received.
    ///   - erasures: indices into `block` of bytes known to be doubtful.
    /// - Returns: the indices changed, or nil when the block is beyond correction (left as it was).
    public func correct(_ block: inout [UInt8], erasures: [Int] = []) -> [Int]? {
        precondition(block.count == blockLength, "FX.25 \(self) blocks are \(blockLength) bytes, got \(block.count)")
        var full = Array(block[0..<dataCount]) + [UInt8](repeating: 0, count: padding) + Array(block[dataCount...])
        let mapped = erasures.map { $0 < dataCount ? $0 : $0 + padding }
        guard case .corrected(let positions) = code.decode(&full, erasures: mapped) else { return nil }
        // A correction inside the zeros that were never sent is a miscorrection.
        if positions.contains(where: { $0 >= dataCount && $0 < dataCount + padding }) { return nil }
        block = Array(full[0..<dataCount]) + Array(full[(dataCount + padding)...])
        return positions.map { $0 < dataCount ? $0 : $0 - padding }
    }

    /// The Reed-Solomon code of this mode's blocks.
    public var code: ReedSolomonCode {
        switch parityCount {
        case 16: return Self.rs16
        case 32: return Self.rs32
        default: return Self.rs64
        }
    }

    private static let rs16 = ReedSolomonCode(parityCount: 16)
    private static let rs32 = ReedSolomonCode(parityCount: 32)
    private static let rs64 = ReedSolomonCode(parityCount: 64)
}
