import ArgumentParser
import Foundation
import ModemAudio
import ModemDSP
import ModemLink
import SwiftModem
#if canImport(Glibc)
import Glibc
#endif

struct LinkTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "link-test",
        abstract: "Run a phone against a device emulator and count what really arrives.",
        discussion: helpText("""
        Master-slave: each exchange sends SIZE random bytes and the emulator replies with them.
        Duplex: in each exchange both sides send SIZE random bytes at once.
        --channel loopback is the in-memory channel (two one-way audio paths, as on an audio-jack
        cable) with optional noise, frame loss and clock drift; times are channel time, so runs are
        fast and the same --seed gives the same run. --channel alsa runs both ends in real time on
        one sound device (each end plays into it and records from it: a shared half-duplex medium).
        The SNR is full-band (0 to half the sample rate, 48 kHz by default) with white noise, except on
        the hf lines, where it is SNR3k (the noise in 3 kHz), as HF channel simulators state it.
        --profile ofdm and hf adapt the rate to the line: the report names the configuration the phone
        sent with at the end and the goodput as a share of its net rate.
        Examples:
          modem link-test --mode master-slave --count 200 --size 64
          modem link-test --mode duplex --count 300 --size 200 --snr 0 --loss 0.2 --drift 500 --json
          modem link-test --channel alsa --device default --count 5 --size 64
          modem link-test --profile hf --line hf-fading --mode duplex --count 4 --size 2000
          modem link-test --channel bluetooth --hci tcp:127.0.0.1:9000 --address 00:1B:DC:00:00:0B --mode duplex --count 200
        --channel bluetooth runs the phone here and talks to a device elsewhere ('modem bt device') over
        RFCOMM; the device echoes: master-slave exchanges complete when the reply equals the request,
        duplex ones when the message was acknowledged and its echo came back. Times are real.
        Exit status: 0 when the line opened and an exchange completed (or --count 0); 1 an error here
        (a sound device, no Bluetooth); 3 the line never opened or no exchange completed; 64 usage;
        130/143 interrupted.
        """)
    )

    enum Channel: String, ExpressibleByArgument, CaseIterable { case loopback, alsa, bluetooth }

    @Option(help: "The medium: loopback (in memory), alsa (a sound device) or bluetooth (RFCOMM to a device).") var channel: Channel = .loopback
    @OptionGroup var controller: HCIOptions
    @Option(help: ArgumentHelp("The Bluetooth device's address for --channel bluetooth.", valueName: "ADDR")) var address: String?
    @Option(help: ArgumentHelp("ALSA device for --channel alsa (both ends play and record on it).", valueName: "NAME"))
    var device: String = "default"
    @OptionGroup var link: LinkOptions
    @Option(parsing: .unconditional, help: ArgumentHelp("Exchanges to run (0: only open, handshake and close).", valueName: "N")) var count: Int = 10
    @Option(parsing: .unconditional, help: ArgumentHelp("Bytes sent each way per exchange (1...1048576).", valueName: "BYTES")) var size: Int = 64
    @Option(parsing: .unconditional, help: ArgumentHelp("Full-band signal-to-noise ratio in dB (loopback).", valueName: "DB"))
    var snr: Double?
    @Option(parsing: .unconditional, help: ArgumentHelp("Probability that a frame is lost, 0...1 (loopback).", valueName: "P")) var loss: Double = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Device clock error in ppm, ±10000 (loopback).", valueName: "PPM"))
    var drift: Double = 0
    @Option(help: ArgumentHelp("A simulated line for loopback: cable (SNR 40 dB, 100 ppm, 20-20,000 Hz), speaker (SNR 24 dB, 250-9000 Hz, a 1.5 ms echo, 300 ppm), or for --profile hf two SSB radios: hf (SNR3k 15 dB, tuned 25 Hz off) or hf-fading (the same with two paths 2 ms apart, 1 Hz Doppler spread); --snr, --loss and --drift override its values (--snr is SNR3k on the hf lines).", valueName: "LINE"))
    var line: LineArgument?
    @Option(parsing: .unconditional, help: ArgumentHelp("Seed of payloads, noise and loss.", valueName: "S")) var seed: UInt64 = 1
    @Option(parsing: .unconditional, help: ArgumentHelp("Exchange timeout in seconds (default: from the size and baud rate).", valueName: "SECONDS"))
    var timeout: Double?
    @Option(parsing: .unconditional, help: ArgumentHelp("Payload bytes per frame (\(Self.framePayloads.lowerBound)...\(Self.framePayloads.upperBound)).", valueName: "BYTES")) var framePayload: Int = 1024
    @Flag(help: "Print one JSON line with the counts instead of the text summary.") var json = false

    /// Frame payloads accepted: a message of up to 1 MiB must fit in fewer than 65535 fragments
    /// (the protocol's 16-bit fragment count), so at least 17 bytes; at most ``LinkFrame/maximumPayload``.
    static let framePayloads = ((1 << 20) / 65534 + 1)...2048

    func validate() throws {
        guard count >= 0 && count <= 1_000_000 else { throw ValidationError("--count must be 0...1000000") }
        guard (1...(1 << 20)).contains(size) else { throw ValidationError("--size must be 1...1048576 bytes") }
        if let snr { guard snr.isFinite, (-40...100).contains(snr) else { throw ValidationError("--snr must be -40...100 dB") } }
        guard (0...1).contains(loss) else { throw ValidationError("--loss must be 0...1") }
        guard abs(drift) <= 10000 else { throw ValidationError("--drift must be within ±10000 ppm") }
        if let timeout {
            guard timeout.isFinite, timeout > 0, timeout <= 86400 else { throw ValidationError("--timeout must be 0 < s <= 86400 seconds") }
        }
        guard Self.framePayloads.contains(framePayload) else {
            throw ValidationError("--frame-payload must be \(Self.framePayloads.lowerBound)...\(Self.framePayloads.upperBound) bytes (a 1 MiB message must fit in fewer than 65535 frames)")
        }
        if channel != .loopback && (snr != nil || loss != 0 || drift != 0 || line != nil) {
            throw ValidationError("--snr, --loss, --drift and --line apply to --channel loopback only")
        }
        if channel == .bluetooth && link.profile != .afsk {
            throw ValidationError("--profile \(link.profile.rawValue) is a modem for sound; --channel bluetooth carries the frames over RFCOMM")
        }
        if (line == .hf || line == .hfFading) && link.profile != .hf {
            throw ValidationError("--line \(line!.rawValue) is a radio's audio path, for --profile hf")
        }
        if channel == .bluetooth {
            guard let address else { throw ValidationError("--channel bluetooth needs --address ADDR") }
            guard BDAddress(address) != nil else { throw ValidationError("--address \(address): not a Bluetooth address (like 00:1B:DC:00:00:0B)") }
        } else if address != nil || controller.hci != nil {
            throw ValidationError("--address and --hci apply to --channel bluetooth only")
        }
    }

    func run() async throws {
        _ = try await reportingErrors {
            installStopHandlers()
            if channel == .bluetooth { return try await runBluetooth() }
            let alsa = channel == .alsa
            let config = link.configuration(framePayload: framePayload, latencySeconds: alsa ? 0.3 : 0)
            let medium: any LinkMedium
            if alsa {
                medium = try ALSAMedium(device: device, sampleRate: link.sampleRate)
            } else {
                var impairments = line?.impairments(seed: seed, snr: snr) ?? LinkImpairments(snrDB: snr, seed: seed)
                if drift != 0 { impairments.clockDriftPPM = drift }
                impairments.frameLoss = loss
                medium = LoopbackMedium(impairments: impairments, sampleRate: link.sampleRate, signalAmplitude: link.signalAmplitude)
            }
            let options = LinkTestOptions(configuration: config, count: count, size: size, timeout: timeout, seed: seed)
            let test = try LinkTest(options: options, medium: medium)
            let report = try test.run(shouldStop: { isStopRequested }, progress: showProgress)
            endProgress()
            if json {
                try printJSON(report)
            } else {
                try printOutput("""
                \(link.mode.rawValue) over \(channel.rawValue) \(link.profile != .afsk ? "with \(link.profile == .ofdm ? "OFDM" : "HF") (the phone sent with \(test.phone.modem.sendDescription) at the end)" : "at \(Int(link.baud)) baud"), \(size)-byte exchanges (timeout \(DecimalFormat.fixed(options.effectiveTimeout, 1)) s)
                open: \(report.openCode == 0 ? "ok" : "failed (\(report.openCode): \(Self.openFailure(report.openCode)))")
                exchanges \(report.exchanges): completed \(report.completed), timed out \(report.timedOut), failed \(report.failed)
                delivered corrupt \(report.corruptDelivered), duplicated \(report.duplicatesDelivered)
                mean round trip \(DecimalFormat.fixed(report.meanRoundTripMs, 0)) ms, goodput \(DecimalFormat.fixed(report.goodputBps, 0)) bit/s over \(DecimalFormat.fixed(report.channelSeconds, 1)) s of channel time\(link.profile == .afsk ? "" : " (\(DecimalFormat.fixed(100 * report.goodputBps / test.phone.modem.sendBitRate, 0)) % of the phone's last line rate, \(DecimalFormat.fixed(test.phone.modem.sendBitRate, 0)) bit/s; deliveries both ways count)")
                frames sent \(report.framesSent), retransmitted \(report.retransmissions), damaged \(report.framesDamaged), coded \(report.framesCoded), lost by the channel \(report.framesLost), duplicates suppressed \(report.duplicateFramesSuppressed)
                """)
            }
            if isStopRequested { throw ExitCode(interruptedStatus) }
            // A test in which the line never opened, or nothing got through, failed.
            if report.openCode != 0 || (count > 0 && report.completed == 0) { throw ExitCode(3) }
        }
    }

    /// Why the open failed, for the summary line: the Communication API's return code in words.
    static func openFailure(_ code: Int32) -> String {
        switch code {
        case ReturnCode.busyOrOutput: "the output could not be opened"
        case ReturnCode.notOpenedOrInput: "the input could not be opened"
        case ReturnCode.handshakeFailedOrCancelling: "the handshake failed: another protocol or version answered"
        case ReturnCode.noDevice: "no device answered the handshake in 3 tries"
        default: "return code \(code)"
        }
    }

    /// Draws the running counts on a terminal's standard error (nothing elsewhere).
    private func showProgress(_ r: LinkTestReport) {
        guard stderrIsTerminal else { return }
        printError("\u{1B}[2K\r\(r.exchanges)/\(count) exchanges: \(r.completed) completed, \(r.timedOut) timed out, \(r.failed) failed\u{1B}[1A")
    }

    /// Clears the progress line.
    private func endProgress() {
        if stderrIsTerminal { printError("\u{1B}[2K") }
    }

    private func printJSON(_ report: LinkTestReport) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try printOutput(String(decoding: try encoder.encode(report), as: UTF8.self))
    }

    /// `--channel bluetooth`: the phone here, the device at --address (over our host stack or BlueZ).
    private func runBluetooth() async throws {
        let config = LinkConfiguration.byteStream(mode: link.mode.mode)
        let transport: HCITransportFactory?
        if let hci = controller.hci {
            let spec = try HCIOptions.parse(hci)
            var writer: PcapWriter?
            if let capture = controller.capture {
                do { writer = try PcapWriter(path: capture) } catch { throw UsageError("--capture \(capture): \(error)") }
            }
            let pcap = writer
            transport = { () throws(BluetoothError) in try spec.open(capture: pcap) }
        } else {
            try controller.requireKernelBluetooth()   // the kernel's line, exit 1, at once; then its RFCOMM socket
            transport = nil
        }
        let manager = BluetoothManager(configuration: config, gap: controller.gap(.central), transport: transport)
        do throws(LinkError) {
            try await manager.open(identifier: address!)
        } catch {
            printError("modem: cannot open \(address!): \(error)")
            throw ExitCode(error.returnCode == -4 || error.returnCode == -5 ? 1 : 3)
        }
        let perExchange = timeout ?? 10
        let test = RemoteLinkTest(options: RemoteLinkTestOptions(mode: link.mode.mode, count: count, size: size,
                                                                 timeout: .milliseconds(Int64(perExchange * 1000)), seed: seed))
        let report = await test.run(on: manager, shouldStop: { isStopRequested }, progress: showProgress)
        endProgress()
        if json {
            try printJSON(report)
        } else {
            try printOutput("""
            \(link.mode.rawValue) over Bluetooth RFCOMM to \(address!) (\(manager.deviceName ?? "no name")), \(size)-byte exchanges
            exchanges \(report.exchanges): completed \(report.completed), timed out \(report.timedOut), failed \(report.failed)
            delivered corrupt \(report.corruptDelivered), duplicated \(report.duplicatesDelivered)
            mean round trip \(DecimalFormat.fixed(report.meanRoundTripMs, 1)) ms, goodput \(DecimalFormat.fixed(report.goodputBps, 0)) bit/s over \(DecimalFormat.fixed(report.channelSeconds, 1)) s
            """)
        }
        if isStopRequested { throw ExitCode(interruptedStatus) }
        if count > 0 && report.completed == 0 { throw ExitCode(3) }
    }
}
