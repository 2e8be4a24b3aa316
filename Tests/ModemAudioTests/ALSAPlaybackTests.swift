import Foundation
import ModemAudio
import Testing
import ModemTestSupport

@Suite("ALSA playback against a fake device")
struct ALSAPlaybackTests {
    @Test("samples arrive as 16-bit mono, exactly, clipped at full scale")
    func writesExactS16() throws {
        let fake = FakeALSA()
        let out = try ALSAPlayback(device: "fake", sampleRate: 48000, backend: fake)
        #expect(out.encoding == .s16LittleEndian)
        #expect(out.deviceChannelCount == 1)
        #expect(out.bufferFrameCount == 4800 && out.periodFrameCount == 1200)
        #expect(fake.openedDevices.map(\.0) == ["fake"])
        #expect(fake.openedDevices.first?.1 == .playback)
        #expect(fake.stream.configuration?.latency == 100_000)

        var random = TestRandom(seed: 3)
        let values = (0..<10_000).map { _ in random.int16(in: .min ... .max) }
        try values.map { Float($0) / 32768 }.withUnsafeBufferPointer { try out.write($0) }
        try [Float(1), 1.5, -1, -7, .nan, .infinity, -.infinity, 0.5].withUnsafeBufferPointer { try out.write($0) }
        try out.finish()
        #expect(fake.stream.writtenInt16 == values + [32767, 32767, -32768, -32768, 0, 32767, -32768, 16384])
        #expect(out.xrunCount == 0)
        #expect(fake.stream.calls.suffix(3) == ["nonblock(false)", "drain", "close"])
    }

    @Test("an underrun is recovered, counted, and loses nothing")
    func underrunRecovered() throws {
        let fake = FakeALSA()
        fake.stream.framesPerTransfer = 700
        let out = try ALSAPlayback(device: "fake", sampleRate: 8000, backend: fake)
        let values = (0..<3000).map { Int16($0 - 1500) }
        try values.prefix(1000).map { Float($0) / 32768 }.withUnsafeBufferPointer { try out.write($0) }
        fake.stream.scriptedTransferResults = [-Int(EPIPE), -Int(EAGAIN), -Int(EINTR), -Int(EPIPE)]
        try values.dropFirst(1000).map { Float($0) / 32768 }.withUnsafeBufferPointer { try out.write($0) }
        #expect(out.xrunCount == 2)
        #expect(fake.stream.recoveredCodes == [-EPIPE, -EPIPE])
        #expect(fake.stream.writtenInt16 == values)
        try out.finish()
    }

    @Test("a device that fails for good throws deviceFailed with the device, code and text")
    func unrecoverable() throws {
        let fake = FakeALSA()
        let out = try ALSAPlayback(device: "fake:1", sampleRate: 8000, backend: fake)
        fake.stream.scriptedTransferResults = [-Int(EPIPE)]
        fake.stream.recoverResult = -EIO
        let error = #expect(throws: AudioError.self) { try [Float](repeating: 0, count: 10).withUnsafeBufferPointer { try out.write($0) } }
        #expect(error?.kind == .deviceFailed)
        #expect(error?.code == -EIO)
        #expect(error?.description.contains("fake:1") == true)
        #expect(error?.description.contains("fake error text for \(-EIO)") == true)

        fake.stream.scriptedTransferResults = [-Int(ENODEV)]
        let gone = #expect(throws: AudioError.self) { try [Float](repeating: 0, count: 10).withUnsafeBufferPointer { try out.write($0) } }
        #expect(gone?.kind == .deviceFailed)
        #expect(gone?.code == -ENODEV)
        #expect(gone?.description.contains("snd_pcm_writei") == true)
    }

    @Test("a device that accepts nothing makes write throw after the stall timeout, not hang")
    func stalledDevice() throws {
        let fake = FakeALSA()
        fake.stream.framesPerTransfer = 0
        fake.stream.waitResult = 0
        let out = try ALSAPlayback(device: "fake", sampleRate: 8000, backend: fake)
        out.stallTimeoutMilliseconds = 100
        let start = ContinuousClock.now
        let error = #expect(throws: AudioError.self) { try [Float](repeating: 0, count: 10).withUnsafeBufferPointer { try out.write($0) } }
        #expect(error?.kind == .deviceFailed)
        #expect(ContinuousClock.now - start < .seconds(30))  // not a hang (the stall timeout is 100 ms; the bound is a hang guard)
        // A device that says "ready" but still takes nothing does not spin forever either.
        fake.stream.waitResult = 1
        #expect(throws: AudioError.self) { try [Float](repeating: 0, count: 10).withUnsafeBufferPointer { try out.write($0) } }
    }

    @Test("endless xruns without progress end in deviceFailed")
    func endlessXruns() throws {
        let fake = FakeALSA()
        let out = try ALSAPlayback(device: "fake", sampleRate: 8000, backend: fake)
        fake.stream.scriptedTransferResults = Array(repeating: -Int(EPIPE), count: 100)
        let error = #expect(throws: AudioError.self) { try [Float](repeating: 0, count: 10).withUnsafeBufferPointer { try out.write($0) } }
        #expect(error?.kind == .deviceFailed)
        #expect(out.xrunCount < 100)
    }

    @Test("finish drains once; write afterwards throws; a drain that finds an underrun is fine")
    func finishLifecycle() throws {
        let fake = FakeALSA()
        fake.stream.drainResult = -EPIPE
        let out = try ALSAPlayback(device: "fake", sampleRate: 8000, backend: fake)
        try out.finish()
        try out.finish()
        #expect(fake.stream.calls.filter { $0 == "drain" }.count == 1)
        #expect(fake.stream.calls.filter { $0 == "close" }.count == 1)
        let error = #expect(throws: AudioError.self) { try [Float(0)].withUnsafeBufferPointer { try out.write($0) } }
        #expect(error?.kind == .writeFailed)

        let fake2 = FakeALSA()
        fake2.stream.drainResult = -EIO
        let out2 = try ALSAPlayback(device: "fake", sampleRate: 8000, backend: fake2)
        #expect(throws: AudioError.self) { try out2.finish() }
        #expect(fake2.stream.calls.last == "close")
    }

    @Test("dropping an unfinished playback discards and closes")
    func deinitCloses() throws {
        let fake = FakeALSA()
        do { _ = try ALSAPlayback(device: "fake", sampleRate: 8000, backend: fake) }
        #expect(fake.stream.calls == ["drop", "close"])
    }

    @Test("a device without mono S16 gets the next format it takes, samples on every channel")
    func negotiation() throws {
        let fake = FakeALSA()
        fake.stream.accepts = { encoding, channels in encoding == .s32LittleEndian && channels == 2 ? 0 : -EINVAL }
        let out = try ALSAPlayback(device: "fake", sampleRate: 44100, backend: fake)
        #expect(out.encoding == .s32LittleEndian)
        #expect(out.deviceChannelCount == 2)
        #expect(fake.stream.configurationAttempts.first! == (.s16LittleEndian, 1))
        try [Float(0.5), -0.25].withUnsafeBufferPointer { try out.write($0) }
        let words = fake.stream.writtenBytes.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
        let expected: [Int32] = [1_073_741_824, 1_073_741_824, -536_870_912, -536_870_912]
        #expect(words == expected)
    }

    @Test("a device that takes no configuration is unavailable, and is closed again")
    func noConfiguration() throws {
        let fake = FakeALSA()
        fake.stream.accepts = { _, _ in -EINVAL }
        let error = #expect(throws: AudioError.self) { try ALSAPlayback(device: "picky", sampleRate: 48000, backend: fake) }
        #expect(error?.kind == .deviceUnavailable)
        #expect(error?.code == -EINVAL)
        #expect(error?.description.contains("picky") == true)
        #expect(error?.description.contains("48000 Hz") == true)
        #expect(fake.stream.calls.last == "close")
        #expect(fake.stream.configurationAttempts.count == 6)

        // A failure other than "not supported" is not retried with other formats.
        let busy = FakeALSA()
        busy.stream.accepts = { _, _ in -EBUSY }
        let e2 = #expect(throws: AudioError.self) { try ALSAPlayback(device: "busy", sampleRate: 48000, backend: busy) }
        #expect(e2?.code == -EBUSY)
        #expect(busy.stream.configurationAttempts.count == 1)
    }

    @Test("a device that cannot be opened is unavailable, with code and text")
    func openFails() throws {
        let fake = FakeALSA()
        fake.openResult = -ENOENT
        let error = #expect(throws: AudioError.self) { try ALSAPlayback(device: "hw:7,0", sampleRate: 48000, backend: fake) }
        #expect(error?.kind == .deviceUnavailable)
        #expect(error?.subject == "hw:7,0")
        #expect(error?.code == -ENOENT)
        #expect(error?.message.contains("snd_pcm_open") == true)
        #expect(error?.message.contains("fake error text for \(-ENOENT)") == true)
        #expect(fake.openedDevices.first?.2 == true)   // non-blocking
    }

    @Test("bad parameters are refused before the device is touched", arguments: [
        ("fake", 0, 100), ("fake", 999, 100), ("fake", 400_000, 100), ("fake", -48000, 100),
        ("fake", 48000, 0), ("fake", 48000, -5), ("fake", 48000, 10_001), ("", 48000, 100), ("a\0b", 48000, 100),
    ])
    func badParameters(device: String, sampleRate: Int, latencyMilliseconds: Int) throws {
        let fake = FakeALSA()
        let e1 = #expect(throws: AudioError.self) {
            try ALSAPlayback(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds, backend: fake)
        }
        #expect(e1?.kind == .invalidParameter)
        let e2 = #expect(throws: AudioError.self) {
            try ALSACapture(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds, backend: fake)
        }
        #expect(e2?.kind == .invalidParameter)
        #expect(fake.openedDevices.isEmpty)
    }
}
