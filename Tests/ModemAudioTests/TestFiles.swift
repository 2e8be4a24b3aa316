import Foundation
import ModemAudio

/// A private temporary folder for one test, removed when the value is dropped.
final class TemporaryFolder {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("ModemAudioTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A path inside the folder.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to `name` and returns its path.
    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let p = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }
}

/// Builds canonical 16-bit PCM WAV files by hand, independently of libsndfile.
enum WAVBytes {
    /// A 44-byte header followed by interleaved little-endian samples (`frames[i][channel]`).
    static func pcm16(sampleRate: Int, channels: [[Int16]]) -> [UInt8] {
        let channelCount = channels.count
        let frameCount = channels.first?.count ?? 0
        let dataBytes = frameCount * channelCount * 2
        var out: [UInt8] = []
        out += Array("RIFF".utf8); out += le32(UInt32(36 + dataBytes)); out += Array("WAVE".utf8)
        out += Array("fmt ".utf8); out += le32(16); out += le16(1); out += le16(UInt16(channelCount))
        out += le32(UInt32(sampleRate)); out += le32(UInt32(sampleRate * channelCount * 2))
        out += le16(UInt16(channelCount * 2)); out += le16(16)
        out += Array("data".utf8); out += le32(UInt32(dataBytes))
        out.reserveCapacity(out.count + dataBytes)
        for i in 0..<frameCount {
            for c in 0..<channelCount { out += le16(UInt16(bitPattern: channels[c][i])) }
        }
        return out
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * UInt32($0))) & 0xff) } }
}

/// Reads a whole source in blocks of `blockSize` samples.
func readAll(_ source: AudioSource, blockSize: Int = 4096) throws -> [Float] {
    var result: [Float] = []
    var block = [Float](repeating: 0, count: blockSize)
    while true {
        let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
        if n == 0 { return result }
        result += block[0..<n]
    }
}
