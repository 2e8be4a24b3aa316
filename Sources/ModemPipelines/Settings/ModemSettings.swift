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

    /// Resolves settings the way the CLI does.
    /// - Parameters:
    ///   - profile: a profile name (see ``FSKProfile/all``), or nil.
    ///   - baudRate: a baud rate; alone it picks minimodem's default tones for that rate.
    ///   - mark: overrides the mark frequency, Hz.
    ///   - space: overrides the space frequency, Hz.
    ///   - framing: `8N1`-style text or `baudot`; default: the profile's framing, else 8N1.
    /// - Throws: ``ModemSettingsError`` for an unknown profile, conflicting or out-of-range values.
    public init(profile: String? = nil, baudRate: Double? = nil, mark: Double? = nil, space: Double? = nil,
                framing: String? = nil) throws {
        var p: FSKProfile
        if let name = profile {
            guard let found = FSKProfile.named(name) else {
                let names = FSKProfile.all.map(\.name).joined(separator: ", ")
                throw ModemSettingsError("unknown profile '\(name)'; known profiles: \(names)")
            }
            p = found
            if let b = baudRate {
                guard b.isFinite, b > 0 else { throw ModemSettingsError("baud rate must be a positive number, got \(b)") }
                p.baudRate = b
            }
        } else if let b = baudRate {
            guard b.isFinite, b > 0 else { throw ModemSettingsError("baud rate must be a positive number, got \(b)") }
            p = FSKProfile.forBaudRate(b)
        } else {
            p = .bell202
        }
        if let m = mark { p.markFrequency = m }
        if let s = space { p.spaceFrequency = s }
        self.baudRate = p.baudRate
        self.markFrequency = p.markFrequency
        self.spaceFrequency = p.spaceFrequency
        self.profileName = p.name
        self.isBaseband = p.isBaseband
        self.framing = try LineFraming(parsing: framing ?? p.defaultFraming)
        if isBaseband, self.framing.isAsynchronous {
            throw ModemSettingsError("profile \(p.name) carries AX.25 only (--framing ax25)")
        }
    }

    /// Checks the settings against a sample rate.
    /// - Throws: ``ModemSettingsError`` when a tone or the baud rate does not fit the sample rate.
    public func configuration(sampleRate: Int) throws -> FSKConfiguration {
        if isBaseband {
            throw ModemSettingsError("profile \(profileName) is baseband, not FSK; only packet reception supports it")
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
        return "\(f(baudRate)) baud, mark \(f(markFrequency)) Hz, space \(f(spaceFrequency)) Hz, \(framing)"
    }
}
