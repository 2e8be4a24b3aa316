import Foundation
import ModemAudio
import ProcessTestSupport
import Testing

/// A private PulseAudio server with a null sink, started by `scripts/audio-loop.sh` around a suite,
/// so that alsa-lib's `default` device plays into the sink and records its monitor.
struct LoopbackServer: Sendable {
    /// `unix:<runtime folder>/native`.
    let pulseServer: String

    /// The running server, inside a suite marked with ``LoopbackServerTrait``; `nil` when none
    /// could be started (then ``unavailableReason`` says why: a failure, since the suite also
    /// carries `.requires(SoundServer.pulseAudio, SoundServer.pactl)`).
    @TaskLocal static var current: LoopbackServer?
    @TaskLocal static var unavailableReason = "the suite is not marked .loopbackServer"

    /// `scripts/audio-loop.sh` of this checkout, or `$AUDIO_LOOP_SCRIPT` when set.
    static var scriptPath: String {
        if let path = ProcessInfo.processInfo.environment["AUDIO_LOOP_SCRIPT"], !path.isEmpty { return path }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/audio-loop.sh").path
    }

    /// Runs the script (a 120 s hang guard); returns its exit status, standard output and error.
    static func runScript(_ command: String, runtimeFolder: String) async -> (status: Int32, output: String, errors: String) {
        do {
            let r = try await runProcess("/bin/bash", [scriptPath, command], environment: ["AUDIO_LOOP_DIR": runtimeFolder],
                                         timeout: 120)
            return (r.timedOut ? -1 : r.status, r.stdoutText, r.timedOut ? "\(r)" : r.stderrText)
        } catch {
            return (-1, "", "\(error)")
        }
    }

    /// The running server; throws, naming why, when none runs (the test fails).
    static func require() throws -> LoopbackServer {
        if let current { return current }
        throw LoopbackServerError(description: "no loopback sound server: \(unavailableReason)")
    }
}

/// The loopback sound server did not start.
struct LoopbackServerError: Error, CustomStringConvertible {
    let description: String
}

/// Starts a ``LoopbackServer`` once around the suite it marks and stops it afterwards. While it
/// runs, `PULSE_SERVER` points at it and alsa-lib has re-read its configuration, so `default`
/// routes to the server. Mark the suite `.serialized`: tests sharing one sink must not overlap.
struct LoopbackServerTrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("ModemAudioTests-pulse-\(UUID().uuidString.prefix(8))").path
        let started = await LoopbackServer.runScript("start", runtimeFolder: folder)
        guard started.status == 0,
              let line = started.output.split(separator: "\n").first(where: { $0.hasPrefix("export PULSE_SERVER=") })
        else {
            _ = await LoopbackServer.runScript("stop", runtimeFolder: folder)
            let why = started.errors.trimmingCharacters(in: .whitespacesAndNewlines)
            let reason = "\(LoopbackServer.scriptPath) start failed (status \(started.status))\(why.isEmpty ? "" : ": " + why)"
            try await LoopbackServer.$unavailableReason.withValue(reason) { try await function() }
            return
        }
        let server = LoopbackServer(pulseServer: String(line.dropFirst("export PULSE_SERVER=".count)))
        let previous = getenv("PULSE_SERVER").map { String(cString: $0) }
        setenv("PULSE_SERVER", server.pulseServer, 1)
        ALSADevices.reloadConfiguration()
        var failure: (any Error)?
        do { try await LoopbackServer.$current.withValue(server) { try await function() } } catch { failure = error }
        // Stopped after the suite, whether it threw or not (a `defer` cannot wait for the script).
        if let previous { setenv("PULSE_SERVER", previous, 1) } else { unsetenv("PULSE_SERVER") }
        ALSADevices.reloadConfiguration()
        _ = await LoopbackServer.runScript("stop", runtimeFolder: folder)
        if let failure { throw failure }
    }
}

extension Trait where Self == LoopbackServerTrait {
    /// Runs the suite with a private PulseAudio loopback server (see ``LoopbackServerTrait``); mark
    /// the suite `.requires(SoundServer.pulseAudio, SoundServer.pactl)` too.
    static var loopbackServer: Self { LoopbackServerTrait() }
}
