import ModemDSP

/// Why modem settings were refused.
public struct ModemSettingsError: Error, CustomStringConvertible, Sendable {
    /// What is wrong and what would be valid.
    public var description: String
    /// Creates an error with its explanation.
    public init(_ description: String) { self.description = description }
}

/// Everything that defines a line: tone plan, baud rate, framing.
///
/// Built from the command line's `--profile`, `--baud`, `--mark`, `--space` and `--framing`.
public struct ModemSettings: Sendable, Hashable {
    /// Bits per second.
    public var baudRate: Double
    /// Mark (binary 1, idle) frequency in Hz.
    public var markFrequency: Double
    /// Space (binary 0, start bit) frequency in Hz.
    public var spaceFrequency: Double
    /// Character framing on the line.
    public var framing: LineFraming
    /// The profile name the settings came from, or "custom".
    public var profileName: String
    /// True for baseband signalling (G3RUH 9600): there are no tones.
    public var isBaseband: Bool
    /// For the PSK packet profiles (`qpsk2400`, `8psk4800`): the mode (``baudRate`` is then its bit
    /// rate and the tones are unused). Nil for FSK and baseband.
    public var psk: PSKMode?

    /// True for FSK tone plans (neither baseband nor PSK): the profiles ``configuration(sampleRate:)`` accepts.
    public var isFSK: Bool { !isBaseband && psk == nil }

    /// Baud rates accepted: from 1 (slower would need hours of audio per character) to 48000
    /// (a quarter of the highest sample rate, 192 kHz).
    public static let baudRates: ClosedRange<Double> = 1...48000

    /// The slowest line AX.25 framing is sent at (packet radio uses 300, 1200 and 9600).
    public static let minimumPacketBaudRate: Double = 100

    /// Checks a baud rate against ``baudRates``.
    static func checkBaudRate(_ b: Double) throws(ModemSettingsError) {
        guard b.isFinite, baudRates.contains(b) else {
            throw ModemSettingsError("baud rate \(b) is outside \(Int(baudRates.lowerBound))...\(Int(baudRates.upperBound))")
        }
    }

    /// Resolves settings the way the CLI does.
    /// - Parameters:
    ///   - profile: a profile name (see ``FSKProfile/all``), or nil.
    ///   - baudRate: a baud rate; alone it picks minimodem's default tones for that rate.
    ///   - mark: overrides the mark frequency, Hz.
    ///   - space: overrides the space frequency, Hz.
    ///   - framing: `8N1`-style text or `baudot`; default: the profile's framing, else 8N1.
    ///   - v26: for `qpsk2400`, the V.26 phasing (``PSKMode/v26A``, the default, or ``PSKMode/v26B``).
    /// - Throws: ``ModemSettingsError`` for an unknown profile, conflicting or out-of-range values
    ///   (a baud rate outside ``baudRates``, a tone that is not a positive frequency below 96 kHz).
    public init(profile: String? = nil, baudRate: Double? = nil, mark: Double? = nil, space: Double? = nil,
                framing: String? = nil, v26: PSKMode? = nil) throws {
        var p: FSKProfile
        if let name = profile {
            guard let found = FSKProfile.named(name) else {
                let names = FSKProfile.all.map(\.name).joined(separator: ", ")
                throw ModemSettingsError("unknown profile '\(name)'; known profiles: \(names)")
            }
            p = found
            if p.psk != nil, baudRate != nil || mark != nil || space != nil {
                throw ModemSettingsError("profile \(p.name) has a fixed rate and carrier: --baud, --mark and --space do not go with it")
            }
            if let b = baudRate {
                try Self.checkBaudRate(b)
                p.baudRate = b
            }
        } else if let b = baudRate {
            try Self.checkBaudRate(b)
            p = FSKProfile.forBaudRate(b)
        } else {
            p = .bell202
        }
        for (name, f) in [("mark", mark), ("space", space)] {
            if let f, !(f.isFinite && f > 0 && f < 96000) {
                throw ModemSettingsError("\(name) frequency \(f) Hz is outside 0 < f < 96000 Hz")
            }
        }
        if let m = mark { p.markFrequency = m }
        if let s = space { p.spaceFrequency = s }
        self.baudRate = p.baudRate
        self.markFrequency = p.markFrequency
        self.spaceFrequency = p.spaceFrequency
        self.profileName = p.name
        self.isBaseband = p.isBaseband
        self.psk = p.psk
        if let v26 {
            guard p.psk == .v26A || p.psk == .v26B, v26 == .v26A || v26 == .v26B else {
                throw ModemSettingsError("a V.26 phasing goes with profile qpsk2400 only")
            }
            self.psk = v26
        }
        self.framing = try LineFraming(parsing: framing ?? p.defaultFraming)
        if !self.framing.isAsynchronous, self.baudRate < Self.minimumPacketBaudRate {
            // A frame is rendered whole: at 1 baud one would be gigabytes of audio.
            throw ModemSettingsError("AX.25 framing needs at least \(Int(Self.minimumPacketBaudRate)) baud, got \(self.baudRate)")
        }
        if isBaseband || psk != nil, self.framing.isAsynchronous {
            throw ModemSettingsError("profile \(p.name) carries AX.25 only (--framing ax25)")
        }
    }

    /// Checks the settings against a sample rate.
    /// - Throws: ``ModemSettingsError`` when a tone or the baud rate does not fit the sample rate.
    public func configuration(sampleRate: Int) throws -> FSKConfiguration {
        if isBaseband {
            throw ModemSettingsError("profile \(profileName) is baseband, not FSK; only packet reception supports it")
        }
        if psk != nil {
            throw ModemSettingsError("profile \(profileName) is PSK, not FSK; it carries AX.25 only")
        }
        do {
            return try FSKConfiguration(sampleRate: Double(sampleRate), baudRate: baudRate,
                                        markFrequency: markFrequency, spaceFrequency: spaceFrequency)
        } catch let e as FSKParameterError {
            throw ModemSettingsError(e.description)
        }
    }

    /// A one-line summary, e.g. "1200 baud, mark 1200 Hz, space 2200 Hz, 8N1".
    public var summary: String {
        func f(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        if isBaseband { return "\(f(baudRate)) baud baseband, \(framing)" }
        if let psk {
            let kind = psk == .v27 ? "8PSK (V.27)" : psk == .v26A ? "QPSK (V.26 A)" : "QPSK (V.26 B, MFJ-2400)"
            return "\(f(psk.bitRate)) bit/s \(kind), \(f(psk.symbolRate)) baud on \(f(psk.carrierFrequency)) Hz, \(framing)"
        }
        return "\(f(baudRate)) baud, mark \(f(markFrequency)) Hz, space \(f(spaceFrequency)) Hz, \(framing)"
    }
}
