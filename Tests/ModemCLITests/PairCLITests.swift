import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// Runs `body` with the private PulseAudio null sink (scripts/audio-loop.sh) started for it, given the
/// `PULSE_SERVER=...` assignment, and stops the sink afterwards, whether `body` threw or not. Callers
/// carry `.requires(SoundServer.pulseAudio, SoundServer.pactl)`; a sink that does not start is a failure.
func withLoop<T>(_ label: String, _ body: (String) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-pulse-\(UUID().uuidString.prefix(8))").path
    let script = Paths.packageRoot + "/scripts/audio-loop.sh"
    func stop() async { _ = try? await runProcess("/usr/bin/env", ["AUDIO_LOOP_DIR=\(folder)", "bash", script, "stop"], timeout: 120) }
    let started = try await runProcess("/usr/bin/env", ["AUDIO_LOOP_DIR=\(folder)", "bash", script, "start"], timeout: 120)
    guard started.status == 0, let line = started.stdoutText.split(separator: "\n").first(where: { $0.hasPrefix("export PULSE_SERVER=") }) else {
        await stop()
        throw HarnessError("no loopback sound server: \(script) start failed: \(started)")
    }
    do {
        let result = try await body(String(line.dropFirst("export ".count)))
        await stop()
        return result
    } catch {
        await stop()
        throw error
    }
}

private func pairCode(_ r: ProcessResult) -> String? { pairCode(r.stdoutText) }

private func pairCode(_ stdout: String) -> String? {
    stdout.split(separator: "\n").first(where: { $0.hasPrefix("paired ") }).map { String($0.dropFirst("paired ".count)) }
}

/// A background `modem pair` in a few words, for failure messages.
private func describe(_ p: TNCBackgroundProcess) -> String {
    "exit \(p.status) after \(p.runSeconds.map { String(format: "%.2f", $0) } ?? "?") s, stdout: \(p.stdoutText)stderr:\n\(p.stderrText.suffix(1500))"
}

@Suite("modem pair", .serialized)
struct PairCLITests {
    @Test("bad options are refused with status 64 naming them")
    func badOptions() async throws {
        for (args, word) in [(["pair", "--device", "default", "--seconds", "0"], "--seconds"),
                             (["pair", "--device", "default", "--baud", "100"], "--baud"),
                             (["pair", "--device", "default", "--name", "no spaces"], "--name"),
                             (["pair"], "--device")] {
            let r = try await modem(args)
            #expect(r.status == 64, "\(r)")
            #expect(r.stderrText.contains(word), "\(r)")
        }
    }

    @Test("a sound device that does not exist: exit 1 naming it")
    func noDevice() async throws {
        let keys = try Scratch("PairCLI")
        let r = try await modem(["pair", "--device", "no-such-device", "--keys", keys.file("k"), "--seconds", "1"])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderrText.contains("no-such-device"), "\(r)")
    }
}

/// `modem pair` through the private PulseAudio null sink: real-time audio (a stalled sound server
/// loses the line), and the announcer's 5 s. scripts/test.sh runs the `RealTimeTests` suites in a
/// group of their own, one at a time. Every step waits for an event (the listener's `--verbose`
/// line: its devices are open), not for a time.
@Suite("modem pair (real time)", .serialized)
struct PairRealTimeTests {
    @Test("through a private PulseAudio null sink: both ends print the same code, exit 0, the announcer within 8 s; alone: 'no pairing heard' (real time)", .requires(SoundServer.pulseAudio, SoundServer.pactl),
          .timeLimit(.minutes(3)))
    func throughNullSink() async throws {
        try await withLoop("PairCLI") { server in
            let keys = try Scratch("PairCLI")
            let modemPath = try Paths.modem()
            // The listener first; the announcer starts once the listener's devices are open (it hears from then on).
            let listener = try await TNCBackgroundProcess("/usr/bin/env", [server, modemPath, "pair", "--device", "default", "--keys", keys.file("b"),
                                                                     "--seconds", "10", "--verbose"], in: keys, name: "listener")
            defer { listener.kill() }
            try await listener.awaitStderr("'devices open' from the listener") { $0.contains("modem pair: devices open") }
            // Its run is timed from just before it starts to Foundation's report of its end.
            let a = try await TNCBackgroundProcess("/usr/bin/env", [server, modemPath, "pair", "--device", "default", "--announce", "--keys", keys.file("a"),
                                                              "--seconds", "10"], in: keys, name: "announcer")
            defer { a.kill() }
            #expect(await a.wait(timeout: 60), "the announcer still runs 60 s after it started: \(describe(a))")
            #expect(await listener.wait(timeout: 60), "the listener still runs 60 s after it started: \(describe(listener))")
            let seconds = a.runSeconds ?? .infinity
            print("modem pair through the null sink: announcer \(String(format: "%.2f", seconds)) s (exit \(a.status)), listener exit \(listener.status)")
            #expect(a.exitedNormally && a.status == 0, "\(describe(a))")
            #expect(listener.exitedNormally && listener.status == 0, "\(describe(listener))")
            let ca = pairCode(a.stdoutText), cb = pairCode(listener.stdoutText)
            #expect(ca != nil && ca == cb, "announcer \(a.stdoutText) listener \(listener.stdoutText)")
            #expect(ca.map { $0.count == 6 && $0.allSatisfy(\.isNumber) } == true)
            // The real-time figure: about 4 s on an idle machine, where the messaging target allows 5 s
            // (Benchmarks/README.md). The suite must also pass beside a CPU hog, which delays the sound
            // server and the announcer's hold: 8 s here still catches a pairing that repeats a message.
            #expect(seconds <= 8, "announcer took \(seconds) s")

            // Each trusts the other's key.
            for (me, peer) in [("a", "b"), ("b", "a")] {
                let show = try await modem(["keys", "show", "--keys", keys.file(peer)])
                let peerKey = show.stdoutText.split(separator: "\n").last.map(String.init) ?? "?"
                let list = try await modem(["keys", "list", "--keys", keys.file(me)])
                #expect(peerKey.hasPrefix("smk1") && list.stdoutText.contains(" \(peerKey) "), "\(me) trusts \(list.stdoutText), \(peer) is \(peerKey)")
            }

            let alone = try await runProcess("/usr/bin/env", [server, modemPath, "pair", "--device", "default", "--keys", keys.file("c"),
                                                              "--seconds", "1.5"], timeout: 60)
            #expect(alone.status == 3, "\(alone)")
            #expect(alone.stderrText.contains("no pairing heard"), "\(alone)")
            #expect(pairCode(alone) == nil)
        }
    }

    @Test("two announcers and one listener on the null sink: nobody pairs or trusts anyone; each end exits 3 (ambiguous, or nothing heard) (real time)", .requires(SoundServer.pulseAudio, SoundServer.pactl),
          .timeLimit(.minutes(3)))
    func twoAnnouncers() async throws {
        try await withLoop("PairCLI2") { server in
            let keys = try Scratch("PairCLI2")
            let modemPath = try Paths.modem()
            func arguments(_ dir: String, _ extra: [String]) -> [String] {
                [server, modemPath, "pair", "--device", "default", "--keys", keys.file(dir), "--seconds", "8"] + extra
            }
            // The listener first; both announcers start together once its devices are open (it hears
            // from then on), so it hears both tokens before it could finish a pairing with either (seen
            // once in CI: with the second announcer started later, the listener paired with the first).
            // (An end that finds the pairing ambiguous keeps playing aborts, after the others' answers,
            // while the pairing it saw goes on, and both ends of a complete pairing hold their verdict
            // long enough to hear one: an announcer that stopped is heard, whatever the start order.)
            let listener = try await TNCBackgroundProcess("/usr/bin/env", arguments("b", ["--verbose"]), in: keys, name: "b")
            defer { listener.kill() }
            try await listener.awaitStderr("'devices open' from the listener") { $0.contains("modem pair: devices open") }
            let a1 = try await TNCBackgroundProcess("/usr/bin/env", arguments("a1", ["--announce", "--verbose"]), in: keys, name: "a1")
            defer { a1.kill() }
            let a2 = try await TNCBackgroundProcess("/usr/bin/env", arguments("a2", ["--announce", "--verbose"]), in: keys, name: "a2")
            defer { a2.kill() }
            #expect(await a1.wait(timeout: 60), "the first announcer still runs 60 s after it started: \(describe(a1))")
            #expect(await a2.wait(timeout: 60), "the second announcer still runs 60 s after it started: \(describe(a2))")
            #expect(await listener.wait(timeout: 60), "the listener still runs 60 s after it started: \(describe(listener))")
            // Each announcer did play its token.
            for a in [a1, a2] { #expect(a.stderrText.contains("): play K"), "an announcer played no token: \(describe(a))") }
            let rb = ProcessResult(command: "modem pair (listener)", status: listener.status, signaled: !listener.exitedNormally, timedOut: false,
                                   stdout: Array(listener.stdoutText.utf8), stderr: Array(listener.stderrText.utf8),
                                   seconds: listener.runSeconds ?? 0)
            #expect(pairCode(rb) == nil, "\(rb)")
            #expect(rb.status == 3, "\(rb)")
            for a in [a1, a2] {
                #expect(pairCode(a.stdoutText) == nil, "\(describe(a))")
                #expect(a.exitedNormally && a.status == 3, "\(describe(a))")
            }
            // Usually someone says "ambiguous" (exit 3). When the two tokens collided on every try (both
            // announcers started before either could hear the other; the sound server's buffers are long
            // on a busy machine), nobody heard a pairing at all and every end says so (also exit 3): as safe,
            // and counted in the state machine's simulations (PairingStateMachineTests), not here.
            let ambiguous = (rb.status == 3 && rb.stderrText.contains("ambiguous, pair again") ? 1 : 0)
                + [a1, a2].filter { $0.status == 3 && $0.stderrText.contains("ambiguous, pair again") }.count
            print("two announcers: exits listener \(rb.status), announcers \(a1.status) \(a2.status), \(ambiguous) said ambiguous")
            if pairCode(rb) != nil { Issue.record("the listener paired; announcers:\n\(describe(a1))\n\(describe(a2))") }
            // Nothing was trusted by anyone.
            for dir in ["b", "a1", "a2"] {
                let list = try await modem(["keys", "list", "--keys", keys.file(dir)])
                #expect(!list.stdoutText.contains("smk1"), "\(dir): \(list)")
            }
        }
    }
}
