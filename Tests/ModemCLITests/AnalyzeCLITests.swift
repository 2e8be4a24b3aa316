import Foundation
import ProcessTestSupport
import Testing

/// `modem analyze` ends with the `modem rx` command that decodes the file: each case writes a file
/// with `modem tx`, runs the command analyze printed (its words, the file name replaced by the path)
/// and compares what it decoded with what was sent.
@Suite("modem analyze: the suggested command decodes the file")
struct AnalyzeCLITests {
    static let frames = (1...20).map { "N0CALL-\($0 % 15 + 1)>APZ001:frame \($0) of 20" }

    /// The last line of `modem analyze FILE`, run as a command; its standard output and the framing line.
    func analyzeAndRun(_ file: String) async throws -> (command: String, output: ProcessResult, framing: String) {
        let a = try await modem(["analyze", file])
        #expect(a.succeeded, "\(a)")
        let lines = a.stdoutText.split(separator: "\n").map(String.init)
        let command = try #require(lines.last { $0.hasPrefix("modem rx ") }, "no command: \(a.stdoutText)")
        let framing = lines.first { $0.hasPrefix("  framing") } ?? ""
        // The file name is the last word (shell-quoted only when it needs it; these paths do not).
        var words = command.split(separator: " ").map(String.init)
        #expect(words.last == file, "\(command)")
        words.removeFirst()
        let r = try await modem(Array(words), timeout: 120)
        return (command, r, framing)
    }

    @Test("AX.25 at 1200 baud, 20 frames and 2: --framing ax25 at the standard rate", arguments: [20, 2])
    func ax25(count: Int) async throws {
        let dir = try Scratch()
        let sent = Array(Self.frames.prefix(count))
        try await modemTx(["--profile", "bell202", "--framing", "ax25"], input: try dir.write("f.txt", sent.joined(separator: "\n") + "\n"),
                          out: dir.file("ax.wav"))
        let (command, r, framing) = try await analyzeAndRun(dir.file("ax.wav"))
        // No measured rate (two frames measure about 1800 baud): the profile's, or the standard 1200.
        #expect(command.contains("--framing ax25") && (!command.contains("--baud") || command.contains("--baud 1200 ")), "\(command)")
        #expect(framing.contains("ax25 (\(count) AX.25 frames"), "\(framing)")
        #expect(r.stdoutText.split(separator: "\n").map(String.init) == sent, "\(command): \(r)")
    }

    /// 8E1 text at 300 baud once measured about 390 baud (its lopsided spectrum put the analysis'
    /// slicer off the tones' middle) and the framing came out "uncertain".
    @Test("UART formats with parity at 300 baud: 300 baud measured, the command names the format and gives back the exact text",
          arguments: ["7E1", "7O1", "8E1", "8O1"])
    func parity(framing: String) async throws {
        let dir = try Scratch()
        let text = (1...6).map { "Parity and framing matter: \(framing) text, line \($0)\n" }.joined()
        try await modemTx(["--baud", "300", "--framing", framing], input: try dir.write("t.txt", text), out: dir.file("e.wav"))
        let (command, r, line) = try await analyzeAndRun(dir.file("e.wav"))
        let report = try await modem(["analyze", dir.file("e.wav")]).stdoutText
        #expect(report.contains("  baud      300.0 measured, 300 standard"), "\(report)")
        #expect(line.hasPrefix("  framing   \(framing) (") && !line.contains("uncertain"), "\(report)")
        #expect(command == "modem rx --profile bell103 --framing \(framing) \(dir.file("e.wav"))", "\(report)")
        #expect(r.stdoutText == text, "\(command): \(r)")
    }

    @Test("8N1 text: the plain command, no --framing")
    func plain() async throws {
        let dir = try Scratch()
        let text = String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 8)
        try await modemTx(["--baud", "1200"], input: try dir.write("t.txt", text), out: dir.file("p.wav"))
        let (command, r, _) = try await analyzeAndRun(dir.file("p.wav"))
        #expect(!command.contains("--framing"), "\(command)")
        #expect(r.stdoutText == text, "\(command): \(r)")
    }

    @Test("Baudot at 45.45 baud with tones no profile has, mark above space: found by decoding both ways round")
    func baudotTonesSwapped() async throws {
        let dir = try Scratch()
        let text = "RYRYRY THE QUICK BROWN FOX 1234\n"
        try await modemTx(["--baud", "45.45", "--framing", "baudot", "--mark", "2125", "--space", "2295"],
                          input: try dir.write("b.txt", text), out: dir.file("b.wav"))
        let (command, r, line) = try await analyzeAndRun(dir.file("b.wav"))
        #expect(command.contains("--framing baudot") && command.contains("--mark 2125 --space 2295"), "\(command); \(line)")
        #expect(r.stdoutText.contains("THE QUICK BROWN FOX 1234"), "\(command): \(r)")
    }

    /// The tEXt chunks of a PNG file, keyword to text (the chunks walked by their lengths from the
    /// signature on; the picture itself is not decoded).
    static func pngText(_ file: [UInt8]) throws -> [String: String] {
        #expect(file.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG")
        var text: [String: String] = [:]
        var i = 8
        while i + 12 <= file.count {
            let n = file[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
            try #require(i + 12 + n <= file.count, "a chunk runs past the end")
            if file[(i + 4)..<(i + 8)].elementsEqual("tEXt".utf8) {
                let data = file[(i + 8)..<(i + 8 + n)]
                let zero = try #require(data.firstIndex(of: 0))
                text[String(decoding: data[..<zero], as: UTF8.self)] = String(decoding: data[(zero + 1)...], as: UTF8.self)
            }
            i += 12 + n
        }
        return text
    }

    /// The top of the spectrogram's frequency axis, from the report's `picture` line.
    static func spectrogramTop(_ report: String, png: String) throws -> Int {
        let line = try #require(report.split(separator: "\n").first { $0.hasPrefix("  picture   \(png) (spectrogram 0-") }, "\(report)")
        return try #require(Int(line.split(separator: "-").last!.split(separator: " ").first!), "\(line)")
    }

    @Test("OFDM: the report is the OFDM report (no FSK \"no tones found\"), and the picture's title and spectrogram are the transmission's")
    func ofdm() async throws {
        let dir = try Scratch()
        var x: UInt64 = 11
        let bytes = (0..<20_000).map { _ -> UInt8 in
            x = x &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: x >> 33)
        }
        let wav = dir.file("fast.wav"), png = dir.file("fast.png")
        try await modemTx(["--profile", "ofdm"], input: try dir.write("in.bin", bytes), out: wav)
        let a = try await modem(["analyze", "--png", png, wav])
        expectSuccess(a)
        let report = a.stdoutText, lines = report.split(separator: "\n").map(String.init)
        #expect(!report.contains("no tones found") && !report.contains("no keying found"), "\(report)")
        // The header, then the OFDM findings: no FSK lines (tones, baud, profile) between.
        #expect(lines.count > 2 && lines[0].hasPrefix("\(wav): WAV") && lines[1].hasPrefix("  ofdm      1024qam 3/4 cable ("), "\(report)")
        for fsk in ["  tones", "  baud", "  profile", "  framing"] { #expect(!report.contains(fsk), "\(report)") }
        #expect(report.contains("  data      every block checked, 20000 bytes"), "\(report)")
        #expect(lines.last == "modem rx --profile ofdm \(wav)", "\(report)")
        // The spectrogram reaches past the top carrier (19793 Hz), within the 24 kHz the file holds.
        let top = try Self.spectrogramTop(report, png: png)
        #expect(top > 19793 && top <= 24000, "\(report)")
        // The title drawn over it, kept in the PNG as its Title.
        let title = try #require(try Self.pngText(readBytes(png))["Title"], "no Title in the PNG")
        #expect(title.hasPrefix("fast.wav  OFDM 1024qam 3/4 cable  139396 BIT/S"), "\(title)")
        #expect(!title.contains("NO TONES FOUND"), "\(title)")
    }

    @Test("FSK: the picture's title names the rate and profile, its spectrogram stops above the tones")
    func fskPicture() async throws {
        let dir = try Scratch()
        let wav = dir.file("f.wav"), png = dir.file("f.png")
        try await modemTx(["--profile", "bell202"], input: try dir.write("t.txt", String(repeating: "Bell 202 at 1200 baud. ", count: 10)), out: wav)
        let a = try await modem(["analyze", "--png", png, wav])
        expectSuccess(a)
        // Twice the higher tone (2200 Hz), rounded up to 500 Hz.
        #expect(try Self.spectrogramTop(a.stdoutText, png: png) == 4500, "\(a.stdoutText)")
        let title = try #require(try Self.pngText(readBytes(png))["Title"], "no Title in the PNG")
        #expect(title.hasPrefix("f.wav  1200 BAUD  bell202  SNR "), "\(title)")
    }
}
