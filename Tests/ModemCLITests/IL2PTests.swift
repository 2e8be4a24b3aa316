import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// IL2P (Reed-Solomon blocks instead of HDLC, as Dire Wolf 1.7+ and the NinoTNC send AX.25) through the
/// CLI, both ways with Dire Wolf 1.8's tools (built from Fixtures/peers by scripts/direwolf18.sh) run as
/// separate processes, at 300, 1200 and 9600 baud.
@Suite("IL2P with Dire Wolf 1.8")
struct IL2PCLITests {

    static let frames = (1...20).map { "N0CALL-1>APZ001,WIDE1-1:frame \($0) of 20, the quick brown fox jumps over the lazy dog" }
    /// What gen_packets sends, frame by frame.
    static func isGenPacketsLine(_ line: String) -> Bool {
        line.wholeMatch(of: /WB2OSZ-15>TEST:,The quick brown fox jumps over the lazy dog!  \d{4} of 0100/) != nil
    }

    /// Strips atest's colour escapes.
    static func plain(_ text: String) -> String {
        text.replacingOccurrences(of: "\u{1B}\\[[0-9;]*[a-zA-Z]", with: "", options: .regularExpression)
    }

    /// atest's count of packets decoded, or -1.
    static func atestCount(_ r: ProcessResult) -> Int {
        Int(plain(r.stdoutText).firstMatch(of: /(\d+) packets decoded/)?.1 ?? "") ?? -1
    }

    static func baudArguments(_ baud: Int) -> [String] { baud == 1200 ? [] : ["-B", "\(baud)"] }
    static func profile(_ baud: Int) -> String { baud == 300 ? "hf300" : baud == 9600 ? "g3ruh" : "bell202" }

    @Test("atest 1.8 decodes every frame we send with --il2p, through its IL2P decoder",
          .requires(Peers.atest18),
          arguments: [(1200, 1), (300, 1), (9600, 1), (1200, 0), (300, 0), (9600, 0)])
    func atestDecodesOurs(baud: Int, fec: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.frames.joined(separator: "\n") + "\n")
        let tx = try await modem(["tx", "--profile", Self.profile(baud), "--framing", "ax25", "--il2p", "\(fec)",
                                  "--out", dir.file("t.wav"), input])
        #expect(tx.succeeded, "\(tx)")
        let kind = fec == 1 ? "16 check bytes per block" : "2-8 check bytes per block"
        #expect(tx.stderrText.contains("20 frame(s) sent as IL2P with \(kind)"), "\(tx.stderrText)")
        // A hang guard far above atest's second or so, for a machine kept busy by parallel tests.
        let r = try await runProcess(try Peers.atest18.path(), Self.baudArguments(baud) + [dir.file("t.wav")], timeout: 600)
        try #require(r.status == 0 && !r.signaled, "\(r)")
        let out = Self.plain(r.stdoutText)
        #expect(Self.atestCount(r) == 20, "\(out)")
        #expect(out.components(separatedBy: "   IL2P").count - 1 == 20, "not every frame came through atest's IL2P decoder: \(out)")
        for f in Self.frames { #expect(out.contains(f), "atest did not print \(f)") }
    }

    /// The counts of a clean IL2P file: every frame came as IL2P, nothing needed correcting, and the
    /// plain AX.25 decoder that reads the same bits found no CRC failure in them.
    @Test("rx --stats on a clean IL2P file: 20 IL2P frames, none corrected, no CRC failure",
          arguments: [(1200, 1), (300, 1), (9600, 1), (1200, 0), (9600, 0)])
    func cleanStatistics(baud: Int, fec: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.frames.joined(separator: "\n") + "\n")
        #expect(try await modem(["tx", "--profile", Self.profile(baud), "--framing", "ax25", "--il2p", "\(fec)", "--out", dir.file("c.wav"), "-q", input]).succeeded)
        let rx = try await modem(["rx", "--profile", Self.profile(baud), "--framing", "ax25", "--stats", dir.file("c.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        #expect(rx.stdoutText.split(separator: "\n").map(String.init) == Self.frames, "\(rx.stdoutText)")
        #expect(rx.stderrText.contains("20 frames decoded (0 repaired by inverting one bit), 0 CRC failures"), "\(rx.stderrText)")
        #expect(rx.stderrText.contains("IL2P: 20 IL2P frames, 0 corrected by FEC"), "\(rx.stderrText)")
    }

    /// Dire Wolf's noise test with IL2P (`gen_packets -I 1 -n 100`, noise rising through the file; `-i 1`
    /// sends the inverted polarity): we decode at least what atest decodes from the same file (1200 baud
    /// against `atest -P E+ -F 1`, its strongest setting), and every frame we print is one that was sent.
    @Test("gen_packets -I 1 / -i 1 -n 100 at 300, 1200 and 9600 baud: at least atest's count, no corrupt frame",
          .requires(Peers.genPackets18, Peers.atest18),
          arguments: [(1200, "-I"), (300, "-I"), (9600, "-I"), (1200, "-i"), (9600, "-i")])
    func noiseTest(baud: Int, option: String) async throws {
        let dir = try Scratch()
        let (rx, lines) = try await Self.decodeNoiseTest(baud: baud, option: [option, "1"], in: dir)
        let strongest = baud == 1200 ? ["-P", "E+", "-F", "1"] : []
        let dw = try await runProcess(try Peers.atest18.path(), Self.baudArguments(baud) + strongest + [dir.file("n.wav")], timeout: 600)
        let theirs = Self.atestCount(dw)
        #expect(theirs > 50, "\(dw.stdoutText)")
        #expect(lines.count >= theirs, "ours \(lines.count), atest \(theirs); \(rx.stderrText)")
        // Frames the codes corrected are counted, with the symbols fixed.
        let fec = rx.stderrText.firstMatch(of: /IL2P: (\d+) IL2P frames, (\d+) corrected by FEC \((\d+) symbols fixed/)
        #expect(Int(fec?.1 ?? "") == lines.count, "\(rx.stderrText)")
        #expect(Int(fec?.2 ?? "") ?? 0 > 0 && Int(fec?.3 ?? "") ?? 0 > 0, "\(rx.stderrText)")
    }

    /// `gen_packets -n 100` with `option` at `baud` into dir/n.wav, decoded by `modem rx --stats`: the
    /// result and the distinct lines printed, each checked to be a frame gen_packets sent.
    static func decodeNoiseTest(baud: Int, option: [String], in dir: Scratch) async throws -> (ProcessResult, Set<String>) {
        let g = try await runProcess(try Peers.genPackets18.path(), baudArguments(baud) + option + ["-n", "100", "-r", "48000", "-o", dir.file("n.wav")],
                                     timeout: 300)
        #expect(g.succeeded, "\(g)")
        let rx = try await modem(["rx", "--profile", profile(baud), "--framing", "ax25", "--stats", dir.file("n.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        let lines = Set(rx.stdoutText.split(separator: "\n").map(String.init))
        let corrupt = lines.filter { !isGenPacketsLine($0) }
        #expect(corrupt.isEmpty, "frames that were never sent: \(corrupt)")
        return (rx, lines)
    }

    /// `-I 0`: 2 check bytes per block for gen_packets' 61-byte frames, one byte corrected per block and
    /// little checked beyond it (atest prints frames that were never sent from these files). We print
    /// none, and decode most.
    @Test("gen_packets -I 0 -n 100: most frames decode, no corrupt frame",
          .requires(Peers.genPackets18),
          arguments: [(1200, 80), (300, 70), (9600, 65)])
    func weakFEC(baud: Int, minimum: Int) async throws {
        let dir = try Scratch()
        let (rx, lines) = try await Self.decodeNoiseTest(baud: baud, option: ["-I", "0"], in: dir)
        #expect(lines.count >= minimum, "\(lines.count) frames; \(rx.stderrText)")
    }

    /// FX.25, IL2P and plain AX.25 in one file (three transmissions one after the other) come out of
    /// one `modem rx` with no option for either.
    @Test("plain AX.25, FX.25 and IL2P in one stream decode with no extra option", arguments: [1200, 300, 9600])
    func mixedStream(baud: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.frames.prefix(3).joined(separator: "\n") + "\n")
        var parts: [String] = []
        for (i, options) in [[], ["--fx25", "32"], ["--il2p", "1"]].enumerated() {
            let part = dir.file("p\(i).wav")
            #expect(try await modem(["tx", "--profile", Self.profile(baud), "--framing", "ax25", "-q", "--out", part] + options + [input]).succeeded)
            parts.append(part)
        }
        let pcm = try parts.map { try Self.samples(ofWAV: readBytes($0)) }
        // One 16-bit mono 48 kHz WAV holding the three in turn.
        let data = pcm.flatMap { $0 }
        var wav = Array("RIFF".utf8) + le32(36 + data.count) + Array("WAVEfmt ".utf8) + le32(16) + [1, 0, 1, 0] + le32(48000) + le32(96000) + [2, 0, 16, 0]
        wav += Array("data".utf8) + le32(data.count) + data
        try dir.write("all.wav", wav)
        let rx = try await modem(["rx", "--profile", Self.profile(baud), "--framing", "ax25", "--stats", dir.file("all.wav")], timeout: 300)
        #expect(rx.succeeded, "\(rx)")
        let lines = rx.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines == Array(Self.frames.prefix(3)) + Array(Self.frames.prefix(3)) + Array(Self.frames.prefix(3)), "\(rx.stdoutText)")
        #expect(rx.stderrText.contains("FX.25: 3 frames out of FX.25 blocks"), "\(rx.stderrText)")
        #expect(rx.stderrText.contains("IL2P: 3 IL2P frames"), "\(rx.stderrText)")
    }

    func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    /// The bytes of a WAV file's data chunk.
    static func samples(ofWAV wav: [UInt8]) throws -> [UInt8] {
        var i = 12
        while i + 8 <= wav.count {
            let size = (0..<4).reduce(0) { $0 | Int(wav[i + 4 + $1]) << (8 * $1) }
            if wav[i..<(i + 4)].elementsEqual("data".utf8) { return Array(wav[(i + 8)..<min(wav.count, i + 8 + size)]) }
            i += 8 + size + (size & 1)
        }
        throw HarnessError("no data chunk")
    }

    @Test("modem tnc --il2p 1: what kissutil sends comes out in --output as IL2P, which atest 1.8 decodes",
          .requires(Peers.kissutil, Peers.atest18),
          .timeLimit(.minutes(2)))
    func tncSendsIL2P() async throws {
        let dir = try Scratch("IL2PCLITests")
        let sent = ["N0CALL>APRS:kiss transmit test one", "N0CALL>APRS,WIDE1-1:kiss transmit test two"]
        // A second of silence to listen to.
        let silence = [UInt8](repeating: 0, count: 96000)
        var wav = Array("RIFF".utf8) + le32(36 + silence.count) + Array("WAVEfmt ".utf8) + le32(16) + [1, 0, 1, 0] + le32(48000) + le32(96000) + [2, 0, 16, 0]
        wav += Array("data".utf8) + le32(silence.count) + silence
        try dir.write("in.wav", wav)
        let tnc = try await TNCBackgroundProcess(try Paths.modem(), ["tnc", "--input", dir.file("in.wav"), "--output", dir.file("out.wav"),
                                                                     "--kiss-port", "0", "--il2p", "1"], in: dir, name: "tnc")
        defer { tnc.kill() }
        let port = try await tnc.kissPort()
        let client = try await TNCBackgroundProcess(try Peers.kissutil.path(), ["-p", String(port)], in: dir, name: "kissutil", stdinPipe: true)
        defer { client.kill() }
        try await tnc.awaitStderr("'input ended'") { $0.contains("input ended") }
        client.writeStdin(sent.joined(separator: "\n") + "\n")
        try await tnc.awaitStderr("'tx' lines for kissutil's frames") { text in sent.allSatisfy { text.contains("tx " + $0) } }
        client.closeStdin()
        #expect(await client.wait(timeout: 30), "kissutil did not exit within 30 s of its input closing")
        tnc.signal(SIGINT)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGINT: \(tnc.stderrText)")
        #expect(tnc.exitedNormally && tnc.status == 0, "modem tnc exit \(tnc.status): \(tnc.stderrText)")
        let a = try await runProcess(try Peers.atest18.path(), [dir.file("out.wav")], timeout: 120)
        let out = Self.plain(a.stdoutText)
        #expect(Self.atestCount(a) == sent.count, "\(out)")
        #expect(out.components(separatedBy: "   IL2P").count - 1 == sent.count, "\(out)")
        for line in sent { #expect(out.contains(line), "atest did not decode \(line): \(out)") }
        // And our own receiver reads it back as IL2P.
        let rx = try await modem(["rx", "--profile", "bell202", "--framing", "ax25", "--stats", dir.file("out.wav")], timeout: 120)
        #expect(rx.stdoutText.split(separator: "\n").map(String.init) == sent, "\(rx)")
        #expect(rx.stderrText.contains("IL2P: 2 IL2P frames"), "\(rx.stderrText)")
    }
}
