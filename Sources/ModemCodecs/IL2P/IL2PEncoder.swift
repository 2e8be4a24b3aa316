/// Encodes AX.25 frames as IL2P (the Improved Layer 2 Protocol of the NinoTNC and Dire Wolf 1.7+):
/// Reed-Solomon blocks instead of HDLC framing.
///
/// On the line a frame is one preamble byte 0x55, the sync word 0xF1 0x5E 0x48, the header (13 bytes
/// scrambled, then 2 check bytes) and the payload's blocks (each scrambled, then its 2...16 check
/// bytes; see ``IL2PPayloadLayout``), every byte most significant bit first. There is no NRZI, no bit
/// stuffing and no FCS: the bits go to the modulator as they are (a 1 is the mark tone; on G3RUH
/// baseband they are not scrambled by x¹⁷ + x¹² + 1 either). Between frames and around them the line
/// idles with 0x55 bytes.
///
/// The Reed-Solomon code is FX.25's field (x⁸ + x⁴ + x³ + x² + 1) with first root α⁰ (FX.25 uses α¹),
/// shortened by leading zeros (``ReedSolomonCode``'s convention).
///
/// ```swift
/// let encoder = IL2PEncoder(maximumFEC: true)
/// var bits: [Bool] = []
/// encoder.append(frame.encode(), to: &bits)   // preamble byte, sync word, header, payload
/// ```
public struct IL2PEncoder: Sendable {
    /// The FEC level: true for 16 check bytes per payload block (Dire Wolf's `-I 1`, the NinoTNC's
    /// choice), false for 2-8 by block size (`-I 0`).
    public let maximumFEC: Bool

    /// The idle and preamble byte.
    public static let preambleByte: UInt8 = 0x55
    /// The sync word, sent after the preamble byte.
    public static let syncWord: UInt32 = 0xF15E48

    /// Creates an encoder.
    /// - Parameter maximumFEC: 16 check bytes per payload block (true, default) or 2-8 (false).
    public init(maximumFEC: Bool = true) {
        self.maximumFEC = maximumFEC
    }

    /// The bytes after the sync word for `frame` (AX.25 bytes without FCS): the header with its check
    /// bytes, then the payload's blocks. Nil when the frame is longer than IL2P carries (1023 bytes) or
    /// shorter than an AX.25 frame.
    public func encode(_ frame: [UInt8]) -> [UInt8]? {
        guard let (header, payload) = IL2PFrameMapping.encode(frame, maximumFEC: maximumFEC) else { return nil }
        var out = IL2PScrambler.scramble(header.bytes)
        out += IL2PCodes.code(parityCount: IL2PHeader.parityCount).parity(of: out)
        let layout = header.payloadLayout
        var offset = 0
        for size in layout.blockSizes {
            let block = IL2PScrambler.scramble(payload[offset..<(offset + size)])
            out += block
            out += IL2PCodes.code(parityCount: layout.parityCount).parity(of: block)
            offset += size
        }
        return out
    }

    /// Appends the line bits of one frame: the preamble byte, the sync word and ``encode(_:)``'s bytes,
    /// most significant bit first. Returns false and appends nothing when the frame does not fit IL2P.
    @discardableResult
    public func append(_ frame: [UInt8], to bits: inout [Bool]) -> Bool {
        guard let bytes = encode(frame) else { return false }
        Self.appendBytes([Self.preambleByte, 0xF1, 0x5E, 0x48] + bytes, to: &bits)
        return true
    }

    /// Appends `count` idle bytes (0x55).
    public static func appendPreamble(_ count: Int, to bits: inout [Bool]) {
        appendBytes([UInt8](repeating: preambleByte, count: count), to: &bits)
    }

    /// Appends bytes most significant bit first, as IL2P sends every byte.
    public static func appendBytes(_ bytes: [UInt8], to bits: inout [Bool]) {
        bits.reserveCapacity(bits.count + bytes.count * 8)
        for b in bytes { for k in (0..<8).reversed() { bits.append(b >> UInt8(k) & 1 != 0) } }
    }
}

/// IL2P's Reed-Solomon codes, one per check-byte count.
enum IL2PCodes {
    private static let codes: [Int: ReedSolomonCode] = Dictionary(uniqueKeysWithValues:
        IL2PPayloadLayout.parityCounts.map { ($0, ReedSolomonCode(parityCount: $0, firstRoot: 0)) })

    /// The code with `parityCount` check bytes (2, 4, 6, 8 or 16).
    static func code(parityCount: Int) -> ReedSolomonCode {
        guard let c = codes[parityCount] else { preconditionFailure("IL2P has no code with \(parityCount) check bytes") }
        return c
    }
}
