import ArgumentParser
import ModemLink
import SwiftModem

/// Line options shared by `tx` and `rx`.
struct LineOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Baud rate; alone it picks minimodem's default tones for that rate (1200 -> 1200/2200 Hz, 300 -> 1270/1070 Hz).", valueName: "N"))
    var baud: Double?

    @Option(name: .long, help: ArgumentHelp("A standard tone plan: bell103, bell103-answer, bell202, v21, v21-answer, v23, v23-back, rtty.", valueName: "P"))
    var profile: String?

    @Option(name: .long, help: ArgumentHelp("Mark (1, idle) frequency, overrides the profile.", valueName: "HZ"))
    var mark: Double?

    @Option(name: .long, help: ArgumentHelp("Space (0, start bit) frequency, overrides the profile.", valueName: "HZ"))
    var space: Double?

    @Option(name: .long, help: ArgumentHelp("Character framing: data bits 5-8, parity N/E/O/M/S, stop bits 1/1.5/2 (8N1, 7E1, 8N2, 5N1.5), or 'baudot'. Default: 8N1 (baudot for rtty).", valueName: "F"))
    var framing: String?

    func settings() throws -> ModemSettings {
        if baud == nil, profile == nil {
            throw ValidationError("give --baud N or --profile P (e.g. --baud 1200, --profile bell103)")
        }
        do {
            return try ModemSettings(profile: profile, baudRate: baud, mark: mark, space: space, framing: framing)
        } catch let e as ModemSettingsError {
            throw ValidationError(e.description)
        }
    }
}

/// Channel-protocol options shared by `link-test` and `device`.
struct LinkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("master-slave or duplex.", valueName: "MODE")) var mode: String = "master-slave"
    @Option(help: ArgumentHelp("Line rate in baud (50...9600; Bell 202 tones at 1200).", valueName: "N")) var baud: Double = 1200
    @Option(help: ArgumentHelp("Sample rate in Hz.", valueName: "HZ")) var sampleRate: Int = 48000

    func validate() throws {
        guard CommunicationMode(rawValue: mode) != nil else { throw ValidationError("--mode '\(mode)' is not master-slave or duplex") }
        guard baud.isFinite, (50...9600).contains(baud) else { throw ValidationError("--baud must be 50...9600") }
        guard (8000...192_000).contains(sampleRate) else { throw ValidationError("--sample-rate must be 8000...192000 Hz") }
    }

    /// The protocol parameters (after ``validate()``).
    func configuration(framePayload: Int = 1024, latencySeconds: Double) -> LinkConfiguration {
        LinkConfiguration(mode: CommunicationMode(rawValue: mode)!, baudRate: baud, framePayload: framePayload,
                          latencySeconds: latencySeconds)
    }
}
