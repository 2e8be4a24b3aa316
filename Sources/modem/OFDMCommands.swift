#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemAudio
import ModemDSP
import SwiftModem
import SystemPackage

/// The OFDM configurations for `modem tx --help`: id, constellation, code rate, grid, net rate and
/// the SNR each needs.
enum OFDMHelp {
    static var table: String {
        // One line for the paragraph (the argument parser wraps it), one per configuration.
        var lines = ["OFDM (--profile ofdm), the high-rate modem: the receiver reads the configuration from the transmission; "
                     + "the sender picks the fastest at or below --bitrate (default: \(OFDMProfile.standard.name), which a "
                     + "sound-card cable carries with margin). Net rates while data is sent, and the SNR each needs (white noise over 0-24 kHz):"]
        for p in OFDMProfile.everyConfiguration.sorted(by: { $0.netBitRate > $1.netBitRate }) {
            let rate = String(Int(p.netBitRate))
            let pad = String(repeating: " ", count: max(0, 7 - rate.count))
            lines.append("  \(pad)\(rate) bit/s  \(p.constellation.displayName.padding(toLength: 9, withPad: " ", startingAt: 0)) rate \(p.rate.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0)) \(p.gridName.padding(toLength: 5, withPad: " ", startingAt: 0)) \(p.numerology.bandDescription), SNR \(Int(p.requiredSNR)) dB")
        }
        return lines.joined(separator: "\n")
    }
}

extension TxCommand {
    /// The checks of `--profile ofdm`: options of the FSK modem are refused, the rate is 48 kHz.
    func validateOFDM() throws {
        if line.baud != nil || line.mark != nil || line.space != nil || line.framing != nil {
            throw ValidationError("--profile ofdm takes no --baud, --mark, --space or --framing: the configuration comes from --bitrate")
        }
        if fx25 != nil { throw ValidationError("--fx25 goes with --framing ax25, not --profile ofdm") }
        if il2p != nil { throw ValidationError("--il2p goes with --framing ax25, not --profile ofdm") }
        if rate != 48000 { throw ValidationError("--profile ofdm is made at 48000 Hz, not --rate \(rate)") }
        if let bitrate {
            guard bitrate.isFinite, bitrate > 0 else { throw ValidationError("--bitrate must be a positive number of bit/s") }
            guard OFDMProfile.fastest(atMost: bitrate) != nil else {
                let slowest = OFDMProfile.everyConfiguration.min { $0.netBitRate < $1.netBitRate }!
                throw ValidationError("--bitrate \(bitrate.formatted): the slowest OFDM configuration sends \(Int(slowest.netBitRate)) bit/s (\(slowest.name))")
            }
        }
    }

    /// Sends the input as one OFDM transmission.
    func sendOFDM(fd: FileDescriptor, sink: any AudioSink) throws {
        let profile = bitrate.flatMap { OFDMProfile.fastest(atMost: $0) } ?? OFDMProfile.standard
        // A regular file's length goes into the header; a pipe is sent as a stream.
        var st = stat()
        let length: Int? = fstat(fd.rawValue, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG ? Int(st.st_size) : nil
        let peak = Float(pow(10, level / 20))
        let tx = try OFDMTransmitter(profile: profile, sink: sink, peak: peak, payloadLength: length)
        var progress = ProgressLine(enabled: !quiet)
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while !isStopRequested {
            guard let n = try readSome(fd, into: &buf) else { continue }
            if n == 0 { break }
            try tx.send(buf[0..<n])
            let total = length.map { " of \($0)" } ?? ""
            progress.update("modem tx: \(tx.bytesSent)\(total) bytes, \(String(format1: Double(tx.samplesWritten) / 48000)) s of audio")
        }
        progress.clear()
        try finishUnlessInterrupted(sink: sink, what: "\(tx.bytesSent) bytes") { try tx.finish() }
        if let p = sink as? ALSAPlayback, p.xrunCount > 0, !quiet {
            printError("modem tx: \(p.xrunCount) playback underrun(s) recovered (each a gap in the transmission: its receiver loses the block there)")
        }
        if !quiet {
            let seconds = Double(tx.samplesWritten) / 48000
            let effective = seconds > 0 ? Double(tx.bytesSent * 8) / seconds : 0
            printError("modem tx: \(tx.bytesSent) bytes as OFDM \(profile.name) (\(Int(profile.netBitRate)) bit/s net), \(String(format1: seconds)) s of audio, \(Int(effective.rounded())) bit/s effective")
        }
    }
}

extension RxCommand {
    /// `--profile ofdm` refuses the FSK modem's options.
    func validateOFDM() throws {
        if line.baud != nil || line.mark != nil || line.space != nil || line.framing != nil {
            throw ValidationError("--profile ofdm takes no --baud, --mark, --space or --framing: the transmission says how it was made")
        }
    }

    /// Receives OFDM transmissions; each block's bytes go to standard output once its check passed.
    func receiveOFDM(source: any AudioSource, name: String, totalSamples: Int64, live: Bool, limit: Int?) throws {
        let receiver: OFDMReceiver
        do { receiver = try OFDMReceiver(source: source) } catch { throw CLIError("\(name): \(error.description)") }
        var out = StdoutWriter()
        var progress = ProgressLine(enabled: !quiet && !live)
        let rate = Double(source.sampleRate)
        var limitReached = false
        let summary = try receiver.run(shouldStop: { limitReached || isStopRequested }, onBytes: { bytes in
            try out.write(bytes)
            if live { try out.flush() }
        }, onEvent: { event in
            guard !quiet else { return }
            progress.clear()
            switch event {
            case .started(let profile, let length, let s):
                let size = length.map { "\($0) bytes" } ?? "a stream"
                printError("### OFDM \(profile.name) (\(Int(profile.netBitRate)) bit/s), \(size), at \(String(format2: s.startSeconds)) s: drift \(String(format1: s.driftPPM)) ppm, preamble SNR \(String(format1: s.preambleSNR)) dB ###")
            case .ended(let bytes, let s):
                printError("### OFDM end: \(bytes) bytes, SNR \(String(format1: s.meanCarrierSNR)) dB on the carriers, \(String(format1: s.decisionSNR)) dB at the decisions, drift \(String(format1: s.finalDriftPPM)) ppm ###")
            case .unknownProfile(let id, let t):
                printError("modem rx: a transmission at \(String(format2: t)) s uses OFDM configuration \(id), which this version does not know; skipped")
            }
        }, onProgress: { n in
            if let limit, n >= limit { limitReached = true }
            if totalSamples > 0 {
                let pct = min(100, Int(Double(n) * 100 / Double(totalSamples)))
                progress.update("modem rx: \(pct)% (\(String(format1: Double(n) / rate)) of \(String(format1: Double(totalSamples) / rate)) s)")
            }
        })
        try out.flush()
        progress.clear()
        if let c = source as? ALSACapture, c.xrunCount > 0, !quiet {
            printError("modem rx: \(c.xrunCount) capture overrun(s) recovered (samples lost there: a block that spans one fails its check)")
        }
        if stats_, !quiet {
            printError("modem rx: OFDM: \(summary.transmissions) transmission(s), \(summary.blocks) blocks checked (\(summary.blocksCorrected) corrected by the code, \(summary.bitsCorrected) bits), \(summary.bytes) bytes")
        }
        if isStopRequested && !(live && limit == nil) { throw ExitCode(interruptedStatus) }
        switch summary.failure {
        case .lostBlock(let offset, let start)?:
            throw CLIError("\(name): a block of the transmission at \(String(format2: start)) s failed its check at byte \(offset); the output ends there (\(summary.bytes) bytes written)")
        case .truncated(let offset, let expected)?:
            let of = expected.map { " of \($0)" } ?? ""
            throw CLIError("\(name): the input ends inside the transmission after byte \(offset)\(of); the output ends there")
        case .bandBeyondInput(let hz, let sr)?:
            throw CLIError("\(name): the transmission uses carriers up to \(Int(hz)) Hz, which a recording at \(sr) Hz cannot hold")
        case nil:
            break
        }
        if summary.samples == 0 {
            throw CLIError("\(name): contains no audio samples (empty data, or a header that claims data the file does not hold)")
        }
        if summary.transmissions == 0, !live {
            throw CLIError("\(name): no OFDM transmission found")
        }
    }
}
