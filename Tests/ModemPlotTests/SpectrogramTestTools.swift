import Foundation
import ProcessTestSupport

/// Helpers for the analysis and spectrogram tests: temporary directories, a tiny WAV writer,
/// synthetic FSK, and running peer tools.
enum SpectrogramTestTools {
    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory(_ tag: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("swiftmodem-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Writes mono 16-bit PCM WAV.
    static func writeWAV(_ samples: [Float], sampleRate: Int, to path: String) throws {
        var d = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + samples.count * 2))
        d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1)
        u32(UInt32(sampleRate)); u32(UInt32(sampleRate * 2)); u16(2); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(UInt32(samples.count * 2))
        for s in samples { u16(UInt16(bitPattern: Int16(max(-1, min(1, s)) * 32767))) }
        try d.write(to: URL(fileURLWithPath: path))
    }

    /// Phase-continuous FSK of pseudo-random bits.
    static func fsk(sampleRate: Int, baudRate: Double, mark: Double, space: Double, seconds: Double,
                    amplitude: Double = 0.5, seed: UInt64 = 1) -> [Float] {
        var state = seed
        let bitCount = Int(baudRate * seconds)
        let bits = (0..<bitCount).map { _ -> Bool in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 63 == 1
        }
        let fs = Double(sampleRate)
        let n = Int(Double(bitCount) * fs / baudRate)
        var phase = 0.0
        return (0..<n).map { i in
            let v = Float(amplitude * sin(phase))
            phase += 2 * .pi * (bits[min(Int(Double(i) * baudRate / fs), bitCount - 1)] ? mark : space) / fs
            return v
        }
    }

    /// Runs a program, feeding `input` to its standard input (its output is read and dropped; a 120 s
    /// hang guard); returns its exit status.
    @discardableResult
    static func run(_ program: String, _ arguments: [String], input: Data = Data()) async throws -> Int32 {
        let r = try await runProcess(program, arguments, stdin: .bytes([UInt8](input)), timeout: 120)
        guard !r.timedOut else { throw ChildProcessError("\(r)") }
        return r.status
    }
}
