import ModemAudio
import ModemDSP

/// Which framing a recording's FSK carries: tried by decoding, not guessed from the tones.
///
/// `modem analyze` finds the tones and the rate; the framing (AX.25 packets, or the UART character
/// format: data bits, parity, stop bits) is what decides whether the `modem rx` command it prints
/// decodes anything. This decodes the first ``maximumSeconds`` of the file with each candidate and
/// keeps the one that explains it best:
/// - AX.25 (HDLC flags, frames whose FCS checks), at the profile's own rate when there is one (a few
///   frames give a poor measured rate): any frame decoded settles it;
/// - otherwise the profile's own framing and each UART format in ``uartCandidates`` (and Baudot below
///   100 baud): among those with at most one character in 50 with a bad stop bit or parity, the one
///   that decodes the most line bits; a format with parity wins a tie, since it explains a bit that
///   the format without parity takes for data (7E1 read as 8N1 gives no framing error, only wrong
///   bytes); when none is that clean, the fewest errors per character;
/// - without a profile, with the tones both ways round too (which tone is mark is a convention the
///   analysis can only guess).
public enum FramingProbe {
    /// What the probe found.
    public struct Finding: Sendable, Equatable {
        /// The framing that decodes it (`ax25`, `7E1`, ...).
        public var framing: String
        /// The rate that decoded it when it is not the one given (for AX.25: a few frames measure a
        /// poor rate, and the profile's, or the standard 1200 or 300, decodes); nil: as given.
        public var baudRate: Double?
        /// Characters or frames decoded with it.
        public var decoded: Int
        /// Of the characters, those with a bad stop bit or parity (0 for AX.25).
        public var errors: Int
        /// Whether it decodes with mark and space the other way round than given (never with a profile;
        /// AX.25, NRZI-coded, does not care).
        public var swappedTones = false
        /// Line bits of the characters decoded without error (characters times bits per character).
        public var lineBits = 0
        /// Whether the finding is doubtful: more than one character in 20 in error.
        public var isUncertain: Bool { decoded == 0 || errors * 20 > decoded }
    }

    /// The UART formats tried, the plainest first (it wins ties).
    public static let uartCandidates = ["8N1", "7E1", "7O1", "8E1", "8O1", "8N2"]

    /// Seconds of the file decoded per candidate.
    public static let maximumSeconds = 30.0

    /// Decodes the start of `path` with each candidate framing on the given line.
    /// - Parameters:
    ///   - path: the recording.
    ///   - channel: the channel analysed, counted from 0.
    ///   - profile: the profile the tones matched, if any.
    ///   - baudRate: the rate to decode at when there is no profile, or the measured rate that
    ///     differs from the profile's (tried after the profile's own for AX.25).
    ///   - mark: the mark tone, when there is no profile.
    ///   - space: the space tone, when there is no profile.
    /// - Returns: the best finding, or nil when no candidate decoded anything.
    /// - Throws: ``ModemSettingsError`` for a line that cannot be decoded; the audio reader's errors.
    public static func probe(path: String, channel: Int = 0, profile: String?, baudRate: Double?,
                             mark: Double?, space: Double?) throws -> Finding? {
        // The line as found: the profile's tones, or the tones given (the other way round when `swapped`).
        func settings(rate: Double?, framing: String?, swapped: Bool = false) throws -> ModemSettings {
            try ModemSettings(profile: profile, baudRate: rate, mark: profile == nil ? (swapped ? space : mark) : nil,
                              space: profile == nil ? (swapped ? mark : space) : nil, framing: framing)
        }
        // AX.25 at the profile's own rate first (a few frames measure a poor rate), then the measured
        // one, then (no profile) the standard packet rates on the tones found.
        var attempts: [(rate: Double?, reported: Double?)] = []
        if let p = profile, let rate = FSKProfile.named(p)?.baudRate { attempts.append((nil, rate)) }
        if let baudRate { attempts.append((baudRate, nil)) }
        if profile == nil { attempts += [1200.0, 300.0].filter { $0 != baudRate }.map { ($0, $0) } }
        for (rate, reported) in attempts {
            // Below 100 baud there is no packet radio (the settings refuse AX.25 there).
            guard let ax25 = try? settings(rate: rate, framing: "ax25") else { continue }
            let frames = try countFrames(path: path, channel: channel, settings: ax25)
            if frames > 0 { return Finding(framing: "ax25", baudRate: reported, decoded: frames, errors: 0) }
        }
        // The profile's own framing first (baudot for rtty), then the UART formats; baudot below 100 baud.
        let line = try settings(rate: baudRate, framing: nil)
        var candidates = [line.framing.description] + uartCandidates + (line.baudRate < 100 ? ["baudot"] : [])
        candidates = candidates.enumerated().filter { i, c in !candidates[..<i].contains { $0.lowercased() == c.lowercased() } }.map(\.element)
        var best: Finding?
        let polarities = profile == nil && mark != nil && space != nil ? [false, true] : [false]
        for swapped in polarities {
            for framing in candidates {
                let uart = try settings(rate: baudRate, framing: framing, swapped: swapped)
                guard uart.framing.isAsynchronous else { continue }
                let (characters, errors) = try countCharacters(path: path, channel: channel, settings: uart)
                guard characters > 0 else { continue }
                var finding = Finding(framing: framing, baudRate: nil, decoded: characters, errors: errors)
                finding.swappedTones = swapped
                let bits = uart.framing.shape.bitsBeforeStop + Int(uart.framing.shape.stopBits.rounded(.up))
                finding.lineBits = (characters - errors) * bits
                guard let b = best else { best = finding; continue }
                // A format that explains the signal: few errors (the cut at maximumSeconds may end one
                // character early), then the most line bits decoded clean (Baudot read as 8N1 gives a few
                // clean characters, not the whole signal), then parity: a clean format with parity beats
                // a clean one without, since 7E1 read as 8N1 gives no framing error, only wrong bytes.
                let good = errors * 50 <= characters, wasGood = b.errors * 50 <= b.decoded
                let explainsMore = good && wasGood && (finding.lineBits > b.lineBits + bits
                    || (finding.lineBits >= b.lineBits - bits && characters >= 8 && Self.hasParity(framing) && !Self.hasParity(b.framing)))
                let mine = Double(errors) / Double(characters), theirs = Double(b.errors) / Double(b.decoded)
                if explainsMore || (!wasGood && mine < theirs) { best = finding }
            }
        }
        return best
    }

    /// Whether a UART format text (`7E1`) has a parity bit.
    private static func hasParity(_ framing: String) -> Bool {
        let p = framing.uppercased().dropFirst().first
        return p == "E" || p == "O" || p == "M" || p == "S"
    }

    private static func countFrames(path: String, channel: Int, settings: ModemSettings) throws -> Int {
        let reader = try AudioFileReader(path: path, channel: channel)
        let limit = Int(maximumSeconds * Double(reader.sampleRate))
        var read = 0
        let receiver = try PacketReceiver(settings: settings, source: reader)
        let stats = try receiver.run(shouldStop: { read >= limit }, onPacket: { _ in }, onProgress: { read = $0 })
        return stats.decoded
    }

    private static func countCharacters(path: String, channel: Int, settings: ModemSettings) throws -> (Int, Int) {
        let reader = try AudioFileReader(path: path, channel: channel)
        let limit = Int(maximumSeconds * Double(reader.sampleRate))
        var read = 0
        let summary = try Receiver.decodeFile(reader: reader, settings: settings, threads: 1, shouldStop: { read >= limit },
                                              onBytes: { _ in }, onProgress: { read = $0 })
        return (summary.bytes, summary.framingErrors + summary.parityErrors)
    }
}
