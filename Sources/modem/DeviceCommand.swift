import ArgumentParser
import ModemAudio
import ModemDSP
import ModemLink
#if canImport(Glibc)
import Glibc
#endif

struct DeviceFailure: Error, CustomStringConvertible { var description: String }

/// `modem device`: the device emulator on a sound device.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Run the device emulator on a sound device: answer the handshake and echo each request.",
        discussion: helpText("""
        The other end of the Communication API (see 'modem link-test'): it plays on and records from
        --device until Ctrl-C, answers the phone's boot signal, echoes each request (master-slave),
        confirms cancel and close signals, and logs what happens on standard error.
        Use --shared when the phone plays into the same line this emulator records (one sound server
        sink for both ends): transmissions then wait for a quiet line.
        Example:
          modem device --device default --mode master-slave --baud 1200
        """)
    )

    @Option(help: ArgumentHelp("ALSA device to play on and record from.", valueName: "NAME")) var device: String = "default"
    @OptionGroup var link: LinkOptions
    @Option(help: ArgumentHelp("Name given in the handshake.", valueName: "TEXT")) var name: String = "SwiftModem device emulator"
    @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this many seconds (default: run until Ctrl-C).", valueName: "SECONDS")) var seconds: Double?
    @Flag(help: "The line is shared with the phone (each end hears itself).") var shared = false

    func validate() throws {
        if let seconds {
            guard seconds > 0, seconds <= maximumSeconds else { throw ValidationError("--seconds must be 0 < s <= \(Int(maximumSeconds)) (a year)") }
        }
    }

    func run() async throws {
        _ = try await reportingErrors {
            installStopHandlers()
            let config = link.configuration(latencySeconds: 0.3)
            let capture = try ALSACapture(device: device, sampleRate: link.sampleRate)
            let playback = try ALSAPlayback(device: device, sampleRate: link.sampleRate)
            let emulator = try DeviceEmulator(configuration: config, name: name, sharedMedium: shared, sink: playback, source: capture)
            emulator.start()
            printError("modem device: listening on \(device) (\(link.mode.rawValue), \(Int(link.baud)) baud); Ctrl-C stops")
            // Whichever comes first: SIGINT/SIGTERM, --seconds, or the audio failing (its error event).
            enum End: Sendable { case stopped, timeUp, audioFailed }
            let end = await withTaskGroup(of: End.self) { group in
                group.addTask { await untilStopRequested(); return .stopped }
                if let seconds { group.addTask { try? await Task.sleep(for: .seconds(seconds)); return .timeUp } }
                group.addTask {
                    for await e in emulator.events {
                        switch e {
                        case .received(let m, let d): printError("request \(m): \(d.count) bytes, echoed")
                        case .cancelled(let m): printError("exchange \(m) cancelled by the phone")
                        case .closed: printError("close signal: powered off")
                        case .error(let c, let msg):
                            printError("error \(c.rawValue): \(msg)")
                            if c == .playbackWrite || c == .captureRead { return .audioFailed }
                        case .timeout(let m): printError("reply \(m) was not acknowledged")
                        default: break
                        }
                    }
                    return .stopped
                }
                let first = await group.next() ?? .stopped
                group.cancelAll()
                return first
            }
            emulator.stop()
            if end == .audioFailed { throw DeviceFailure(description: "the audio on \(device) failed; see the error above") }
            printError("modem device: \(emulator.requestsHandled) requests handled")
        }
    }
}
