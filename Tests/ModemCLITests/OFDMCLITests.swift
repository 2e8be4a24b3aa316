import Foundation
import ProcessTestSupport
import Testing

/// `modem tx|rx|analyze --profile ofdm` as a user runs them: round trips through `modem impair`,
/// the configuration table, bad options and bad input (one line, status 1, no corrupt byte out).
@Suite("The OFDM modem through the CLI")
struct OFDMCLITests {
    static func payload(_ n: Int, seed: UInt64 = 5) -> [UInt8] {
        var x = seed
        return (0..<n).map { _ in
            x = x &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: x >> 33)
        }
    }

    @Test("round trips: a file (its length in the header) and a pipe (a stream), each through a simulated line",
          arguments: [("200000", ["--snr", "40", "--drift", "100", "--band", "20-20000", "--gain", "-3"]),
                      ("48000", ["--snr", "24", "--band", "250-9000", "--echo", "1.5:0.5", "--drift", "300"])])
    func roundTrip(bitrate: String, line: [String]) async throws {
        let dir = try Scratch()
        let bytes = Self.payload(40_000)
        let input = try dir.write("in.bin", bytes)
        for viaPipe in [false, true] {
            let wav = dir.file("o.wav"), noisy = dir.file("oi.wav")
            let tx = viaPipe
                ? try await modem(["tx", "--profile", "ofdm", "--bitrate", bitrate, "--out", wav], stdinFile: input)
                : try await modem(["tx", "--profile", "ofdm", "--bitrate", bitrate, "--out", wav, input])
            expectSuccess(tx)
            #expect(tx.stderrText.contains("as OFDM") && tx.stderrText.contains("bit/s effective"), "\(tx)")
            expectSuccess(try await modem(["impair", wav, noisy, "--format", "s16"] + line))
            let rx = try await modem(["rx", "--profile", "ofdm", "--stats", noisy])
            expectSuccess(rx)
            #expect(rx.stdout == bytes, "\(describeDifference(expected: bytes, got: rx.stdout))")
            #expect(rx.stderrText.contains("### OFDM") && rx.stderrText.contains("OFDM end"), "\(rx.stderrText)")
        }
    }

    @Test("--help lists every configuration with its net rate and the SNR it needs; --bitrate picks the fastest at or below it")
    func help() async throws {
        let h = try await modem(["tx", "--help"])
        expectSuccess(h)
        let rows = h.stdoutText.split(separator: "\n").filter { $0.contains(" bit/s ") && $0.contains(", SNR ") }
        #expect(rows.count >= 15, "\(h.stdoutText)")
        let dir = try Scratch()
        let input = try dir.write("in.bin", [1, 2, 3])
        let r = try await modem(["tx", "--profile", "ofdm", "--bitrate", "60000", "--out", dir.file("x.wav"), input])
        expectSuccess(r)
        #expect(r.stderrText.contains("cable") && r.stderrText.contains("16qam"), "60000 bit/s should pick 16-QAM 3/4 on the cable grid (55,759 bit/s): \(r.stderrText)")
    }

    @Test("bad options: FSK options, another rate, a bit rate below the slowest, --fx25; each a usage error naming it")
    func badOptions() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.bin", [1])
        let out = dir.file("x.wav")
        for (args, word) in [(["--baud", "1200"], "--baud"), (["--rate", "44100"], "48000"), (["--bitrate", "100"], "slowest"),
                             (["--bitrate", "-5"], "bitrate"), (["--fx25", "16"], "--fx25")] {
            let r = try await modem(["tx", "--profile", "ofdm"] + args + ["--out", out, input])
            #expect(r.status == 64 && r.stderrText.contains(word), "\(args): \(r)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(args) left an output")
        }
        let rx = try await modem(["rx", "--profile", "ofdm", "--framing", "8N1", input])
        #expect(rx.status == 64, "\(rx)")
    }

    @Test("bad input: noise, a cut recording, a damaged block: one line naming it, status 1, only checked bytes out",
          .requires(Peers.sox))
    func badInput() async throws {
        let dir = try Scratch()
        let bytes = Self.payload(30_000)
        let input = try dir.write("in.bin", bytes)
        let wav = dir.file("o.wav")
        expectSuccess(try await modem(["tx", "-q", "--profile", "ofdm", "--bitrate", "160000", "--out", wav, input]))
        // Pure noise: nothing found.
        let noise = try dir.write("noise.bin", Self.payload(96_000))
        let noiseWav = dir.file("noise.wav")
        expectSuccess(try await modem(["tx", "-q", "--baud", "12000", "--out", noiseWav, noise]))
        let none = try await modem(["rx", "--profile", "ofdm", noiseWav])
        #expect(none.status == 1 && none.stderrText.contains("no OFDM transmission found") && none.stdout.isEmpty, "\(none)")
        // Cut: the WAV's data ends half-way (sox trims it).
        let cut = dir.file("cut.wav")
        expectSuccess(try await sox([wav, cut, "trim", "0", "0.6"]))
        let cutRx = try await modem(["rx", "--profile", "ofdm", cut])
        #expect(cutRx.status == 1 && cutRx.stderrText.contains("ends inside the transmission"), "\(cutRx)")
        #expect(cutRx.stdout.count < bytes.count && cutRx.stdout.elementsEqual(bytes[0..<cutRx.stdout.count]), "corrupt bytes out")
        // A loud burst in the middle (the line far noisier than the configuration needs, briefly).
        let noisy = dir.file("noisy.wav")
        expectSuccess(try await modem(["impair", wav, noisy, "--snr", "12", "--format", "s16"]))
        let r = try await modem(["rx", "--profile", "ofdm", noisy])
        #expect(r.status == 1 && r.stderrText.contains("failed its check at byte"), "\(r)")
        #expect(r.stdout.count < bytes.count && r.stdout.elementsEqual(bytes[0..<r.stdout.count]), "corrupt bytes out")
    }

    @Test("analyze: the configuration, drift and SNR of a transmission, the rx command, and a picture")
    func analyze() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.bin", Self.payload(20_000))
        let wav = dir.file("o.wav"), noisy = dir.file("oi.wav"), png = dir.file("a.png")
        expectSuccess(try await modem(["tx", "-q", "--profile", "ofdm", "--bitrate", "120000", "--out", wav, input]))
        expectSuccess(try await modem(["impair", wav, noisy, "--snr", "35", "--drift", "200", "--format", "s16"]))
        let r = try await modem(["analyze", "--png", png, noisy])
        expectSuccess(r)
        let text = r.stdoutText
        #expect(text.contains("ofdm      256qam 3/4 cable") && text.contains("20000 bytes"), "\(text)")
        #expect(text.contains("drift") && text.contains("ppm") && text.contains("every block checked"), "\(text)")
        #expect(text.hasSuffix("modem rx --profile ofdm \(noisy)\n"), "\(text)")
        let picture = try readBytes(png)
        #expect(picture.count > 1000 && picture.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }
}
