import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// Messaging over sound: `modem receive --listen audio:default` and `modem send --to audio:default`
/// through the private PulseAudio null sink (both ends on one device, each hearing itself), with two
/// key folders that trust each other: Noise handshake, offer and a small file over the channel
/// protocol in duplex mode. Real-time audio (a stalled sound server loses the line): scripts/test.sh
/// runs the `RealTimeTests` suites in a group of their own, one at a time. The sender starts once the
/// receiver says it listens (its `listening on audio:default` line).
@Suite("messaging over audio endpoints (real time)", .serialized)
struct MessagingAudioRealTimeTests {
    @Test("a 300-byte file goes from send to receive over audio:default, byte-exact (real time)", .requires(SoundServer.pulseAudio, SoundServer.pactl), .timeLimit(.minutes(5)))
    func fileOverTheNullSink() async throws {
        try await withLoop("MessagingAudio") { server in
            let dir = try Scratch("MessagingAudioCLITests")
            let (ka, kb) = try await TransferCLITests.trustedKeys(dir)
            let data = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let source = try dir.write("small.bin", data)
            let modemPath = try Paths.modem()
            let rx = try await TNCBackgroundProcess("/usr/bin/env", [server, modemPath, "receive", "--listen", "audio:default", "--dir", dir.file("in"),
                                                               "--accept-all", "--keys", kb, "--name", "bob"], in: dir, name: "rx")
            defer { rx.kill() }
            try await rx.awaitStderr("'listening on audio:default' from the receiver") { $0.contains("listening on audio:default") }
            let send = try await runProcess("/usr/bin/env", [server, modemPath, "send", "--to", "audio:default", source, "--keys", ka,
                                                             "--name", "alice"], timeout: 120)
            #expect(await rx.wait(timeout: 120), "the receiver still runs 120 s after the send ended: \(rx.stderrText)")
            print("send over audio:default: \(String(format: "%.1f", send.seconds)) s, exit \(send.status)")
            #expect(send.status == 0, "\(send)\nreceiver: \(rx.stderrText)")
            #expect(rx.exitedNormally && rx.status == 0, "exit \(rx.status): \(rx.stderrText)")
            #expect(rx.stdoutText.hasPrefix("received small.bin 300 sha256 "), "\(rx.stdoutText)\n\(rx.stderrText)")
            #expect(try readBytes(dir.file("in/small.bin")) == data)
        }
    }

    @Test("a 200 KB file over audio:default with --profile ofdm on both ends, byte-exact (real time)", .requires(SoundServer.pulseAudio, SoundServer.pactl), .timeLimit(.minutes(5)))
    func fileOverOFDM() async throws {
        try await withLoop("MessagingAudioOFDM") { server in
            let dir = try Scratch("MessagingAudioCLITests")
            let (ka, kb) = try await TransferCLITests.trustedKeys(dir)
            let data = (0..<200_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
            let source = try dir.write("big.bin", data)
            let modemPath = try Paths.modem()
            let rx = try await TNCBackgroundProcess("/usr/bin/env", [server, modemPath, "receive", "--listen", "audio:default", "--profile", "ofdm",
                                                               "--dir", dir.file("in"), "--accept-all", "--keys", kb, "--name", "bob"], in: dir, name: "rx")
            defer { rx.kill() }
            try await rx.awaitStderr("'listening on audio:default' from the receiver") { $0.contains("listening on audio:default") }
            let send = try await runProcess("/usr/bin/env", [server, modemPath, "send", "--to", "audio:default", "--profile", "ofdm", source,
                                                             "--keys", ka, "--name", "alice"], timeout: 180)
            #expect(await rx.wait(timeout: 120), "the receiver still runs 120 s after the send ended: \(rx.stderrText)")
            print("send over audio:default with OFDM: \(data.count) bytes in \(String(format: "%.1f", send.seconds)) s (\(String(format: "%.0f", Double(data.count * 8) / send.seconds)) bit/s, handshakes included), exit \(send.status)")
            #expect(send.status == 0, "\(send)\nreceiver: \(rx.stderrText)")
            #expect(rx.exitedNormally && rx.status == 0, "exit \(rx.status): \(rx.stderrText)")
            #expect(try readBytes(dir.file("in/big.bin")).elementsEqual(data))
        }
    }

    @Test("--profile ofdm is for audio: endpoints")
    func ofdmNeedsAudio() async throws {
        let r = try await modem(["send", "--to", "tcp:127.0.0.1:9", "--profile", "ofdm", "/dev/null"])
        #expect(r.status == 64 && r.stderrText.contains("audio:"), "\(r)")
    }
}
