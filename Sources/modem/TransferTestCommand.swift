import ArgumentParser
import Foundation
import ModemLink
import ModemMessagingHarness
import Synchronization
import SwiftModem

struct TransferTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer-test",
        abstract: "Move a seeded random payload between two messaging ends over the in-memory channel.",
        discussion: helpText("""
        Both ends run in this process over the channel protocol's duplex messages on the in-memory
        channel (two one-way audio paths), in channel time like link-test: the payload goes in blocks
        of 16,256 bytes (one link message each), every block checked by its SHA-256; a new session
        resumes from what the receiver holds. --cuts N mutes both lines N times mid-transfer (at
        delivered fractions i/(N+1), for 3 x the 30 s link keepalive), so both sessions end
        END_LOST_NET and the sender reconnects. Counts are taken from what the harness gave the sender
        and what the receiver wrote; --json prints them as one line, the last on standard output.
        The turnarounds are measured on the line: from the last sample of one end's frames to the first
        sample of the other end's answer, in channel time (count, min, median, max; answers that open a
        transmission apart from those in one still open).
        A transfer that verifies no new block for --give-up seconds of channel time (default: 10 x the
        keepalive plus 5 x one block's air time: about 900 s at 1200 baud with --fec off, 1700 s otherwise,
        for coded frames take 2.3 times as long) is given up: the counts so far
        are printed ("endedEarly":"gave-up") and the exit status is 1. SIGINT or SIGTERM ends the
        test the same way ("endedEarly":"interrupted"), with status 128 + the signal's number.
        --profile ofdm runs the link over the OFDM modem (2048-byte frames, a window of 32, two messages
        in flight, blocks of 63,000 bytes): both ends measure the line from every transmission's training and agree on the
        fastest configuration with margin, falling back when blocks are lost. --line cable or speaker
        simulates a sound-card cable (SNR 40 dB, 100 ppm, 20-20,000 Hz) or a speaker and a microphone
        (SNR 24 dB, 250-9000 Hz, a 1.5 ms echo at half amplitude, 300 ppm); --snr overrides its SNR.
        --profile hf runs the link over the HF modem for SSB radios (1024-byte frames, a window of 16,
        blocks of 16,256 bytes), its rate adapted to the line as with ofdm, over --line hf (two radios:
        300-2600 Hz, SNR3k 15 dB, tuned 25 Hz off; the default with --profile hf) or hf-fading (two
        paths 2 ms apart, 1 Hz Doppler spread); --snr then sets the SNR3k (the noise in 3 kHz).
        Exit status: 0 completed and byte-exact; 1 given up, or completed with different bytes.
        Examples:
          modem transfer-test --channel loopback --size 1048576 --json
          modem transfer-test --profile ofdm --line cable --size 1048576
          modem transfer-test --profile ofdm --line speaker --size 262144
          modem transfer-test --profile hf --line hf-fading --snr 10 --size 32768
          modem transfer-test --channel loopback --size 262144 --snr 3 --loss 0.1 --seed 2
          modem transfer-test --channel loopback --size 262144 --cuts 10 --seed 3 --json
        """)
    )

    enum Channel: String, ExpressibleByArgument, CaseIterable { case loopback }

    enum Profile: String, ExpressibleByArgument, CaseIterable { case afsk, ofdm, hf }
    enum Line: String, ExpressibleByArgument, CaseIterable { case cable, speaker, hf, hfFading = "hf-fading" }

    @Option(help: "The medium: loopback (the in-memory channel).") var channel: Channel = .loopback
    @Option(help: "The modem under the link: afsk (at --baud, default), ofdm or hf (their rate adapted to the line).") var profile: Profile = .afsk
    @Option(help: "A simulated line: cable, speaker, or for --profile hf hf or hf-fading (default: white noise at --snr alone; with --profile hf, the hf line).") var line: Line?
    @Option(parsing: .unconditional, help: ArgumentHelp("Line rate in baud (50...9600; Bell 202 tones at 1200).", valueName: "N")) var baud: Double = 1200
    @Option(parsing: .unconditional, help: ArgumentHelp("Payload bytes to move (1...16777216).", valueName: "BYTES")) var size: Int = 65536
    @Option(parsing: .unconditional, help: ArgumentHelp("Full-band signal-to-noise ratio in dB.", valueName: "DB")) var snr: Double?
    @Option(parsing: .unconditional, help: ArgumentHelp("Probability that a frame is lost, 0...0.9.", valueName: "P")) var loss: Double = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Times the line is cut mid-transfer (0...100).", valueName: "N")) var cuts: Int = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Seed of the payload, noise, loss and cut times.", valueName: "S")) var seed: UInt64 = 1
    @Flag(help: "Print one JSON line with the counts (the last line on standard output).") var json = false
    @Flag(help: "Plain records and the harness's own blocks instead of Noise sessions and data connections.") var plain = false
    @Option(name: .customLong("give-up"), parsing: .unconditional,
            help: ArgumentHelp("Channel seconds without a newly verified block before the test gives up (1...31536000; default: 10 x keepalive + 5 x a block's air time).",
                               valueName: "SECONDS"))
    var giveUp: Double?
    @Option(help: ArgumentHelp("Forward error correction on the link: auto (code frames while the line is noisy), on, off.",
                               valueName: "auto|on|off"))
    var fec: FECArgument = .auto

    private var options: TransferTestOptions {
        TransferTestOptions(baudRate: baud, size: size, snrDB: snr, frameLoss: loss, cuts: cuts, seed: seed, plain: plain,
                            giveUpSeconds: giveUp, forwardErrorCorrection: fec.value, ofdm: profile == .ofdm,
                            hf: profile == .hf, line: line.map { TransferLine(rawValue: $0.rawValue)! } ?? (profile == .hf ? .hf : nil))
    }

    func validate() throws {
        guard baud.isFinite, baud * 4 <= 48000 else { throw ValidationError("--baud must be 50...9600") }
        if (line == .hf || line == .hfFading) && profile != .hf {
            throw ValidationError("--line \(line!.rawValue) is a radio's audio path, for --profile hf")
        }
        do {
            try options.validate()
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// "12: min 0.021, median 0.052, max 0.098 s" ("none" when there were none).
    private func turnarounds(_ s: TurnaroundMeter.Summary) -> String {
        s.count == 0 ? "none" : String(format: "%d: min %.3f, median %.3f, max %.3f s", s.count, s.minimum, s.median, s.maximum)
    }

    func run() async throws {
        _ = try await reportingErrors {
            installStopHandlers()
            let start = Date()
            // On a terminal's standard error (--json's line goes to standard output): the bytes
            // delivered and the wall time, redrawn every second, so a long cut still shows the run alive.
            let progress = Mutex(ProgressLine(enabled: true))
            let delivered = Mutex(0)
            let total = size
            let draw: @Sendable () -> Void = {
                let bytes = delivered.withLock { $0 }
                let seconds = Int(Date().timeIntervalSince(start))
                progress.withLock { p in
                    p.update("transfer-test: \(bytes)/\(total) bytes delivered (\(bytes * 100 / max(1, total)) %), \(seconds) s")
                }
            }
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    draw()
                }
            }
            let test = TransferTest(options: options)
            let report = try await test.run(stopWhen: { isStopRequested }) { r in
                delivered.withLock { $0 = r.delivered }
                draw()
            }
            ticker.cancel()
            progress.withLock { $0.clear() }
            let wall = Date().timeIntervalSince(start)
            if json {
                try printOutput(report.json)
            } else {
                try printOutput("""
                \(report.completed ? "completed" : "not completed"): \(report.delivered) of \(report.bytes) bytes, sha256 \(report.sha256Match ? "equal" : "DIFFERENT")
                goodput \(String(format: "%.0f", report.goodputBps)) bit/s over \(String(format: "%.1f", report.channelSeconds)) s of channel time (\(String(format: "%.1f", wall)) s wall)
                cuts \(report.cuts), resumes \(report.resumes), bytes resent \(report.bytesResent) (block \(report.blockSize)), frames lost \(report.framesLost), retransmissions \(report.retransmissions)
                the sender sent with \(report.senderLine) at the end (\(String(format: "%.0f", report.senderLineBitRate)) bit/s line rate\(report.senderLineBitRate > 0 ? String(format: ", goodput %.0f %% of it", 100 * report.goodputBps / report.senderLineBitRate) : ""))
                turnarounds \(turnarounds(report.turnaround)) in open transmissions, \(turnarounds(report.openingTurnaround)) opening one; the sender's frames \(String(format: "%.1f", report.senderFrameSeconds)) s on the line
                """)
            }
            switch report.endedEarly {
            case .interrupted?:
                printError("modem: transfer-test interrupted after \(String(format: "%.1f", report.channelSeconds)) s of channel time")
                throw ExitCode(interruptedStatus)
            case .gaveUp?:
                printError("modem: transfer-test gave up: no block was verified in \(String(format: "%.0f", options.effectiveGiveUpSeconds)) s of channel time "
                           + "(\(report.delivered) of \(report.bytes) bytes delivered; --give-up sets the limit)")
                throw ExitCode(1)
            case nil:
                if !report.sha256Match { throw ExitCode(1) }
            }
        }
    }
}
