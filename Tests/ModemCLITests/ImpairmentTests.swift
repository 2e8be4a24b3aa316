import Foundation
import ProcessTestSupport
import Testing

/// Channel impairments other than noise: each alone must leave a 1200-baud transmission
/// byte-exact.
@Suite("Impaired channels decode byte-exact at 1200 baud")
struct ImpairmentTests {
    static let text = Array(Texts.words(300, seed: 3).utf8)

    @Test("modem impair", arguments: [
        ["--drift", "1000"], ["--drift=-1000"], ["--band", "300-3400"], ["--hum", "50:-20"], ["--gain=-40"],
        ["--dc", "0.05"], ["--deemphasis", "1000"],
        // A telephone-like channel, everything at once (modem impair --help's example, with mild noise).
        ["--band", "300-3400", "--drift", "1000", "--hum", "50:-30", "--gain=-40", "--snr", "20", "--seed", "3"],
    ])
    func impaired(_ impairment: [String]) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.text)
        let clean = dir.file("clean.wav"), impaired = dir.file("impaired.wav")
        try await modemTx(["--baud", "1200"], input: input, out: clean)
        let imp = try await modem(["impair", clean, impaired] + impairment)
        guard expectSuccess(imp) else { return }
        let r = try await modem(["rx", "-q", "--baud", "1200", impaired])
        expectSuccess(r)
        #expect(r.stdout == Self.text, "\(impairment): \(describeDifference(expected: Self.text, got: r.stdout))")
    }

    // Skipped (shown as skipped with this reason) where sox is not installed.
    @Test("Resampled by sox", .requires(Peers.sox),
          arguments: [(48000, 44100), (44100, 48000), (48000, 8000), (48000, 96000)])
    func resampled(from: Int, to: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.text)
        let clean = dir.file("clean.wav"), resampled = dir.file("resampled.wav")
        try await modemTx(["--baud", "1200", "--rate", "\(from)"], input: input, out: clean)
        expectSuccess(try await sox([clean, "-r", "\(to)", resampled]))
        let r = try await modem(["rx", "-q", "--baud", "1200", resampled])
        expectSuccess(r)
        #expect(r.stdout == Self.text, "\(from) → \(to) Hz: \(describeDifference(expected: Self.text, got: r.stdout))")
    }

    /// The examples in `modem impair --help` are what users copy first.
    @Test("modem impair --help's example with negative numbers (--snr -3, --gain -40) runs")
    func helpExampleRuns() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", "hello\n")
        let clean = dir.file("clean.wav")
        try await modemTx(["--baud", "1200"], input: input, out: clean)
        let help = try await modem(["impair", "--help"])
        #expect(help.stdoutText.contains("--snr -3"), "the help no longer shows `--snr -3`; update this test")
        let r = try await modem(["impair", clean, dir.file("noisy.wav"), "--snr", "-3"])
        #expect(r.succeeded, "\(r)")
    }
}
