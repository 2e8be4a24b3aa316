import Testing
import ModemTestSupport
import ModemCodecs

/// Encodes `frames` as one transmission and returns the line levels (NRZI), with junk around.
private func lineLevels(
    _ frames: [[UInt8]], leadingFlags: Int = 4, junkBefore: Int = 0, junkAfter: Int = 0,
    using random: inout TestRandom
) -> [Bool] {
    let bits = HDLCEncoder(leadingFlags: leadingFlags, trailingFlags: 2).encode(frames: frames)
    var nrzi = NRZIEncoder()
    return random.bits(junkBefore) + nrzi.encode(bits) + random.bits(junkAfter)
}

/// Decodes line levels (NRZI then HDLC), fed in the given pieces.
private func decode(_ pieces: [ArraySlice<Bool>], decoder: inout HDLCDecoder) -> [HDLCDecoderOutput] {
    var nrzi = NRZIDecoder()
    return pieces.flatMap { decoder.decode(nrzi.decode($0)) }
}

@Suite("HDLC encoder and decoder, NRZI")
struct HDLCCodecTests {
    // Two transmissions made by Dire Wolf 1.6 (`gen_packets -r 48000`), read back from the audio: the
    // bits between the flags, still stuffed, and the de-stuffed bytes with the FCS.
    //   N0CALL>APRS:hello world\n
    //   K1ABC-15>CQ,RELAY*,WIDE2-1:\xff\xff~~~~\x01\n     (0xFF and 0x7E: heavy stuffing)
    static let direWolfVectors: [(raw: String, bytes: String)] = [
        (
            "0100000100000101001001010110010100000010000000100000011100111001000001100110000101000001000110010001100110000111110000000000011110001011010100110001101100011011011110110000001001110111011110110010011100011011000100110010100000010101011100011",
            "82 a0 a4 a6 40 40 e0 9c 60 86 82 98 98 e1 03 f0 68 65 6c 6c 6f 20 77 6f 72 6c 64 0a 54 c7"
        ),
        (
            "01100001010001010000001000000010000000100000001000000111011010010100011001000001001000010110000100000010011111011001001010101000100011001010000010100110100000010000001110111010101001001000100010101000100100110000000101100011011000000000011111011111011111011111001111101001111101001111101001111101010000000010100001110110001010100",
            "86 a2 40 40 40 40 e0 96 62 82 84 86 40 fe a4 8a 98 82 b2 40 e0 ae 92 88 8a 64 40 63 03 f0 ff ff 7e 7e 7e 7e 01 0a 37 2a"
        ),
    ]

    @Test("bit stuffing known answers: 0xFF, 0x7E, five 1s at the end, a flag")
    func stuffingKnownAnswers() {
        #expect(HDLCEncoder.flagBits == hdlcBits("01111110"))
        #expect(HDLCEncoder.stuffedBits(of: [0xFF]) == hdlcBits("11111 0 111"))
        #expect(HDLCEncoder.stuffedBits(of: [0xFF, 0xFF]) == hdlcBits("11111 0 11111 0 11111 0 1"))
        #expect(HDLCEncoder.stuffedBits(of: [0x7E]) == hdlcBits("0 11111 0 10"))
        #expect(HDLCEncoder.stuffedBits(of: [0xF8]) == hdlcBits("000 11111 0"))  // five 1s at the very end
        #expect(HDLCEncoder.stuffedBits(of: [0x7C]) == hdlcBits("00 11111 0 0"))
        #expect(HDLCEncoder.stuffedBits(of: [0x0F, 0x01]) == hdlcBits("1111 0000 1 0000000"))
        #expect(HDLCEncoder.stuffedBits(of: [0x00]) == hdlcBits("00000000"))
        let encoder = HDLCEncoder(leadingFlags: 2, trailingFlags: 1, appendsFCS: false)
        #expect(encoder.encode([0xF8]) == hdlcBits("01111110 01111110 000 11111 0 01111110"))
        #expect(encoder.encode(frames: [[0x01], [0x80]]) == hdlcBits("01111110 01111110 10000000 01111110 00000001 01111110"))
        #expect(encoder.encode(frames: []) == hdlcBits("01111110 01111110 01111110"))
    }

    @Test("the encoder matches Dire Wolf's bits, FCS included, and the decoder reads them")
    func direWolfKnownAnswers() {
        for vector in Self.direWolfVectors {
            let bytes = hdlcHex(vector.bytes)
            let raw = hdlcBits(vector.raw)
            let payload = Array(bytes.dropLast(2))
            #expect(HDLCEncoder.stuffedBits(of: bytes) == raw)
            let encoder = HDLCEncoder(leadingFlags: 3, trailingFlags: 2)
            let bits = encoder.encode(payload)
            #expect(bits == HDLCEncoder.flagBits + HDLCEncoder.flagBits + HDLCEncoder.flagBits + raw + HDLCEncoder.flagBits + HDLCEncoder.flagBits)

            var decoder = HDLCDecoder()
            let outputs = decoder.decode(bits)
            #expect(outputs.count == 1)
            let frame = outputs.first?.frame
            #expect(frame?.bytes == payload)
            #expect(frame?.fcs == UInt16(bytes[bytes.count - 2]) | UInt16(bytes[bytes.count - 1]) << 8)
            #expect(frame?.startBitIndex == 24)
            #expect(frame?.endBitIndex == 24 + raw.count + 8)
            #expect(frame?.isRepaired == false)
            #expect(decoder.statistics == { var s = HDLCDecoderStatistics(); s.frames = 1; return s }())
            #expect(decoder.bitIndex == bits.count)
        }
    }

    @Test("NRZI: 0 is a transition, 1 none; polarity does not matter; round trip")
    func nrzi() {
        var encoder = NRZIEncoder()
        #expect(encoder.encode(hdlcBits("0110")) == hdlcBits("0001"))
        #expect(encoder.level == true)
        var decoder = NRZIDecoder()
        #expect(decoder.decode(hdlcBits("0001")) == hdlcBits("0110"))
        #expect(decoder.previousLevel == true)

        var random = TestRandom(seed: 2)
        let bits = random.bits(1000)
        for initial in [false, true] {
            var encoder = NRZIEncoder(initialLevel: initial)
            let levels = encoder.encode(bits)
            var decoder = NRZIDecoder(previousLevel: initial)
            #expect(decoder.decode(levels) == bits)
            // Inverted line: only the first bit (compared with an assumed level) can differ.
            var inverted = NRZIDecoder(previousLevel: initial)
            #expect(Array(inverted.decode(levels.map { !$0 }).dropFirst()) == Array(bits.dropFirst()))
            // One level at a time.
            var single = NRZIDecoder(previousLevel: initial)
            #expect(levels.map { single.decode($0) } == bits)
        }
        encoder.reset(initialLevel: false)
        #expect(encoder.level == false)
        decoder.reset()
        #expect(decoder.previousLevel == true)
    }

    @Test("random frames round trip through encoder, NRZI and decoder: all at once, bit by bit, in pieces, with junk")
    func roundTrip() {
        var random = TestRandom(seed: 3)
        for trial in 0..<20 {
            let frames = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                hdlcRandomAX25Bytes(infoLength: Int.random(in: 0...256, using: &random), using: &random)
            }
            let junk = trial.isMultiple(of: 2) ? 0 : 500
            let levels = lineLevels(frames, junkBefore: junk, junkAfter: junk, using: &random)

            var whole = HDLCDecoder()
            let wholeOutputs = decode([levels[...]], decoder: &whole)
            #expect(wholeOutputs.compactMap(\.frame).map(\.bytes) == frames, "trial \(trial)")
            #expect(whole.statistics.frames == frames.count)

            var bitwise = HDLCDecoder()
            let bitOutputs = decode(levels.map { [$0][...] }, decoder: &bitwise)
            #expect(bitOutputs == wholeOutputs)
            #expect(bitwise.statistics == whole.statistics)

            var pieced = HDLCDecoder()
            let pieceOutputs = decode(hdlcPieces(levels, maxPiece: 97, using: &random), decoder: &pieced)
            #expect(pieceOutputs == wholeOutputs)
            if junk == 0 {
                #expect(whole.statistics == { var s = HDLCDecoderStatistics(); s.frames = frames.count; return s }())
            }
        }
    }

    @Test("frames are found among random noise bits; noise never makes a frame")
    func noise() {
        var random = TestRandom(seed: 4)
        var decoder = HDLCDecoder()
        #expect(decoder.decode(random.bits(200_000)).compactMap(\.frame).isEmpty)
        #expect(decoder.statistics.frames == 0)
        #expect(decoder.statistics.aborts > 0)

        let frame = hdlcRandomAX25Bytes(infoLength: 40, using: &random)
        let bits = random.bits(3000) + HDLCEncoder(leadingFlags: 1).encode(frame) + random.bits(3000)
        var fresh = HDLCDecoder()
        #expect(fresh.decode(bits).compactMap(\.frame).map(\.bytes) == [frame])
    }

    @Test("abort: seven 1s end a frame, counted once; mark idle is quiet; the next frame decodes")
    func abort() {
        var random = TestRandom(seed: 5)
        let first = hdlcRandomAX25Bytes(infoLength: 20, using: &random)
        let second = hdlcRandomAX25Bytes(infoLength: 20, using: &random)
        let cut = Array(HDLCEncoder.stuffedBits(of: first).prefix(100))
        let bits = HDLCEncoder.flagBits + cut + Array(repeating: true, count: 30)
            + HDLCEncoder(leadingFlags: 2).encode(second) + Array(repeating: true, count: 200)
        var decoder = HDLCDecoder()
        let outputs = decoder.decode(bits)
        #expect(outputs.compactMap(\.frame).map(\.bytes) == [second])
        #expect(decoder.statistics.aborts == 1)
        #expect(decoder.statistics.frames == 1)
        #expect(decoder.statistics.damaged == 0)

        // Exactly seven 1s then a flag right away.
        let seven = HDLCEncoder.flagBits + cut + Array(repeating: true, count: 7) + HDLCEncoder(leadingFlags: 1).encode(second)
        var again = HDLCDecoder()
        #expect(again.decode(seven).compactMap(\.frame).map(\.bytes) == [second])
        #expect(again.statistics.aborts == 1)
    }

    @Test("bad FCS: counted, returned as a candidate, not as a frame; reportsCandidates false only counts")
    func crcFailure() {
        var random = TestRandom(seed: 6)
        let payload = hdlcRandomAX25Bytes(infoLength: 30, using: &random)
        var bad = payload + CRC16X25.fcsBytes(of: payload)
        bad[20] ^= 0x10
        let bits = HDLCEncoder(leadingFlags: 2, appendsFCS: false).encode(bad)
        var decoder = HDLCDecoder()
        let outputs = decoder.decode(bits)
        #expect(outputs.count == 1)
        #expect(decoder.statistics.crcFailures == 1)
        #expect(decoder.statistics.frames == 0)
        let candidate = outputs.first?.candidate
        #expect(candidate?.destuffedBytes == bad)
        #expect(candidate?.rawBits == HDLCEncoder.stuffedBits(of: bad))
        #expect(candidate?.isMisaligned == false)
        #expect(candidate?.startBitIndex == 16)

        var counting = HDLCDecoder(reportsCandidates: false)
        #expect(counting.decode(bits).isEmpty)
        #expect(counting.statistics.crcFailures == 1)
    }

    @Test("length limits: too short and too long are counted and dropped; limits are configurable")
    func lengthLimits() {
        var random = TestRandom(seed: 7)
        let short = random.bytes(5)
        let long = hdlcRandomAX25Bytes(infoLength: 100, using: &random)
        let good = hdlcRandomAX25Bytes(infoLength: 10, using: &random)
        let encoder = HDLCEncoder()
        let bits = encoder.encode(short) + encoder.encode(long) + encoder.encode(good)

        var decoder = HDLCDecoder(maximumLength: 60)
        #expect(decoder.decode(bits).compactMap(\.frame).map(\.bytes) == [good])
        #expect(decoder.statistics.tooShort == 1)
        #expect(decoder.statistics.tooLong == 1)
        #expect(decoder.statistics.frames == 1)

        var lenient = HDLCDecoder(minimumLength: 3)
        #expect(lenient.decode(bits).compactMap(\.frame).map(\.bytes) == [short, long, good])

        // A frame of exactly the limits.
        var exact = HDLCDecoder(minimumLength: 7, maximumLength: 7)
        #expect(exact.decode(encoder.encode(short)).compactMap(\.frame).map(\.bytes) == [short])

        // Far too long (no closing flag for a long time): dropped early, the next frame still decodes.
        let endless = HDLCEncoder.flagBits + HDLCEncoder.stuffedBits(of: random.bytes(5000)) + encoder.encode(good)
        var limited = HDLCDecoder()
        #expect(limited.decode(endless).compactMap(\.frame).map(\.bytes) == [good])
        #expect(limited.statistics.tooLong == 1)
    }

    @Test("idle flags, shared zeros and short noise between flags are quiet")
    func idle() {
        var random = TestRandom(seed: 8)
        let frame = hdlcRandomAX25Bytes(infoLength: 12, using: &random)
        let body = HDLCEncoder.stuffedBits(of: frame + CRC16X25.fcsBytes(of: frame))
        // Flags sharing their zero: 0111111011111101111110.
        let shared = hdlcBits("0111111011111101111110") + body + hdlcBits("011111101111110")
        var decoder = HDLCDecoder()
        #expect(decoder.decode(shared).compactMap(\.frame).map(\.bytes) == [frame])
        #expect(decoder.statistics == { var s = HDLCDecoderStatistics(); s.frames = 1; return s }())
        // Fewer than 8 bits between two flags.
        var short = HDLCDecoder()
        #expect(short.decode(HDLCEncoder.flagBits + hdlcBits("0101") + HDLCEncoder.flagBits).isEmpty)
        #expect(short.statistics == HDLCDecoderStatistics())
        short.reset()
        #expect(short.bitIndex == 0)
    }

    @Test("misaligned frames are counted and offered for repair")
    func misaligned() {
        var random = TestRandom(seed: 9)
        let frame = hdlcRandomAX25Bytes(infoLength: 30, using: &random)
        let body = HDLCEncoder.stuffedBits(of: frame + CRC16X25.fcsBytes(of: frame))
        var dropped = body
        dropped.remove(at: 50)  // a lost bit
        var decoder = HDLCDecoder()
        let outputs = decoder.decode(HDLCEncoder.flagBits + dropped + HDLCEncoder.flagBits)
        #expect(decoder.statistics.misaligned == 1)
        #expect(outputs.first?.candidate?.isMisaligned == true)
    }

    @Test("several frames in one transmission, one flag apart")
    func severalFrames() {
        var random = TestRandom(seed: 10)
        let frames = (0..<5).map { _ in hdlcRandomAX25Bytes(infoLength: 8, using: &random) }
        let bits = HDLCEncoder(leadingFlags: 10, trailingFlags: 3).encode(frames: frames)
        var decoder = HDLCDecoder()
        let decoded = decoder.decode(bits).compactMap(\.frame)
        #expect(decoded.map(\.bytes) == frames)
        for (earlier, later) in zip(decoded, decoded.dropFirst()) {
            #expect(later.startBitIndex == earlier.endBitIndex)
        }
    }
}
