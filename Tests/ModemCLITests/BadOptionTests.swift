import Foundation
import ProcessTestSupport
import Testing

/// Wrong command lines: a non-zero status below 124, nothing on stdout, a message naming the problem.
@Suite("Bad options")
struct BadOptionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        /// Words the message must contain (any one of each inner list, case-insensitive).
        var mentions: [[String]]
        var testDescription: String { "modem " + arguments.joined(separator: " ") }
    }

    /// `IN` is replaced by a valid 1200-baud WAV, `TXT` by a small text file, `OUT` by a fresh path.
    static let cases: [Case] = [
        Case(arguments: ["rx", "--baud", "1200", "--framing", "9X1", "IN"], mentions: [["9X1"], ["framing"]]),
        Case(arguments: ["tx", "--baud", "1200", "--framing", "9X1", "--out", "OUT", "TXT"], mentions: [["9X1"], ["framing"]]),
        Case(arguments: ["rx", "--baud", "0", "IN"], mentions: [["baud"]]),
        Case(arguments: ["tx", "--baud", "0", "--out", "OUT", "TXT"], mentions: [["baud"]]),
        Case(arguments: ["rx", "--baud=-300", "IN"], mentions: [["baud"]]),
        Case(arguments: ["rx", "--profile", "nope", "IN"], mentions: [["nope"], ["profile"]]),
        Case(arguments: ["tx", "--profile", "nope", "--out", "OUT", "TXT"], mentions: [["nope"], ["profile"]]),
        Case(arguments: ["tx", "--baud", "1200", "--mark", "30000", "--rate", "48000", "--out", "OUT", "TXT"],
             mentions: [["30000"], ["mark"]]),
        Case(arguments: ["rx", "--baud", "1200", "--mark", "30000", "IN"], mentions: [["30000"], ["mark"]]),
        Case(arguments: ["tx", "--baud", "1200", "--out", "OUT", "--device", "default", "TXT"], mentions: [["--out"], ["--device"]]),
        Case(arguments: ["tx", "--baud", "1200", "TXT"], mentions: [["--out"], ["--device"]]),
        Case(arguments: ["tx", "--profile", "bell202", "--framing", "ax25", "--il2p", "1", "--fx25", "16", "--out", "OUT", "TXT"],
             mentions: [["--il2p"], ["--fx25"]]),
        Case(arguments: ["tx", "--profile", "bell202", "--il2p", "1", "--out", "OUT", "TXT"], mentions: [["--il2p"], ["ax25"]]),
        Case(arguments: ["tx", "--profile", "bell202", "--framing", "ax25", "--il2p", "2", "--out", "OUT", "TXT"], mentions: [["--il2p"], ["2"]]),
        Case(arguments: ["tnc", "--input", "IN", "--kiss-port", "0", "--il2p", "1", "--fx25", "32"], mentions: [["--il2p"], ["--fx25"]]),
        Case(arguments: ["tnc", "--input", "IN", "--kiss-port", "0", "--il2p", "5"], mentions: [["--il2p"], ["5"]]),
        Case(arguments: ["rx", "--baud", "1200", "--device", "default", "IN"], mentions: [["--device"]]),
        Case(arguments: ["rx", "--baud", "1200"], mentions: [["--device"], ["input", "file"]]),
        Case(arguments: ["rx", "IN"], mentions: [["--baud"], ["--profile"]]),
        Case(arguments: ["rx", "--baud", "1200", "--channel", "3", "IN"], mentions: [["channel"], ["3"]]),
        Case(arguments: ["tx", "--baud", "100000", "--out", "OUT", "TXT"], mentions: [["baud"], ["100000"]]),
        Case(arguments: ["tx", "--baud", "1200", "--rate", "1000", "--out", "OUT", "TXT"], mentions: [["rate"], ["1000"]]),
        Case(arguments: ["tx", "--baud", "1200", "--out", "OUT", "missing-input.txt"], mentions: [["missing-input.txt"]]),
        Case(arguments: ["tx", "--baud", "1200", "--out", "/nonexistent-dir/x.wav", "TXT"], mentions: [["/nonexistent-dir/x.wav"]]),
        Case(arguments: ["impair", "IN", "OUT", "--band", "3400-300"], mentions: [["band"]]),
        Case(arguments: ["nosuchcommand"], mentions: [["nosuchcommand"]]),
    ]

    /// A folder with a valid WAV and text file, and the case's arguments filled in.
    static func prepare(_ c: Case) async throws -> (Scratch, [String], out: String) {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "hello\n")
        let wav = dir.file("in.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let out = dir.file("out.wav")
        let args = c.arguments.map { $0 == "IN" ? wav : $0 == "TXT" ? txt : $0 == "OUT" ? out : $0 }
        return (dir, args, out)
    }

    @Test("Refused with a message naming the problem", arguments: cases)
    func refused(_ c: Case) async throws {
        let (dir, args, _) = try await Self.prepare(c)
        _ = dir
        let r = try await modem(args, timeout: 30)
        #expect(!r.signaled && !r.timedOut, "\(r)")
        #expect(r.status != 0 && r.status < 124, "exit status \(r.status), expected 1...123: \(r)")
        #expect(r.stdout.isEmpty, "stdout: \(r.stdoutText)")
        let message = r.stderrText.lowercased()
        for alternatives in c.mentions {
            #expect(alternatives.contains { message.contains($0.lowercased()) },
                    "the message does not mention \(alternatives.joined(separator: " or ")): \(r)")
        }
    }

    /// A refused `tx` must not create, or clobber, its --out file.
    @Test("A refused modem tx leaves --out alone",
          arguments: cases.filter { $0.arguments.first == "tx" && $0.arguments.contains("OUT") })
    func refusedTxLeavesOutputAlone(_ c: Case) async throws {
        let (dir, args, out) = try await Self.prepare(c)
        let before: [UInt8] = Array("precious data, not to be overwritten\n".utf8)
        try dir.write("out.wav", before)
        let r = try await modem(args, timeout: 30)
        #expect(r.status != 0, "\(r)")
        let after = (try? readBytes(out)) ?? []
        #expect(after == before, "\(c.testDescription): --out now holds \(after.count) bytes (was \(before.count))")
    }
}
