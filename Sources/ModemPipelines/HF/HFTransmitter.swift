import ModemAudio
import ModemCodecs
import ModemDSP
import ModemRuntime

/// Errors of the HF transmitter and receiver.
public struct HFError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong, in one line.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// The order the coded bits of an HF transmission go out in: every copy of every block's bits spread
/// over all the data symbols by one fixed pseudo-random permutation, so a fade or a noisy carrier
/// hits bits of every block, each a little.
struct HFInterleaver {
    /// `slot[i]`: where coded bit i of the stream (copy-major: copy, block, bit) is sent.
    let slot: [Int32]
    /// Bits of the stream (blocks × code length × repetition).
    let streamLength: Int
    /// Slots of the data symbols (≥ streamLength).
    let slotCount: Int

    init(profile: HFProfile, payloadLength: Int) {
        streamLength = profile.streamLength(forPayload: payloadLength)
        slotCount = profile.symbolCount(forPayload: payloadLength) * profile.bitsPerSymbol
        var p = (0..<slotCount).map { Int32($0) }
        var rng = SplitMix64(seed: 0x1EAF_0000_0000_0000 ^ UInt64(slotCount))
        for i in stride(from: slotCount - 1, to: 0, by: -1) { p.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        slot = p
    }
}

/// Sends bytes as one HF transmission: the preamble, the header (configuration and length), then the
/// payload in CRC-checked LDPC blocks, all blocks' bits interleaved over all the data symbols. The
/// whole payload is taken at once (it is interleaved over the whole transmission).
public enum HFTransmitter {
    /// The clipping level over the RMS: 4 (12 dB).
    public static let peakToRMS: Float = 4

    /// The 8 kHz samples of one transmission of `payload` with `profile`.
    /// - Parameter peak: the level samples are clipped at (0 < peak ≤ 1); the RMS is a quarter of it.
    public static func samples(payload: [UInt8], profile: HFProfile, peak: Float = 0.7) throws(HFError) -> [Float] {
        guard payload.count <= HFHeader.maximumPayload else { throw HFError("an HF transmission carries at most \(HFHeader.maximumPayload) bytes") }
        precondition(peak > 0 && peak <= 1, "HFTransmitter peak must be in (0, 1]")
        let modulator = HFModulator(grid: profile.grid, constellation: profile.constellation, rms: peak / peakToRMS)
        var out = modulator.start(headerBits: HFHeader(profileID: profile.id, payloadLength: payload.count).symbolBits)
        let codec = LDPCBlockCodec(code: profile.code(forPayload: payload.count))
        let blocks = profile.blockLayout(forPayload: payload.count).blocks
        var stream = [UInt8]()
        stream.reserveCapacity(blocks * codec.code.length)
        for b in 0..<blocks {
            let lo = min(payload.count, b * codec.payloadCapacity), hi = min(payload.count, lo + codec.payloadCapacity)
            stream.append(contentsOf: codec.encode(payload[lo..<hi], index: b, last: b == blocks - 1))
        }
        let interleaver = HFInterleaver(profile: profile, payloadLength: payload.count)
        var slots = [UInt8](repeating: 0, count: interleaver.slotCount)
        var rng = SplitMix64(seed: 0x9AD0_4F00)
        for i in slots.indices { slots[i] = UInt8(rng.next() & 1) }
        for i in 0..<interleaver.streamLength { slots[Int(interleaver.slot[i])] = stream[i % stream.count] }
        let per = profile.bitsPerSymbol
        out.reserveCapacity(out.count + interleaver.slotCount / per * profile.grid.symbolLength)
        for s in 0..<(interleaver.slotCount / per) {
            out.append(contentsOf: modulator.dataSymbol(Array(slots[(s * per)..<((s + 1) * per)])))
        }
        // 25 ms of silence after the last symbol: the tails of the filters on the way (an SSB
        // channel's delay shifts the signal by about 20 ms).
        out.append(contentsOf: [Float](repeating: 0, count: 200))
        for i in out.indices { out[i] = min(peak, max(-peak, out[i])) }
        return out
    }

    /// Sends `payload` with `profile` to `sink` (at 8 kHz or a whole multiple of it) and finishes it.
    /// - Returns: samples written.
    @discardableResult
    public static func send(payload: [UInt8], profile: HFProfile, sink: any AudioSink, peak: Float = 0.7) throws -> Int {
        guard sink.sampleRate % Int(HFGrid.sampleRate) == 0, sink.sampleRate > 0 else {
            throw HFError("the HF modem is made at 8000 Hz or a whole multiple of it; the output is at \(sink.sampleRate) Hz")
        }
        let base = try samples(payload: payload, profile: profile, peak: peak)
        var out = HFFilters.interpolate(base, factor: sink.sampleRate / Int(HFGrid.sampleRate))
        // The interpolator's ripple can overshoot the clipping level a little.
        for i in out.indices { out[i] = min(1, max(-1, out[i])) }
        try out.withUnsafeBufferPointer { try sink.write($0) }
        try sink.finish()
        return out.count
    }
}
