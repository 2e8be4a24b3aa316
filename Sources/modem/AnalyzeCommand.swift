import ArgumentParser
import SwiftModem

struct AnalyzeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Find the FSK tones, baud rate and SNR, or the OFDM transmissions, of a recording, and the `modem rx` command that decodes it.",
        discussion: helpText("""
        The report goes to standard output; its last line is the `modem rx` command, when there is something to decode. \
        The framing is found by decoding the first 30 s with each candidate (AX.25 at the profile's or a standard rate; \
        the profile's own, 8N1, 7E1, 7O1, 8E1, 8O1 and 8N2, and Baudot below 100 baud, with the tones both ways round \
        when no profile matched): the `framing` line says which decoded, with how many errors, and "uncertain" when \
        more than one character in 20 had a framing or parity error. \
        An OFDM transmission is reported with its configuration, length, clock drift, the SNR of its preamble, of its \
        carriers (the training measures the whole band) and at the decisions, and how many of its blocks checked \
        (the report is then the OFDM report alone); --png then draws the spectrogram up to the top carrier and the \
        equalised constellation and the SNR per carrier below it. The `picture` line says the spectrogram's frequency range. \
        Files with nothing keyed in them (silence, noise, one steady tone) say "no tones found" (or "no keying found") \
        and exit 0; an unreadable file is an error (one line on standard error, status 1).

        Examples:
          modem analyze hello.wav
          modem analyze --png hello.png hello.wav
          modem analyze --png fast.png fast.wav        (an OFDM transmission from modem tx --profile ofdm)
        """)
    )

    @Argument(help: ArgumentHelp("WAV (or other audio) file to analyse.", valueName: "INPUT.wav"))
    var input: String

    @Option(name: .long, help: ArgumentHelp("Also draw a spectrogram with the detected tones marked (and, for OFDM, the constellation and the SNR per carrier).", valueName: "FILE.png"))
    var png: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Channel of a multi-channel file to analyse, counted from 0.", valueName: "N"))
    var channel: Int = 0

    func validate() throws {
        guard channel >= 0 else { throw ValidationError("--channel must be 0 or more") }
    }

    func run() async throws {
        try await reportingErrors {
            if let png { try checkOutput(png, option: "--png", notSameAs: [input]) }
            // No polling here: a signal ends the run within the grace period, removing the partial output.
            installStopHandlers()
            let report = try analyzeFile(path: input, channel: channel, pngPath: nil)
            let ofdm = try OFDMFindings.scan(path: input, channel: channel)
            // With OFDM in the file the report is the OFDM report: the FSK findings (no tones, or
            // energy with no two-tone keying) say nothing about it.
            var lines = ofdm.transmissions.isEmpty ? Array(report.lines.dropLast(report.rxCommand == nil ? 0 : 1))
                                                   : [report.headerLine] + ofdm.lines
            if let png {
                let a = report.analysis
                var renderer = SpectrogramRenderer()
                let markers: [SpectrogramMarker], title: String
                if let t = ofdm.last {
                    // The spectrogram covers the band the transmission sounds, up to its top carrier.
                    renderer.maximumFrequency = OFDMPicture.spectrogramTop(sampleRate: a.sampleRate)
                    markers = []
                    title = OFDMPicture.spectrogramTitle(path: input, configuration: t.profile.name, netBitRate: t.profile.netBitRate,
                                                         statistics: t.statistics, transmissions: ofdm.transmissions.count)
                } else {
                    markers = spectrogramMarkers(of: a)
                    title = spectrogramTitle(path: input, analysis: a)
                }
                let spectrogram = renderer.render(a.spectrogram, duration: a.duration, markers: markers, title: title)
                let image = ofdm.last.map { OFDMPicture.compose(spectrogram: spectrogram, statistics: $0.statistics, title: "OFDM \($0.profile.name)") }
                    ?? spectrogram
                try PNGEncoder.write(image, to: png, text: [("Title", title), ("Software", "SwiftModem \(SwiftModemVersion.string)"), ("Source", input)])
                let top = Int(renderer.frequencyAxisTop(sampleRate: a.sampleRate, markers: markers).rounded())
                lines.append("  picture   \(png) (spectrogram 0-\(top) Hz)")
            }
            if !ofdm.transmissions.isEmpty {
                lines.append("modem rx --profile ofdm\(channel > 0 ? " --channel \(channel)" : "") \(FSKAnalysis.shellQuoted(input))")
            } else if report.rxCommand != nil {
                // The framing, by decoding the start of the file with each candidate (FramingProbe).
                let a = report.analysis
                let found = try FramingProbe.probe(path: input, channel: channel, profile: a.profile?.name, baudRate: a.baudRate,
                                                   mark: a.markFrequency, space: a.spaceFrequency)
                if let found {
                    let what = found.framing == "ax25" ? "\(found.decoded) AX.25 frames" : "\(found.decoded) characters, \(found.errors) with framing or parity errors"
                    let tones = found.swappedTones ? "; mark and space the other way round" : ""
                    lines.append("  framing   \(found.framing) (\(what) in the first \(Int(FramingProbe.maximumSeconds)) s\(tones)\(found.isUncertain ? "; uncertain" : ""))")
                } else {
                    lines.append("  framing   unknown: no candidate decoded anything (tried AX.25 and \(FramingProbe.uartCandidates.joined(separator: ", ")))")
                }
                if let cmd = a.rxCommand(path: input, channel: channel, framing: found?.framing, baudRate: found?.baudRate,
                                            swappedTones: found?.swappedTones ?? false) {
                    lines.append(cmd)
                }
            }
            for line in lines { try printOutput(line) }
        }
    }
}

/// The OFDM transmissions found in a file: each read through (its bytes are not kept), with what
/// the receiver measured.
struct OFDMFindings {
    struct Transmission {
        var profile: OFDMProfile
        var length: Int?
        var bytes = 0
        var complete = false
        var statistics = OFDMStatistics()
    }
    var transmissions: [Transmission] = []
    var failure: OFDMReceiverSummary.Failure?
    var blocks = 0, corrected = 0

    var last: Transmission? { transmissions.last }

    static func scan(path: String, channel: Int) throws -> OFDMFindings {
        let reader = try AudioFileReader(path: path, channel: channel)
        var found = OFDMFindings()
        guard (16000...192_000).contains(reader.sampleRate) else { return found }
        let receiver = try OFDMReceiver(source: reader)
        let summary = try receiver.run(onBytes: { _ in }, onEvent: { event in
            switch event {
            case .started(let profile, let length, let s):
                found.transmissions.append(Transmission(profile: profile, length: length, statistics: s))
            case .ended(let bytes, let s):
                found.transmissions[found.transmissions.count - 1].bytes = bytes
                found.transmissions[found.transmissions.count - 1].complete = true
                found.transmissions[found.transmissions.count - 1].statistics = s
            case .unknownProfile:
                break
            }
        })
        if !found.transmissions.isEmpty, !found.transmissions[found.transmissions.count - 1].complete, let s = summary.statistics {
            found.transmissions[found.transmissions.count - 1].statistics = s
        }
        found.failure = summary.failure
        found.blocks = summary.blocks
        found.corrected = summary.blocksCorrected
        return found
    }

    var lines: [String] {
        var out: [String] = []
        for t in transmissions {
            let s = t.statistics
            let size = t.length.map { "\($0) bytes" } ?? "a stream"
            out.append("  ofdm      \(t.profile.name) (\(Int(t.profile.netBitRate)) bit/s net), \(size), at \(String(format2: s.startSeconds)) s")
            out.append("  drift     \(String(format1: s.driftPPM)) ppm at the preamble, \(String(format1: s.finalDriftPPM)) ppm followed at the end")
            if let n = s.numerology, !s.carrierSNR.isEmpty {
                let t0 = OFDMNumerology.sounding
                let c = n.soundingCarriers
                let band = s.carrierSNR[(c.lowerBound - t0.firstCarrier)...(c.upperBound - t0.firstCarrier)]
                let worst = band.indices.min { band[$0] < band[$1] }!
                let worstHz = Int((Double(worst + t0.firstCarrier) * t0.carrierSpacing).rounded())
                out.append("  snr       preamble \(String(format1: s.preambleSNR)) dB, carriers \(String(format1: s.meanCarrierSNR)) dB mean over \(n.bandDescription) (lowest \(String(format1: band[worst])) dB at \(worstHz) Hz), decisions \(String(format1: s.decisionSNR)) dB")
                if let late = s.lateReverberation {
                    out.append("  reverb    \(String(format1: late)) dB of the response outlasts the prefix (weighed by the window it spoils; counted as noise)")
                }
                if let best = OFDMProfile.fastest(for: s) {
                    out.append("  line      carries up to \(best.name) (\(Int(best.netBitRate)) bit/s) with 3 dB of margin")
                }
            }
            out.append("  data      \(t.complete ? "every block checked, \(t.bytes) bytes" : "incomplete")")
        }
        if transmissions.isEmpty { return out }
        out.append("  blocks    \(blocks) checked, \(corrected) corrected by the code")
        switch failure {
        case .lostBlock(let offset, _)?: out.append("  damage    a block failed its check at byte \(offset)")
        case .truncated(let offset, let expected)?: out.append("  damage    the file ends inside the transmission after byte \(offset)\(expected.map { " of \($0)" } ?? "")")
        case .bandBeyondInput(let hz, let rate)?: out.append("  damage    carriers up to \(Int(hz)) Hz do not fit a recording at \(rate) Hz")
        case nil: break
        }
        return out
    }
}
