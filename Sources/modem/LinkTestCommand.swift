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
        discussion: """
        Master-slave: each exchange sends SIZE random bytes and the emulator replies with them.
        Duplex: in each exchange both sides send SIZE random bytes at once.
        --channel loopback is the in-memory channel (two one-way audio paths, as on an audio-jack
        cable) with optional noise, frame loss and clock drift; times are channel time, so runs are
        fast and the same --seed gives the same run. --channel alsa runs both ends in real time on
        one sound device (each end plays into it and records from it: a shared half-duplex medium).
        The SNR is full-band (0 to half the sample rate, 48 kHz by default) with white noise.
        Examples:
          modem link-test --mode master-slave --count 200 --size 64
          modem link-test --mode duplex --count 300 --size 200 --snr 0 --loss 0.2 --drift 500 --json
          modem link-test --channel alsa --device default --count 5 --size 64
        """
    )

    enum Channel: String, ExpressibleByArgument, CaseIterable { case loopback, alsa }

    @Option(help: "The medium: loopback (in memory) or alsa (a sound device).") var channel: Channel = .loopback
    @Option(help: ArgumentHelp("ALSA device for --channel alsa (both ends play and record on it).", valueName: "NAME"))
    var device: String = "default"
    @OptionGroup var link: LinkOptions
    @Option(help: ArgumentHelp("Exchanges to run (0: only open, handshake and close).", valueName: "N")) var count: Int = 10
    @Option(help: ArgumentHelp("Bytes sent each way per exchange (1...1048576).", valueName: "BYTES")) var size: Int = 64
    @Option(parsing: .unconditional, help: ArgumentHelp("Full-band signal-to-noise ratio in dB (loopback).", valueName: "DB"))
    var snr: Double?
    @Option(help: ArgumentHelp("Probability that a frame is lost, 0...1 (loopback).", valueName: "P")) var loss: Double = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Device clock error in ppm, ±10000 (loopback).", valueName: "PPM"))
    var drift: Double = 0
    @Option(help: ArgumentHelp("Seed of payloads, noise and loss.", valueName: "S")) var seed: UInt64 = 1
    @Option(help: ArgumentHelp("Exchange timeout in seconds (default: from the size and baud rate).", valueName: "SECONDS"))
    var timeout: Double?
    @Option(help: ArgumentHelp("Payload bytes per frame (\(Self.framePayloads.lowerBound)...\(Self.framePayloads.upperBound)).", valueName: "BYTES")) var framePayload: Int = 1024
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
        if channel == .alsa && (snr != nil || loss != 0 || drift != 0) {
            throw ValidationError("--snr, --loss and --drift apply to --channel loopback only")
        }
    }

    func run() async throws {
        _ = try await reportingErrors {
            installStopHandlers()
            let alsa = channel == .alsa
            let config = link.configuration(framePayload: framePayload, latencySeconds: alsa ? 0.3 : 0)
            let medium: any LinkMedium
            if alsa {
                medium = try ALSAMedium(device: device, sampleRate: link.sampleRate)
            } else {
                medium = LoopbackMedium(impairments: LinkImpairments(snrDB: snr, frameLoss: loss, clockDriftPPM: drift, seed: seed),
                                        sampleRate: link.sampleRate)
            }
            let options = LinkTestOptions(configuration: config, count: count, size: size, timeout: timeout, seed: seed)
            let test = try LinkTest(options: options, medium: medium)
            let showProgress = stderrIsTerminal
            let report = try test.run(shouldStop: { stopRequested.load(ordering: .relaxed) }, progress: { r in
                if showProgress {
                    printError("\u{1B}[2K\r\(r.exchanges)/\(count) exchanges: \(r.completed) completed, \(r.timedOut) timed out, \(r.failed) failed\u{1B}[1A")
                }
            })
            if showProgress { printError("\u{1B}[2K") }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                try printOutput(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                try printOutput("""
                \(link.mode.rawValue) over \(channel.rawValue) at \(Int(link.baud)) baud, \(size)-byte exchanges (timeout \(DecimalFormat.fixed(options.effectiveTimeout, 1)) s)
                open: \(report.openCode == 0 ? "ok" : "failed (\(report.openCode))")
                exchanges \(report.exchanges): completed \(report.completed), timed out \(report.timedOut), failed \(report.failed)
                delivered corrupt \(report.corruptDelivered), duplicated \(report.duplicatesDelivered)
                mean round trip \(DecimalFormat.fixed(report.meanRoundTripMs, 0)) ms, goodput \(DecimalFormat.fixed(report.goodputBps, 0)) bit/s over \(DecimalFormat.fixed(report.channelSeconds, 1)) s of channel time
                frames sent \(report.framesSent), retransmitted \(report.retransmissions), damaged \(report.framesDamaged), lost by the channel \(report.framesLost), duplicates suppressed \(report.duplicateFramesSuppressed)
                """)
            }
            if stopRequested.load(ordering: .relaxed) { throw ExitCode(interruptedStatus) }
            // A test in which the line never opened, or nothing got through, failed.
            if report.openCode != 0 || (count > 0 && report.completed == 0) { throw ExitCode(3) }
        }
    }
}
