import Foundation
import ModemAudio
import Testing
import ModemTestSupport

@Suite("ALSA capture against a fake device")
struct ALSACaptureTests {
    @Test("the first read starts the stream; reads return at most 50 ms, exactly converted")
    func readsExactly() throws {
        let fake = FakeALSA()
        var random = TestRandom(seed: 11)
        let values = (0..<5000).map { _ in random.int16(in: .min ... .max) }
        fake.stream.queueCapture(values)
        fake.stream.framesPerTransfer = 100_000
        let input = try ALSACapture(device: "fake", sampleRate: 8000, backend: fake)
        #expect(fake.openedDevices.first?.1 == .capture)
        #expect(fake.stream.calls.isEmpty)   // not started before the first read
        #expect(input.maximumReadSampleCount == 400)

        var got: [Float] = []
        var block = [Float](repeating: 0, count: 3000)
        while got.count < values.count {
            let n = try block.withUnsafeMutableBufferPointer { try input.read(into: $0) }
            #expect(n >= 1 && n <= 400)
            got += block[0..<n]
        }
        #expect(got == values.map { Float($0) / 32768 })
        #expect(fake.stream.calls.filter { $0 == "start" }.count == 1)
        #expect(input.xrunCount == 0)

        input.close()
        input.close()
        #expect(fake.stream.calls.suffix(2) == ["drop", "close"])
        #expect(try block.withUnsafeMutableBufferPointer { try input.read(into: $0) } == 0)
    }

    @Test("an overrun is recovered, counted, and the stream restarted")
    func overrun() throws {
        let fake = FakeALSA()
        fake.stream.queueCapture([1, 2, 3])
        let input = try ALSACapture(device: "fake", sampleRate: 48000, backend: fake)
        fake.stream.scriptedTransferResults = [-Int(EPIPE)]
        var block = [Float](repeating: 0, count: 10)
        let n = try block.withUnsafeMutableBufferPointer { try input.read(into: $0) }
        #expect(n == 3)
        #expect(Array(block[0..<3]) == [1, 2, 3].map { Float($0) / 32768 })
        #expect(input.xrunCount == 1)
        #expect(fake.stream.recoveredCodes == [-EPIPE])
        #expect(fake.stream.calls.filter { $0 == "start" }.count == 2)
    }

    @Test("a read waits for audio, then returns what came")
    func waitsForAudio() throws {
        let fake = FakeALSA()
        let input = try ALSACapture(device: "fake", sampleRate: 48000, backend: fake)
        fake.stream.scriptedTransferResults = [-Int(EAGAIN), -Int(EAGAIN)]
        fake.stream.queueCapture([5])
        var block = [Float](repeating: 0, count: 10)
        #expect(try block.withUnsafeMutableBufferPointer { try input.read(into: $0) } == 1)
        #expect(fake.stream.waits == 2)
    }

    @Test("a silent device makes read throw after the stall timeout, naming the device")
    func stalled() throws {
        let fake = FakeALSA()
        fake.stream.waitResult = 0
        let input = try ALSACapture(device: "quiet", sampleRate: 48000, backend: fake)
        input.stallTimeoutMilliseconds = 100
        let start = ContinuousClock.now
        var block = [Float](repeating: 0, count: 10)
        let error = #expect(throws: AudioError.self) { try block.withUnsafeMutableBufferPointer { try input.read(into: $0) } }
        #expect(error?.kind == .deviceFailed)
        #expect(error?.subject == "quiet")
        #expect(ContinuousClock.now - start < .seconds(30))  // not a hang (the stall timeout is 100 ms; the bound is a hang guard)
    }

    @Test("a stream that cannot start throws deviceFailed")
    func cannotStart() throws {
        let fake = FakeALSA()
        fake.stream.startResult = -EIO
        let input = try ALSACapture(device: "fake", sampleRate: 48000, backend: fake)
        var block = [Float](repeating: 0, count: 10)
        let error = #expect(throws: AudioError.self) { try block.withUnsafeMutableBufferPointer { try input.read(into: $0) } }
        #expect(error?.kind == .deviceFailed)
        #expect(error?.code == -EIO)
    }

    @Test("a stereo-only float device gives channel 0")
    func stereoFloat() throws {
        let fake = FakeALSA()
        fake.stream.accepts = { encoding, channels in encoding == .float32LittleEndian && channels == 2 ? 0 : -EINVAL }
        let input = try ALSACapture(device: "fake", sampleRate: 48000, backend: fake)
        #expect(input.encoding == .float32LittleEndian && input.deviceChannelCount == 2)
        for (l, r) in [(Float(0.25), Float(-0.5)), (-0.75, 0.125), (.nan, 1)] {
            fake.stream.captureBytes += withUnsafeBytes(of: l.bitPattern.littleEndian, Array.init)
            fake.stream.captureBytes += withUnsafeBytes(of: r.bitPattern.littleEndian, Array.init)
        }
        var block = [Float](repeating: 9, count: 10)
        #expect(try block.withUnsafeMutableBufferPointer { try input.read(into: $0) } == 3)
        #expect(Array(block[0..<3]) == [0.25, -0.75, 0])
    }
}
