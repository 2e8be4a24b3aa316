import ArgumentParser
import ModemAudio
import ModemDSP
import ModemLink
import SwiftModem

/// `--profile`: every named tone plan (``FSKProfile/all``), `ofdm` (the high-rate modem of `tx` and
/// `rx`) and `hf` (the modem for a radio's SSB channel), listed by `--help`.
enum ProfileArgument: String, CaseIterable, ExpressibleByArgument {
    case bell103, bell103Answer = "bell103-answer", bell202, v21, v21Answer = "v21-answer", v23, v23Back = "v23-back"
    case rtty, hf300, g3ruh, qpsk2400, psk4800 = "8psk4800", ofdm, hf

    /// Accepts any case, as the profile names always were.
    init?(argument: String) { self.init(rawValue: argument.lowercased()) }

    /// The profile's name for ``ModemSettings``.
    var name: String { rawValue }
}

/// `--v26`: the two phasings of V.26 QPSK (`--profile qpsk2400`), listed by `--help`.
enum V26Argument: String, CaseIterable, ExpressibleByArgument {
    /// Alternative A, as Dire Wolf 1.4-1.5 (Dire Wolf's `-j`).
    case direwolf
    /// Alternative B, as the MFJ-2400 (Dire Wolf's `-J`).
    case mfj

    /// The PSK mode.
    var mode: PSKMode { self == .mfj ? .v26B : .v26A }
}

/// `--format`: the sample encodings of ``AudioSampleFormat``, listed by `--help`.
enum SampleFormatArgument: String, CaseIterable, ExpressibleByArgument {
    case u8, s16, s24, s32, f32

    /// The encoding written.
    var sampleFormat: AudioSampleFormat { AudioSampleFormat(rawValue: rawValue)! }
}

/// `--mode`: the ways of ``CommunicationMode``, listed by `--help`.
enum ModeArgument: String, CaseIterable, ExpressibleByArgument {
    case masterSlave = "master-slave", duplex

    /// The library's mode.
    var mode: CommunicationMode { CommunicationMode(rawValue: rawValue)! }
}

/// Line options shared by `tx` and `rx`.
struct LineOptions: ParsableArguments {
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Baud rate (\(ModemSettings.baudRates.lowerBound.formatted)...\(ModemSettings.baudRates.upperBound.formatted)); alone it picks minimodem's default tones for that rate (1200 -> 1200/2200 Hz, 300 -> 1270/1070 Hz).", valueName: "N"))
    var baud: Double?

    @Option(name: .long, help: ArgumentHelp("A standard tone plan (hf300 and g3ruh carry AX.25: --framing ax25), qpsk2400 (2400 bit/s QPSK, V.26) or 8psk4800 (4800 bit/s 8PSK, V.27): Dire Wolf's PSK packet modes, AX.25 only; or ofdm: the high-rate modem, or hf: the modem for a radio's SSB channel, 300-2600 Hz (see below).", valueName: "P"))
    var profile: ProfileArgument?

    @Option(name: .long, help: ArgumentHelp("With --profile qpsk2400: the V.26 phasing, direwolf (alternative A, Dire Wolf's -j, the default) or mfj (alternative B, the MFJ-2400's, Dire Wolf's -J). Both ends must use the same.", valueName: "direwolf|mfj"))
    var v26: V26Argument?

    /// Whether the high-rate OFDM modem was asked for.
    var isOFDM: Bool { profile == .ofdm }
    /// Whether the HF (SSB channel) modem was asked for.
    var isHF: Bool { profile == .hf }

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Mark (1, idle) frequency, overrides the profile.", valueName: "HZ"))
    var mark: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Space (0, start bit) frequency, overrides the profile.", valueName: "HZ"))
    var space: Double?

    @Option(name: .long, help: ArgumentHelp("Character framing: data bits 5-8, parity N/E/O/M/S, stop bits 1/1.5/2 (8N1, 7E1, 8N2, 5N1.5), 'baudot', or 'ax25' (packet radio). Default: the profile's (8N1; baudot for rtty, ax25 for hf300, g3ruh, qpsk2400 and 8psk4800).", valueName: "F"))
    var framing: String?

    func settings() throws -> ModemSettings {
        if baud == nil, profile == nil {
            throw ValidationError("give --baud N or --profile P (e.g. --baud 1200, --profile bell103)")
        }
        if profile == .ofdm { throw ValidationError("--profile ofdm is the high-rate modem of tx and rx, not an FSK tone plan") }
        if profile == .hf { throw ValidationError("--profile hf is the SSB channel modem of tx and rx, not an FSK tone plan") }
        do {
            if v26 != nil, profile != .qpsk2400 { throw ValidationError("--v26 goes with --profile qpsk2400") }
            return try ModemSettings(profile: profile?.name, baudRate: baud, mark: mark, space: space, framing: framing, v26: v26?.mode)
        } catch let e as ModemSettingsError {
            throw ValidationError(e.description)
        }
    }
}

/// Channel-protocol options shared by `link-test` and `device`.
struct LinkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("How the two ends take turns.", valueName: "MODE")) var mode: ModeArgument = .masterSlave
    @Option(parsing: .unconditional, help: ArgumentHelp("Line rate in baud (50...9600; Bell 202 tones at 1200).", valueName: "N")) var baud: Double = 1200
    @Option(parsing: .unconditional, help: ArgumentHelp("Sample rate in Hz.", valueName: "HZ")) var sampleRate: Int = 48000
    @Option(help: ArgumentHelp("Forward error correction: auto (code frames while the line is noisy), on, off. Either end decodes both.", valueName: "auto|on|off"))
    var fec: FECArgument = .auto
    @Option(help: ArgumentHelp("The modem under the link: afsk (at --baud), ofdm (the high-rate modem, its rate adapted to the line by both ends; 48 kHz) or hf (the SSB radio modem, 300-2600 Hz, its rate adapted likewise; a multiple of 8 kHz).", valueName: "afsk|ofdm|hf"))
    var profile: LinkModemArgument = .afsk

    func validate() throws {
        if profile == .ofdm {
            guard sampleRate == 48000 else { throw ValidationError("--profile ofdm runs at 48000 Hz, not --sample-rate \(sampleRate)") }
        }
        if profile == .hf {
            guard sampleRate % 8000 == 0 else { throw ValidationError("--profile hf runs at a whole multiple of 8000 Hz, not --sample-rate \(sampleRate)") }
        }
        guard baud.isFinite, (50...9600).contains(baud) else { throw ValidationError("--baud must be 50...9600") }
        guard (8000...192_000).contains(sampleRate) else { throw ValidationError("--sample-rate must be 8000...192000 Hz") }
        guard baud * 4 <= Double(sampleRate) else {
            throw ValidationError("--baud \(baud.formatted) needs --sample-rate of at least \(Int(baud * 4)) Hz")
        }
    }

    /// The protocol parameters (after ``validate()``).
    func configuration(framePayload: Int = 1024, latencySeconds: Double) -> LinkConfiguration {
        if profile == .ofdm {
            return LinkConfiguration(mode: mode.mode, framePayload: framePayload, windowFrames: framePayload >= 2048 ? 32 : 16,
                                     latencySeconds: latencySeconds, timing: OFDMLinkModem.timing(latencySeconds: latencySeconds))
        }
        if profile == .hf {
            return HFLinkModem.linkConfiguration(mode: mode.mode, framePayload: framePayload, windowFrames: framePayload >= 1024 ? 16 : 32,
                                                 latencySeconds: latencySeconds)
        }
        return LinkConfiguration(mode: mode.mode, baudRate: baud, framePayload: framePayload, latencySeconds: latencySeconds,
                                 forwardErrorCorrection: fec.value)
    }

    /// The in-memory medium's signal level for setting noise from an SNR.
    var signalAmplitude: Double { profile == .ofdm ? OFDMLinkModem.signalAmplitude : profile == .hf ? HFLinkModem.signalAmplitude : 0.5 }
}

/// Sample rates the demodulators take (an input outside them is refused as bad input, status 1).
let supportedSampleRates = 8000...192_000

/// The longest run a `--seconds` or `--timeout` option accepts: a year. (Beyond it a duration or a
/// sample count would overflow, and no run of this tool is meant to last longer.)
let maximumSeconds: Double = 365 * 86400

/// The one range check of a duration option, where it is parsed: `value` must be a finite number of
/// seconds in `range` (a usage error naming the option, the range and the value otherwise).
func checkSeconds(_ value: Double, _ option: String, in range: ClosedRange<Double>, note: String = "") throws {
    guard value.isFinite, range.contains(value) else {
        throw ValidationError("\(option) must be \(range.lowerBound.formatted) to \(range.upperBound.formatted) seconds\(note), not \(value.formatted)")
    }
}

extension Double {
    /// The number without a trailing ".0" when it is whole.
    var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self) }
}

/// `--profile afsk|ofdm|hf` of the link commands: the modem under the channel protocol.
enum LinkModemArgument: String, CaseIterable, ExpressibleByArgument {
    case afsk, ofdm, hf
}

/// `--profile afsk|ofdm|hf` of the messaging commands: the modem under `audio:` endpoints.
struct AudioModemOptions: ParsableArguments {
    @Option(help: ArgumentHelp("For audio: endpoints, the modem under the link: afsk (1200 baud), ofdm (the high-rate modem) or hf (the SSB radio modem, 300-2600 Hz), the rate of the last two agreed by both ends from the line. Both ends must use the same.", valueName: "afsk|ofdm|hf"))
    var profile: LinkModemArgument = .afsk

    /// Refuses `--profile ofdm` and `hf` for endpoints that are not sound.
    func check(endpoint: String?) throws {
        if profile != .afsk, let e = endpoint, !e.hasPrefix("audio:") {
            throw ValidationError("--profile \(profile.rawValue) is for audio: endpoints, not \(e)")
        }
    }
}

/// `--line cable|speaker|hf|hf-fading`: a simulated line for the in-memory channel.
enum LineArgument: String, CaseIterable, ExpressibleByArgument {
    case cable, speaker, hf, hfFading = "hf-fading"

    /// Its impairments (``LinkImpairments/cable(seed:)``, ``LinkImpairments/speaker(seed:)``,
    /// ``LinkImpairments/hf(snr3k:fading:seed:)``); `snr`, when given, replaces its SNR (SNR3k on
    /// the HF lines).
    func impairments(seed: UInt64, snr: Double?) -> LinkImpairments {
        var i: LinkImpairments
        switch self {
        case .cable: i = .cable(seed: seed)
        case .speaker: i = .speaker(seed: seed)
        case .hf, .hfFading: return .hf(snr3k: snr ?? 15, fading: self == .hfFading, seed: seed)
        }
        if let snr { i.snrDB = snr }
        return i
    }
}

/// `--fec auto|on|off`.
struct FECArgument: ExpressibleByArgument {
    let value: LinkFEC
    init?(argument: String) {
        guard let v = LinkFEC(rawValue: argument.lowercased()) else { return nil }
        value = v
    }
    static let auto = FECArgument(argument: "auto")!
    static var allValueStrings: [String] { LinkFEC.allCases.map(\.rawValue) }
    var defaultValueDescription: String { value.rawValue }
}
