import Testing
import ModemTestSupport
import ModemCodecs
import ModemLink

@Suite("LinkModem: frames through audio, with junk around")
struct LinkModemTests {
    static let sampleRate = 48000
    /// The receiver holds each frame for a few frame windows of later audio (about 256 bit times) to
    /// compare the slicers' copies before delivering it, so every capture ends with 0.3 s of junk.
    static let trailing = sampleRate * 3 / 10

    /// A few frames of different kinds and sizes (empty, flag-like and random payloads).
    static func frames(seed: UInt64) -> [[LinkFrame]] {
        var random = TestRandom(seed: seed)
        return [
            [LinkFrame(kind: .hello, session: 0x21, payload: Array("phone".utf8))],
            [LinkFrame(kind: .data, flags: [.fromDevice, .reply], session: 0x21, message: 3, fragment: 0, fragmentCount: 2,
                       payload: random.bytes(64)),
             LinkFrame(kind: .data, flags: [.fromDevice, .reply, .poll], session: 0x21, message: 3, fragment: 1,
                       fragmentCount: 2, payload: [0x7E, 0x7E, 0xFF, 0xFF, 0x00, 0x7D]),
             LinkFrame(kind: .ack, flags: .complete, session: 0x21, message: 2)],
        ]
    }

    /// The audio of `transmissions` made by a sending modem, each transmission queued with one `send`
    /// and played out to its end, with `gap` samples of silence after each.
    static func audio(_ transmissions: [[LinkFrame]], configuration: LinkConfiguration, gap: Int = 2400) throws -> [Float] {
        let sender = try LinkModem(configuration: configuration, sampleRate: sampleRate)
        var samples: [Float] = []
        for t in transmissions {
            sender.send(t)
            #expect(sender.isTransmitting)
            var finished = 0
            var spans = 0
            while sender.isTransmitting {
                let o = sender.output(count: 480)
                samples += o.samples
                spans += o.frameSpans.count
                if o.finished { finished += 1 }
            }
            #expect(finished == 1)
            #expect(spans >= t.count)
            // After the end: silence, no spans, not finished again.
            let idle = sender.output(count: gap)
            #expect(idle.samples.allSatisfy { $0 == 0 } && idle.frameSpans.isEmpty && !idle.finished)
            samples += idle.samples
        }
        return samples
    }

    /// Feeds `samples` to a fresh receiving modem in blocks of `block` samples (0: all at once).
    static func decode(_ samples: [Float], block: Int, configuration: LinkConfiguration) throws -> (frames: [LinkFrame], modem: LinkModem) {
        let receiver = try LinkModem(configuration: configuration, sampleRate: sampleRate)
        var frames: [LinkFrame] = []
        samples.withUnsafeBufferPointer { all in
            let n = block == 0 ? all.count : block
            var i = 0
            while i < all.count {
                let end = min(all.count, i + n)
                let r = receiver.receive(UnsafeBufferPointer(rebasing: all[i..<end]))
                frames += r.frames
                #expect(!r.heardForeign)
                i = end
            }
        }
        return (frames, receiver)
    }

    @Test("another modem's audio with noise before and after decodes to exactly the frames sent",
          arguments: [0, 1, 7, 480])
    func roundTripWithJunk(block: Int) throws {
        let configuration = LinkConfiguration()
        let sent = Self.frames(seed: 1)
        var random = TestRandom(seed: 99)
        let samples = random.noise(Self.sampleRate / 4, amplitude: 0.4)
            + (try Self.audio(sent, configuration: configuration))
            + random.noise(Self.trailing, amplitude: 0.4)
        let (frames, receiver) = try Self.decode(samples, block: block, configuration: configuration)
        #expect(frames == sent.flatMap { $0 })
        #expect(receiver.framesDecoded == sent.flatMap { $0 }.count)
        #expect(receiver.framesForeign == 0)
    }

    @Test("frames queued while a transmission plays join it and are all decoded")
    func joiningTransmission() throws {
        let configuration = LinkConfiguration()
        let sender = try LinkModem(configuration: configuration, sampleRate: Self.sampleRate)
        let first = LinkFrame(kind: .data, session: 9, message: 1, payload: Array("first".utf8))
        let second = LinkFrame(kind: .cancel, session: 9, message: 1)
        let third = LinkFrame(kind: .close, session: 9)
        sender.send([first])
        var random = TestRandom(seed: 5)
        var samples = random.noise(1000, amplitude: 0.3)
        var finished = 0
        var blocks = 0
        while sender.isTransmitting {
            let o = sender.output(count: 480)
            samples += o.samples
            if o.finished { finished += 1 }
            blocks += 1
            if blocks == 5 { sender.send([second]) }  // still playing the first frame
            if blocks == 6 { sender.send([third]) }
        }
        #expect(finished == 1)  // one transmission
        samples += random.noise(Self.trailing, amplitude: 0.3)
        let (frames, _) = try Self.decode(samples, block: 480, configuration: configuration)
        #expect(frames == [first, second, third])
    }

    @Test("noise alone decodes to nothing")
    func noiseAlone() throws {
        var random = TestRandom(seed: 1234)
        let (frames, receiver) = try Self.decode(random.noise(Self.sampleRate, amplitude: 0.5), block: 480,
                                                 configuration: LinkConfiguration())
        #expect(frames.isEmpty)
        #expect(receiver.framesDecoded == 0)
    }

    @Test("a corrupted transmission is not delivered, the next clean one is (plain frames); coded frames correct it",
          arguments: [LinkFEC.off, .on])
    func corruptedThenClean(fec: LinkFEC) throws {
        let configuration = LinkConfiguration(forwardErrorCorrection: fec)
        let a = LinkFrame(kind: .data, session: 1, message: 1, payload: Array(repeating: 0x55, count: 40))
        let b = LinkFrame(kind: .data, session: 1, message: 2, payload: Array(repeating: 0x33, count: 40))
        var first = try Self.audio([[a]], configuration: configuration, gap: 0)
        // Silence a stretch in the middle of the frame (about 20 bit times).
        let middle = first.count / 2
        for i in middle..<(middle + 800) { first[i] = 0 }
        let samples = first + (try Self.audio([[b]], configuration: configuration)) + [Float](repeating: 0, count: Self.trailing)
        let (frames, receiver) = try Self.decode(samples, block: 480, configuration: configuration)
        #expect(frames == (fec == .on ? [a, b] : [b]))
        #expect(receiver.codedFramesDecoded == (fec == .on ? 2 : 0))
    }
}
