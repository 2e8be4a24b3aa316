import ArgumentParser
import ModemAudio
import ModemLink

/// `modem devices`: lists the ALSA devices that `--device` accepts.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the sound devices (ALSA PCMs) to pass to --device.",
        discussion: """
        Prints two sections, playback devices (for 'modem tx --device NAME') and capture devices \
        (for 'modem rx --device NAME'), one per line: the name to pass, then what it is. 'default' \
        is the system's choice (PulseAudio or PipeWire when one runs, else the first sound card). \
        For each sound card, 'plughw:C,D' converts rate and format as needed and 'hw:C,D' is the raw \
        hardware.

        A machine without a sound card or sound server may list none, or only virtual devices such \
        as 'null' (which discards what is played and records silence).

        With --probe, each device that can both play and record is also probed for a device that \
        answers the channel protocol's handshake (see 'modem device'), at --baud (default 1200); \
        each answering device is printed with the name it gave. A probe takes a few seconds per \
        device when nothing answers.

        Exit status: 0 when the list was read (even if it is empty), 1 when alsa-lib could not be \
        asked.
        """
    )

    @Flag(help: "Probe each device for one that answers the channel protocol's handshake.") var probe = false
    @Option(help: ArgumentHelp("Baud rate of the probe (50...9600).", valueName: "N")) var baud: Double = 1200

    func validate() throws {
        guard baud.isFinite, (50...9600).contains(baud) else { throw ValidationError("--baud must be 50...9600") }
    }

    func run() async throws {
        try await reportingErrors { try await list() }
    }

    /// Prints the list (and the probe's findings).
    func list() async throws {
        let devices: [ALSADeviceInfo]
        do {
            devices = try ALSADevices.scan()
        } catch {
            printError("modem: \(error)")
            throw ExitCode(1)
        }
        let playback = devices.filter(\.playback)
        let capture = devices.filter(\.capture)
        if devices.isEmpty {
            try printOutput("""
            No sound devices found: alsa-lib lists no PCM devices on this machine (no sound card, \
            and no sound server such as PulseAudio or PipeWire running).
            """)
            return
        }
        try printOutput(Self.section("Playback devices (modem tx --device NAME):", playback))
        try printOutput("")
        try printOutput(Self.section("Capture devices (modem rx --device NAME):", capture))
        if !devices.contains(where: { $0.name == "default" }) {
            try printOutput("")
            try printOutput("Note: no 'default' device is configured; pass one of the names above with --device.")
        }
        if probe {
            let candidates = devices.filter { $0.playback && $0.capture }.map(\.name)
            try printOutput("")
            try printOutput("Probing \(candidates.count) device(s) for the channel protocol at \(Int(baud)) baud:")
            let found = await AudioJackManager.searchDevices(
                candidates: candidates, configuration: LinkConfiguration(baudRate: baud, latencySeconds: 0.3),
                found: { info in try? printOutput("  \(info.identifier)  answers: \(info.name ?? "(no name)")") })
            if found.isEmpty { try printOutput("  (no device answered)") }
        }
    }

    /// A heading, then one "  name  description" line per device, names aligned.
    static func section(_ heading: String, _ devices: [ALSADeviceInfo]) -> String {
        guard !devices.isEmpty else { return heading + "\n  (none)" }
        let width = min(devices.map(\.name.count).max() ?? 0, 32)
        let lines = devices.map { device -> String in
            let pad = String(repeating: " ", count: max(1, width - device.name.count + 2))
            return device.description.isEmpty ? "  \(device.name)" : "  \(device.name)\(pad)\(device.description)"
        }
        return ([heading] + lines).joined(separator: "\n")
    }
}
