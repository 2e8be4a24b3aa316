import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// The channel protocol and messaging over the HF modem through the CLI: `link-test` and
/// `transfer-test --profile hf` on the simulated SSB line (channel time, seconds of CPU), the options'
/// checks, and `send`/`receive --profile hf` over the private PulseAudio null sink (real time).
@Suite("The HF link through the CLI")
struct HFLinkCLITests {
    @Test("link-test --profile hf on the hf line: every exchange, the configuration and the goodput's share of the line rate reported")
    func linkTest() async throws {
        let r = try await modem(["link-test", "--profile", "hf", "--line", "hf", "--count", "2", "--size", "1000", "--seed", "3"], timeout: 120)
        #expect(expectSuccess(r))
        #expect(r.stdoutText.contains("with HF (the phone sent with HF ") && r.stdoutText.contains("completed 2,"), "\(r.stdoutText)")
        #expect(r.stdoutText.contains("% of the phone's last line rate"), "\(r.stdoutText)")
    }

    @Test("transfer-test --profile hf (the hf line by default): byte-exact over Noise sessions and data connections")
    func transferTest() async throws {
        let r = try await modem(["transfer-test", "--profile", "hf", "--size", "12000", "--seed", "2"], timeout: 300)
        #expect(expectSuccess(r))
        #expect(r.stdoutText.hasPrefix("completed: 12000 of 12000 bytes, sha256 equal"), "\(r.stdoutText)")
        #expect(r.stdoutText.contains("the sender sent with HF "), "\(r.stdoutText)")
    }

    @Test("the hf lines are for --profile hf; --profile hf is a modem for sound and audio: endpoints")
    func checks() async throws {
        let line = try await modem(["link-test", "--line", "hf", "--count", "1"])
        #expect(line.status == 64 && line.stderrText.contains("--profile hf"), "\(line)")
        let transfer = try await modem(["transfer-test", "--line", "hf-fading", "--size", "100"])
        #expect(transfer.status == 64 && transfer.stderrText.contains("--profile hf"), "\(transfer)")
        let bluetooth = try await modem(["link-test", "--channel", "bluetooth", "--address", "00:1B:DC:00:00:0B", "--profile", "hf"])
        #expect(bluetooth.status == 64 && bluetooth.stderrText.contains("modem for sound"), "\(bluetooth)")
        let send = try await modem(["send", "--to", "tcp:127.0.0.1:9", "--profile", "hf", "/dev/null"])
        #expect(send.status == 64 && send.stderrText.contains("audio:"), "\(send)")
        let rate = try await modem(["link-test", "--profile", "hf", "--sample-rate", "44100", "--count", "1"])
        #expect(rate.status == 64 && rate.stderrText.contains("8000"), "\(rate)")
    }
}

/// `send`/`receive --profile hf` over the private PulseAudio null sink: both ends on one device, each
/// hearing itself, taking turns by carrier sense, as two radios on one frequency would.
@Suite("messaging over audio endpoints with the HF modem (real time)", .serialized)
struct HFMessagingAudioRealTimeTests {
    @Test("a 3000-byte file over audio:default with --profile hf on both ends, byte-exact (real time)",
          .requires(SoundServer.pulseAudio, SoundServer.pactl), .timeLimit(.minutes(5)))
    func fileOverHF() async throws {
        try await withLoop("MessagingAudioHF") { server in
            let dir = try Scratch("HFMessagingAudioCLITests")
            let (ka, kb) = try await TransferCLITests.trustedKeys(dir)
            let data = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let source = try dir.write("hf.bin", data)
            let modemPath = try Paths.modem()
            let rx = try await TNCBackgroundProcess("/usr/bin/env", [server, modemPath, "receive", "--listen", "audio:default", "--profile", "hf",
                                                               "--dir", dir.file("in"), "--accept-all", "--keys", kb, "--name", "bob"], in: dir, name: "rx")
            defer { rx.kill() }
            try await rx.awaitStderr("'listening on audio:default' from the receiver") { $0.contains("listening on audio:default") }
            let send = try await runProcess("/usr/bin/env", [server, modemPath, "send", "--to", "audio:default", "--profile", "hf", source,
                                                             "--keys", ka, "--name", "alice"], timeout: 240)
            #expect(await rx.wait(timeout: 120), "the receiver still runs 120 s after the send ended: \(rx.stderrText)")
            print("send over audio:default with HF: \(data.count) bytes in \(String(format: "%.1f", send.seconds)) s, exit \(send.status)")
            #expect(send.status == 0, "\(send)\nreceiver: \(rx.stderrText)")
            #expect(rx.exitedNormally && rx.status == 0, "exit \(rx.status): \(rx.stderrText)")
            #expect(try readBytes(dir.file("in/hf.bin")) == data)
        }
    }
}
