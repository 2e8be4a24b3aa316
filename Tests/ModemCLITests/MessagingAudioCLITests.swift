import Foundation
import Testing

/// Messaging over sound: `modem receive --listen audio:default` and `modem send --to audio:default`
/// through the private PulseAudio null sink (both ends on one device, each hearing itself), with two
/// key folders that trust each other: Noise handshake, offer and a small file over the channel
/// protocol in duplex mode.
@Suite("messaging over audio endpoints", .serialized)
struct MessagingAudioCLITests {
    @Test("a 300-byte file goes from send to receive over audio:default, byte-exact", .timeLimit(.minutes(3)))
    func fileOverTheNullSink() async throws {
        let (server, stop) = try await startLoop("MessagingAudio")
        defer { stop() }
        let dir = try Scratch("MessagingAudioCLITests")
        let (ka, kb) = try await TransferCLITests.trustedKeys(dir)
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let source = try dir.write("small.bin", data)
        let modemPath = try Paths.modem()
        async let receiver = runProcess("/usr/bin/env", [server, modemPath, "receive", "--listen", "audio:default", "--dir", dir.file("in"),
                                                         "--accept-all", "--keys", kb, "--name", "bob"], timeout: 120)
        try await Task.sleep(for: .milliseconds(800))
        let send = try await runProcess("/usr/bin/env", [server, modemPath, "send", "--to", "audio:default", source, "--keys", ka,
                                                         "--name", "alice"], timeout: 120)
        let rx = try await receiver
        print("send over audio:default: \(String(format: "%.1f", send.seconds)) s, exit \(send.status)")
        #expect(send.status == 0, "\(send)\nreceiver: \(rx)")
        #expect(rx.status == 0, "\(rx)")
        #expect(rx.stdoutText.hasPrefix("received small.bin 300 sha256 "), "\(rx)")
        #expect(try readBytes(dir.file("in/small.bin")) == data)
    }
}
