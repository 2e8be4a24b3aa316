/// How an IL2P payload of a given size is cut into Reed-Solomon blocks: as even as possible, the
/// larger blocks (one byte more) first, each block scrambled on its own and followed by its check bytes.
///
/// With the FEC level bit set ("max FEC", Dire Wolf's `-I 1` and the NinoTNC's default) every block has
/// 16 check bytes and at most 239 data bytes. Without it blocks hold up to 247 data bytes and get 2, 4,
/// 6 or 8 check bytes as the smaller block size is at most 61, 123, 185 or 247 bytes.
///
/// ```swift
/// let l = IL2PPayloadLayout(payloadCount: 512, maximumFEC: false)
/// l.blockSizes        // [171, 171, 170]
/// l.parityCount       // 6
/// l.encodedCount      // 530
/// ```
public struct IL2PPayloadLayout: Sendable, Hashable {
    /// Payload bytes, 0...1023.
    public let payloadCount: Int
    /// Whether every block has 16 check bytes.
    public let maximumFEC: Bool
    /// Data bytes of each block, in the order sent (empty for an empty payload).
    public let blockSizes: [Int]
    /// Check bytes after each block.
    public let parityCount: Int

    /// The check-byte counts IL2P uses (payload blocks; the header has 2).
    public static let parityCounts = [2, 4, 6, 8, 16]

    /// The layout of a `payloadCount`-byte payload (0...1023).
    public init(payloadCount: Int, maximumFEC: Bool) {
        precondition((0...IL2PHeader.maximumPayloadCount).contains(payloadCount), "IL2P payloads are 0...1023 bytes, got \(payloadCount)")
        self.payloadCount = payloadCount
        self.maximumFEC = maximumFEC
        guard payloadCount > 0 else {
            blockSizes = []
            parityCount = 0
            return
        }
        let largest = maximumFEC ? 239 : 247
        let blocks = (payloadCount + largest - 1) / largest
        let small = payloadCount / blocks
        let large = payloadCount - blocks * small
        blockSizes = Array(repeating: small + 1, count: large) + Array(repeating: small, count: blocks - large)
        if maximumFEC {
            parityCount = 16
        } else {
            // By the smaller block's size (what the NinoTNC and Dire Wolf do).
            parityCount = small <= 61 ? 2 : small <= 123 ? 4 : small <= 185 ? 6 : 8
        }
    }

    /// Bytes on the air after the header: every block with its check bytes.
    public var encodedCount: Int { payloadCount + blockSizes.count * parityCount }
}
