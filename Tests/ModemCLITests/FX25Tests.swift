import Foundation
import ProcessTestSupport
import Testing

/// FX.25 (AX.25 inside Reed-Solomon blocks) through the CLI, both ways with Dire Wolf 1.6's tools run
/// as separate processes.
@Suite("FX.25 with Dire Wolf")
struct FX25Tests {

    static let frames = (1...20).map { "N0CALL-\($0 % 15 + 1)>APZ001,WIDE1-1:FX.25 frame \($0) of 20, the quick brown fox" }

    /// Strips atest's colour escapes.
    static func plain(_ text: String) -> String {
        text.replacingOccurrences(of: "\u{1B}\\[[0-9;]*[a-zA-Z]", with: "", options: .regularExpression)
    }

    @Test("atest decodes every frame we send with --fx25, through its FX.25 decoder",
          .requires(Peers.atest),
          arguments: [("bell202", "1200", 16), ("bell202", "1200", 32), ("bell202", "1200", 64),
                      ("hf300", "300", 32), ("g3ruh", "9600", 32)])
    func atestDecodesOurs(profile: String, baud: String, checkBytes: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.frames.joined(separator: "\n") + "\n")
        let tx = try await modem(["tx", "--profile", profile, "--framing", "ax25", "--fx25", "\(checkBytes)", "--rate", "48000",
                                  "--out", dir.file("f.wav"), input])
        #expect(tx.succeeded, "\(tx)")
        #expect(tx.stderrText.contains("20 frame(s) sent as FX.25 with \(checkBytes) check bytes"), "\(tx.stderrText)")
        // A hang guard far above atest's second or so, for a machine kept busy by parallel tests.
        let r = try await runProcess(try Peers.atest.path(), ["-B", baud, "-d", "x", dir.file("f.wav")], timeout: 600)
        try #require(r.status == 0 && !r.signaled, "\(r)")
        let out = Self.plain(r.stdoutText + r.stderrText)
        #expect(out.components(separatedBy: "FEC complete").count - 1 == 20, "\(out)")
        #expect(out.contains("20 packets decoded"), "\(out)")
        for f in Self.frames { #expect(out.contains(f), "atest did not print \(f)") }
    }

    /// The counts of a clean FX.25 file add up: every frame came in its block (the plain AX.25 path
    /// decodes it too, which does not make it any less an FX.25 frame), and the check bytes, which the
    /// plain path reads as bits between flags, are no CRC failure.
    @Test("rx --stats on a clean FX.25 file: 20 frames, 20 out of FX.25 blocks, no CRC failure",
          arguments: [("bell202", 16), ("bell202", 32), ("bell202", 64), ("hf300", 32), ("g3ruh", 32)])
    func cleanStatistics(profile: String, checkBytes: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.frames.joined(separator: "\n") + "\n")
        #expect(try await modem(["tx", "--profile", profile, "--framing", "ax25", "--fx25", "\(checkBytes)", "--out", dir.file("c.wav"), "-q", input]).succeeded)
        let rx = try await modem(["rx", "--profile", profile, "--framing", "ax25", "--stats", dir.file("c.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        #expect(Set(rx.stdoutText.split(separator: "\n").map(String.init)) == Set(Self.frames), "\(rx.stdoutText)")
        #expect(rx.stderrText.contains("20 frames decoded (0 repaired by inverting one bit), 0 CRC failures"), "\(rx.stderrText)")
        #expect(rx.stderrText.contains("FX.25: 20 frames out of FX.25 blocks, 0 corrected by FEC"), "\(rx.stderrText)")
    }

    /// Dire Wolf's noise test with FX.25 (`gen_packets -X N -n 100`, noise rising through the file):
    /// the issue asks for at least Dire Wolf's strongest setting plus 3, both counted here on the same file.
    @Test("gen_packets -X 16/32/64 -n 100: we decode at least atest -P E+ -F 1 plus 3",
          .requires(Peers.genPackets, Peers.atest),
          arguments: [16, 32, 64])
    func noiseTest(checkBytes: Int) async throws {
        let dir = try Scratch()
        let g = try await runProcess(try Peers.genPackets.path(), ["-X", "\(checkBytes)", "-n", "100", "-o", dir.file("n.wav")], timeout: 300)
        #expect(g.succeeded, "\(g)")
        let rx = try await modem(["rx", "--profile", "bell202", "--framing", "ax25", "--stats", dir.file("n.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        let ours = Set(rx.stdoutText.split(separator: "\n").filter { $0.hasPrefix("WB2OSZ-15>TEST") })
        #expect(ours.count == Set(rx.stdoutText.split(separator: "\n")).count, "frames that were never sent: \(rx.stdoutText)")
        let dw = try await runProcess(try Peers.atest.path(), ["-P", "E+", "-F", "1", dir.file("n.wav")], timeout: 600)
        let theirs = Int(Self.plain(dw.stdoutText).firstMatch(of: /(\d+) packets decoded/)?.1 ?? "") ?? -1
        #expect(theirs > 0, "\(dw.stdoutText)")
        #expect(ours.count >= theirs + 3, "ours \(ours.count), atest \(theirs); \(rx.stderrText)")
        // Frames the code corrected are counted, with the bytes fixed.
        let fec = rx.stderrText.firstMatch(of: /(\d+) corrected by FEC \((\d+) bytes fixed/)
        #expect(Int(fec?.1 ?? "") ?? 0 > 0, "\(rx.stderrText)")
        #expect(Int(fec?.2 ?? "") ?? 0 > 0, "\(rx.stderrText)")
    }

    @Test("At 300 and 9600 baud too, FX.25 from gen_packets is corrected",
          .requires(Peers.genPackets),
          arguments: [("300", "hf300", 80), ("9600", "g3ruh", 64)])
    func otherRates(baud: String, profile: String, minimum: Int) async throws {
        let dir = try Scratch()
        let g = try await runProcess(try Peers.genPackets.path(), ["-B", baud, "-X", "32", "-n", "100", "-o", dir.file("n.wav")], timeout: 300)
        #expect(g.succeeded, "\(g)")
        let rx = try await modem(["rx", "--profile", profile, "--framing", "ax25", "--stats", dir.file("n.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        let lines = Set(rx.stdoutText.split(separator: "\n"))
        #expect(lines.allSatisfy { $0.hasPrefix("WB2OSZ-15>TEST") }, "frames that were never sent: \(rx.stdoutText)")
        #expect(lines.count >= minimum, "\(lines.count) frames; \(rx.stderrText)")
        let fec = rx.stderrText.firstMatch(of: /(\d+) corrected by FEC/)
        #expect(Int(fec?.1 ?? "") ?? 0 > 0, "\(rx.stderrText)")
    }

    /// Blocks beyond correction are counted and dropped; every frame delivered is one that was sent
    /// (a tag with no block after it and a block cut short: ModemCodecsTests' FECTests).
    @Test("Deep noise: blocks beyond correction are counted, no corrupt frame")
    func badInput() async throws {
        let dir = try Scratch()
        let sent = Set(Self.frames)
        let input = try dir.write("in.txt", Self.frames.joined(separator: "\n") + "\n")
        #expect(try await modem(["tx", "--profile", "bell202", "--framing", "ax25", "--fx25", "16", "--out", dir.file("c.wav"), "-q", input]).succeeded)
        let noisy = try await modem(["impair", dir.file("c.wav"), dir.file("n.wav"), "--snr", "-6", "--seed", "3", "--format", "s16"])
        #expect(noisy.succeeded, "\(noisy)")
        let rx = try await modem(["rx", "--profile", "bell202", "--framing", "ax25", "--stats", dir.file("n.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        let decoded = Set(rx.stdoutText.split(separator: "\n").map(String.init))
        #expect(decoded.isSubset(of: sent), "corrupt frames: \(decoded.subtracting(sent))")
        let failed = rx.stderrText.firstMatch(of: /(\d+) blocks beyond correction/)
        #expect(Int(failed?.1 ?? "") ?? 0 > 0, "\(rx.stderrText)")
    }
}
