import ModemAudio
import ModemDSP
#if canImport(Glibc)
import Glibc
#endif

/// Passes an audio file through a ``ChannelSimulator`` into another file, streaming.
public enum FileImpairment {
    /// Mean power of a file's samples (first channel), for setting a noise level from an SNR.
    /// Only samples above -60 dBFS are counted, so leading and trailing silence do not lower it.
    public static func signalPower(path: String, channel: Int = 0) throws -> (power: Double, sampleRate: Int) {
        let r = try AudioFileReader(path: path, channel: channel)
        return (try signalPower(reader: r), r.sampleRate)
    }

    /// Mean power of the samples `r` has still to give (as ``signalPower(path:channel:)``).
    public static func signalPower(reader r: AudioFileReader) throws -> Double {
        var buf = [Float](repeating: 0, count: 65536)
        var sum = 0.0, n = 0
        while true {
            let k = try buf.withUnsafeMutableBufferPointer { try r.read(into: $0) }
            if k == 0 { break }
            // Count in blocks of 1024 samples so silent stretches can be skipped.
            var i = 0
            while i < k {
                let e = min(k, i + 1024)
                var s = 0.0
                for j in i..<e { s += Double(buf[j]) * Double(buf[j]) }
                if s / Double(e - i) > 1e-6 { sum += s; n += e - i }
                i = e
            }
        }
        return n > 0 ? sum / Double(n) : 0
    }

    /// Copies `input` to `output` through the simulator.
    /// - Parameters:
    ///   - snrDB: if given, white noise is set so that the full-band SNR (signal power over noise power
    ///     in 0...fs/2, after the gain) is this many dB; it overrides `impairments.noiseRMS`.
    /// - Returns: the noise RMS used.
    @discardableResult
    public static func run(input: String, output: String, impairments: ChannelImpairments, snrDB: Double?,
                           channel: Int = 0, format: AudioSampleFormat = .pcm16) throws -> Double {
        var imp = impairments
        let r = try AudioFileReader(path: input, channel: channel)
        if let snrDB {
            guard r.isSeekable else {
                throw AudioError(.unsupportedFormat, subject: input == "-" ? "standard input" : input,
                                 message: "--snr measures the signal in a first pass, and a stream (pipe, standard input) cannot be rewound: save it to a file first")
            }
            let p = try signalPower(reader: r)
            try r.seek(toFrame: 0)
            imp.noiseRMS = ChannelImpairments.noiseRMS(snrDB: snrDB, signalPower: p, gainDB: imp.gainDB)
        }
        let w = try AudioFileWriter(path: output, sampleRate: r.sampleRate, format: format)
        var sim = ChannelSimulator(impairments: imp, sampleRate: Double(r.sampleRate))
        var buf = [Float](repeating: 0, count: 65536)
        while true {
            let k = try buf.withUnsafeMutableBufferPointer { try r.read(into: $0) }
            if k == 0 { break }
            let out = sim.process(Array(buf[0..<k]))
            try out.withUnsafeBufferPointer { try w.write($0) }
        }
        // The points the drift's interpolator held back for the input after them: the file's end.
        let rest = sim.finish()
        try rest.withUnsafeBufferPointer { try w.write($0) }
        try w.finish()
        return imp.noiseRMS
    }
}
