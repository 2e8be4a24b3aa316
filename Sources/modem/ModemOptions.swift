import ArgumentParser
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
