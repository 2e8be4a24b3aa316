import Testing
import Foundation
import ModemDSP
import ProcessTestSupport
@testable import ModemPlot

/// The spectrogram picture and the file analysis behind `modem analyze`.
@Suite struct SpectrogramTests {
    static func spectrogram(of samples: [Float], sampleRate: Int) -> Spectrogram {
        var s = SpectrumSurvey(sampleRate: sampleRate, expectedSampleCount: samples.count)
        s.process(samples)
        return s.result().spectrogram
    }

    @Test func rendersTheToneWhereItIsAndMarksIt() {
        let fs = 8000
        let tone = (0..<(fs * 2)).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / Double(fs))) }
        let g = Self.spectrogram(of: tone, sampleRate: fs)
        var r = SpectrogramRenderer()
        r.maximumFrequency = 4000
        let marker = SpectrogramMarker(frequency: 3000, label: "MARK 3000", color: SpectrogramMarker.markColor)
        let img = r.render(g, duration: 2, markers: [marker], title: "TEST")
        let L = SpectrogramRenderer.left, T = SpectrogramRenderer.top
        #expect(img.width == L + max(640, g.columnCount) + SpectrogramRenderer.right)
        #expect(img.height == T + 360 + SpectrogramRenderer.bottom)
        func brightness(_ c: PNGColor) -> Int { Int(c.red) + Int(c.green) + Int(c.blue) }
        // 1000 Hz is three quarters of the way down a 0...4000 Hz axis; 2500 Hz is quiet.
        let toneRow = T + 270, quietRow = T + 135
        let x = L + 300
        #expect(brightness(img[x, toneRow]) > 500)
        #expect(brightness(img[x, quietRow]) < 150)
        // The marker: a dashed line in its colour at 3000 Hz, and its label in the right margin.
        let markerRow = T + 90
        let onLine = (L..<(L + 640)).filter { img[$0, markerRow] == SpectrogramMarker.markColor }.count
        #expect(onLine > 640 / 2 && onLine < 640)
        let labelPixels = (0..<SpectrogramRenderer.right).flatMap { dx in (markerRow - 4...markerRow + 4).map { (L + 640 + dx, $0) } }
            .filter { img[$0.0, $0.1] == SpectrogramMarker.markColor }.count
        #expect(labelPixels > 40)
    }

    @Test func emptySpectrogramStillDraws() throws {
        let g = Spectrogram(sampleRate: 48000, fftSize: 4096, hopSize: 2048)
        let img = SpectrogramRenderer().render(g, duration: 0, markers: [], title: "EMPTY")
        #expect(img.width > 0)
        let decoded = try PNGTestDecoder.decode(PNGEncoder.encode(img))
        #expect(decoded.pixels == img.pixels)
    }

    @Test func frequencyAxisTop() {
        #expect(SpectrogramRenderer.displayedMaximumFrequency(sampleRate: 48000, tones: []) == 8000)
        #expect(SpectrogramRenderer.displayedMaximumFrequency(sampleRate: 8000, tones: []) == 4000)
        #expect(SpectrogramRenderer.displayedMaximumFrequency(sampleRate: 48000, tones: [1200, 2200]) == 4500)
        #expect(SpectrogramRenderer.displayedMaximumFrequency(sampleRate: 48000, tones: [3000, 7000]) == 14000)
        #expect(SpectrogramRenderer.displayedMaximumFrequency(sampleRate: 8000, tones: [1585, 1415]) == 3500)
        #expect(SpectrogramRenderer.displayedMaximumFrequency(sampleRate: 48000, tones: [390, 450]) == 1000)
    }

    @Test func colourScaleRunsDarkToBright() {
        func luma(_ c: PNGColor) -> Double { 0.3 * Double(c.red) + 0.59 * Double(c.green) + 0.11 * Double(c.blue) }
        var last = -1.0
        for i in 0...50 {
            let l = luma(SpectrogramRenderer.colormap(Double(i) / 50))
            #expect(l >= last)
            last = l
        }
        #expect(SpectrogramRenderer.colormap(-3) == SpectrogramRenderer.colormap(0))
        #expect(SpectrogramRenderer.colormap(.nan) == SpectrogramRenderer.colormap(0))
    }

    @Test func fontDrawsKnownAndUnknownCharacters() {
        var img = PNGImage(width: 40, height: 10)
        PlotFont.draw("a1?é", x: 1, y: 1, color: .white, into: &img)
        #expect(PlotFont.width(of: "abcd") == 23)
        #expect(PlotFont.width(of: "abcd", scale: 2) == 46)
        let lit = img.pixels.filter { $0 == 255 }.count / 3
        #expect(lit > 30)
        // Lower case has glyphs of its own, or is drawn as upper case when asked.
        var a = PNGImage(width: 8, height: 9), b = a, c = a
        PlotFont.draw("k", x: 1, y: 1, color: .white, uppercased: true, into: &a)
        PlotFont.draw("K", x: 1, y: 1, color: .white, into: &b)
        PlotFont.draw("k", x: 1, y: 1, color: .white, into: &c)
        #expect(a == b)
        #expect(c != b)
        // Scale 2 inks four pixels per dot; a vertical label covers the same number of pixels.
        var one = PNGImage(width: 20, height: 20), two = PNGImage(width: 20, height: 20), up = PNGImage(width: 20, height: 20)
        PlotFont.draw("E", x: 0, y: 0, color: .white, into: &one)
        PlotFont.draw("E", x: 0, y: 0, color: .white, scale: 2, into: &two)
        PlotFont.drawVertical("E", x: 0, y: 19, color: .white, into: &up)
        let ink = { (i: PNGImage) in i.pixels.filter { $0 == 255 }.count / 3 }
        #expect(ink(two) == 4 * ink(one) && ink(up) == ink(one) && ink(one) > 0)
    }

    // MARK: analyzeFile

    @Test func analyzesAFileAndDrawsIt() throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("analyze")
        defer { try? FileManager.default.removeItem(at: dir) }
        let wav = dir.appendingPathComponent("v23.wav").path, png = dir.appendingPathComponent("v23.png").path
        try SpectrogramTestTools.writeWAV(SpectrogramTestTools.fsk(sampleRate: 22050, baudRate: 1200, mark: 1300, space: 2100, seconds: 2),
                                          sampleRate: 22050, to: wav)
        let report = try analyzeFile(path: wav, pngPath: png)
        let a = report.analysis
        #expect(a.profile?.name == "v23")
        #expect(abs((a.markFrequency ?? 0) - 1300) < 26 && abs((a.spaceFrequency ?? 0) - 2100) < 42)
        #expect(report.rxCommand == "modem rx --profile v23 \(wav)")
        let lines = report.lines
        #expect(lines.first == "\(wav): WAV, 16-bit PCM, 22050 Hz, 2.000 s")
        #expect(lines.last == report.rxCommand)
        #expect(lines.contains("  picture   \(png)"))
        let decoded = try PNGTestDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: png))))
        #expect(decoded.width > 640 && decoded.height == 410)
        // Both tones are marked.
        let markPixels = decoded.pixels.withUnsafeBufferPointer { p in
            stride(from: 0, to: p.count, by: 3).filter { p[$0] == 64 && p[$0 + 1] == 255 && p[$0 + 2] == 96 }.count
        }
        let spacePixels = decoded.pixels.withUnsafeBufferPointer { p in
            stride(from: 0, to: p.count, by: 3).filter { p[$0] == 64 && p[$0 + 1] == 200 && p[$0 + 2] == 255 }.count
        }
        #expect(markPixels > 300 && spacePixels > 300)
    }

    @Test func commandNamesTheChannel() throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("channel")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Two channels: silence on the left, Bell 103 on the right.
        let right = SpectrogramTestTools.fsk(sampleRate: 8000, baudRate: 300, mark: 1270, space: 1070, seconds: 2)
        var d = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + right.count * 4)); d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(2); u32(8000); u32(32000); u16(4); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(UInt32(right.count * 4))
        for s in right { u16(0); u16(UInt16(bitPattern: Int16(s * 32767))) }
        let path = dir.appendingPathComponent("stereo.wav").path
        try d.write(to: URL(fileURLWithPath: path))
        let left = try analyzeFile(path: path, channel: 0)
        #expect(left.rxCommand == nil)
        let report = try analyzeFile(path: path, channel: 1)
        #expect(report.rxCommand == "modem rx --profile bell103 --channel 1 \(path)")
        #expect(report.lines.first?.contains("channel 1 of 2") == true)
    }

    @Test func quietFilesSayNoTonesFound() throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("quiet")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(String, [Float])] = [
            ("no-samples.wav", []),
            ("silence.wav", [Float](repeating: 0, count: 8000)),
            ("three-samples.wav", [0.1, -0.2, 0.3]),
            ("noise.wav", (0..<16000).map { _ in Float.random(in: -0.3...0.3) }),
        ]
        for (name, samples) in cases {
            let path = dir.appendingPathComponent(name).path
            try SpectrogramTestTools.writeWAV(samples, sampleRate: 8000, to: path)
            let report = try analyzeFile(path: path, pngPath: path + ".png")
            #expect(report.lines.count >= 2, "\(name)")
            #expect(report.lines[1].contains("no tones found"), "\(name): \(report.lines)")
            #expect(report.rxCommand == nil, "\(name)")
            _ = try PNGTestDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".png"))))
        }
    }

    @Test func unreadableFilesThrowNamingTheFile() throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("missing.wav").path
        let empty = dir.appendingPathComponent("empty.wav").path
        let text = dir.appendingPathComponent("text.wav").path
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        _ = FileManager.default.createFile(atPath: text, contents: Data("not audio at all\n".utf8))
        for path in [missing, empty, text] {
            do {
                _ = try analyzeFile(path: path)
                Issue.record("\(path) was analysed")
            } catch {
                #expect(String(describing: error).hasPrefix(path + ":"), "\(error)")
            }
        }
        // A good file with an unwritable picture path: the error names the picture.
        let wav = dir.appendingPathComponent("ok.wav").path
        try SpectrogramTestTools.writeWAV([Float](repeating: 0, count: 100), sampleRate: 8000, to: wav)
        let badPNG = dir.appendingPathComponent("no/dir/x.png").path
        #expect(throws: PNGWriteError.self) { _ = try analyzeFile(path: wav, pngPath: badPNG) }
    }

    // MARK: End to end with minimodem

    static let minimodem = Peer.tool("minimodem")

    static func minimodemFile(_ mode: String, in dir: URL, rate: Int? = nil) async throws -> String {
        let path = dir.appendingPathComponent("mm-\(mode)-\(rate ?? 48000).wav").path
        var args = ["--tx", mode, "-f", path]
        if let rate { args += ["-R", String(rate)] }
        let text = Data(String(repeating: "The quick brown fox jumps over the lazy dog 0123456789. ", count: 3).utf8)
        let status = try await SpectrogramTestTools.run(try minimodem.path(), args, input: text)
        #expect(status == 0)
        return path
    }

    @Test(.requires(minimodem))
    func minimodem1200() async throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("mm1200")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try await Self.minimodemFile("1200", in: dir)
        let report = try analyzeFile(path: path)
        let a = report.analysis
        #expect(abs((a.markFrequency ?? 0) / 1200 - 1) < 0.02)
        #expect(abs((a.spaceFrequency ?? 0) / 2200 - 1) < 0.02)
        #expect(abs((a.measuredBaudRate ?? 0) / 1200 - 1) < 0.03)
        #expect(a.standardBaudRate == 1200)
        #expect(report.rxCommand == "modem rx --profile bell202 \(path)")
    }

    @Test(.requires(minimodem))
    func minimodem300AndRTTY() async throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("mm300")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bell103 = try analyzeFile(path: try await Self.minimodemFile("300", in: dir, rate: 8000)).analysis
        #expect(abs((bell103.markFrequency ?? 0) / 1270 - 1) < 0.02)
        #expect(abs((bell103.spaceFrequency ?? 0) / 1070 - 1) < 0.02)
        #expect(abs((bell103.measuredBaudRate ?? 0) / 300 - 1) < 0.03)
        #expect(bell103.profile?.name == "bell103")
        let rtty = try analyzeFile(path: try await Self.minimodemFile("rtty", in: dir, rate: 8000)).analysis
        #expect(abs((rtty.markFrequency ?? 0) / 1585 - 1) < 0.02)
        #expect(abs((rtty.spaceFrequency ?? 0) / 1415 - 1) < 0.02)
        #expect(abs((rtty.measuredBaudRate ?? 0) / 45.45 - 1) < 0.03)
        #expect(rtty.profile?.name == "rtty")
        #expect(rtty.keying?.halfBitIntervals == true)
    }

    @Test(.requires(minimodem))
    func minimodem4800() async throws {
        let dir = try SpectrogramTestTools.temporaryDirectory("mm4800")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try await Self.minimodemFile("4800", in: dir)
        let report = try analyzeFile(path: path)
        let a = report.analysis
        #expect(abs((a.markFrequency ?? 0) / 3000 - 1) < 0.02)
        #expect(abs((a.spaceFrequency ?? 0) / 7000 - 1) < 0.02)
        #expect(a.standardBaudRate == 4800)
        #expect(report.rxCommand == "modem rx --baud 4800 \(path)")
    }
}
