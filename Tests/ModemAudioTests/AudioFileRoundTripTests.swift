import CSndFile
import Foundation
import ModemAudio
import Testing
import ModemTestSupport

@Suite("Audio files: round trips")
struct AudioFileRoundTripTests {
    /// A test signal below full scale: a sine plus deterministic noise, with exact zeros.
    static func signal(count: Int, sampleRate: Int) -> [Float] {
        var random = TestRandom(seed: UInt64(sampleRate))
        return (0..<count).map { i in
            if i % 97 == 0 { return 0 }
            let tone = 0.5 * sin(2 * Double.pi * 1000 * Double(i) / Double(sampleRate))
            let noise = Double(random.int16(in: -1000...1000)) / 2500
            return Float(tone + noise)
        }
    }

    static func tolerance(_ format: AudioSampleFormat) -> Float {
        switch format {
        case .pcm8: return 0.02
        case .pcm16: return 1e-4
        case .pcm24: return 1e-6
        case .pcm32: return 1e-7
        case .float32: return 0
        }
    }

    @Test("each sample format at each rate comes back", arguments: AudioSampleFormat.allCases,
          [8000, 11025, 22050, 44100, 48000, 96000])
    func roundTrip(format: AudioSampleFormat, sampleRate: Int) throws {
        let folder = try TemporaryFolder()
        let path = folder.file("t.wav")
        let original = Self.signal(count: 3001, sampleRate: sampleRate)
        let writer = try AudioFileWriter(path: path, sampleRate: sampleRate, format: format)
        // Written in uneven pieces, as a modulator would.
        var offset = 0
        for piece in [1, 999, 2001] {
            try original[offset..<offset + piece].withUnsafeBufferPointer { try writer.write($0) }
            offset += piece
        }
        try writer.finish()
        try writer.finish()   // harmless

        let reader = try AudioFileReader(path: path)
        #expect(reader.sampleRate == sampleRate)
        #expect(reader.channelCount == 1)
        #expect(reader.declaredFrameCount == Int64(original.count))
        #expect(reader.formatDescription.hasPrefix("WAV"))
        let back = try readAll(reader, blockSize: 700)
        #expect(back.count == original.count)
        let worst = zip(original, back).map { abs($0 - $1) }.max() ?? .infinity
        #expect(worst <= Self.tolerance(format), "worst error \(worst) for \(format) at \(sampleRate) Hz")
    }

    @Test("reading one sample at a time gives the same samples")
    func oneSampleAtATime() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("t.wav")
        let original = Self.signal(count: 500, sampleRate: 8000)
        let writer = try AudioFileWriter(path: path, sampleRate: 8000, format: .float32)
        try original.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        #expect(try readAll(AudioFileReader(path: path), blockSize: 1) == original)
    }

    @Test("a stereo file made by hand: each channel reads on its own", arguments: [8000, 48000, 96000])
    func stereoByHand(sampleRate: Int) throws {
        var random = TestRandom(seed: 7)
        let left = (0..<2000).map { Int16(truncatingIfNeeded: $0 * 13 - 13000) }
        let right = (0..<2000).map { _ in random.int16(in: .min ... .max) }
        let folder = try TemporaryFolder()
        let path = try folder.write("stereo.wav", WAVBytes.pcm16(sampleRate: sampleRate, channels: [left, right]))

        let r1 = try AudioFileReader(path: path, channel: 1)
        #expect(r1.channelCount == 2)
        #expect(r1.sampleRate == sampleRate)
        #expect(try readAll(r1, blockSize: 333) == right.map { Float($0) / 32768 })
        let r0 = try AudioFileReader(path: path, channel: 0)
        #expect(try readAll(r0) == left.map { Float($0) / 32768 })

        for bad in [2, -1, 1000] {
            let error = #expect(throws: AudioError.self) { try AudioFileReader(path: path, channel: bad) }
            #expect(error?.kind == .noSuchChannel)
            #expect(error?.description.contains(path) == true)
        }
    }

    @Test("stereo and six-channel files written by libsndfile", arguments: [
        (2, Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_24), 44100),
        (2, Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT), 22050),
        (6, Int32(SF_FORMAT_WAVEX | SF_FORMAT_PCM_16), 48000),
    ])
    func multichannelBySndfile(channels: Int, format: Int32, sampleRate: Int) throws {
        let folder = try TemporaryFolder()
        let path = folder.file("multi.wav")
        let frames = 1500
        // Channel c holds (c + 1) / 8 times a ramp, so each channel is recognisable.
        func value(_ frame: Int, _ channel: Int) -> Float {
            Float(channel + 1) / 8 * (Float(frame % 200) / 100 - 1)
        }
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = format
        let h = try #require(sf_open(path, Int32(SFM_WRITE), &info))
        var interleaved = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames { for c in 0..<channels { interleaved[f * channels + c] = value(f, c) } }
        #expect(sf_writef_float(h, interleaved, sf_count_t(frames)) == sf_count_t(frames))
        sf_close(h)

        for channel in [1, channels - 1] {
            let reader = try AudioFileReader(path: path, channel: channel)
            #expect(reader.channelCount == channels)
            let back = try readAll(reader, blockSize: 512)
            #expect(back.count == frames)
            let worst = (0..<min(frames, back.count)).map { abs(back[$0] - value($0, channel)) }.max() ?? .infinity
            #expect(worst < 1e-3, "channel \(channel): worst error \(worst)")
        }
    }
}
