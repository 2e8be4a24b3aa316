import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// Dire Wolf's PSK packet modes (2400 bit/s QPSK with V.26 alternative A or B, 4800 bit/s 8PSK) through
/// the CLI, both ways with Dire Wolf 1.8's tools run as separate processes.
@Suite("PSK packet modes with Dire Wolf 1.8")
struct PSKCLITests {
    static let frames = (1...20).map { "N0CALL-1>APZ001,WIDE1-1:frame \($0) of 20, the quick brown fox jumps over the lazy dog" }

    /// Strips atest's colour escapes.
    static func plain(_ text: String) -> String {
        text.replacingOccurrences(of: "\u{1B}\\[[0-9;]*[a-zA-Z]", with: "", options: .regularExpression)
    }

    /// The distinct lines of atest's output that are frames of `gen_packets -n 50`, and the number of
    /// other frame lines (WB2OSZ-15 frames gen_packets never sent).
    static func atestFrames(_ text: String) -> (good: Set<String>, corrupt: Int) {
        let lines = Set(plain(text).split(separator: "\n").map(String.init).filter { $0.hasPrefix("WB2OSZ-15>") || $0.contains("] WB2OSZ") })
            .map { $0.replacing(#/^\[[0-9.]+\] /#, with: "") }
        let good = Set(lines.filter(isNoiseLine))
        return (good, Set(lines).count - good.count)
    }

    static func isNoiseLine(_ line: String) -> Bool {
        line.wholeMatch(of: /WB2OSZ-15>TEST:,The quick brown fox jumps over the lazy dog!  \d{4} of 0050/) != nil
    }

    /// One case per mode: our options, and gen_packets' and atest's.
    static let modes: [(name: String, ours: [String], theirs: [String])] = [
        ("QPSK V.26 A (-j)", ["--profile", "qpsk2400"], ["-B", "2400", "-j"]),
        ("QPSK V.26 B (-J, MFJ-2400)", ["--profile", "qpsk2400", "--v26", "mfj"], ["-B", "2400", "-J"]),
        ("8PSK V.27", ["--profile", "8psk4800"], ["-B", "4800"]),
    ]

    /// Both ways for one mode: atest decodes the 20 frames `modem tx` sends (and so does `modem rx`);
    /// `modem rx` decodes the 4 frames of gen_packets' clean file; and on `gen_packets -n 50` (noise
    /// rising through the file) it decodes at least what atest decodes, every frame one that was sent.
    @Test("Both ways with Dire Wolf 1.8: our frames through atest, gen_packets' through modem rx, the -n 50 noise file against atest",
          .requires(Peers.atest18, Peers.genPackets18),
          arguments: 0..<3)
    func bothWays(mode index: Int) async throws {
        let mode = Self.modes[index]
        let dir = try Scratch()
        // Ours to atest.
        let input = try dir.write("in.txt", Self.frames.joined(separator: "\n") + "\n")
        let tx = try await modem(["tx"] + mode.ours + ["--framing", "ax25", "-q", "--out", dir.file("t.wav"), input])
        #expect(tx.succeeded, "\(mode.name): \(tx)")
        let a = try await runProcess(try Peers.atest18.path(), mode.theirs + [dir.file("t.wav")], timeout: 600)
        let aout = Self.plain(a.stdoutText)
        #expect(IL2PCLITests.atestCount(a) == 20, "\(mode.name): \(aout)")
        for f in Self.frames { #expect(aout.contains(f), "\(mode.name): atest did not print \(f)") }
        let back = try await modem(["rx"] + mode.ours + ["--framing", "ax25", dir.file("t.wav")], timeout: 300)
        #expect(back.stdoutText.split(separator: "\n").map(String.init) == Self.frames, "\(mode.name): \(back)")

        // gen_packets' clean file to us.
        let g = try await runProcess(try Peers.genPackets18.path(), mode.theirs + ["-r", "48000", "-o", dir.file("c.wav")], timeout: 300)
        #expect(g.succeeded, "\(g)")
        let clean = try await modem(["rx"] + mode.ours + ["--framing", "ax25", dir.file("c.wav")], timeout: 300)
        #expect(clean.stdoutText.split(separator: "\n").map(String.init)
                == (1...4).map { "WB2OSZ-15>TEST:,The quick brown fox jumps over the lazy dog!  \($0) of 4" }, "\(mode.name): \(clean)")

        // The noise file: at least atest's count, nothing that was never sent.
        let n = try await runProcess(try Peers.genPackets18.path(), mode.theirs + ["-n", "50", "-r", "48000", "-o", dir.file("n.wav")], timeout: 300)
        #expect(n.succeeded, "\(n)")
        let rx = try await modem(["rx"] + mode.ours + ["--framing", "ax25", "--stats", dir.file("n.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        let lines = Set(rx.stdoutText.split(separator: "\n").map(String.init))
        let corrupt = lines.filter { !Self.isNoiseLine($0) }
        #expect(corrupt.isEmpty, "\(mode.name): frames that were never sent: \(corrupt)")
        let dw = try await runProcess(try Peers.atest18.path(), mode.theirs + [dir.file("n.wav")], timeout: 600)
        let theirs = Self.atestFrames(dw.stdoutText)
        #expect(theirs.good.count > 20, "\(mode.name): \(dw.stdoutText)")
        #expect(lines.count >= theirs.good.count, "\(mode.name): ours \(lines.count), atest \(theirs.good.count); \(rx.stderrText)")
    }

    @Test("--v26 goes with --profile qpsk2400 only, and PSK profiles carry AX.25 only")
    func refusals() async throws {
        let dir = try Scratch()
        let r1 = try await modem(["tx", "--profile", "8psk4800", "--v26", "mfj", "--framing", "ax25", "--out", dir.file("x.wav")])
        #expect(r1.status != 0 && r1.status < 124 && r1.stderrText.contains("--v26 goes with --profile qpsk2400"), "\(r1)")
        let r2 = try await modem(["tx", "--profile", "qpsk2400", "--framing", "8N1", "--out", dir.file("x.wav")])
        #expect(r2.status != 0 && r2.status < 124 && r2.stderrText.contains("AX.25 only"), "\(r2)")
        let r3 = try await modem(["rx", "--profile", "qpsk2400", "--baud", "1200", dir.file("x.wav")])
        #expect(r3.status != 0 && r3.status < 124 && r3.stderrText.contains("fixed rate"), "\(r3)")
    }
}
