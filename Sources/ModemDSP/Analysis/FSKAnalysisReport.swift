/// The human-readable side of ``FSKAnalysis``: report lines and the `modem rx` command line.
extension FSKAnalysis {
    /// The `modem rx` command that would decode the input, or nil when there is nothing to decode.
    ///
    /// A matched profile gives `modem rx --profile P FILE` (with `--baud` when the measured rate is
    /// more than 3% off the profile's); otherwise `modem rx --baud N FILE` when the tones are
    /// minimodem's defaults for that rate, else `modem rx --baud N --mark M --space S FILE`.
    /// - Parameters:
    ///   - path: the file name to put on the command line (shell-quoted when needed).
    ///   - channel: the channel analysed, counted from 0 (`--channel` is added when not 0).
    ///   - framing: the framing found by decoding (`--framing` is added unless it is the profile's own).
    ///   - baudRate: the rate that decoded it, when decoding found another than the measured one
    ///     (a profile's own rate gives no `--baud`).
    ///   - swappedTones: it decodes with mark and space the other way round (no profile matched).
    public func rxCommand(path: String, channel: Int = 0, framing: String? = nil, baudRate decodedRate: Double? = nil,
                          swappedTones: Bool = false) -> String? {
        guard finding == .fsk, var mark = markFrequency, var space = spaceFrequency else { return nil }
        if swappedTones && profile == nil { swap(&mark, &space) }
        var words = ["modem", "rx"]
        if let p = profile {
            words += ["--profile", p.name]
            if let b = decodedRate ?? measuredBaudRate, abs(b / p.baudRate - 1) > 0.03 { words += ["--baud", FSKAnalysis.rate(b)] }
        } else {
            guard let b = decodedRate ?? baudRate else { return nil }
            let shown = FSKAnalysis.rate(b)
            words += ["--baud", shown]
            let d = FSKProfile.defaultTones(forBaudRate: Double(shown) ?? b)
            let matches = abs(mark / d.mark - 1) <= 0.03 && abs(space / d.space - 1) <= 0.03
            if !matches {
                words += ["--mark", FSKAnalysis.commandFrequency(mark), "--space", FSKAnalysis.commandFrequency(space)]
            }
            if framing == nil, keying?.halfBitIntervals == true && b < 100 { words += ["--framing", "baudot"] }
        }
        if let framing, framing.lowercased() != (profile?.defaultFraming ?? "8N1").lowercased() { words += ["--framing", framing] }
        if channel != 0 { words += ["--channel", String(channel)] }
        words.append(FSKAnalysis.shellQuoted(path))
        return words.joined(separator: " ")
    }

    /// The report, one finding per line, without the file name or the command line.
    public var summaryLines: [String] {
        var lines: [String] = []
        switch finding {
        case .empty:
            return ["no tones found: the input has no samples"]
        case .silent:
            return ["no tones found: the input is silent"]
        case .noTones:
            return ["no tones found: nothing stands out of the noise (level \(FSKAnalysis.dB(level)) dBFS)"]
        case .steadyTone(let f):
            return ["no keying found: one steady tone at \(FSKAnalysis.hz(f))"]
        case .unkeyed(let f):
            if let b = band, !b.isSingleLine {
                return ["no tones found: energy in \(Int(b.lowFrequency.rounded()))-\(Int(b.highFrequency.rounded())) Hz but no regular two-tone keying"]
            }
            return ["no tones found: energy around \(FSKAnalysis.hz(f)) but no regular two-tone keying"]
        case .fsk:
            break
        }
        if let m = markFrequency, let s = spaceFrequency {
            let source: String
            switch markSource {
            case .profile: source = "mark/space as in \(profile?.name ?? "the profile")"
            case .idleTone: source = "mark is the idle tone"
            case .convention: source = "mark guessed by minimodem's convention for the rate"
            }
            lines.append("tones     \(FSKAnalysis.hz(m)) mark, \(FSKAnalysis.hz(s)) space (shift \(FSKAnalysis.hz(abs(s - m))); \(source))")
        }
        if let b = measuredBaudRate {
            var text = "baud      \(FSKAnalysis.fixed(b, b < 100 ? 2 : 1)) measured"
            if let std = standardBaudRate { text += ", \(FSKAnalysis.rate(std)) standard" }
            text += " (regularity \(FSKAnalysis.fixed(regularity, 2)))"
            if keying?.halfBitIntervals == true { text += "; runs of n+1/2 bits: 1.5 stop bits" }
            lines.append(text)
        } else {
            lines.append("baud      unknown (no regular rhythm)")
        }
        if let snr {
            var text = "SNR       \(FSKAnalysis.dB(snr)) dB in 0-\(sampleRate / 2) Hz"
            if let e = ebN0 { text += ", Eb/N0 \(FSKAnalysis.dB(e)) dB" }
            lines.append(text)
        }
        if let p = profile {
            lines.append("profile   \(p.name) (\(FSKAnalysis.rate(p.baudRate)) baud, mark \(FSKAnalysis.rate(p.markFrequency)) Hz, space \(FSKAnalysis.rate(p.spaceFrequency)) Hz)")
        } else {
            lines.append("profile   none matches")
        }
        for n in notes { lines.append("note      \(n)") }
        return lines
    }

    // MARK: Formatting (no Foundation in this layer)

    /// `v` with `decimals` digits after the point.
    static func fixed(_ v: Double, _ decimals: Int) -> String { DecimalFormat.fixed(v, decimals) }

    /// A frequency, e.g. "1200.3 Hz".
    static func hz(_ v: Double) -> String { fixed(v, 1) + " Hz" }

    /// A level in dB with one decimal, capped at ±99.
    static func dB(_ v: Double) -> String {
        if v > 99 { return "> 99" }
        if v < -99 { return "< -99" }
        return fixed(v, 1)
    }

    /// A rate or frequency as given on a command line: integers plain, others to 2 decimals ("45.45").
    static func rate(_ v: Double) -> String {
        if v >= 100 || abs(v - v.rounded()) < 0.005 { return String(Int(v.rounded())) }
        return fixed(v, 2)
    }

    /// A tone for the command line: whole hertz, or the nearest multiple of 5 Hz when that is
    /// within 0.25% (senders are set to round numbers; the measurement is good to about that).
    static func commandFrequency(_ f: Double) -> String {
        let five = (f / 5).rounded() * 5
        return String(Int(abs(five - f) <= 0.0025 * f ? five : f.rounded()))
    }

    /// `path` quoted for a POSIX shell when it holds anything but safe characters.
    public static func shellQuoted(_ path: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-:=@%,")
        if !path.isEmpty && path.allSatisfy({ safe.contains($0) }) { return path }
        return "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
