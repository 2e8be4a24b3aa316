import Foundation
import ProcessTestSupport
import Testing

/// Files that are not (whole) audio: `modem rx` must refuse them cleanly and quickly.
@Suite("Bad input files")
struct BadInputTests {
    enum BadFile: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case empty, randomBytes, header30Bytes, textNamedWav, lyingHeader, missing, directory

        var testDescription: String {
            switch self {
            case .empty: "an empty file"
            case .randomBytes: "8 KB of random bytes"
            case .header30Bytes: "a WAV cut to its first 30 bytes"
            case .textNamedWav: "a text file named .wav"
            case .lyingHeader: "a WAV header claiming 0x7fffffff bytes, with no data"
            case .missing: "a missing file"
            case .directory: "a directory"
            }
        }

        /// Makes the input in `dir` and returns its path.
        func make(in dir: Scratch) async throws -> String {
            switch self {
            case .empty:
                return try dir.write("empty.wav", [UInt8]())
            case .randomBytes:
                var state: UInt64 = 0x1234_5678
                let bytes = (0..<8192).map { _ -> UInt8 in
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    return UInt8(truncatingIfNeeded: state >> 56)
                }
                return try dir.write("random.wav", bytes)
            case .header30Bytes:
                let whole = dir.file("whole.wav")
                let input = try dir.write("in.txt", "cut header\n")
                try await modemTx(["--baud", "1200"], input: input, out: whole)
                return try dir.write("cut30.wav", Array(try readBytes(whole).prefix(30)))
            case .textNamedWav:
                return try dir.write("notes.wav", "This is plain text, not audio.\nSecond line.\n")
            case .lyingHeader:
                var h: [UInt8] = Array("RIFF".utf8) + le32(0x7fff_ffff) + Array("WAVE".utf8)
                h += Array("fmt ".utf8) + le32(16) + le16(1) + le16(1) + le32(48000) + le32(96000) + le16(2) + le16(16)
                h += Array("data".utf8) + le32(0x7fff_ffff)
                return try dir.write("liar.wav", h)
            case .missing:
                return dir.file("does-not-exist.wav")
            case .directory:
                let p = dir.file("folder.wav")
                try FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: false)
                return p
            }
        }
    }

    @Test("modem rx refuses it: status 1...123, one line on stderr naming the file, empty stdout, in seconds",
          arguments: BadFile.allCases)
    func refuses(_ bad: BadFile) async throws {
        let dir = try Scratch()
        let path = try await bad.make(in: dir)
        let r = try await modem(["rx", "--baud", "1200", path], timeout: 30)
        #expect(!r.timedOut, "did not end within 10 s: \(r)")
        #expect(!r.signaled, "killed by a signal (a crash?): \(r)")
        #expect(r.status != 0 && r.status < 124, "exit status \(r.status), expected 1...123: \(r)")
        #expect(r.stdout.isEmpty, "standard output is not empty: \(r.stdout.count) bytes")
        #expect(r.stderrLines.count == 1, "expected exactly one line on stderr: \(r)")
        let name = URL(fileURLWithPath: path).lastPathComponent
        #expect(r.stderrText.contains(name), "stderr does not name \(name): \(r)")
    }

    @Test("With -q the refusal is still one line on stderr", arguments: [BadFile.missing, .randomBytes])
    func quietStillSaysWhy(_ bad: BadFile) async throws {
        let dir = try Scratch()
        let path = try await bad.make(in: dir)
        let r = try await modem(["rx", "-q", "--baud", "1200", path], timeout: 30)
        #expect(!r.signaled && !r.timedOut && r.status != 0 && r.status < 124, "\(r)")
        #expect(r.stderrLines.count == 1, "\(r)")
    }

    /// A file whose header claims more data than it holds, with real data after it: decode what is there.
    @Test("A header claiming 0x7fffffff bytes, followed by real data, decodes the data")
    func lyingHeaderWithData() async throws {
        let dir = try Scratch()
        let text = Array(Texts.pangrams.utf8)
        let input = try dir.write("in.txt", text)
        let wav = dir.file("x.wav")
        try await modemTx(["--baud", "1200"], input: input, out: wav)
        var bytes = try readBytes(wav)
        // modem tx writes the canonical 44-byte header: RIFF size at 4, data size at 40.
        #expect(Array(bytes[36..<40]) == Array("data".utf8), "unexpected WAV layout from modem tx")
        bytes.replaceSubrange(4..<8, with: le32(0x7fff_ffff))
        bytes.replaceSubrange(40..<44, with: le32(0x7fff_ffff))
        let liar = try dir.write("liar.wav", bytes)
        let r = try await modem(["rx", "-q", "--baud", "1200", liar], timeout: 30)
        expectSuccess(r)
        #expect(r.stdout == text, "\(describeDifference(expected: text, got: r.stdout))")
    }

    /// Truncated inside the data (a recording cut short): exit 0 and a prefix of the text. Cuts at
    /// several points within a character, so some cut through start, data and stop bits.
    @Test("A file cut inside its data decodes the part that is there")
    func cutInsideData() async throws {
        let dir = try Scratch()
        let text = Array(Texts.words(200, seed: 9).utf8)
        let input = try dir.write("in.txt", text)
        let wav = dir.file("x.wav")
        try await modemTx(["--baud", "1200"], input: input, out: wav)
        let whole = try readBytes(wav)
        // 48 kHz s16 mono, 44-byte header, 2 bit periods of leader, 10 bits of 40 samples a character.
        let headerBytes = 44, samplesPerChar = 400, leader = 80
        var problems: [String] = []
        for character in [60, 100, 150] {
            for part in stride(from: 0, to: samplesPerChar, by: 50) {
                let samples = leader + character * samplesPerChar + part
                let cut = try dir.write("cut-\(samples).wav", Array(whole.prefix(headerBytes + 2 * samples)))
                let r = try await modem(["rx", "-q", "--baud", "1200", cut], timeout: 30)
                expectSuccess(r)
                // Characters whose stop bit is in the file must all be there.
                let complete = (samples - leader) / samplesPerChar
                let stable = r.stdout.count >= complete
                #expect(stable, "cut at sample \(samples) (inside character \(character)): only \(r.stdout.count) bytes decoded, \(complete) complete characters are in the file")
                // Everything but possibly the last byte must be right (checked outside the known issue).
                let head = Array(r.stdout.prefix(max(0, r.stdout.count - 1)))
                #expect(Array(text.prefix(head.count)) == head,
                        "cut at sample \(samples): \(describeDifference(expected: Array(text.prefix(head.count)), got: head))")
                if Array(text.prefix(r.stdout.count)) != r.stdout {
                    problems.append("cut at sample \(samples) (\(part) samples into character \(character)): last byte \(String(format: "0x%02x", r.stdout.last ?? 0)), sent \(String(format: "0x%02x", text[r.stdout.count - 1]))")
                }
            }
        }
        #expect(problems.isEmpty, "stdout is not a prefix of the text in \(problems.count) of 24 cuts:\n\(problems.joined(separator: "\n"))")
    }
}

func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * UInt32($0))) & 0xff) } }
