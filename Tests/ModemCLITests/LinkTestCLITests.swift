import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// The JSON line `modem link-test --json` prints, as a dictionary of numbers.
private func summary(_ r: ProcessResult) throws -> [String: Double] {
    let line = try #require(r.stdoutText.split(separator: "\n").last, "no output: \(r.stderrText)")
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    return try #require(object?.compactMapValues { ($0 as? NSNumber)?.doubleValue }, "not JSON: \(line)")
}

/// The invariants every run must keep, whatever the channel did.
private func expectHonest(_ s: [String: Double], sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(s["completed"]! + s["timedOut"]! + s["failed"]! == s["exchanges"]!, "outcomes must add up: \(s)", sourceLocation: sourceLocation)
    #expect(s["corruptDelivered"] == 0, "corrupt payload delivered: \(s)", sourceLocation: sourceLocation)
    #expect(s["duplicatesDelivered"] == 0, "duplicate delivered: \(s)", sourceLocation: sourceLocation)
}

@Suite("modem link-test and modem device")
struct LinkTestCLITests {
    @Test("clean loopback: every master-slave and duplex exchange completes")
    func clean() async throws {
        for mode in ["master-slave", "duplex"] {
            let r = try await modem(["link-test", "--mode", mode, "--count", "20", "--size", "64", "--seed", "5", "--json"], timeout: 120)
            #expect(r.status == 0, "\(r)")
            let s = try summary(r)
            expectHonest(s)
            #expect(s["exchanges"] == 20 && s["completed"] == 20, "\(mode): \(s)")
            #expect(s["goodputBps"]! > 0 && s["meanRoundTripMs"]! > 0)
        }
    }

    @Test("faulty loopback (SNR 0 dB, 20 % frame loss, 500 ppm drift): documented outcomes only, most complete")
    func faulty() async throws {
        let r = try await modem(["link-test", "--mode", "master-slave", "--count", "30", "--size", "200", "--snr", "0",
                                 "--loss", "0.2", "--drift", "500", "--seed", "11", "--json"], timeout: 120)
        #expect(r.status == 0, "\(r)")
        let s = try summary(r)
        expectHonest(s)
        #expect(s["completed"]! >= 15, "\(s)")
        #expect(s["framesLost"]! > 0, "the channel should have lost frames: \(s)")
    }

    @Test("4 KiB exchanges at 1200 baud keep at least 60 % of the line rate as goodput")
    func efficiency() async throws {
        let r = try await modem(["link-test", "--count", "2", "--size", "4096", "--json"], timeout: 120)
        let s = try summary(r)
        expectHonest(s)
        #expect(s["completed"] == 2)
        #expect(s["goodputBps"]! >= 720, "\(s)")
    }

    @Test("-7 dB: with --fec auto every exchange completes as coded frames; with --fec off the link cannot even open")
    func belowTheCliff() async throws {
        let auto = try await modem(["link-test", "--count", "10", "--size", "256", "--snr", "-7", "--seed", "3", "--json"], timeout: 300)
        #expect(auto.status == 0, "\(auto)")
        let a = try summary(auto)
        expectHonest(a)
        #expect(a["completed"] == 10, "\(a)")
        #expect(a["framesCoded"]! >= 20, "\(a)")
        let off = try await modem(["link-test", "--count", "10", "--size", "256", "--snr", "-7", "--seed", "3", "--fec", "off", "--json"],
                                  timeout: 300)
        let o = try summary(off)
        expectHonest(o)
        #expect(o["completed"] == 0 && o["framesCoded"] == 0, "\(o)")
    }

    @Test("a clean line with --fec auto stands down to plain frames after the first coded ones")
    func standsDown() async throws {
        let r = try await modem(["link-test", "--count", "20", "--size", "256", "--seed", "3", "--json"], timeout: 120)
        let s = try summary(r)
        expectHonest(s)
        #expect(s["completed"] == 20)
        #expect(s["framesCoded"]! >= 1 && s["framesCoded"]! <= 4, "\(s)")
        let off = try summary(try await modem(["link-test", "--count", "20", "--size", "256", "--seed", "3", "--fec", "off", "--json"],
                                              timeout: 120))
        #expect(off["completed"] == 20 && off["framesCoded"] == 0, "\(off)")
        #expect(s["goodputBps"]! >= 0.9 * off["goodputBps"]!, "auto \(s), off \(off)")
    }

    @Test("bad options are refused with a message naming them")
    func badOptions() async throws {
        let cases: [([String], String)] = [
            (["--mode", "simplex"], "--mode"), (["--size", "0"], "--size"), (["--loss", "1.5"], "--loss"),
            (["--baud", "0"], "--baud"), (["--channel", "alsa", "--snr", "3"], "loopback only"),
            (["--drift", "20000"], "--drift"), (["--timeout", "-1"], "--timeout"), (["--fec", "maybe"], "--fec"),
        ]
        for (args, needle) in cases {
            let r = try await modem(["link-test"] + args)
            #expect(r.status == 64, "\(args): \(r)")
            #expect(r.stderrText.contains(needle), "\(args): \(r.stderrText)")
        }
    }

    @Test("modem device on a device that does not exist: exit 1 naming it")
    func deviceMissing() async throws {
        let r = try await modem(["device", "--device", "no-such-device", "--seconds", "1"])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderrText.contains("no-such-device"))
    }

    @Test("devices --probe where no device answers the handshake: '(no device answered)', exit 3 (no connection); no converter plugin probed")
    func probeFindsNone() async throws {
        let r = try await modem(["devices", "--probe"], timeout: 120)
        #expect(r.status == 3 && r.stdoutText.contains("(no device answered)"), "\(r)")
        for plugin in ["samplerate", "speexrate", "upmix", "vdownmix", "lavrate"] {
            #expect(!r.stdoutText.contains("  \(plugin) "), "\(plugin) is listed or probed: \(r.stdoutText)")
        }
    }
}

/// link-test through real ALSA playback and capture: the audio runs in real time, so a machine kept busy
/// by parallel tests starves it (dropped periods are damaged frames). scripts/test.sh runs the
/// `RealTimeTests` suites in a group of their own, one at a time.
@Suite("modem link-test through ALSA (real time)", .serialized)
struct LinkTestALSARealTimeTests {
    @Test("through ALSA (a private PulseAudio null sink): master-slave exchanges complete on the shared line (real time)", .requires(SoundServer.pulseAudio, SoundServer.pactl))
    func alsa() async throws {
        try await withLoop("LinkCLITests") { server in
            let r = try await runProcess("/usr/bin/env", [server, try Paths.modem(), "link-test", "--channel", "alsa", "--device", "default",
                                                          "--count", "2", "--size", "32", "--seed", "2", "--json"], timeout: 120)
            #expect(r.status == 0, "\(r)")
            let s = try summary(r)
            expectHonest(s)
            #expect(s["completed"] == 2, "\(s)")
        }
    }
}
