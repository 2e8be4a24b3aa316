import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// The OFDM modem through real ALSA playback and capture: `modem tx --profile ofdm --device default`
/// into the private PulseAudio null sink while `modem rx --profile ofdm --device default` records
/// its monitor. Real time (scripts/test.sh runs `RealTimeTests` one at a time). 256 KiB by default;
/// SWIFTMODEM_OFDM_ALSA_BYTES sets another size (1 MiB for the issue's figure).
@Suite("OFDM through the null sink (real time)", .serialized)
struct OFDMAudioRealTimeTests {
    @Test("bytes played at the cable's fastest configuration come back byte-exact from the capture (real time)", .requires(SoundServer.pulseAudio, SoundServer.pactl), .timeLimit(.minutes(5)))
    func throughTheNullSink() async throws {
        let size = ProcessInfo.processInfo.environment["SWIFTMODEM_OFDM_ALSA_BYTES"].flatMap(Int.init) ?? 262_144
        try await withLoop("OFDMAudio") { server in
            let dir = try Scratch("OFDMAudioCLITests")
            let bytes = OFDMCLITests.payload(size, seed: 9)
            let input = try dir.write("in.bin", bytes)
            let modemPath = try Paths.modem()
            // The transmission lasts about size x 8 / 190,000 s; record that and a margin.
            let seconds = Double(size) * 8 / 150_000 + 8
            let rx = try await TNCBackgroundProcess("/usr/bin/env", [server, modemPath, "rx", "--profile", "ofdm", "--device", "default",
                                                                 "--seconds", String(format: "%.0f", seconds)], in: dir, name: "rx")
            defer { rx.kill() }
            let tx = try await runProcess("/usr/bin/env", [server, modemPath, "tx", "--profile", "ofdm", "--bitrate", "240000",
                                                           "--device", "default", input], timeout: seconds + 60)
            #expect(tx.status == 0, "\(tx)")
            #expect(await rx.wait(timeout: seconds + 60), "the capture still runs: \(rx.stderrText)")
            print("OFDM through the null sink: \(size) bytes, tx \(String(format: "%.1f", tx.seconds)) s; rx: \(rx.stderrText.split(separator: "\n").filter { $0.contains("OFDM") })")
            #expect(rx.status == 0, "exit \(rx.status): \(rx.stderrText)")
            #expect(rx.stdout.elementsEqual(bytes), "\(rx.stdout.count) of \(bytes.count) bytes; \(rx.stderrText)")
        }
    }
}
