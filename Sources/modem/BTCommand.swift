#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import SwiftModem

/// `modem bt`: Bluetooth Classic (RFCOMM serial ports) on our own host stack or the kernel's BlueZ.
struct BTCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bt",
        abstract: "Bluetooth Classic: scan, a serial port (RFCOMM) to a device, a device emulator.",
        discussion: helpText("""
        With --hci the host stack is our own, talking HCI to a controller: \
        tcp:HOST:PORT (H4 over TCP: virtual controllers such as Bumble's, emulators), \
        serial:/dev/ttyUSB0[,BAUD] (an H4 UART controller, 115200 baud by default) or hciN (the \
        kernel's HCI user channel: needs root and the adapter down, not owned by BlueZ). Without \
        --hci the kernel's Bluetooth is used on adapter hci0, which BlueZ owns: its inquiry, its \
        L2CAP socket for SDP and its RFCOMM sockets (scan and connect; device mode needs --hci).

        Exit status: 0 done; 1 no controller or Bluetooth (a setup failure); 3 the connection \
        failed (no answer, no Serial Port service, refused); 4 the device disconnected first; \
        64 usage errors; 130 interrupted.
        """),
        subcommands: [BTScanCommand.self, BTConnectCommand.self, BTDeviceCommand.self]
    )
}

/// The controller options every Bluetooth command takes.
struct HCIOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The controller: tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN (default: the kernel's Bluetooth).",
                               valueName: "SPEC"))
    var hci: String?
    @Option(help: ArgumentHelp("Write the HCI traffic to FILE as pcap (Wireshark's Bluetooth H4 with direction, linktype 201).",
                               valueName: "FILE.pcap"))
    var capture: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Use ACL packets of at most N bytes (below the controller's own; for testing).", valueName: "N"))
    var aclMtu: Int?
    @Option(parsing: .unconditional, help: ArgumentHelp("Keep at most N ACL packets in the controller (below its own; for testing).", valueName: "N"))
    var aclCount: Int?

    func validate() throws {
        if let hci { _ = try Self.parse(hci) }
        if hci == nil && (capture != nil || aclMtu != nil || aclCount != nil) {
            throw ValidationError("--capture, --acl-mtu and --acl-count need --hci (our own host stack; the kernel's Bluetooth has its own)")
        }
        if let aclMtu { guard (27...1021).contains(aclMtu) else { throw ValidationError("--acl-mtu must be 27...1021") } }
        if let aclCount { guard (1...64).contains(aclCount) else { throw ValidationError("--acl-count must be 1...64") } }
    }

    static func parse(_ spec: String) throws -> HCITransportAddress {
        do {
            return try HCITransportAddress(parsing: spec)
        } catch {
            throw ValidationError("--hci \(spec): \(error)")
        }
    }

    /// The controller set-up for `role`, with the overrides.
    func gap(_ role: GAPConfiguration.Role) -> GAPConfiguration {
        var gap = GAPConfiguration(role: role)
        gap.aclMTUOverride = aclMtu
        gap.aclCountOverride = aclCount
        return gap
    }

    /// Without --hci, checks the kernel's Bluetooth (adapter hci0 there and up): one line naming
    /// the problem and exit 1 when it is not. With --hci, nothing.
    func requireKernelBluetooth() throws {
        guard hci == nil else { return }
        do {
            try BlueZ.adapter()
        } catch {
            printError("modem: \(error)")
            throw ExitCode(1)
        }
    }

    /// Opens the controller's transport (with the capture), or, without --hci, checks the kernel's
    /// Bluetooth: one line naming the problem and exit 1 when there is none (a command that has a
    /// kernel way checks ``requireKernelBluetooth()`` and takes it instead of calling this).
    func openTransport() throws -> any HCITransport {
        guard let hci else {
            do {
                try BlueZ.probe()
            } catch {
                printError("modem: \(error)")
                throw ExitCode(1)
            }
            printError("modem: the kernel has Bluetooth, but this command needs our own host stack: pass --hci hciN (the adapter must be down and not used by BlueZ) or --hci tcp:HOST:PORT")
            throw ExitCode(1)
        }
        let address = try Self.parse(hci)
        var pcap: PcapWriter?
        if let capture {
            do { pcap = try PcapWriter(path: capture) } catch {
                throw UsageError("--capture \(capture): \(error)")
            }
        }
        do {
            return try address.open(capture: pcap)
        } catch {
            printError("modem: \(error)")
            throw ExitCode(1)
        }
    }
}

/// `modem bt scan`.
struct BTScanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Find Bluetooth devices in range: one line per device, its address and name.",
        discussion: helpText("""
        Runs an inquiry for --seconds, then asks each device that gave no name for it. Prints \
        'ADDRESS  NAME' per device (the name is '(no name)' when it gave none). Exit status 0 even \
        when nothing was found; 1 when there is no controller.
        Example: modem bt scan --hci tcp:127.0.0.1:9000 --seconds 3
        """)
    )
    @OptionGroup var controller: HCIOptions
    @Option(parsing: .unconditional, help: ArgumentHelp("How long the inquiry runs (1...60 s).", valueName: "S")) var seconds: Double = 5

    func validate() throws {
        guard seconds.isFinite, (1...60).contains(seconds) else { throw ValidationError("--seconds must be 1...60") }
    }

    func run() throws {
        installStopHandlers()
        let devices: [DiscoveredDevice]
        do {
            if controller.hci == nil {
                try controller.requireKernelBluetooth()
                devices = try BlueZ.scan(seconds: seconds, isInterrupted: { isStopRequested })
            } else {
                let transport = try controller.openTransport()
                devices = try BluetoothScan.run(transport: transport, seconds: seconds, gap: controller.gap(.central),
                                                isInterrupted: { isStopRequested })
            }
        } catch let error as BluetoothError {
            printError("modem: \(error)")
            throw ExitCode(1)
        }
        for device in devices {
            try printOutput("\(device.address)  \(device.name ?? "(no name)")")
        }
        if isStopRequested { throw ExitCode(interruptedStatus) }
    }
}

/// `modem bt connect`.
struct BTConnectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "A serial port over Bluetooth: standard input to the device, its bytes to standard output.",
        discussion: helpText("""
        Connects to --address, finds its Serial Port service by SDP (unless --channel names the \
        RFCOMM channel) and opens RFCOMM. Standard input goes to the device; what the device sends \
        goes to standard output as it arrives. After standard input ends (and all of it was sent) \
        the command waits until --wait seconds pass with nothing arriving, disconnects and exits 0. \
        Without --hci the kernel does the connection (SDP over its L2CAP socket, its RFCOMM socket). \
        If the device disconnects first (or grants no RFCOMM credits for 10 s while data waits), every \
        byte that arrived has been written; the reason is named on standard error and the exit status \
        is 4. Status 3: the connection failed. Status 1: set-up failed, or the controller failed (its \
        transport closed), again with every byte that arrived written.
        Example: modem bt connect --hci tcp:127.0.0.1:9000 --address 00:1B:DC:00:00:0B < request.bin > reply.bin
        """)
    )
    @OptionGroup var controller: HCIOptions
    @Option(help: ArgumentHelp("The device's address.", valueName: "ADDR")) var address: String
    @Option(parsing: .unconditional, help: ArgumentHelp("Its RFCOMM server channel (1...30; default: from SDP).", valueName: "N")) var channel: Int?
    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds of silence to wait for after standard input ended (0...3600).", valueName: "S"))
    var wait: Double = 2

    func validate() throws {
        guard BDAddress(address) != nil else { throw ValidationError("--address \(address): not a Bluetooth address (like 00:1B:DC:00:00:0B)") }
        if let channel { guard (1...30).contains(channel) else { throw ValidationError("--channel must be 1...30") } }
        guard wait.isFinite, (0...3600).contains(wait) else { throw ValidationError("--wait must be 0...3600 seconds") }
    }

    func run() throws {
        installStopHandlers()
        let device = BDAddress(address)!
        let outcome: SerialPortBridge.Outcome
        if controller.hci == nil {
            try controller.requireKernelBluetooth()
            let stream: BlueZRFCOMMStream
            do {
                stream = try BlueZSerialBridge.connect(to: device, channel: channel.map { UInt8($0) })
            } catch {
                if isStopRequested {
                    printError("modem: interrupted")
                    throw ExitCode(interruptedStatus)
                }
                switch error {
                case .noBluetooth, .notPowered:
                    printError("modem: \(error)")
                    throw ExitCode(1)
                default:
                    printError("modem: cannot connect to \(address): \(error)")
                    throw ExitCode(connectionFailedStatus)
                }
            }
            outcome = BlueZSerialBridge.run(stream: stream, input: 0, output: 1, quietSeconds: wait,
                                            isInterrupted: { isStopRequested })
        } else {
            let transport = try controller.openTransport()
            outcome = SerialPortBridge.run(transport: transport, address: device, channel: channel.map { UInt8($0) },
                                           input: 0, output: 1, quietSeconds: wait, gap: controller.gap(.central),
                                           isInterrupted: { isStopRequested })
        }
        switch outcome {
        case .finished: return
        case .deviceDisconnected(let reason):
            printError("modem: \(reason)")
            throw ExitCode(connectionLostStatus)
        case .openFailed(let reason):
            printError("modem: cannot connect to \(address): \(reason)")
            throw ExitCode(connectionFailedStatus)
        case .controllerFailed(let reason):
            printError("modem: the controller failed: \(reason)")
            throw ExitCode(1)
        case .outputFailed(let reason):
            printError("modem: standard output: write failed: \(reason)")
            throw ExitCode(1)
        case .interrupted:
            printError("modem: interrupted")
            throw ExitCode(interruptedStatus)
        }
    }
}

/// `modem bt device`.
struct BTDeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "The channel protocol's device emulator on Bluetooth RFCOMM (runs until Ctrl-C).",
        discussion: helpText("""
        Sets the controller up as a discoverable, connectable device named --name, publishes a \
        Serial Port record (SDP) for RFCOMM channel --channel and accepts connections. Each phone \
        gets a device of the channel protocol following the phone's mode: master-slave requests are \
        echoed back as replies, duplex messages are echoed back as the device's own messages. Logs \
        go to standard error. Needs --hci (BlueZ device mode would need bluetoothd).
        Example: modem bt device --hci tcp:127.0.0.1:9001 --name "Bars Device"
        """)
    )
    @OptionGroup var controller: HCIOptions
    @Option(help: ArgumentHelp("The Bluetooth name (and the handshake's).", valueName: "NAME")) var name = "SwiftModem Device"
    @Option(help: ArgumentHelp("The RFCOMM server channel to publish (1...30).", valueName: "N")) var channel = 1

    func validate() throws {
        guard (1...30).contains(channel) else { throw ValidationError("--channel must be 1...30") }
        guard !name.isEmpty, name.utf8.count <= 200 else { throw ValidationError("--name must be 1...200 bytes") }
    }

    func run() throws {
        installStopHandlers()
        let transport = try controller.openTransport()
        let emulator = BluetoothDeviceEmulator(transport: transport, name: name, channel: UInt8(channel),
                                               gap: controller.gap(.central), log: { printError("modem: \($0)") })
        emulator.start()
        let watcher = onStop { emulator.stop() }
        defer { watcher.cancel() }
        if let failure = emulator.wait() {
            printError("modem: \(failure)")
            throw ExitCode(1)
        }
        if isStopRequested { throw ExitCode(interruptedStatus) }
    }
}
