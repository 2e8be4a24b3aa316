import ModemAudio
import ModemDSP
import ModemRuntime

/// The analysis of one audio file, as `modem analyze` prints it.
public struct FileAnalysisReport: Sendable {
    /// The file analysed.
    public let path: String
    /// Its container and encoding, e.g. "WAV, 16-bit PCM".
    public let formatDescription: String
    /// Channels in the file, and the one analysed (from 0).
    public let channelCount: Int, channel: Int
    /// The findings.
    public let analysis: FSKAnalysis
    /// Where the spectrogram was written, if it was.
    public let pngPath: String?

    /// The `modem rx` command that would decode the file, or nil.
    public var rxCommand: String? { analysis.rxCommand(path: path, channel: channel) }

    /// The report's first line: the file, its format, sample rate, channel and length.
    public var headerLine: String {
        var header = "\(path): \(formatDescription), \(analysis.sampleRate) Hz"
        if channelCount > 1 { header += ", channel \(channel) of \(channelCount)" }
        return header + ", \(spectrogramFixed(analysis.duration, 3)) s"
    }

    /// The report: a header line, the findings, the spectrogram's path, and the command line last.
    public var lines: [String] {
        var out = [headerLine]
        out += analysis.summaryLines.map { "  " + $0 }
        if let pngPath { out.append("  picture   \(pngPath)") }
        if let cmd = rxCommand { out.append(cmd) }
        return out
    }
}

/// Analyses an audio file: finds the FSK tones, which is mark, the baud rate and the SNR, and
/// optionally draws a spectrogram with the tones marked.
///
/// The file is read twice, streaming, in blocks (memory does not grow with its length).
/// - Parameters:
///   - path: the audio file (WAV or anything libsndfile reads).
///   - channel: the channel to analyse, counted from 0.
///   - pngPath: where to write the spectrogram (PNG), or nil for none.
/// - Throws: `AudioError` when the file cannot be read, ``PNGWriteError`` when the picture cannot be written.
public func analyzeFile(path: String, channel: Int = 0, pngPath: String? = nil) throws -> FileAnalysisReport {
    let reader = try AudioFileReader(path: path, channel: channel)
    guard reader.isSeekable else {
        throw AudioError(.unsupportedFormat, subject: reader.path == "-" ? "standard input" : path,
                         message: "the analysis reads a recording several times, and a stream (pipe, standard input) cannot be rewound: save it to a file first")
    }
    guard FSKAnalyzer.sampleRates.contains(reader.sampleRate) else {
        throw AudioError(.unsupportedFormat, subject: path,
                         message: "sample rate \(reader.sampleRate) Hz is outside the \(FSKAnalyzer.sampleRates.lowerBound)...\(FSKAnalyzer.sampleRates.upperBound) Hz the analysis handles")
    }
    let expected = reader.declaredFrameCount > 0 && reader.declaredFrameCount < Int64(Int.max)
        ? Int(reader.declaredFrameCount) : nil
    var analyzer = FSKAnalyzer(sampleRate: reader.sampleRate, expectedSampleCount: expected)
    var buffer = [Float](repeating: 0, count: 16384)
    var firstPass = true
    repeat {
        if !firstPass { try reader.seek(toFrame: 0) }
        firstPass = false
        while true {
            let n = try buffer.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            if n == 0 { break }
            buffer.withUnsafeBufferPointer { analyzer.process(UnsafeBufferPointer(rebasing: $0[0..<n])) }
        }
    } while analyzer.finishPass()
    let analysis = analyzer.result()

    if let pngPath {
        let title = spectrogramTitle(path: path, analysis: analysis)
        let image = renderSpectrogram(of: analysis, title: title)
        try PNGEncoder.write(image, to: pngPath, text: [("Title", title), ("Software", "SwiftModem \(SwiftModemVersion.string)"),
                                                        ("Source", path)])
    }
    return FileAnalysisReport(path: path, formatDescription: reader.formatDescription,
                              channelCount: reader.channelCount, channel: channel,
                              analysis: analysis, pngPath: pngPath)
}

/// The spectrogram of an analysis with its tones marked (mark green, space cyan).
public func renderSpectrogram(of analysis: FSKAnalysis, title: String = "",
                              renderer: SpectrogramRenderer = SpectrogramRenderer()) -> PNGImage {
    renderer.render(analysis.spectrogram, duration: analysis.duration, markers: spectrogramMarkers(of: analysis), title: title)
}

/// The lines ``renderSpectrogram(of:title:renderer:)`` draws across the picture: mark and space, or
/// the one steady tone.
public func spectrogramMarkers(of analysis: FSKAnalysis) -> [SpectrogramMarker] {
    var markers: [SpectrogramMarker] = []
    if let m = analysis.markFrequency {
        markers.append(SpectrogramMarker(frequency: m, label: "MARK \(Int(m.rounded()))", color: SpectrogramMarker.markColor))
    }
    if let s = analysis.spaceFrequency {
        markers.append(SpectrogramMarker(frequency: s, label: "SPACE \(Int(s.rounded()))", color: SpectrogramMarker.spaceColor))
    }
    if markers.isEmpty, case .steadyTone(let f) = analysis.finding {
        markers.append(SpectrogramMarker(frequency: f, label: "TONE \(Int(f.rounded()))", color: SpectrogramMarker.markColor))
    }
    return markers
}

/// The title line of the picture: file name (without directories) and the main findings.
public func spectrogramTitle(path: String, analysis a: FSKAnalysis) -> String {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    var parts = [name]
    switch a.finding {
    case .fsk:
        if let b = a.baudRate { parts.append(b < 100 ? "\(spectrogramFixed(b, 2)) BAUD" : "\(Int(b.rounded())) BAUD") }
        if let p = a.profile { parts.append(p.name) }
        if let snr = a.snr { parts.append("SNR \(spectrogramFixed(min(snr, 99), 1)) DB") }
    case .steadyTone(let f):
        parts.append("STEADY TONE \(Int(f.rounded())) HZ")
    default:
        parts.append("NO TONES FOUND")
    }
    return parts.joined(separator: "  ")
}
