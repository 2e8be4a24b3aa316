import Foundation
import ModemAudio
import Testing

/// A private PulseAudio server with a null sink, started by `scripts/audio-loop.sh` around a suite,
/// so that alsa-lib's `default` device plays into the sink and records its monitor.
struct LoopbackServer: Sendable {
    /// `unix:<runtime folder>/native`.
    let pulseServer: String

    /// The running server, inside a suite marked with ``LoopbackServerTrait``; `nil` when none
    /// could be started (then ``unavailableReason`` says why).
    @TaskLocal static var current: LoopbackServer?
    @TaskLocal static var unavailableReason = "the suite is not marked .loopbackServer"

    /// `scripts/audio-loop.sh` of this checkout, or `$AUDIO_LOOP_SCRIPT` when set.
    static var scriptPath: String {
        if let path = ProcessInfo.processInfo.environment["AUDIO_LOOP_SCRIPT"], !path.isEmpty { return path }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/audio-loop.sh").path
    }

    /// Runs the script; returns its exit status and standard output.
    static func runScript(_ command: String, runtimeFolder: String) -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [scriptPath, command]
        var environment = ProcessInfo.processInfo.environment
        environment["AUDIO_LOOP_DIR"] = runtimeFolder
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (-1, "", "\(error)") }
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output, errors)
    }

    /// Skips the calling test, visibly, when no server runs.
    static func require() throws -> LoopbackServer {
        if let current { return current }
        print("SKIPPED: no loopback sound server: \(unavailableReason)")
        try Test.cancel("no loopback sound server: \(unavailableReason)")
    }
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
        let started = LoopbackServer.runScript("start", runtimeFolder: folder)
        guard started.status == 0,
              let line = started.output.split(separator: "\n").first(where: { $0.hasPrefix("export PULSE_SERVER=") })
        else {
            _ = LoopbackServer.runScript("stop", runtimeFolder: folder)
            let why = started.errors.trimmingCharacters(in: .whitespacesAndNewlines)
            let reason = "\(LoopbackServer.scriptPath) start failed (status \(started.status))\(why.isEmpty ? "" : ": " + why)"
            try await LoopbackServer.$unavailableReason.withValue(reason) { try await function() }
            return
        }
        let server = LoopbackServer(pulseServer: String(line.dropFirst("export PULSE_SERVER=".count)))
        let previous = getenv("PULSE_SERVER").map { String(cString: $0) }
        setenv("PULSE_SERVER", server.pulseServer, 1)
        ALSADevices.reloadConfiguration()
        defer {
            if let previous { setenv("PULSE_SERVER", previous, 1) } else { unsetenv("PULSE_SERVER") }
            ALSADevices.reloadConfiguration()
            _ = LoopbackServer.runScript("stop", runtimeFolder: folder)
        }
        try await LoopbackServer.$current.withValue(server) { try await function() }
    }
}

extension Trait where Self == LoopbackServerTrait {
    /// Runs the suite with a private PulseAudio loopback server (see ``LoopbackServerTrait``).
    static var loopbackServer: Self { LoopbackServerTrait() }
}
