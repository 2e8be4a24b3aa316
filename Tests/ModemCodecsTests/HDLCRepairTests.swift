import Testing
import ModemTestSupport
import ModemCodecs

/// The stuffed bits between the flags of `payload` with its FCS.
private func body(_ payload: [UInt8]) -> [Bool] {
    HDLCEncoder.stuffedBits(of: payload + CRC16X25.fcsBytes(of: payload))
}

/// Decodes `body` between flags after inverting the bits at `flips`; returns the decoder's output.
private func receive(_ body: [Bool], flipping flips: [Int]) -> (HDLCDecoderOutput?, HDLCDecoderStatistics) {
    var damaged = body
    for flip in flips {
        damaged[flip].toggle()
    }
    var decoder = HDLCDecoder()
    let outputs = decoder.decode(HDLCEncoder.flagBits + damaged + HDLCEncoder.flagBits)
    return (outputs.first, decoder.statistics)
}

@Suite("HDLC CRC-guided repair")
struct HDLCRepairTests {
    @Test("every single flipped bit that leaves the flags alone is repaired, including stuffing changes")
    func everySingleBit() {
        var random = TestRandom(seed: 20)
        // 0xFF and 0x7E bytes make many bits sensitive to stuffing.
        let payload = hdlcRandomAX25Bytes(infoLength: 12, using: &random) + [0xFF, 0x7E, 0xFF, 0x3F, 0xFC]
        let bits = body(payload)
        var repaired = 0
        var misaligned = 0
        for flip in bits.indices {
            let (output, statistics) = receive(bits, flipping: [flip])
            guard let candidate = output?.candidate, candidate.rawBits.count == bits.count else {
                // The flip made a flag or an abort: the frame is split, nothing to repair.
                #expect(statistics.frames == 0)
                continue
            }
            if candidate.isMisaligned { misaligned += 1 }
            let frame = candidate.repair(maxBitFlips: 1)
            #expect(frame?.bytes == payload, "flip \(flip)")
            #expect(frame?.flippedBitIndices == [8 + flip], "flip \(flip)")
            #expect(frame?.isRepaired == true)
            if frame?.bytes == payload { repaired += 1 }
        }
        #expect(repaired > bits.count * 8 / 10)
        #expect(misaligned > 0)
    }

    @Test("one wrong line level (two adjacent wrong bits after NRZI) is repaired with adjacent pairs")
    func oneLineLevel() {
        var random = TestRandom(seed: 21)
        let payload = hdlcRandomAX25Bytes(infoLength: 40, using: &random)
        let bits = HDLCEncoder(leadingFlags: 4).encode(payload)
        var encoder = NRZIEncoder()
        let levels = encoder.encode(bits)
        var repaired = 0
        var tried = 0
        for position in stride(from: 40, to: levels.count - 24, by: 7) {
            var damaged = levels
            damaged[position].toggle()
            var nrzi = NRZIDecoder()
            var decoder = HDLCDecoder()
            let outputs = decoder.decode(nrzi.decode(damaged))
            // Skip errors that made a flag or an abort, which split the frame.
            guard outputs.count == 1, let candidate = outputs[0].candidate, candidate.startBitIndex == 32,
                  candidate.endBitIndex == bits.count
            else { continue }
            tried += 1
            #expect(candidate.repair(maxBitFlips: 1) == nil || candidate.repair(maxBitFlips: 1)?.bytes != payload)
            let frame = candidate.repair(maxBitFlips: 2, adjacentPairsOnly: true)
            #expect(frame?.bytes == payload, "level \(position)")
            #expect(frame?.flippedBitIndices == [position, position + 1], "level \(position)")
            if frame?.bytes == payload { repaired += 1 }
        }
        #expect(tried > 20)
        #expect(repaired == tried)
    }

    @Test("two separated flipped bits are found by the syndrome search")
    func separatedPairs() {
        var random = TestRandom(seed: 22)
        let payload = hdlcRandomAX25Bytes(infoLength: 60, using: &random)
        let bits = body(payload)
        var found = 0
        var tried = 0
        for _ in 0..<40 {
            let first = Int.random(in: 0..<bits.count, using: &random)
            let second = Int.random(in: 0..<bits.count, using: &random)
            guard abs(first - second) > 8 else { continue }
            let (output, _) = receive(bits, flipping: [first, second])
            guard let candidate = output?.candidate, candidate.rawBits.count == bits.count else { continue }
            tried += 1
            // Only the true frame is acceptable here, to check that the search reaches it.
            let frame = candidate.repair(maxBitFlips: 2) { $0 == payload }
            #expect(frame?.flippedBitIndices == [min(first, second) + 8, max(first, second) + 8], "flips \(first), \(second)")
            if frame != nil { found += 1 }
        }
        #expect(tried > 20)
        #expect(found == tried)
    }

    @Test("a plausibility test rejects lucky repairs of random bytes")
    func plausibility() {
        var random = TestRandom(seed: 23)
        // Random bytes between flags (not a frame at all, a wrong FCS): two-bit "repair" passes the FCS
        // for about half of them (those whose syndrome has even weight), but the bytes are not AX.25.
        var lucky = 0
        var plausible = 0
        for _ in 0..<10 {
            let candidate = HDLCFrameCandidate(rawBits: HDLCEncoder.stuffedBits(of: random.bytes(60)))
            if candidate.repair(maxBitFlips: 2) != nil { lucky += 1 }
            if candidate.repair(maxBitFlips: 2, isAcceptable: { (try? AX25Frame(decoding: $0)) != nil }) != nil { plausible += 1 }
        }
        #expect(lucky >= 2)
        #expect(plausible == 0)
    }

    @Test("a good frame given as a candidate needs no flips; nothing to repair gives nil")
    func edges() {
        var random = TestRandom(seed: 24)
        let payload = hdlcRandomAX25Bytes(infoLength: 5, using: &random)
        let candidate = HDLCFrameCandidate(rawBits: body(payload), startBitIndex: 100)
        // Already good: the search is about flips, so a flip that keeps it good is not expected; what
        // matters is that nothing crashes and anything returned passes.
        if let frame = candidate.repair(maxBitFlips: 2) {
            #expect(CRC16X25.checksum(frame.bytes) == frame.fcs)
        }
        #expect(HDLCFrameCandidate(rawBits: []).repair(maxBitFlips: 2) == nil)
        #expect(HDLCFrameCandidate(rawBits: hdlcBits("111111")).repair() == nil)
        #expect(HDLCFrameCandidate(rawBits: hdlcBits("111111")).destuffedBytes == [])
        // Too short to be acceptable even when the FCS passes.
        let tiny = [UInt8(0x41)]
        let tinyCandidate = HDLCFrameCandidate(rawBits: body(tiny).enumerated().map { $0.offset == 3 ? !$0.element : $0.element })
        #expect(tinyCandidate.repair() == nil)
        var shortLimits = tinyCandidate
        shortLimits.minimumLength = 3
        #expect(shortLimits.repair()?.bytes == tiny)
    }
}
