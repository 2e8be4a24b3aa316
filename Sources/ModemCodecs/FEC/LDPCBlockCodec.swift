import ModemRuntime
/// Bytes in blocks of one ``LDPCCode`` word each, every block checked by a CRC-32: the framing of the
/// OFDM modem's data (and of anything else that sends whole code words).
///
/// A block's information bits are `[payload, zero-padded to ``payloadCapacity`` bytes][count: 2 bytes,
/// little-endian, bit 15 set on the last block][CRC-32 of the previous bytes][zero bits to k]`,
/// scrambled by a sequence that depends on the block's index (so repeated data never makes repeated
/// signals), then encoded, and the code word's bits interleaved by a fixed permutation (so the bits of
/// one carrier or one fade land far apart in the code).
///
/// Decoding never delivers bytes of a block whose CRC fails (``LDPCBlockCodec/Decoded/failed``).
public struct LDPCBlockCodec: ~Copyable {
    /// The code.
    public let code: LDPCCode
    /// Payload bytes per block.
    public let payloadCapacity: Int
    private var decoder: LDPCDecoder
    private let permutation: [Int32]
    private var deinterleaved: [Float]

    /// What a decoded block held.
    public enum Decoded: Sendable, Equatable {
        /// The block checked: its payload bytes, and whether it was marked last.
        case block(payload: [UInt8], last: Bool, correctedBits: Int, iterations: Int)
        /// The CRC failed (or the count field was impossible): nothing from this block is usable.
        case failed(iterations: Int)
    }

    /// Creates a codec for `code`.
    public init(code: LDPCCode) {
        let capacity = (code.informationLength - 48) / 8
        precondition(capacity >= 1 && capacity < 32768, "LDPCBlockCodec needs a code with 56...262,000 information bits")
        self.code = code
        payloadCapacity = capacity
        decoder = LDPCDecoder(code: code)
        permutation = Self.permutation(length: code.length)
        deinterleaved = [Float](repeating: 0, count: code.length)
    }

    /// The fixed interleaver of `length` bits: position i of the sent bits carries code bit `p[i]`.
    static func permutation(length: Int) -> [Int32] {
        var p = (0..<length).map { Int32($0) }
        var rng = SplitMix64(seed: 0x1A7E_81EA_7E00_0000 ^ UInt64(length))
        for i in stride(from: length - 1, to: 0, by: -1) { p.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        return p
    }

    /// The scrambling bits of block `index` (``LDPCCode/informationLength`` of them).
    private func scrambler(index: Int) -> [UInt8] {
        var rng = SplitMix64(seed: 0x5C2A_3B1E_0000_0000 &+ UInt64(truncatingIfNeeded: index))
        var out = [UInt8](repeating: 0, count: code.informationLength)
        var w: UInt64 = 0
        for i in 0..<out.count {
            if i % 64 == 0 { w = rng.next() }
            out[i] = UInt8(w & 1)
            w >>= 1
        }
        return out
    }

    /// The sent bits (``LDPCCode/length`` of them, 0 or 1) of block `index` carrying `payload`
    /// (at most ``payloadCapacity`` bytes).
    public func encode(_ payload: some Collection<UInt8>, index: Int, last: Bool) -> [UInt8] {
        precondition(payload.count <= payloadCapacity, "a block holds at most \(payloadCapacity) bytes")
        var bytes = [UInt8](payload)
        bytes.append(contentsOf: [UInt8](repeating: 0, count: payloadCapacity - payload.count))
        let count = UInt16(payload.count) | (last ? 0x8000 : 0)
        bytes.append(UInt8(count & 0xFF))
        bytes.append(UInt8(count >> 8))
        let crc = CRC32.checksum(bytes)
        for s in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt32(s)))) }
        var info = [UInt8](repeating: 0, count: code.informationLength)
        for (i, b) in bytes.enumerated() {
            for j in 0..<8 { info[8 * i + j] = (b >> UInt8(7 - j)) & 1 }
        }
        let scramble = scrambler(index: index)
        for i in 0..<info.count { info[i] ^= scramble[i] }
        let word = code.encode(info)
        return permutation.map { word[Int($0)] }
    }

    /// Decodes block `index` from its sent bits' soft values (positive for a likely 1).
    public mutating func decode(_ soft: UnsafeBufferPointer<Float>, index: Int, maximumIterations: Int = 50) -> Decoded {
        precondition(soft.count == code.length, "a block is \(code.length) soft values")
        for i in 0..<code.length { deinterleaved[Int(permutation[i])] = soft[i] }
        let result = deinterleaved.withUnsafeBufferPointer { decoder.decode($0, maximumIterations: maximumIterations) }
        // The CRC decides, converged or not (the information bits can be right with a parity bit wrong).
        let scramble = scrambler(index: index)
        let bits = decoder.bits
        let total = payloadCapacity + 6
        var bytes = [UInt8](repeating: 0, count: total)
        for i in 0..<total {
            var b: UInt8 = 0
            for j in 0..<8 { b = b << 1 | ((bits[8 * i + j] ^ scramble[8 * i + j]) & 1) }
            bytes[i] = b
        }
        var crc: UInt32 = 0
        for s in 0..<4 { crc |= UInt32(bytes[payloadCapacity + 2 + s]) << (8 * UInt32(s)) }
        guard CRC32.checksum(bytes[0..<(payloadCapacity + 2)]) == crc else { return .failed(iterations: result.iterations) }
        let count = UInt16(bytes[payloadCapacity]) | UInt16(bytes[payloadCapacity + 1]) << 8
        let length = Int(count & 0x7FFF)
        guard length <= payloadCapacity else { return .failed(iterations: result.iterations) }
        return .block(payload: Array(bytes[0..<length]), last: count & 0x8000 != 0,
                      correctedBits: result.correctedBits, iterations: result.iterations)
    }

    /// Decodes block `index` from an array of soft values.
    public mutating func decode(_ soft: [Float], index: Int, maximumIterations: Int = 50) -> Decoded {
        soft.withUnsafeBufferPointer { decode($0, index: index, maximumIterations: maximumIterations) }
    }
}
