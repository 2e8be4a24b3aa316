import ArgumentParser
import Foundation
import ModemAudio
import ModemLink
import SwiftModem
import Synchronization

/// `modem devices`: lists the ALSA devices that `--device` accepts.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the sound devices (ALSA PCMs) to pass to --device.",
        discussion: helpText("""
        Prints two sections, playback devices (for 'modem tx --device NAME') and capture devices \
        (for 'modem rx --device NAME'), one per line: the name to pass, then what it is. 'default' \
        is the system's choice (PulseAudio or PipeWire when one runs, else the first sound card). \
        For each sound card, 'plughw:C,D' converts rate and format as needed and 'hw:C,D' is the raw \
        hardware.

        A machine without a sound card or sound server may list none, or only virtual devices such \
        as 'null' (which discards what is played and records silence). Plugin names that are no \
        device (rate converters and filters such as 'samplerate' or 'upmix'; 'jack' without a JACK \
        server running, 'oss' without /dev/dsp) are left out; --all lists every name alsa-lib gives.

        With --probe, each device that can both play and record is also probed for a device that \
        answers the channel protocol's handshake (see 'modem device'), at --baud (default 1200); \
        each answering device is printed with the name it gave. A probe takes a few seconds per \
        device when nothing answers.

        With --bluetooth, Bluetooth devices in range are listed too (the Communication API's search over both \
        channels): an inquiry of --seconds through --hci (or the kernel's inquiry on hci0), one line per \
        device with its address and name.

        Exit status: 0 when the list was read (even if it is empty); 1 when alsa-lib could not be \
        asked, or with --bluetooth when there is no Bluetooth; 3 with --probe when no device answered.
        """)
    )

    @Flag(help: "Probe each device for one that answers the channel protocol's handshake.") var probe = false
    @Flag(help: "List every PCM name alsa-lib gives, the converter plugins and absent servers' included.") var all = false
    @Option(parsing: .unconditional, help: ArgumentHelp("Baud rate of the probe (50...9600).", valueName: "N")) var baud: Double = 1200
    @Flag(help: "Also search for Bluetooth devices.") var bluetooth = false
    @OptionGroup var controller: HCIOptions
    @Option(parsing: .unconditional, help: ArgumentHelp("How long the Bluetooth inquiry runs (1...60 s).", valueName: "S")) var seconds: Double = 5

    func validate() throws {
        guard baud.isFinite, (50...9600).contains(baud) else { throw ValidationError("--baud must be 50...9600") }
        guard seconds.isFinite, (1...60).contains(seconds) else { throw ValidationError("--seconds must be 1...60") }
        if !bluetooth && controller.hci != nil { throw ValidationError("--hci applies to --bluetooth only") }
    }

    func run() async throws {
        try await reportingErrors {
            try await list()
            if bluetooth { try await searchBluetooth() }
        }
    }

    /// The Communication API's search, Bluetooth only (the sound devices were listed above).
    func searchBluetooth() async throws {
        var factory: HCITransportFactory?
        try controller.requireKernelBluetooth()   // without --hci: the kernel's line, exit 1, at once
        if let hci = controller.hci {
            let spec = try HCIOptions.parse(hci)
            factory = { () throws(BluetoothError) in try spec.open(capture: nil) }
        }
        let listener = SearchCollector()
        let code = CommunicationManagerBase.searchDevices(listener: listener, detectAudioDevice: false, detectBluetooth: true,
                                                          timeout: seconds, bluetooth: factory)
        switch code {
        case 0: break
        case -1:
            printError(controller.hci == nil
                ? "modem: no Bluetooth: this kernel has no Bluetooth support (or no adapter); use --hci tcp:HOST:PORT or --hci serial:DEVICE"
                : "modem: no Bluetooth controller at \(controller.hci!)")
            throw ExitCode(1)
        case -2:
            printError("modem: Bluetooth is not powered (the adapter is down or blocked)")
            throw ExitCode(1)
        default:
            printError("modem: the Bluetooth discovery could not start")
            throw ExitCode(1)
        }
        await listener.completed()
        try printOutput("")
        try printOutput("Bluetooth devices (modem bt connect --address ADDR):")
        let found = listener.devices.withLock { $0 }
        if found.isEmpty { try printOutput("  (none found)") }
        for device in found { try printOutput("  \(device.identifier)  \(device.name ?? "(no name)")") }
    }

    /// Prints the list (and the probe's findings).
    func list() async throws {
        let devices: [ALSADeviceInfo]
        do {
            devices = try ALSADevices.scan(all: all)
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
            if found.isEmpty {
                try printOutput("  (no device answered)")
                throw ExitCode(connectionFailedStatus)
            }
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

/// Collects what a device search finds; `completed()` returns once the search has ended.
private final class SearchCollector: DeviceSearchListener {
    private struct State {
        var complete = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    let devices = Mutex<[DeviceInfo]>([])
    private let state = Mutex(State())
    func discoverOneDevice(_ device: DeviceInfo) {
        devices.withLock { list in
            if let i = list.firstIndex(where: { $0.identifier == device.identifier }) { list[i] = device } else { list.append(device) }
        }
    }
    func discoverComplete() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.complete = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
    /// Waits (without holding a thread) until `discoverComplete` has been called.
    func completed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let complete = state.withLock { state -> Bool in
                if !state.complete { state.waiter = continuation }
                return state.complete
            }
            if complete { continuation.resume() }
        }
    }
}
