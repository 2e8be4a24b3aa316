#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemAudio
import ModemDSP
import SwiftModem
import SystemPackage

/// The HF configurations for `modem tx --help`: net rate, constellation, code rate, repetition, grid.
enum HFHelp {
    static var table: String {
        var lines = ["HF (--profile hf), the modem for a radio's SSB channel: every carrier inside 300-2600 Hz, made at 8000 Hz "
                     + "(--rate a whole multiple of it); the receiver reads the configuration from the transmission and finds its "
                     + "start and frequency offset (up to about 180 Hz of mistuning). The sender picks the fastest at or below --bitrate "
                     + "(default: \(HFProfile.standard.name)). Net rates while data is sent:"]
        for p in HFProfile.all.reversed() {
            let rate = String(Int(p.netBitRate))
            let pad = String(repeating: " ", count: max(0, 6 - rate.count))
            lines.append("  \(pad)\(rate) bit/s  \(p.name)\(p.pickedByBitRate ? "" : " (received; --bitrate no longer picks it)")")
        }
        return lines.joined(separator: "\n")
    }
}

extension TxCommand {
    /// The checks of `--profile hf`: options of the FSK modem are refused, the rate is a multiple of 8 kHz.
    func validateHF() throws {
        if line.baud != nil || line.mark != nil || line.space != nil || line.framing != nil {
            throw ValidationError("--profile hf takes no --baud, --mark, --space or --framing: the configuration comes from --bitrate")
        }
        if fx25 != nil || il2p != nil { throw ValidationError("--fx25 and --il2p go with --framing ax25, not --profile hf") }
        if rate % 8000 != 0 { throw ValidationError("--profile hf is made at 8000 Hz or a whole multiple of it, not --rate \(rate)") }
        if let bitrate {
            guard bitrate.isFinite, bitrate > 0 else { throw ValidationError("--bitrate must be a positive number of bit/s") }
            guard HFProfile.fastest(atMost: bitrate) != nil else {
                let slowest = HFProfile.all.min { $0.netBitRate < $1.netBitRate }!
                throw ValidationError("--bitrate \(bitrate.formatted): the slowest HF configuration sends \(Int(slowest.netBitRate)) bit/s (\(slowest.name))")
            }
        }
    }

    /// Sends the whole input as one HF transmission (it is interleaved over the whole transmission,
    /// so it is read to its end first).
    func sendHF(fd: FileDescriptor, sink: any AudioSink) throws {
        let profile = bitrate.flatMap { HFProfile.fastest(atMost: $0) } ?? HFProfile.standard
        var payload: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while !isStopRequested {
            guard let n = try readSome(fd, into: &buf) else { continue }
            if n == 0 { break }
            payload.append(contentsOf: buf[0..<n])
            if payload.count > HFHeader.maximumPayload {
                throw CLIError("\(input ?? "standard input"): an HF transmission carries at most \(HFHeader.maximumPayload) bytes")
            }
        }
        try finishUnlessInterrupted(sink: sink, what: "\(payload.count) bytes read") {}
        let peak = Float(pow(10, level / 20))
        let written = try HFTransmitter.send(payload: payload, profile: profile, sink: sink, peak: peak)
        if !quiet {
            let seconds = Double(written) / Double(sink.sampleRate)
            let effective = seconds > 0 ? Double(payload.count * 8) / seconds : 0
            printError("modem tx: \(payload.count) bytes as HF \(profile.name) (\(Int(profile.netBitRate)) bit/s net), \(String(format1: seconds)) s of audio, \(Int(effective.rounded())) bit/s effective")
        }
    }
}

extension RxCommand {
    /// `--profile hf` refuses the FSK modem's options.
    func validateHF() throws {
        if line.baud != nil || line.mark != nil || line.space != nil || line.framing != nil {
            throw ValidationError("--profile hf takes no --baud, --mark, --space or --framing: the transmission says how it was made")
        }
    }

    /// Receives HF transmissions: the input is read to its end, then each block's bytes go to standard
    /// output once its check passed.
    func receiveHF(source: any AudioSource, name: String, limit: Int?) throws {
        let receiver: HFReceiver
        do { receiver = try HFReceiver(source: source) } catch { throw CLIError("\(name): \(error.description)") }
        var out = StdoutWriter()
        var read = 0
        let summary = try receiver.run(shouldStop: {
            read += 65536
            return isStopRequested || (limit.map { read >= $0 } ?? false)
        }, onBytes: { bytes in try out.write(bytes) }, onEvent: { event in
            guard !quiet else { return }
            switch event {
            case .started(let profile, let length, let t, let offset, let snr):
                printError("### HF \(profile.name) (\(Int(profile.netBitRate)) bit/s), \(length) bytes, at \(String(format2: t)) s: frequency offset \(String(format1: offset)) Hz, header SNR \(String(format1: snr)) dB ###")
            case .ended(let bytes, let snr):
                printError("### HF end: \(bytes) bytes, SNR \(String(format1: snr)) dB on the carriers ###")
            case .unknownProfile(let id, let t):
                printError("modem rx: a transmission at \(String(format2: t)) s uses HF configuration \(id), which this version does not know; skipped")
            }
        })
        try out.flush()
        if stats_, !quiet {
            printError("modem rx: HF: \(summary.transmissions) transmission(s), \(summary.blocks) blocks checked (\(summary.blocksCorrected) corrected by the code), \(summary.bytes) bytes")
        }
        if isStopRequested && limit == nil { throw ExitCode(interruptedStatus) }
        switch summary.failure {
        case .lostBlock(let offset, let start)?:
            throw CLIError("\(name): a block of the HF transmission at \(String(format2: start)) s failed its check at byte \(offset); the output ends there (\(summary.bytes) bytes written)")
        case .truncated(_, let expected)?:
            throw CLIError("\(name): the input ends inside the HF transmission (of \(expected) bytes); nothing of it was written")
        case nil:
            break
        }
        if summary.samples == 0 {
            throw CLIError("\(name): contains no audio samples (empty data, or a header that claims data the file does not hold)")
        }
        if summary.transmissions == 0 {
            throw CLIError("\(name): no HF transmission found")
        }
    }
}
