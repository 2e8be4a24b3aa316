import ArgumentParser
import ModemAudio
import ModemDSP
import SwiftModem
#if canImport(Glibc)
import Glibc
#endif

struct ImpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "impair",
        abstract: "Pass a WAV file through a simulated channel: noise, clock drift, band limits, hum, gain.",
        discussion: helpText("""
        For testing and benchmarking receivers. The same --seed gives the same noise.
        Examples:
          modem impair clean.wav noisy.wav --snr -3
          modem impair clean.wav phone.wav --band 300-3400 --drift -1000 --hum 50:-30 --gain -40
          modem impair clean.wav room.wav --snr 24 --band 250-9000 --echo 1.5:0.5 --drift 300
        Negative values may follow the option directly (--snr -3) or with = (--snr=-3).
        """)
    )

    @Argument(help: "Input audio file.") var input: String
    @Argument(help: "Output WAV file.") var output: String

    @Option(parsing: .unconditional, help: ArgumentHelp("Full-band signal-to-noise ratio with white Gaussian noise, in dB.", valueName: "DB"))
    var snr: Double?
    @Option(parsing: .unconditional, help: ArgumentHelp("Receiver clock error in ppm (positive: receiver clock fast).", valueName: "PPM"))
    var drift: Double = 0
    @Option(help: ArgumentHelp("Band-pass edges in Hz, e.g. 300-3400.", valueName: "LO-HI"))
    var band: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("De-emphasis: first-order low-pass corner in Hz.", valueName: "HZ"))
    var deemphasis: Double?
    @Option(parsing: .unconditional, help: ArgumentHelp("Gain in dB, applied before noise.", valueName: "DB"))
    var gain: Double = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Mains hum as frequency:level, level in dBFS, e.g. 50:-20.", valueName: "HZ:DBFS"))
    var hum: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("A reflection after the band limits, as delay in ms and gain, e.g. 1.5:0.5 (a room).", valueName: "MS:GAIN"))
    var echo: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("DC offset added, as a fraction of full scale (-1...1).", valueName: "X"))
    var dc: Double = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Noise seed.", valueName: "S"))
    var seed: UInt64 = 1
    @Option(parsing: .unconditional, help: ArgumentHelp("Channel of the input to use, counted from 0.", valueName: "N"))
    var channel: Int = 0
    @Option(help: ArgumentHelp("Sample format of the output (default f32: noise above full scale is kept, not clipped).", valueName: "FMT"))
    var format: SampleFormatArgument = .f32

    func validate() throws {
        guard abs(drift) <= 10000 else { throw ValidationError("--drift must be within ±10000 ppm") }
        guard (-80...40).contains(gain) else { throw ValidationError("--gain must be -80...40 dB") }
        guard abs(dc) <= 1 else { throw ValidationError("--dc must be -1...1") }
        guard channel >= 0 else { throw ValidationError("--channel must be 0 or more") }
        guard drift.isFinite, gain.isFinite, dc.isFinite else { throw ValidationError("--drift, --gain and --dc must be numbers") }
        if let deemphasis { guard deemphasis.isFinite, deemphasis > 0, deemphasis <= 96000 else { throw ValidationError("--deemphasis must be 0 < Hz <= 96000") } }
        if let snr { guard snr.isFinite, (-40...100).contains(snr) else { throw ValidationError("--snr must be -40...100 dB") } }
    }

    func run() async throws {
        var imp = ChannelImpairments()
        imp.clockDriftPPM = drift
        imp.gainDB = gain
        imp.dcOffset = dc
        imp.seed = seed
        imp.deEmphasisCorner = deemphasis
        if let band {
            let parts = band.split(separator: "-").compactMap { Double($0) }
            guard parts.count == 2, parts[0] > 0, parts[1] > parts[0], parts[1] <= 96000 else {
                throw ValidationError("--band '\(band)' is not LO-HI in Hz, e.g. 300-3400")
            }
            imp.bandPass = parts[0]...parts[1]
        }
        if let hum {
            let parts = hum.split(separator: ":").compactMap { Double($0) }
            guard parts.count == 2, parts[0] > 0, parts[0] <= 96000, parts[1] <= 0, parts[1] >= -200 else {
                throw ValidationError("--hum '\(hum)' is not HZ:DBFS, e.g. 50:-20")
            }
            imp.hum = (parts[0], pow(10, parts[1] / 20))
        }
        if let echo {
            let parts = echo.split(separator: ":").compactMap { Double($0) }
            guard parts.count == 2, (0...1000).contains(parts[0]), (-1...1).contains(parts[1]) else {
                throw ValidationError("--echo '\(echo)' is not MS:GAIN with 0...1000 ms and a gain of -1...1, e.g. 1.5:0.5")
            }
            imp.echo = (parts[0] / 1000, parts[1])
        }
        _ = try await reportingErrors {
            try checkOutput(output, option: "OUTPUT", notSameAs: [input])
            // No polling here: a signal ends the run within the grace period, removing the partial output.
            installStopHandlers()
            try FileImpairment.run(input: input, output: output, impairments: imp, snrDB: snr, channel: channel,
                                     format: format.sampleFormat)
        }
    }
}
