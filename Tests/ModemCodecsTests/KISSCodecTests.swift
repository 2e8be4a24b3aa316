import Testing
import ModemTestSupport
import ModemCodecs

@Suite("KISS encoder and decoder")
struct KISSCodecTests {
    @Test("known answers: escapes, ports, parameters, return")
    func knownAnswers() {
        #expect(KISSEncoder.encode(.data([0x01, 0x02])) == [0xC0, 0x00, 0x01, 0x02, 0xC0])
        #expect(KISSEncoder.encode(.data([0xC0, 0xDB, 0xDC, 0xDD])) == [0xC0, 0x00, 0xDB, 0xDC, 0xDB, 0xDD, 0xDC, 0xDD, 0xC0])
        #expect(KISSEncoder.encode(.data([0x41], port: 1)) == [0xC0, 0x10, 0x41, 0xC0])
        // Port 12's data command is 0xC0 and port 13's 0xD0; 0xC0 must be escaped.
        #expect(KISSEncoder.encode(.data([], port: 12)) == [0xC0, 0xDB, 0xDC, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(command: .txDelay, payload: [50])) == [0xC0, 0x01, 0x32, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(port: 2, command: .persistence, payload: [63])) == [0xC0, 0x22, 0x3F, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(command: .slotTime, payload: [10])) == [0xC0, 0x03, 0x0A, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(command: .txTail, payload: [1])) == [0xC0, 0x04, 0x01, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(command: .fullDuplex, payload: [1])) == [0xC0, 0x05, 0x01, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(port: 3, command: .setHardware, payload: [9, 9])) == [0xC0, 0x36, 0x09, 0x09, 0xC0])
        #expect(KISSEncoder.encode(KISSFrame(port: 5, command: .exitKISS)) == [0xC0, 0xFF, 0xC0])
        var appended: [UInt8] = [0x99]
        KISSEncoder.encode(.data([0x01]), into: &appended)
        #expect(appended == [0x99, 0xC0, 0x00, 0x01, 0xC0])

        var decoder = KISSDecoder()
        #expect(decoder.decode([0xC0, 0xFF, 0xC0]) == [KISSFrame(port: 0, command: .exitKISS)])
        #expect(decoder.decode([0xC0, 0xDB, 0xDC, 0xC0]) == [.data([], port: 12)])
        #expect(decoder.decode([0xC0, 0xF6, 0x01, 0xC0]) == [KISSFrame(port: 15, command: .setHardware, payload: [1])])
        #expect(decoder.statistics.frames == 3)
    }

    @Test("random frames round trip: all at once, byte by byte, in random chunks, with garbage before")
    func roundTrip() {
        var random = TestRandom(seed: 40)
        var frames: [KISSFrame] = []
        for _ in 0..<200 {
            let command = KISSCommand.allCases.randomElement(using: &random)!
            let port = command == .exitKISS ? 0 : Int.random(in: 0...15, using: &random)
            // Payloads rich in FEND and FESC.
            let payload = (0..<Int.random(in: 0...300, using: &random)).map { _ in
                [0xC0, 0xDB, 0xDC, 0xDD, UInt8.random(in: 0...255, using: &random)].randomElement(using: &random)!
            }
            frames.append(KISSFrame(port: port, command: command, payload: payload))
        }
        // An empty exit frame is the only frame with an empty buffer ambiguity: none here (command byte).
        let garbage: [UInt8] = [0x01, 0x02, 0xDB, 0xDC, 0x41]
        let stream = garbage + frames.flatMap { KISSEncoder.encode($0) }

        var whole = KISSDecoder()
        #expect(whole.decode(stream) == frames)
        #expect(whole.statistics.frames == frames.count)
        #expect(whole.statistics.garbageBytes == garbage.count)
        #expect(whole.statistics.dropped == 0)

        var bytewise = KISSDecoder()
        #expect(stream.compactMap { bytewise.decode($0) } == frames)
        #expect(bytewise.statistics == whole.statistics)

        var chunked = KISSDecoder()
        #expect(hdlcPieces(stream, maxPiece: 37, using: &random).flatMap { chunked.decode($0) } == frames)
        #expect(chunked.statistics == whole.statistics)

        // Frames back to back sharing one FEND also work.
        var shared: [UInt8] = [0xC0]
        for frame in frames.prefix(10) {
            shared += KISSEncoder.encode(frame).dropFirst()
        }
        var sharedDecoder = KISSDecoder()
        #expect(sharedDecoder.decode(shared) == Array(frames.prefix(10)))
    }

    @Test("garbage is counted and skipped; the frames around it survive")
    func garbage() {
        let good = KISSFrame.data([0x11, 0x22])
        let goodBytes = KISSEncoder.encode(good)
        var decoder = KISSDecoder()
        // Bad escape: FESC then 0x41; the rest of that frame is garbage up to the next FEND.
        #expect(decoder.decode([0xC0, 0x00, 0x01, 0xDB, 0x41, 0x42, 0x43] + goodBytes) == [good])
        #expect(decoder.statistics.badEscapes == 1)
        #expect(decoder.statistics.garbageBytes == 3)  // 0x41, then 0x42 0x43 while waiting for a FEND
        // A dangling FESC right before FEND.
        #expect(decoder.decode([0xC0, 0x00, 0x01, 0xDB, 0xC0] + goodBytes) == [good])
        #expect(decoder.statistics.badEscapes == 2)
        // Unknown commands: 7...14 with any port, 0x0F with a port other than 15.
        #expect(decoder.decode([0xC0, 0x07, 0x01, 0xC0, 0xC0, 0x1E, 0xC0, 0xC0, 0x0F, 0xC0, 0xC0, 0x3C, 0xC0] + goodBytes) == [good])
        #expect(decoder.statistics.unknownCommands == 4)
        // Empty frames (FENDs in a row) are not counted at all.
        #expect(decoder.decode([0xC0, 0xC0, 0xC0, 0xC0]) == [])
        #expect(decoder.statistics.frames == 3)
        #expect(decoder.statistics.dropped == 6)
        decoder.reset()
        #expect(decoder.statistics == KISSDecoderStatistics())
        // After reset the decoder waits for a FEND again.
        #expect(decoder.decode([0x00, 0x01, 0xC0]) == [])
        #expect(decoder.statistics.garbageBytes == 2)
    }

    @Test("oversized frames are counted and dropped; the limit is inclusive")
    func oversized() {
        var decoder = KISSDecoder(maximumPayloadLength: 10)
        let fits = KISSFrame.data(Array(repeating: 0xC0, count: 10))
        let tooBig = KISSFrame.data(Array(repeating: 0x55, count: 11))
        let stream = KISSEncoder.encode(tooBig) + KISSEncoder.encode(fits) + KISSEncoder.encode(tooBig)
        #expect(decoder.decode(stream) == [fits])
        #expect(decoder.statistics.oversized == 2)
        #expect(decoder.statistics.frames == 1)
        // A stream that never ends a frame does not grow the decoder without bound.
        var endless = KISSDecoder(maximumPayloadLength: 100)
        #expect(endless.decode([0xC0] + Array(repeating: 0x41, count: 100_000)) == [])
        #expect(endless.statistics.oversized == 1)
        #expect(KISSDecoder().maximumPayloadLength == KISSDecoder.defaultMaximumPayloadLength)
    }

    @Test("an AX.25 frame travels in a KISS data frame")
    func ax25() throws {
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS,WIDE1-1:\u{C0}\u{DB} with FEND and FESC in UTF-8")
        var decoder = KISSDecoder()
        let received = decoder.decode(KISSEncoder.encode(.data(frame.encode())))
        #expect(received.count == 1)
        #expect(try AX25Frame(decoding: received[0].payload) == frame)
    }
}
