import Testing
import ModemTestSupport
import ModemCodecs
import ModemRuntime

/// A mix of frames: every kind, empty, small, a full fragment, the largest payload.
private func sampleFrames(_ random: inout TestRandom) -> [LinkFrame] {
    [
        LinkFrame(kind: .hello, session: 0x5A, payload: Array("phone".utf8)),
        LinkFrame(kind: .helloAck, flags: .fromDevice, session: 0x5A, payload: Array("device".utf8)),
        LinkFrame(kind: .data, flags: .poll, session: 0x5A, message: 1, fragment: 0, fragmentCount: 1, payload: []),
        LinkFrame(kind: .data, session: 0x5A, message: 2, fragment: 0, fragmentCount: 3, payload: random.bytes(1)),
        LinkFrame(kind: .data, session: 0x5A, message: 2, fragment: 1, fragmentCount: 3, payload: random.bytes(1024)),
        LinkFrame(kind: .data, flags: .poll, session: 0x5A, message: 2, fragment: 2, fragmentCount: 3,
                  payload: random.bytes(LinkFrame.maximumPayload)),
        LinkFrame(kind: .ack, flags: [.fromDevice, .complete], session: 0x5A, message: 2, fragmentCount: 3, payload: [0x07]),
        LinkFrame(kind: .poll, session: 0x5A, message: 3),
        LinkFrame(kind: .cancel, session: 0x5A, message: 3),
        LinkFrame(kind: .cancelAck, flags: .fromDevice, session: 0x5A, message: 3),
        LinkFrame(kind: .close, session: 0x5A),
        LinkFrame(kind: .closeAck, flags: .fromDevice, session: 0x5A),
    ]
}

/// Pushes `bytes` in pieces of random length (1...`maximumPiece`).
private func pushChopped(_ bytes: [UInt8], into decoder: inout LinkStreamDecoder, maximumPiece: Int,
                         random: inout TestRandom) -> [LinkFrame] {
    var out: [LinkFrame] = []
    var i = 0
    while i < bytes.count {
        let n = min(bytes.count - i, 1 + Int(random.next() % UInt64(maximumPiece)))
        out += decoder.push(bytes[i ..< i + n])
        i += n
    }
    return out
}

/// Replaces the last four bytes (the CRC-32) with the CRC-32 of what comes before.
private func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var b = Array(bytes.dropLast(4))
    let crc = CRC32.checksum(b)
    b += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
    return b
}

@Suite("Link frames over a byte stream (LinkStreamDecoder)")
struct LinkStreamDecoderTests {
    @Test("frames written back to back come out whole, in order, with nothing counted as damage")
    func whole() {
        var random = TestRandom(seed: 1)
        let frames = sampleFrames(&random)
        var decoder = LinkStreamDecoder()
        #expect(decoder.push(frames.flatMap { $0.encode() }) == frames)
        #expect(decoder.junkBytes == 0 && decoder.badFrames == 0)
        #expect(decoder.framesDecoded == frames.count)
        #expect(decoder.bufferedBytes == 0 && !decoder.isAwaitingFrame)
    }

    @Test("a byte at a time: each frame comes out exactly when its last byte arrives")
    func byteAtATime() {
        var random = TestRandom(seed: 2)
        let frames = sampleFrames(&random)
        var ends: [Int: LinkFrame] = [:]
        var stream: [UInt8] = []
        for f in frames { stream += f.encode(); ends[stream.count] = f }
        var decoder = LinkStreamDecoder()
        for (i, b) in stream.enumerated() {
            let out = decoder.push([b])
            if let f = ends[i + 1] {
                #expect(out == [f], "byte \(i)")
                #expect(decoder.bufferedBytes == 0)
            } else {
                #expect(out.isEmpty, "byte \(i)")
                #expect(decoder.bufferedBytes > 0)
            }
        }
        #expect(decoder.junkBytes == 0 && decoder.badFrames == 0)
    }

    @Test("random chunking (pieces of 1 to 3000 bytes, many seeds) gives the same frames")
    func randomChunking() {
        for seed in UInt64(1)...40 {
            var random = TestRandom(seed: seed)
            let frames = sampleFrames(&random) + sampleFrames(&random)
            var decoder = LinkStreamDecoder()
            let out = pushChopped(frames.flatMap { $0.encode() }, into: &decoder,
                                  maximumPiece: [3, 64, 3000][Int(seed % 3)], random: &random)
            #expect(out == frames, "seed \(seed)")
            #expect(decoder.junkBytes == 0 && decoder.bufferedBytes == 0)
        }
    }

    @Test("junk before and between frames (random bytes, sync words, plausible false headers) is skipped and counted")
    func junkAround() {
        for seed in UInt64(1)...30 {
            var random = TestRandom(seed: seed)
            let frames = sampleFrames(&random)
            var stream: [UInt8] = [], junkTotal = 0
            for f in frames {
                var junk = random.bytes(Int(random.next() % 40))
                switch random.next() % 4 {
                case 0: junk += [0x53]                                   // a lone first sync byte
                case 1: junk += [0x53, 0x4D, 0x1F, 0x00]                // a sync word, a bad kind (15)
                case 2: junk += [0x53, 0x4D, 0x11, 0, 0x5A, 0, 1, 0, 0, 0, 1, 0, 40]  // a plausible header, 40 bytes promised
                default: break
                }
                junkTotal += junk.count
                stream += junk + f.encode()
            }
            // Junk after the last frame (no sync byte), long enough to complete a false header before it.
            let tail = random.bytes(60).map { $0 == 0x53 ? 0 : $0 }
            stream += tail
            junkTotal += tail.count
            var decoder = LinkStreamDecoder()
            let out = pushChopped(stream, into: &decoder, maximumPiece: 200, random: &random)
            #expect(out == frames, "seed \(seed)")
            #expect(decoder.junkBytes == junkTotal, "seed \(seed)")
            #expect(decoder.bufferedBytes == 0)
        }
    }

    @Test("a changed byte anywhere in a frame loses that frame only; the frames around it survive")
    func corruptedBytes() {
        var random = TestRandom(seed: 5)
        let before = LinkFrame(kind: .data, session: 1, message: 7, fragment: 0, fragmentCount: 2, payload: random.bytes(30))
        let damaged = LinkFrame(kind: .data, flags: .poll, session: 1, message: 7, fragment: 1, fragmentCount: 2, payload: random.bytes(20))
        let after = LinkFrame(kind: .ack, flags: .fromDevice, session: 1, message: 9, payload: [1])
        let good = damaged.encode()
        var rescued = 0
        for position in good.indices {
            for change: UInt8 in [0x01, 0x80, 0xFF] {
                var bad = good
                bad[position] ^= change
                var decoder = LinkStreamDecoder()
                var out = decoder.push(before.encode() + bad + after.encode())
                // A changed length may promise more than ever comes: the driver gives it up when the
                // stream goes quiet, and the frame behind it is found.
                if decoder.isAwaitingFrame { out += decoder.resynchronize(); rescued += 1 }
                while decoder.isAwaitingFrame { out += decoder.resynchronize() }
                #expect(out == [before, after], "byte \(position) ^ \(change)")
                #expect(decoder.junkBytes == good.count, "byte \(position) ^ \(change)")
                #expect(decoder.bufferedBytes == 0)
            }
        }
        #expect(rescued > 0)  // the length bytes were among the positions
    }

    @Test("a frame truncated at every length waits, then completes; a cut frame followed by a whole one costs only the cut one")
    func truncated() {
        var random = TestRandom(seed: 6)
        let frame = LinkFrame(kind: .data, flags: .poll, session: 3, message: 4, payload: random.bytes(50))
        let bytes = frame.encode()
        for k in 0 ..< bytes.count {
            var decoder = LinkStreamDecoder()
            #expect(decoder.push(bytes.prefix(k)).isEmpty)
            #expect(decoder.bufferedBytes == k && decoder.junkBytes == 0)
            #expect(decoder.push(bytes.dropFirst(k)) == [frame])
            // The same cut, then the frame sent again whole: the cut one is junk. Its header, made of
            // both, may promise more than comes; the driver gives that up when the stream goes quiet.
            var again = LinkStreamDecoder()
            var out = again.push(bytes.prefix(k) + bytes)
            while again.isAwaitingFrame { out += again.resynchronize() }
            #expect(out == [frame], "cut at \(k)")
            #expect(again.junkBytes == k && again.bufferedBytes == 0, "cut at \(k)")
        }
    }

    @Test("header checks: a wrong version, kind, fragment or length is junk at once, never waited for")
    func headerChecks() {
        let frame = LinkFrame(kind: .data, session: 1, message: 2, fragment: 0, fragmentCount: 1, payload: [9, 9])
        let good = frame.encode()
        for (index, value) in [(2, UInt8(0x21)), (2, 0x1F), (7, 0x01), (8, 0x05), (10, 0), (11, 0x08)] {
            var bad = good
            bad[index] = value
            var decoder = LinkStreamDecoder()
            // Resealed: the CRC-32 would pass, so only the header check stops it.
            #expect(decoder.push(resealed(bad)).isEmpty)
            // (At most a last 0x53 of the CRC is held, as the start of a sync word.)
            #expect(!decoder.isAwaitingFrame && decoder.bufferedBytes <= 1, "byte \(index) = \(value)")
            #expect(decoder.badFrames == 0)
            #expect(decoder.push(good) == [frame])
            #expect(decoder.junkBytes == good.count && decoder.bufferedBytes == 0)
        }
    }

    @Test("a damaged frame with a plausible header counts as a bad frame and names the CRC")
    func badCRCCounted() {
        var bytes = LinkFrame(kind: .poll, session: 1, message: 2).encode()
        bytes[bytes.count - 1] ^= 1
        var decoder = LinkStreamDecoder()
        #expect(decoder.push(bytes).isEmpty)
        #expect(decoder.badFrames == 1 && decoder.lastError == .badCRC)
        #expect(decoder.junkBytes == bytes.count)
    }

    @Test("the buffer stays bounded: a header promising the largest frame holds less than one frame, then is given up")
    func boundedBuffer() {
        var random = TestRandom(seed: 8)
        var decoder = LinkStreamDecoder()
        let header: [UInt8] = [0x53, 0x4D, 0x11, 0, 1, 0, 1, 0, 0, 0, 1, 0x08, 0x00]  // 2048 bytes promised
        let good = LinkFrame(kind: .ack, session: 1, message: 1, payload: [1]).encode()
        #expect(decoder.push(header + random.bytes(100).map { $0 == 0x53 ? 0 : $0 } + good).isEmpty)
        #expect(decoder.isAwaitingFrame)
        #expect(decoder.bufferedBytes < LinkStreamDecoder.maximumFrameLength)
        #expect(decoder.resynchronize().count == 1)
        #expect(decoder.bufferedBytes == 0 && decoder.junkBytes == header.count + 100)
    }

    @Test("random bytes never crash it; what is not buffered is counted as junk; the buffer stays bounded")
    func randomInput() {
        for seed in UInt64(1)...10 {
            var random = TestRandom(seed: seed)
            var decoder = LinkStreamDecoder()
            var total = 0
            for _ in 0..<200 {
                // Bias towards sync bytes and small lengths so false headers are common.
                let chunk = random.bytes(Int(random.next() % 700)).map { b -> UInt8 in
                    switch b % 8 { case 0: return 0x53; case 1: return 0x4D; case 2: return 0x11; default: return b }
                }
                total += chunk.count
                _ = decoder.push(chunk)
                #expect(decoder.bufferedBytes < LinkStreamDecoder.maximumFrameLength)
            }
            #expect(decoder.junkBytes + decoder.bufferedBytes == total)
            decoder.reset()
            #expect(decoder.junkBytes == total && decoder.bufferedBytes == 0)
        }
    }
}
