/// A named FSK tone plan: baud rate, mark and space frequencies, and the framing it is used with.
///
/// Mark is the binary 1 (idle, stop bit); space is the binary 0 (start bit).
public struct FSKProfile: Sendable, Hashable, CustomStringConvertible {
    /// The name used on the command line (`--profile NAME`).
    public var name: String
    /// Bits per second (baud), > 0.
    public var baudRate: Double
    /// Frequency of the mark tone (binary 1), in Hz.
    public var markFrequency: Double
    /// Frequency of the space tone (binary 0), in Hz.
    public var spaceFrequency: Double
    /// The character framing the profile is normally used with, e.g. "8N1", or "baudot" for RTTY.
    public var defaultFraming: String
    /// A one-line description for help text.
    public var summary: String
    /// True for baseband (not audio-tone) signalling such as G3RUH 9600: the tones are unused.
    public var isBaseband = false
    /// For the phase-shift keyed packet modes (`qpsk2400`, `8psk4800`): the mode; the tones are unused
    /// and ``baudRate`` is the bit rate. Nil for FSK and baseband.
    public var psk: PSKMode? = nil

    /// Creates a profile.
    public init(name: String, baudRate: Double, markFrequency: Double, spaceFrequency: Double,
                defaultFraming: String = "8N1", summary: String = "") {
        self.name = name
        self.baudRate = baudRate
        self.markFrequency = markFrequency
        self.spaceFrequency = spaceFrequency
        self.defaultFraming = defaultFraming
        self.summary = summary
    }

    public var description: String {
        if isBaseband { return "\(name): \(Self.format(baudRate)) baud baseband, \(defaultFraming)" }
        if let psk { return "\(name): \(Self.format(psk.bitRate)) bit/s \(psk == .v27 ? "8PSK" : "QPSK"), \(Self.format(psk.symbolRate)) baud on \(Self.format(psk.carrierFrequency)) Hz, \(defaultFraming)" }
        return "\(name): \(Self.format(baudRate)) baud, mark \(Self.format(markFrequency)) Hz, space \(Self.format(spaceFrequency)) Hz, \(defaultFraming)"
    }

    static func format(_ v: Double) -> String {
        v == v.rounded() ? String(Int(v)) : String(v)
    }

    /// Bell 103 originating side: 300 baud, mark 1270 Hz, space 1070 Hz.
    public static let bell103 = FSKProfile(name: "bell103", baudRate: 300, markFrequency: 1270, spaceFrequency: 1070,
                                           summary: "Bell 103 originate, 300 baud")
    /// Bell 103 answering side: 300 baud, mark 2225 Hz, space 2025 Hz.
    public static let bell103Answer = FSKProfile(name: "bell103-answer", baudRate: 300, markFrequency: 2225, spaceFrequency: 2025,
                                                 summary: "Bell 103 answer, 300 baud")
    /// Bell 202: 1200 baud, mark 1200 Hz, space 2200 Hz.
    public static let bell202 = FSKProfile(name: "bell202", baudRate: 1200, markFrequency: 1200, spaceFrequency: 2200,
                                           summary: "Bell 202, 1200 baud")
    /// ITU-T V.21 channel 1 (originate): 300 baud, mark 980 Hz, space 1180 Hz.
    public static let v21 = FSKProfile(name: "v21", baudRate: 300, markFrequency: 980, spaceFrequency: 1180,
                                       summary: "ITU-T V.21 channel 1, 300 baud")
    /// ITU-T V.21 channel 2 (answer): 300 baud, mark 1650 Hz, space 1850 Hz.
    public static let v21Answer = FSKProfile(name: "v21-answer", baudRate: 300, markFrequency: 1650, spaceFrequency: 1850,
                                             summary: "ITU-T V.21 channel 2, 300 baud")
    /// ITU-T V.23 forward channel: 1200 baud, mark 1300 Hz, space 2100 Hz.
    public static let v23 = FSKProfile(name: "v23", baudRate: 1200, markFrequency: 1300, spaceFrequency: 2100,
                                       summary: "ITU-T V.23 forward channel, 1200 baud")
    /// ITU-T V.23 backward channel: 75 baud, mark 390 Hz, space 450 Hz.
    public static let v23Back = FSKProfile(name: "v23-back", baudRate: 75, markFrequency: 390, spaceFrequency: 450,
                                           summary: "ITU-T V.23 backward channel, 75 baud")
    /// Amateur RTTY: 45.45 baud Baudot, 170 Hz shift (mark 1585 Hz, space 1415 Hz, as minimodem), 1.5 stop bits.
    public static let rtty = FSKProfile(name: "rtty", baudRate: 45.45, markFrequency: 1585, spaceFrequency: 1415,
                                        defaultFraming: "baudot", summary: "RTTY, 45.45 baud Baudot, 170 Hz shift, 1.5 stop bits")

    /// HF packet radio: 300 baud AFSK, mark 1600 Hz, space 1800 Hz, AX.25 (as Dire Wolf's `-B 300`).
    public static let hf300 = FSKProfile(name: "hf300", baudRate: 300, markFrequency: 1600, spaceFrequency: 1800,
                                         defaultFraming: "ax25", summary: "HF packet, 300 baud AX.25, 1600/1800 Hz")

    /// G3RUH 9600 baud packet radio: scrambled NRZI baseband, AX.25 (as Dire Wolf's `-B 9600`).
    public static let g3ruh: FSKProfile = {
        var p = FSKProfile(name: "g3ruh", baudRate: 9600, markFrequency: 0, spaceFrequency: 0,
                           defaultFraming: "ax25", summary: "G3RUH 9600 baud packet, scrambled baseband")
        p.isBaseband = true
        return p
    }()

    /// 2400 bit/s QPSK packet radio (V.26, 1200 baud on an 1800 Hz carrier), AX.25, as Dire Wolf's
    /// `-B 2400`: V.26 alternative A (Dire Wolf's `-j`) unless ``ModemSettings`` is given alternative B
    /// (the MFJ-2400's, `-J`).
    public static let qpsk2400: FSKProfile = {
        var p = FSKProfile(name: "qpsk2400", baudRate: 2400, markFrequency: 1800, spaceFrequency: 1800,
                           defaultFraming: "ax25", summary: "2400 bit/s QPSK packet (V.26), 1800 Hz carrier")
        p.psk = .v26A
        return p
    }()

    /// 4800 bit/s 8PSK packet radio (V.27, 1600 baud on an 1800 Hz carrier), AX.25, as Dire Wolf's `-B 4800`.
    public static let psk4800: FSKProfile = {
        var p = FSKProfile(name: "8psk4800", baudRate: 4800, markFrequency: 1800, spaceFrequency: 1800,
                           defaultFraming: "ax25", summary: "4800 bit/s 8PSK packet (V.27), 1800 Hz carrier")
        p.psk = .v27
        return p
    }()

    /// Every named profile.
    public static let all: [FSKProfile] = [.bell103, .bell103Answer, .bell202, .v21, .v21Answer, .v23, .v23Back, .rtty, .hf300, .g3ruh,
                                           .qpsk2400, .psk4800]

    /// The profile with this name (case-insensitive), or nil.
    public static func named(_ name: String) -> FSKProfile? {
        let n = name.lowercased()
        return all.first { $0.name == n }
    }

    /// The tones minimodem 0.24 picks for a baud rate alone, so that `--baud N` interoperates with `minimodem N`:
    /// from 400 baud up, mark = baud/2 + 600 and space = mark + baud*5/6 (1200 -> 1200/2200);
    /// from 100 to 399 baud, Bell 103 tones (1270/1070); below 100 baud, RTTY tones (1585/1415).
    /// - Parameter baudRate: bits per second, > 0.
    public static func defaultTones(forBaudRate baudRate: Double) -> (mark: Double, space: Double) {
        if baudRate >= 400 {
            // minimodem computes this in integer arithmetic for an integer rate.
            let b = baudRate.rounded(.down)
            let mark = (b / 2).rounded(.down) + 600
            let shift = (b * 5 / 6).rounded(.towardZero)
            return (mark, mark + shift)
        } else if baudRate >= 100 {
            return (1270, 1070)
        } else {
            return (1585, 1415)
        }
    }

    /// A profile for an arbitrary baud rate with minimodem's default tones.
    public static func forBaudRate(_ baudRate: Double) -> FSKProfile {
        let t = defaultTones(forBaudRate: baudRate)
        return FSKProfile(name: "custom", baudRate: baudRate, markFrequency: t.mark, spaceFrequency: t.space,
                          summary: "\(format(baudRate)) baud")
    }
}

/// Why FSK parameters were refused.
public struct FSKParameterError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, naming the parameter and its valid range.
    public var description: String
    /// Creates an error with its explanation.
    public init(_ description: String) { self.description = description }
}

/// Checked FSK modem parameters shared by the modulator and the demodulator.
public struct FSKConfiguration: Sendable, Hashable {
    /// Samples per second, in Hz (8000...192000).
    public let sampleRate: Double
    /// Bits per second, in baud (> 0, and at most sampleRate/4).
    public let baudRate: Double
    /// Mark (binary 1) frequency, in Hz (0 < f < sampleRate/2).
    public let markFrequency: Double
    /// Space (binary 0) frequency, in Hz (0 < f < sampleRate/2, different from the mark).
    public let spaceFrequency: Double

    /// Checks and stores the parameters.
    /// - Throws: ``FSKParameterError`` naming the parameter that is out of range.
    public init(sampleRate: Double, baudRate: Double, markFrequency: Double, spaceFrequency: Double) throws {
        guard sampleRate.isFinite, (8000...192_000).contains(sampleRate) else {
            throw FSKParameterError("sample rate \(sampleRate) Hz is outside 8000...192000 Hz")
        }
        guard baudRate.isFinite, baudRate > 0, baudRate <= sampleRate / 4 else {
            throw FSKParameterError("baud rate \(baudRate) is outside 0 < baud <= sample rate / 4 (\(sampleRate / 4)) for a \(Int(sampleRate)) Hz sample rate")
        }
        for (name, f) in [("mark", markFrequency), ("space", spaceFrequency)] {
            guard f.isFinite, f > 0, f < sampleRate / 2 else {
                throw FSKParameterError("\(name) frequency \(f) Hz is outside 0 < f < \(sampleRate / 2) Hz (half the \(Int(sampleRate)) Hz sample rate)")
            }
        }
        guard abs(markFrequency - spaceFrequency) >= baudRate * 0.1 else {
            throw FSKParameterError("mark \(markFrequency) Hz and space \(spaceFrequency) Hz are too close for \(baudRate) baud (need at least baud/10 apart)")
        }
        self.sampleRate = sampleRate
        self.baudRate = baudRate
        self.markFrequency = markFrequency
        self.spaceFrequency = spaceFrequency
    }

    /// Samples per bit (may be fractional).
    public var samplesPerBit: Double { sampleRate / baudRate }
}
