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
}
