import Foundation
import ProcessTestSupport
import Testing

/// Standard output is the data channel: decoded bytes and nothing else, diagnostics or not.
@Suite("Standard output carries only data")
struct StdoutTests {
    @Test("modem rx with diagnostics: stdout == the bytes, diagnostics on stderr")
    func diagnosticsStayOnStderr() async throws {
        let dir = try Scratch()
        // Two bursts with a silent gap, so there are two carrier/no-carrier pairs of diagnostics.
        let first = Array("first burst\n".utf8), second = Array((0...255).map { UInt8($0) })
        let a = dir.file("a.wav"), b = dir.file("b.wav")
        try await modemTx(["--baud", "1200"], input: try dir.write("a.bin", first), out: a)
        try await modemTx(["--baud", "1200"], input: try dir.write("b.bin", second), out: b)
        let joined = try joinWAVs(a, b, gapSamples: 24000, in: dir)
        let r = try await modem(["rx", "--baud", "1200", joined])
        expectSuccess(r)
        #expect(r.stdout == first + second, "\(describeDifference(expected: first + second, got: r.stdout))")
        #expect(r.stderrLines.count >= 2, "expected carrier diagnostics on stderr: \(r)")
        #expect(!r.stdoutText.contains("CARRIER") && !r.stdoutText.contains("###"))
    }

    @Test("modem rx on a noisy file: diagnostics never leak into stdout")
    func noisyFile() async throws {
        let dir = try Scratch()
        let text = Array(Texts.words(300).utf8)
        let clean = dir.file("clean.wav"), noisy = dir.file("noisy.wav")
        try await modemTx(["--baud", "1200"], input: try dir.write("in.txt", text), out: clean)
        expectSuccess(try await modem(["impair", clean, noisy, "--snr=-6", "--seed", "5"]))
        let loud = try await modem(["rx", "--baud", "1200", noisy])
        let quiet = try await modem(["rx", "-q", "--baud", "1200", noisy])
        expectSuccess(loud)
        expectSuccess(quiet)
        // Whatever was decoded, it is the same with and without diagnostics.
        #expect(loud.stdout == quiet.stdout, "stdout differs with diagnostics on (\(loud.stdout.count) vs \(quiet.stdout.count) bytes)")
        #expect(quiet.stderr.isEmpty, "\(quiet)")
        #expect(!loud.stderr.isEmpty)
    }

    @Test("modem tx --out writes nothing to stdout, with or without -q")
    func txIsSilentOnStdout() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Texts.pangrams)
        for quiet in [true, false] {
            let r = try await modem(["tx"] + (quiet ? ["-q"] : []) + ["--baud", "1200", "--out", dir.file("x.wav"), input])
            expectSuccess(r)
            #expect(r.stdout.isEmpty, "stdout: \(r.stdoutText)")
            if quiet { #expect(r.stderr.isEmpty, "\(r)") }
        }
    }

    /// The manual page (docs/man/modem.1, written by scripts/man.sh from the argument parser) names
    /// every subcommand and option the tool has: a page left stale when an option came or went fails here.
    @Test("docs/man/modem.1 has every subcommand and option of modem --experimental-dump-help")
    func manualPageCurrent() async throws {
        let dump = try await modem(["--experimental-dump-help"])
        #expect(dump.succeeded, "\(dump)")
        let tool = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout)) as? [String: Any])
        let page = try String(contentsOfFile: Paths.packageRoot + "/docs/man/modem.1", encoding: .utf8)
        var missing: [String] = []
        func walk(_ command: [String: Any], path: String) {
            let name = command["commandName"] as? String ?? "?"
            let here = path.isEmpty ? name : path + " " + name
            if !path.isEmpty, !page.contains(".It Em \(name)") { missing.append("subcommand \(here)") }
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                guard argument["shouldDisplay"] as? Bool ?? true else { continue }
                for n in argument["names"] as? [[String: Any]] ?? [] where n["kind"] as? String == "long" {
                    let option = n["name"] as? String ?? "?"
                    // `.It Fl -baud`, or `.It Fl q , -quiet` for an option with a short name too.
                    if option != "help", !page.contains("Fl -\(option)"), !page.contains(" , -\(option)") { missing.append("\(here) --\(option)") }
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub, path: here) }
        }
        walk(tool["command"] as? [String: Any] ?? [:], path: "")
        #expect(missing.isEmpty, "not in docs/man/modem.1 (run bash scripts/man.sh): \(missing)")
    }

    /// Discussions are paragraphs that the argument parser wraps to the terminal (`helpText`): at any
    /// width no sentence breaks where the source had a line break. A line of the discussion that
    /// does not end a sentence or a clause, followed by one that starts in lower case, is such a break.
    @Test("help text wraps at the terminal's width, never mid-sentence where the source broke its lines", arguments: [100, 400])
    func helpWrapsCleanly(columns: Int) async throws {
        let modemPath = try Paths.modem()
        let commands: [[String]] = [[], ["tx"], ["rx"], ["analyze"], ["devices"], ["device"], ["link-test"], ["transfer-test"], ["send"],
                                    ["receive"], ["mailbox"], ["pair"], ["keys"], ["tnc"], ["impair"], ["hub"], ["bt", "scan"],
                                    ["bt", "connect"], ["bt", "device"]]
        for command in commands {
            let r = try await runProcess("/usr/bin/env", ["COLUMNS=\(columns)", modemPath] + command + ["--help"])
            #expect(r.status == 0, "\(command): \(r)")
            let text = r.stdoutText.components(separatedBy: "USAGE:").first ?? ""
            let lines = text.components(separatedBy: "\n")
            for (a, b) in zip(lines, lines.dropFirst()) where !a.isEmpty && !b.isEmpty && a.first != " " && b.first != " " {
                // Wrapped at `columns`, a line is as long as the width allows: only a short line that
                // stops mid-sentence is a break the source put there.
                guard a.count < columns - 40, let last = a.last, !".:;)".contains(last), let first = b.first else { continue }
                #expect(!first.isLowercase, "\(command) at \(columns) columns breaks mid-sentence:\n\(a)\n\(b)")
            }
        }
    }

    @Test("--help and --version go to stdout and exit 0")
    func helpAndVersion() async throws {
        for args in [["--help"], ["--version"], ["tx", "--help"], ["rx", "--help"], ["impair", "--help"]] {
            let r = try await modem(args)
            expectSuccess(r)
            #expect(!r.stdout.isEmpty, "\(args): \(r)")
        }
    }
}

/// Concatenates two mono 16-bit WAV files written by `modem tx` (canonical 44-byte headers, same
/// rate) with `gapSamples` of silence between them.
func joinWAVs(_ a: String, _ b: String, gapSamples: Int, in dir: Scratch) throws -> String {
    let x = try readBytes(a), y = try readBytes(b)
    guard x.count > 44, y.count > 44, Array(x[36..<40]) == Array("data".utf8), Array(y[36..<40]) == Array("data".utf8) else {
        throw HarnessError("joinWAVs expects canonical 44-byte WAV headers")
    }
    let data = Array(x[44...]) + [UInt8](repeating: 0, count: 2 * gapSamples) + Array(y[44...])
    var header = Array(x[0..<44])
    header.replaceSubrange(4..<8, with: le32(UInt32(36 + data.count)))
    header.replaceSubrange(40..<44, with: le32(UInt32(data.count)))
    return try dir.write("joined.wav", header + data)
}
