import Foundation
import ProcessTestSupport
import Testing

/// Packet radio through the CLI, against Dire Wolf's tools run as separate processes.
@Suite("Packet radio (AX.25 over AFSK)")
struct PacketRadioTests {

    static let lines = [
        "N0CALL>APRS:hello world",
        "WB2OSZ-15>TEST,WIDE1-1,WIDE2-2:The quick brown fox jumps over the lazy dog 0123456789",
        "K1ABC-7>APZ123,RELAY*,WIDE2-1:!4237.14N/07120.83W>mobile",
        "Q1XYZ>CQ:binary <0x01><0x02><0xfe>",
    ]

    @Test("Our tx decodes in our rx, line for line", arguments: ["bell202", "hf300", "g3ruh"])
    func roundTrip(profile: String) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.lines.joined(separator: "\n") + "\n")
        let tx = try await modem(["tx", "--profile", profile, "--framing", "ax25", "--out", dir.file("p.wav"), "-q", input])
        #expect(tx.succeeded, "\(tx)")
        let rx = try await modem(["rx", "--profile", profile, "--framing", "ax25", dir.file("p.wav")])
        #expect(rx.succeeded, "\(rx)")
        #expect(rx.stdoutText.split(separator: "\n").map(String.init) == Self.lines)
    }

    @Test("Heavy de-emphasis (400 Hz corner) at SNR 10 dB: most of 30 frames decode (adaptive-balance slicers)",
          arguments: [1, 2] as [UInt64])
    func heavyDeEmphasis(seed: UInt64) async throws {
        let dir = try Scratch()
        let text = (1...30).map { "N0CALL>APRS:frame \($0) of 30, the quick brown fox jumps over the lazy dog" }
        let input = try dir.write("in.txt", text.joined(separator: "\n") + "\n")
        #expect(try await modem(["tx", "--profile", "bell202", "--framing", "ax25", "--out", dir.file("c.wav"), "-q", input]).succeeded)
        let impaired = try await modem(["impair", dir.file("c.wav"), dir.file("d.wav"), "--deemphasis", "400", "--snr", "10", "--seed", "\(seed)"])
        #expect(impaired.succeeded, "\(impaired)")
        let rx = try await modem(["rx", "--profile", "bell202", "--framing", "ax25", dir.file("d.wav")])
        let decoded = Set(rx.stdoutText.split(separator: "\n").map(String.init))
        #expect(decoded.isSubset(of: Set(text)), "false frames: \(decoded.subtracting(text))")
        // Fixed ±6 dB slicers alone decoded 2-6 of these; the adaptive ones 25-30.
        #expect(decoded.count >= 22, "decoded \(decoded.count) of 30")
    }

    @Test("Dire Wolf's atest decodes our frames", .requires(Peers.atest),
          arguments: [("bell202", "1200"), ("hf300", "300"), ("g3ruh", "9600")])
    func atestDecodesOurs(profile: String, baud: String) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.lines.joined(separator: "\n") + "\n")
        let tx = try await modem(["tx", "--profile", profile, "--framing", "ax25", "--rate", "44100", "--out", dir.file("p.wav"), "-q", input])
        #expect(tx.succeeded, "\(tx)")
        let r = try await runProcess(try Peers.atest.path(), ["-B", baud, dir.file("p.wav")])
        #expect(r.stdoutText.contains("\(Self.lines.count) packets decoded"), "\(r.stdoutText)")
        for line in Self.lines.prefix(3) { #expect(r.stdoutText.contains(line), "atest did not print \(line)") }
    }

    @Test("We decode gen_packets' frames", .requires(Peers.genPackets),
          arguments: [("1200", "bell202"), ("300", "hf300"), ("9600", "g3ruh")])
    func weDecodeGenPackets(baud: String, profile: String) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.lines.prefix(3).joined(separator: "\n") + "\n")
        let g = try await runProcess(try Peers.genPackets.path(), ["-B", baud, "-o", dir.file("g.wav"), input])
        #expect(g.succeeded, "\(g)")
        let rx = try await modem(["rx", "--profile", profile, "--framing", "ax25", dir.file("g.wav")])
        #expect(rx.succeeded, "\(rx)")
        // gen_packets keeps each line's newline in the information field.
        #expect(rx.stdoutText.split(separator: "\n").map(String.init) == Self.lines.prefix(3).map { $0 + "<0x0a>" })
    }

    /// Dire Wolf's noise test: 100 frames with rising noise. Dire Wolf 1.6 decodes 67 by default,
    /// 75 with -P E+ -F 1; the issue asks for at least 78 at 1200 baud and 72 at 300 baud.
    @Test("gen_packets -n 100: at least 78 frames at 1200 baud, 72 at 300",
          .requires(Peers.genPackets),
          arguments: [("1200", "bell202", 78), ("300", "hf300", 72)])
    func noiseTest(baud: String, profile: String, minimum: Int) async throws {
        let dir = try Scratch()
        let g = try await runProcess(try Peers.genPackets.path(), ["-B", baud, "-n", "100", "-o", dir.file("n.wav")])
        #expect(g.succeeded, "\(g)")
        let rx = try await modem(["rx", "--profile", profile, "--framing", "ax25", "--stats", dir.file("n.wav")])
        #expect(rx.succeeded, "\(rx)")
        let frames = Set(rx.stdoutText.split(separator: "\n"))
        #expect(frames.count >= minimum, "\(frames.count) unique frames; \(rx.stderrText)")
        #expect(rx.stderrText.contains("frames decoded"))
    }

    /// 9600 baud G3RUH: the issue asks for 64 (Dire Wolf -F 1: 63); 64 measured when this was written.
    @Test("gen_packets -B 9600 -n 100: at least 64 frames",
          .requires(Peers.genPackets))
    func noiseTest9600() async throws {
        let dir = try Scratch()
        let g = try await runProcess(try Peers.genPackets.path(), ["-B", "9600", "-n", "100", "-o", dir.file("n.wav")])
        #expect(g.succeeded, "\(g)")
        let rx = try await modem(["rx", "--profile", "g3ruh", dir.file("n.wav")])
        #expect(rx.succeeded, "\(rx)")
        #expect(Set(rx.stdoutText.split(separator: "\n")).count >= 64, "\(rx.stdoutText.split(separator: "\n").count) frames")
    }

    /// Frames of random text through white noise: no decoded frame may be one that was never sent.
    /// The three files are those of `scripts/bench-ax25-corrupt.sh` (files 7, 16 and 26, 60 frames each)
    /// on which the receiver delivered a corrupt frame before repaired frames had to pass
    /// ``AX25Plausibility`` (a CRC collision with a line bit inverted, e.g. `JD8RH-7>BCACON,...` for
    /// `BEACON`, with control characters in the text).
    @Test("Seeded white noise: every decoded frame is one that was sent (no CRC-collision repairs)",
          arguments: [(7, "-4", 8), (16, "-4", 12), (26, "-3", 40)])
    func noCorruptFrames(file: Int, snr: String, minimum: Int) async throws {
        let dir = try Scratch()
        let input = Paths.packageRoot + "/Fixtures/ax25/noise-frames-\(file).txt"
        let sent = Set(try String(contentsOfFile: input, encoding: .utf8).split(separator: "\n").map(String.init))
        #expect(sent.count == 60)
        #expect(try await modem(["tx", "--profile", "bell202", "--framing", "ax25", "--rate", "44100", "--out", dir.file("c.wav"), "-q", input]).succeeded)
        let impaired = try await modem(["impair", dir.file("c.wav"), dir.file("n.wav"), "--snr", snr, "--seed", "\(file)", "--format", "s16"])
        #expect(impaired.succeeded, "\(impaired)")
        let rx = try await modem(["rx", "--profile", "bell202", "--framing", "ax25", "--stats", dir.file("n.wav")], timeout: 120)
        #expect(rx.succeeded, "\(rx)")
        let decoded = Set(rx.stdoutText.split(separator: "\n").map(String.init))
        #expect(decoded.isSubset(of: sent), "corrupt frames: \(decoded.subtracting(sent)); \(rx.stderrText)")
        #expect(decoded.count >= minimum, "decoded \(decoded.count); \(rx.stderrText)")
        #expect(rx.stderrText.contains("repairs rejected as implausible"), "\(rx.stderrText)")
    }

    @Test("A malformed monitor line is reported with its line number and skipped")
    func malformedLine() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", "N0CALL>APRS:one\nthis is not a frame\nN0CALL>APRS:three\n")
        let tx = try await modem(["tx", "--profile", "bell202", "--framing", "ax25", "--out", dir.file("p.wav"), input])
        #expect(tx.succeeded, "\(tx)")
        #expect(tx.stderrText.contains("in.txt:2:"), "\(tx.stderrText)")
        let rx = try await modem(["rx", "--profile", "bell202", "--framing", "ax25", "-q", dir.file("p.wav")])
        #expect(rx.stdoutText == "N0CALL>APRS:one\nN0CALL>APRS:three\n")
    }

    @Test("Input with no frame at all is an error, and an existing output is left as it was")
    func noFrameAtAll() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", "not a frame\nneither is this\n")
        let out = try dir.write("p.wav", "keep me")
        let tx = try await modem(["tx", "--profile", "bell202", "--framing", "ax25", "--out", out, input])
        #expect(tx.status == 1, "\(tx)")
        #expect(tx.stderrText.contains("nothing was sent"), "\(tx.stderrText)")
        #expect(try readBytes(out) == Array("keep me".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["in.txt", "p.wav"])
    }
}
