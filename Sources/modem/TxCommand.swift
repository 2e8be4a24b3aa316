#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemAudio
import ModemDSP
import ModemCodecs
import SwiftModem
import SystemPackage

struct TxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tx",
        abstract: "Modulate bytes into FSK, PSK (packets) or OFDM audio: a WAV file or a sound device.",
        discussion: helpText("""
        Reads INPUT (default: standard input) and writes its bytes as FSK characters, or
        with --profile ofdm (or hf) as one OFDM transmission in checked blocks.
        Examples:
          echo hello | modem tx --baud 1200 --out hello.wav
          modem tx --profile rtty --out rtty.wav message.txt
          modem tx --baud 300 --device default < file.bin
          modem tx --profile bell202 --framing ax25 --fx25 32 --out fx25.wav frames.txt
          modem tx --profile g3ruh --framing ax25 --il2p 1 --out il2p.wav frames.txt
          modem tx --profile qpsk2400 --v26 mfj --framing ax25 --out qpsk.wav frames.txt
          modem tx --profile 8psk4800 --framing ax25 --out 8psk.wav frames.txt
          modem tx --profile ofdm --bitrate 160000 --out fast.wav file.bin
          modem tx --profile hf --bitrate 2400 --out hf.wav file.bin

        """) + "\n" + OFDMHelp.table + "\n" + HFHelp.table
    )

    @OptionGroup var line: LineOptions

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Sample rate of the output.", valueName: "HZ"))
    var rate: Int = 48000

    @Option(name: .long, help: ArgumentHelp("Write a WAV file.", valueName: "FILE.wav"))
    var out: String?

    @Option(name: .long, help: ArgumentHelp("Play on an ALSA device (see `modem devices`).", valueName: "NAME"))
    var device: String?

    @Option(name: .long, help: ArgumentHelp("Sample format of the WAV file.", valueName: "FMT"))
    var format: SampleFormatArgument = .s16

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Peak level in dBFS (-60...0), e.g. --level -6.", valueName: "DB"))
    var level: Double = -3

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Mark leader before the first character, in bit periods.", valueName: "BITS"))
    var leader: Double = 2

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("With --framing ax25: send each frame as FX.25 with 16, 32 or 64 Reed-Solomon check bytes (corrects 8, 16 or 32 bad bytes; plain AX.25 receivers still decode it).", valueName: "N"))
    var fx25: Int?

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("With --framing ax25: send each frame as IL2P (Reed-Solomon blocks instead of HDLC, as Dire Wolf 1.7+ and the NinoTNC), like Dire Wolf's -I N: 1 gives every payload block 16 check bytes (corrects 8 bad bytes per block; the NinoTNC's choice), 0 gives 2-8 by block size. Only IL2P receivers decode it. Not with --fx25.", valueName: "N"))
    var il2p: Int?

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("With --profile ofdm or hf: the fastest configuration whose net rate is at or below this (see the tables below).", valueName: "BPS"))
    var bitrate: Double?

    @Flag(name: [.short, .long], help: "No progress or summary on standard error.")
    var quiet = false

    @Argument(help: ArgumentHelp("File to send (default: standard input).", valueName: "INPUT"))
    var input: String?

    func validate() throws {
        if (out == nil) == (device == nil) { throw ValidationError("give exactly one of --out FILE.wav or --device NAME") }
        guard (8000...192_000).contains(rate) else { throw ValidationError("--rate \(rate) is outside 8000...192000 Hz") }
        guard (-60...0).contains(level) else { throw ValidationError("--level \(level) is outside -60...0 dBFS") }
        if line.isOFDM { return try validateOFDM() }
        if line.isHF { return try validateHF() }
        if bitrate != nil { throw ValidationError("--bitrate goes with --profile ofdm or hf") }
        guard leader >= 0, leader <= 10000 else { throw ValidationError("--leader must be 0...10000 bit periods") }
        if let fx25 {
            guard FX25Mode.parityCounts.contains(fx25) else { throw ValidationError("--fx25 takes 16, 32 or 64 check bytes, not \(fx25)") }
            guard case .ax25 = try? line.settings().framing else { throw ValidationError("--fx25 needs --framing ax25") }
        }
        if let il2p {
            guard il2p == 0 || il2p == 1 else { throw ValidationError("--il2p takes 1 (16 check bytes per block) or 0 (2-8 by block size), not \(il2p)") }
            guard fx25 == nil else { throw ValidationError("--il2p and --fx25 cannot go together: a frame goes as one or the other") }
            guard case .ax25 = try? line.settings().framing else { throw ValidationError("--il2p needs --framing ax25") }
        }
        // Check tones and baud against the sample rate before any output file is touched.
        do {
            let settings = try line.settings()
            if settings.psk != nil {
                // Any rate from 8000 Hz holds the 1800 Hz carrier and its sidebands.
            } else if settings.isBaseband {
                guard settings.baudRate * 4 <= Double(rate) else {
                    throw ModemSettingsError("\(Int(settings.baudRate)) baud baseband needs --rate of at least \(Int(settings.baudRate * 4)) Hz")
                }
            } else {
                _ = try settings.configuration(sampleRate: rate)
            }
        } catch let e as ModemSettingsError {
            throw ValidationError(e.description)
        }
    }

    func run() async throws {
        let settings = line.isOFDM || line.isHF ? nil : try line.settings()
        try await reportingErrors {
            if let out { try checkOutput(out, option: "--out", notSameAs: [input ?? "-"]) }
            let fd: FileDescriptor
            if let input, input != "-" {
                do {
                    fd = try FileDescriptor.open(FilePath(input), .readOnly, options: [.closeOnExec])
                } catch let e as Errno {
                    throw CLIError("\(input): cannot open: \(e.description)")
                }
            } else {
                fd = .standardInput
            }
            defer { if fd != .standardInput { try? fd.close() } }
            installStopHandlers()
            let sink: any AudioSink
            if let out {
                sink = try AudioFileWriter(path: out, sampleRate: rate, format: format.sampleFormat)
            } else {
                // OFDM cannot have gaps (its symbols' timing would slip): a deeper buffer.
                sink = try ALSAPlayback(device: device!, sampleRate: rate, latencyMilliseconds: line.isOFDM || line.isHF ? 500 : 100)
            }
            guard let settings else { return line.isHF ? try sendHF(fd: fd, sink: sink) : try sendOFDM(fd: fd, sink: sink) }
            let amplitude = Float(pow(10, level / 20))
            if case .ax25 = settings.framing {
                try sendPackets(fd: fd, sink: sink, settings: settings, amplitude: amplitude)
                return
            }
            let tx = try Transmitter(settings: settings, sink: sink, amplitude: amplitude, leaderBits: leader)
            var progress = ProgressLine(enabled: !quiet)
            // Small reads: each is modulated before the next check for a stop request.
            var buf = [UInt8](repeating: 0, count: 1024)
            var total = 0
            while !isStopRequested {
                guard let n = try readSome(fd, into: &buf) else { continue }
                if n == 0 { break }
                try tx.send(buf[0..<n])
                total += n
                progress.update("modem tx: \(total) bytes, \(String(format1: Double(tx.samplesWritten) / Double(rate))) s of audio")
            }
            progress.clear()
            try finishUnlessInterrupted(sink: sink, what: "\(total) bytes") { try tx.finish() }
            if tx.unencodableCount > 0, !quiet {
                printError("modem tx: \(tx.unencodableCount) character(s) have no Baudot code and were skipped")
            }
            if tx.truncatedCount > 0, !quiet {
                printError("modem tx: \(tx.truncatedCount) byte(s) did not fit in \(settings.framing)'s data bits; their high bits were dropped")
            }
            if let p = sink as? ALSAPlayback, p.xrunCount > 0, !quiet {
                printError("modem tx: \(p.xrunCount) playback underrun(s) recovered")
            }
        }
    }
}

extension TxCommand {
    /// The longest monitor-format line read (an AX.25 frame is at most a few hundred bytes).
    static let maximumLineBytes = 1 << 16

    /// Finishes the output, or, after SIGINT/SIGTERM, leaves it unfinished (a file is then not
    /// written at all, an existing one is kept; a sound device stops when the sink is released) and
    /// exits 130.
    func finishUnlessInterrupted(sink: any AudioSink, what: String, _ finish: () throws -> Void) throws {
        guard isStopRequested else { return try finish() }
        printError("modem tx: interrupted after \(what); \(out.map { "\($0) was left as it was" } ?? "playback stopped")")
        throw ExitCode(interruptedStatus)
    }

    /// One read from `fd` into `buf`: the count (0 at the end), or nil when a signal interrupted it
    /// (the caller checks ``isStopRequested`` and tries again).
    func readSome(_ fd: FileDescriptor, into buf: inout [UInt8]) throws -> Int? {
        do {
            return try buf.withUnsafeMutableBytes { try fd.read(into: $0, retryOnInterrupt: false) }
        } catch Errno.interrupted {
            return nil
        } catch let e as Errno {
            throw CLIError("\(input ?? "standard input"): read failed: \(e.description)")
        }
    }

    /// Reads monitor-format lines (`SRC>DST,PATH:info`) and sends each as an AX.25 frame. A line
    /// that does not parse is reported with its line number and skipped.
    func sendPackets(fd: FileDescriptor, sink: any AudioSink, settings: ModemSettings, amplitude: Float) throws {
        let tx = try PacketTransmitter(settings: settings, sink: sink, amplitude: amplitude,
                                       preambleMilliseconds: leader > 2 ? leader * 1000 / settings.baudRate : 300,
                                       fx25ParityCount: fx25, il2p: il2p.map { IL2PEncoder(maximumFEC: $0 == 1) })
        let name = input ?? "standard input"
        var pending: [UInt8] = []
        var lineNumber = 0
        var skipped = 0
        var buf = [UInt8](repeating: 0, count: 4096)
        func handle(_ lineBytes: ArraySlice<UInt8>) throws {
            lineNumber += 1
            var text = String(decoding: lineBytes, as: UTF8.self)
            while text.hasSuffix("\r") { text.removeLast() }
            if text.allSatisfy({ $0 == " " || $0 == "\t" }) || text.hasPrefix("#") { return }
            do {
                try tx.send(AX25Frame(monitorLine: text))
            } catch let error as AX25Error {
                skipped += 1
                printError("modem tx: \(name):\(lineNumber): \(error.description) (line skipped)")
            }
        }
        while !isStopRequested {
            guard let n = try readSome(fd, into: &buf) else { continue }
            if n == 0 { break }
            pending.append(contentsOf: buf[0..<n])
            var start = 0
            while let nl = pending[start...].firstIndex(of: 0x0A) {
                try handle(pending[start..<nl])
                start = nl + 1
            }
            pending.removeSubrange(..<start)
            // A line longer than any frame can carry is not a frame: bound the memory it takes.
            if pending.count > Self.maximumLineBytes {
                throw CLIError("\(name):\(lineNumber + 1): a line longer than \(Self.maximumLineBytes) bytes is not a monitor-format frame")
            }
        }
        if !pending.isEmpty, !isStopRequested { try handle(pending[...]) }
        // Input that held lines but not one frame is bad input, not an empty transmission: the output
        // is left as it was.
        if tx.framesSent == 0, skipped > 0, !isStopRequested {
            throw CLIError("\(name): none of its \(skipped) line(s) is a monitor-format frame (SOURCE>DESTINATION:information); nothing was sent")
        }
        try finishUnlessInterrupted(sink: sink, what: "\(tx.framesSent) frame(s)") { try tx.finish() }
        if !quiet {
            let fx = fx25.map { " as FX.25 with \($0) check bytes" + (tx.framesSentPlain > 0 ? " (\(tx.framesSentPlain) too long for FX.25, sent plain)" : "") }
                ?? il2p.map { " as IL2P with " + ($0 == 1 ? "16 check bytes per block" : "2-8 check bytes per block")
                              + (tx.framesSentPlain > 0 ? " (\(tx.framesSentPlain) too long for IL2P, sent plain)" : "") } ?? ""
            printError("modem tx: \(tx.framesSent) frame(s) sent\(fx)\(skipped > 0 ? ", \(skipped) malformed line(s) skipped" : "")")
        }
    }
}

/// An error with a ready-made one-line message.

extension String {
    /// A number with one decimal.
    init(format1 v: Double) {
        self = DecimalFormat.fixed(v, 1)
    }
}
