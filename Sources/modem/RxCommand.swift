import ArgumentParser
import ModemAudio
import ModemCodecs
import ModemDSP
import SwiftModem
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

struct RxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rx",
        abstract: "Demodulate FSK, PSK (packets) or OFDM audio from a WAV file or a sound device; decoded bytes go to standard output.",
        discussion: helpText("""
        Only the decoded bytes are written to standard output. With --framing ax25 (on AFSK, G3RUH or PSK), FX.25, IL2P and plain
        AX.25 frames are decoded from the same stream, one monitor line per frame. Carrier, confidence and measured-rate
        diagnostics go to standard error (--quiet silences them).
        Examples:
          modem rx --baud 1200 hello.wav
          modem rx --profile rtty --channel 1 stereo.wav
          modem rx --baud 300 --device default --seconds 10
          modem rx --profile bell202 --framing ax25 --stats packets.wav
          modem rx --profile qpsk2400 --v26 mfj --framing ax25 qpsk.wav
          modem rx --profile 8psk4800 --framing ax25 8psk.wav
          modem rx --profile ofdm fast.wav > file.bin
          modem rx --profile hf hf.wav > file.bin
        With --profile ofdm (and hf) the configuration comes from the transmission; each block is written once its
        CRC checked, and a block that fails ends the output with one line naming its byte offset (status 1).
        """)
    )

    @OptionGroup var line: LineOptions

    @Option(name: .long, help: ArgumentHelp("Record from an ALSA device (see `modem devices`) instead of a file.", valueName: "NAME"))
    var device: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("With --device: stop after this many seconds (default: until SIGINT/SIGTERM).", valueName: "S"))
    var seconds: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("With --device: sample rate to record at.", valueName: "HZ"))
    var rate: Int = 48000

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Channel of a multi-channel file to decode, counted from 0.", valueName: "N"))
    var channel: Int = 0

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Threads for decoding a long file (1 or 2).", valueName: "N"))
    var threads: Int = 2

    @Flag(name: .customLong("stats"), help: "With --framing ax25: print frame counts (decoded, repaired, CRC failures, repairs rejected as implausible, FX.25 and IL2P frames corrected by FEC and bytes fixed) on standard error; with --profile ofdm, the blocks checked and corrected. Refused with other framings.")
    var stats_ = false

    @Flag(name: [.short, .long], help: "No diagnostics on standard error.")
    var quiet = false

    @Argument(help: ArgumentHelp("WAV (or other audio) file to decode.", valueName: "INPUT.wav"))
    var input: String?

    func validate() throws {
        if (input == nil) == (device == nil) { throw ValidationError("give exactly one of an INPUT file or --device NAME") }
        if let s = seconds {
            guard s > 0, s <= maximumSeconds else { throw ValidationError("--seconds must be 0 < s <= \(Int(maximumSeconds)) (a year)") }
        }
        if seconds != nil, device == nil { throw ValidationError("--seconds goes with --device") }
        guard (1...2).contains(threads) else { throw ValidationError("--threads must be 1 or 2") }
        guard channel >= 0 else { throw ValidationError("--channel must be 0 or more") }
        guard (8000...192_000).contains(rate) else { throw ValidationError("--rate \(rate) is outside 8000...192000 Hz") }
        if line.isOFDM {
            try validateOFDM()
            return
        }
        if line.isHF {
            try validateHF()
            return
        }
        // The line's settings are checked here, so a missing rate is this command's usage error.
        let settings = try line.settings()
        if stats_, settings.framing != .ax25 {
            throw ValidationError("--stats counts AX.25 frames or OFDM blocks: it goes with --framing ax25 (or a profile that carries AX.25: hf300, g3ruh, qpsk2400, 8psk4800) or --profile ofdm")
        }
    }

    func run() async throws {
        let settings = line.isOFDM || line.isHF ? nil : try line.settings()
        try await reportingErrors {
            installStopHandlers()
            var totalSamples: Int64 = 0
            var capture: ALSACapture?
            var reader: AudioFileReader?
            let name = input == "-" ? "standard input" : input ?? device!
            let sampleRate: Int
            if let input {
                // Opened once: a pipe or standard input cannot be opened again.
                let header = try AudioFileReader(path: input, channel: channel,
                                                 interruptionCheck: { isStopRequested })
                reader = header
                totalSamples = header.declaredFrameCount
                sampleRate = header.sampleRate
            } else {
                // OFDM cannot lose samples (its symbols' timing would slip): a deeper buffer, as latency costs it nothing.
                capture = try ALSACapture(device: device!, sampleRate: rate, latencyMilliseconds: line.isOFDM || line.isHF ? 500 : 100)
                sampleRate = capture!.sampleRate
            }
            // A rate no decoder handles is the file's fault (status 1), not the options'.
            guard supportedSampleRates.contains(sampleRate) else {
                throw CLIError("\(name): sample rate \(sampleRate) Hz is outside the \(supportedSampleRates.lowerBound)...\(supportedSampleRates.upperBound) Hz that can be decoded")
            }
            let rate = Double(sampleRate)
            let limit = seconds.map { Int($0 * rate) }
            guard let settings else {
                let live = device != nil || reader?.isSeekable == false
                if line.isHF { return try receiveHF(source: capture ?? reader!, name: name, limit: limit) }
                return try receiveOFDM(source: capture ?? reader!, name: name, totalSamples: totalSamples, live: live, limit: limit)
            }
            do {
                if settings.isFSK { _ = try settings.configuration(sampleRate: sampleRate) }
            } catch let e as ModemSettingsError {
                throw UsageError("\(name): \(e.description)")
            }
            var progress = ProgressLine(enabled: !quiet && input != nil)
            var out = StdoutWriter()
            // A device or a stream (pipe, standard input) may be live: pass bytes on as they come.
            let live = device != nil || reader?.isSeekable == false
            let onBytes: ([UInt8]) throws -> Void = { bytes in
                try out.write(bytes)
                if live { try out.flush() }
            }
            let onEvent: (ReceiverEvent) -> Void = { event in
                guard !quiet else { return }
                progress.clear()
                switch event {
                case .carrier(let t):
                    printError("### CARRIER \(settings.summary) at \(String(format1: t)) s ###")
                case .noCarrier(let t, let b):
                    printError("### NOCARRIER at \(String(format1: t)) s: \(b.characters) chars, \(b.framingErrors) framing errors, \(b.parityErrors) parity errors, confidence \(String(format2: Double(b.confidence))), \(String(format1: b.measuredBaudRate)) baud measured, level \(String(format1: Double(b.levelDBFS))) dBFS ###")
                }
            }
            var limitReached = false
            let onProgress: (Int) -> Void = { n in
                if let limit, n >= limit { limitReached = true }
                if totalSamples > 0 {
                    let pct = min(100, Int(Double(n) * 100 / Double(totalSamples)))
                    progress.update("modem rx: \(pct)% (\(String(format1: Double(n) / rate)) of \(String(format1: Double(totalSamples) / rate)) s)")
                }
            }
            let shouldStop = { limitReached || isStopRequested }
            // A signal is how a capture without --seconds ends; anything else it interrupts.
            let interrupted = { isStopRequested && !(capture != nil && limit == nil) }
            if case .ax25 = settings.framing {
                // Packet radio: one monitor-format line per frame.
                let source: any AudioSource = capture ?? reader!
                let receiver = try PacketReceiver(settings: settings, source: source)
                let stats = try receiver.run(shouldStop: shouldStop, onPacket: { packet in
                    try out.write(Array((packet.monitorLine + "\n").utf8))
                    if live { try out.flush() }
                }, onProgress: onProgress)
                try out.flush()
                progress.clear()
                if stats_ {
                    printError("modem rx: \(stats.decoded) frames decoded (\(stats.repaired) repaired by inverting one bit), \(stats.crcFailures) CRC failures, \(stats.duplicates) copies from other slicers or from FX.25 blocks")
                    // Repairs that passed the FCS but not the plausibility test: CRC collisions, never sent.
                    let reasons = AX25Plausibility.Problem.allCases
                        .map { "\($0) \(stats.implausibleByReason[$0.rawValue, default: 0])" }.joined(separator: ", ")
                    printError("modem rx: \(stats.implausibleRepairs) repairs rejected as implausible (\(reasons)) in \(stats.repairTrials) repair trials (\(stats.alignedRepairTrials) on whole-byte frames)")
                    printError("modem rx: FX.25: \(stats.fx25Frames) frames out of FX.25 blocks, \(stats.fecCorrected) corrected by FEC (\(stats.fecBytesFixed) bytes fixed; \(stats.fecWithErasures) with erasures), \(stats.fx25Uncorrectable) blocks beyond correction")
                    printError("modem rx: IL2P: \(stats.il2pFrames) IL2P frames, \(stats.il2pCorrected) corrected by FEC (\(stats.il2pSymbolsFixed) symbols fixed; \(stats.il2pWithErasures) with erasures), \(stats.il2pUncorrectable) frames beyond correction, \(stats.il2pConflicts) copies dropped for disagreeing")
                }
                if interrupted() { throw ExitCode(interruptedStatus) }
                if capture == nil, stats.samples == 0 {
                    throw CLIError("\(name): contains no audio samples (empty data, or a header that claims data the file does not hold)")
                }
                reportRepairs(reader)
                return
            }
            let summary: ReceiverSummary
            if let reader {
                summary = try Receiver.decodeFile(reader: reader, settings: settings, threads: threads,
                                                  shouldStop: shouldStop, onBytes: onBytes, onEvent: onEvent, onProgress: onProgress)
            } else {
                summary = try Receiver(settings: settings, source: capture!, blockSize: 2400).run(
                    shouldStop: shouldStop, onBytes: onBytes, onEvent: onEvent, onProgress: onProgress)
            }
            try out.flush()
            progress.clear()
            if interrupted() {
                if !quiet { printError("modem rx: interrupted") }
                throw ExitCode(interruptedStatus)
            }
            reportRepairs(reader)
            if let capture {
                if capture.xrunCount > 0, !quiet { printError("modem rx: \(capture.xrunCount) capture overrun(s) recovered") }
            } else if summary.samples == 0 {
                throw CLIError("\(name): contains no audio samples (empty data, or a header that claims data the file does not hold)")
            }
        }
    }
}

extension RxCommand {
    /// Says how many samples of the input were not numbers or far beyond full scale (read as
    /// silence, or clipped).
    func reportRepairs(_ reader: AudioFileReader?) {
        guard let reader, !quiet else { return }
        if reader.nonFiniteSampleCount > 0 {
            printError("modem rx: \(reader.nonFiniteSampleCount) sample(s) were not finite numbers (NaN or infinity) and were read as silence")
        }
        if reader.clippedSampleCount > 0 {
            printError("modem rx: \(reader.clippedSampleCount) sample(s) beyond ±\(Int(AudioFileReader.sampleLimit))× full scale were clipped")
        }
    }
}

/// Buffered writes to standard output that report failures (e.g. a closed pipe) as errors.
struct StdoutWriter {
    private var buffer: [UInt8] = []

    mutating func write(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 15 { try flush() }
    }

    mutating func flush() throws {
        guard !buffer.isEmpty else { return }
        do {
            _ = try FileDescriptor.standardOutput.writeAll(buffer)
        } catch let e as Errno {
            throw CLIError("standard output: write failed: \(e.description)")
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

extension String {
    /// A number with two decimals.
    init(format2 v: Double) {
        self = DecimalFormat.fixed(v, 2)
    }
}
