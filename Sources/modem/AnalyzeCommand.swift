import ArgumentParser
import SwiftModem

struct AnalyzeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Find the FSK tones, baud rate and SNR of a recording, and the `modem rx` command that decodes it.",
        discussion: """
        The report goes to standard output; its last line is the `modem rx` command, when there is something to decode. \
        Files with nothing keyed in them (silence, noise, one steady tone) say "no tones found" (or "no keying found") \
        and exit 0; an unreadable file is an error (one line on standard error, status 1).

        Examples:
          modem analyze hello.wav
          modem analyze --png hello.png hello.wav
        """
    )

    @Argument(help: ArgumentHelp("WAV (or other audio) file to analyse.", valueName: "INPUT.wav"))
    var input: String

    @Option(name: .long, help: ArgumentHelp("Also draw a spectrogram with the detected tones marked.", valueName: "FILE.png"))
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
            let report = try analyzeFile(path: input, channel: channel, pngPath: png)
            for line in report.lines { try printOutput(line) }
        }
    }
}
