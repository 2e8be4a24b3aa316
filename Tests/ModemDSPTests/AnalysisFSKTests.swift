import Testing
import Foundation
@testable import ModemDSP

/// The FSK analysis on synthetic signals: tones, mark, baud rate, SNR, profile and command line.
@Suite struct AnalysisFSKTests {
    struct Case: CustomStringConvertible, Sendable {
        var sampleRate: Int
        var baudRate: Double
        var mark: Double
        var space: Double
        var profile: String?
        var description: String { "\(sampleRate) Hz, \(baudRate) baud, \(mark)/\(space)" }
    }

    static let grid: [Case] = [
        Case(sampleRate: 8000, baudRate: 300, mark: 1270, space: 1070, profile: "bell103"),
        Case(sampleRate: 44100, baudRate: 300, mark: 1270, space: 1070, profile: "bell103"),
        Case(sampleRate: 48000, baudRate: 300, mark: 1270, space: 1070, profile: "bell103"),
        Case(sampleRate: 8000, baudRate: 1200, mark: 1200, space: 2200, profile: "bell202"),
        Case(sampleRate: 44100, baudRate: 1200, mark: 1200, space: 2200, profile: "bell202"),
        Case(sampleRate: 48000, baudRate: 1200, mark: 1200, space: 2200, profile: "bell202"),
        Case(sampleRate: 44100, baudRate: 4800, mark: 3000, space: 7000, profile: nil),
        Case(sampleRate: 48000, baudRate: 4800, mark: 3000, space: 7000, profile: nil),
        Case(sampleRate: 8000, baudRate: 45.45, mark: 1585, space: 1415, profile: "rtty"),
        Case(sampleRate: 44100, baudRate: 45.45, mark: 1585, space: 1415, profile: "rtty"),
        Case(sampleRate: 48000, baudRate: 45.45, mark: 1585, space: 1415, profile: "rtty"),
        // Odd ones: a narrow shift at a low rate, an answer-side plan, a rate off the standard list.
        Case(sampleRate: 8000, baudRate: 75, mark: 390, space: 450, profile: "v23-back"),
        Case(sampleRate: 22050, baudRate: 300, mark: 2225, space: 2025, profile: "bell103-answer"),
        Case(sampleRate: 16000, baudRate: 1200, mark: 1300, space: 2100, profile: "v23"),
        Case(sampleRate: 48000, baudRate: 2000, mark: 1600, space: 3266, profile: nil),
    ]

    static func signal(_ c: Case, seconds: Double = 3, snr: Double? = nil, seed: UInt64 = 7) -> [Float] {
        let bits = AnalysisSignal.randomBits(max(Int(c.baudRate * seconds), 64), seed: seed)
        let x = AnalysisSignal.fsk(bits: bits, sampleRate: c.sampleRate, baudRate: c.baudRate, mark: c.mark, space: c.space)
        return snr.map { AnalysisSignal.addNoise(x, snr: $0, seed: seed &+ 1) } ?? x
    }

    static func expectFinds(_ a: FSKAnalysis, _ c: Case, toneTolerance: Double = 0.02, baudTolerance: Double = 0.03,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.finding == .fsk, "\(c): \(a.finding)", sourceLocation: sourceLocation)
        guard let t = a.tones, let b = a.measuredBaudRate else {
            Issue.record("\(c): no tones or no baud rate", sourceLocation: sourceLocation)
            return
        }
        #expect(abs(t.lower / min(c.mark, c.space) - 1) <= toneTolerance, "\(c): lower tone \(t.lower)", sourceLocation: sourceLocation)
        #expect(abs(t.upper / max(c.mark, c.space) - 1) <= toneTolerance, "\(c): upper tone \(t.upper)", sourceLocation: sourceLocation)
        #expect(abs(b / c.baudRate - 1) <= baudTolerance, "\(c): baud \(b)", sourceLocation: sourceLocation)
    }

    @Test(arguments: grid)
    func findsTonesAndBaudRateOfCleanSignals(_ c: Case) {
        let a = FSKAnalyzer.analyze(Self.signal(c), sampleRate: c.sampleRate)
        Self.expectFinds(a, c)
        let confident = a.isConfident
        #expect(confident)
        // Bits of a whole number of samples keep the transitions exact; 9.19 samples per bit jitter.
        #expect(a.regularity > 0.7)
        #expect(a.profile?.name == c.profile)
        if c.profile != nil {
            // The profile names the mark.
            #expect(abs(a.markFrequency! - c.mark) < 0.02 * c.mark)
            #expect(a.markSource == .profile)
        }
        if FSKAnalysis.standardBaudRates.contains(c.baudRate) { #expect(a.standardBaudRate == c.baudRate) }
        #expect((a.snr ?? 0) > 20)
    }

    @Test(arguments: [grid[0], grid[4], grid[7], grid[9]])
    func findsTonesAndBaudRateInNoise(_ c: Case) {
        // 3 dB over the whole band 0...fs/2 (far more in the signal's own band).
        let a = FSKAnalyzer.analyze(Self.signal(c, snr: 3), sampleRate: c.sampleRate)
        Self.expectFinds(a, c)
        #expect(a.profile?.name == c.profile)
        // The SNR estimate is the one the noise was added at, within a couple of dB.
        #expect(abs((a.snr ?? -99) - 3) < 2.5, "snr \(String(describing: a.snr))")
    }

    @Test(arguments: [8000, 44100, 48000], [0.5, 3.0])
    func whiteNoiseHasNoConfidentTones(sampleRate: Int, seconds: Double) {
        let x = AnalysisSignal.noise(count: Int(Double(sampleRate) * seconds), sigma: 0.1, seed: UInt64(sampleRate))
        let a = FSKAnalyzer.analyze(x, sampleRate: sampleRate)
        let confident = a.isConfident
        #expect(!confident)
        #expect(a.finding != .fsk || (a.snr ?? -99) < 0)
        #expect(a.rxCommand(path: "x.wav") == nil || a.finding == .fsk)
        #expect(a.summaryLines.first?.hasPrefix("no tones found") == true)
    }

    @Test func emptySilentShortAndSteadyInputs() {
        let empty = FSKAnalyzer.analyze([], sampleRate: 48000)
        #expect(empty.finding == .empty)
        #expect(empty.summaryLines == ["no tones found: the input has no samples"])
        #expect(empty.rxCommand(path: "x.wav") == nil)

        let silent = FSKAnalyzer.analyze([Float](repeating: 0, count: 48000), sampleRate: 48000)
        #expect(silent.finding == .silent)
        #expect(silent.summaryLines.first?.hasPrefix("no tones found") == true)

        for n in [1, 2, 10, 100, 1000] {
            let short = FSKAnalyzer.analyze(Self.signal(Self.grid[5], seconds: 1).prefix(n).map { $0 }, sampleRate: 48000)
            #expect(short.finding != .fsk || short.tones != nil, "\(n) samples")
            _ = short.summaryLines
        }

        let tone = FSKAnalyzer.analyze(AnalysisSignal.tone(frequency: 1000, sampleRate: 8000, seconds: 2), sampleRate: 8000)
        guard case .steadyTone(let f) = tone.finding else {
            Issue.record("a steady tone gave \(tone.finding)")
            return
        }
        #expect(abs(f - 1000) < 1)
        #expect(tone.rxCommand(path: "x.wav") == nil)
        #expect(tone.summaryLines.first?.contains("1000.0 Hz") == true)
    }

    @Test func blockSizeDoesNotChangeTheResult() {
        let c = Self.grid[3]
        let x = Self.signal(c, seconds: 1)
        let whole = FSKAnalyzer.analyze(x, sampleRate: c.sampleRate)
        var a = FSKAnalyzer(sampleRate: c.sampleRate, expectedSampleCount: x.count)
        var passes = 0
        repeat {
            passes += 1
            for v in x { a.process([v]) }
        } while a.finishPass()
        #expect(passes == 2)
        let bySample = a.result()
        #expect(bySample.tones?.lower == whole.tones?.lower && bySample.tones?.upper == whole.tones?.upper)
        #expect(bySample.measuredBaudRate == whole.measuredBaudRate)
        #expect(bySample.summaryLines == whole.summaryLines)
        // reset() starts over.
        a.reset()
        #expect(a.pass == .spectrum)
    }

    @Test func signalWithLeaderAndGaps() {
        // A long mark leader, a short burst of data, a trailer, silence, another burst.
        let c = Self.grid[5]
        let leader = AnalysisSignal.tone(frequency: c.mark, sampleRate: c.sampleRate, seconds: 2)
        let data = Self.signal(c, seconds: 0.4)
        let gap = [Float](repeating: 0, count: c.sampleRate)
        let x = leader + data + gap + data + gap
        let a = FSKAnalyzer.analyze(x, sampleRate: c.sampleRate)
        Self.expectFinds(a, c)
        #expect(a.profile?.name == "bell202")
        // The leader is long runs on the lower tone: the idle statistics see it.
        #expect((a.keying?.idleSeconds.lower ?? 0) > 1.5)
    }

    @Test func idleToneNamesTheMarkWithoutAProfile() {
        // 600 baud on 1500/2500 Hz (no profile; minimodem's tones for 600 baud are 900/1400),
        // asynchronous characters with the mark on the upper tone and idle between them.
        let fs = 48000, baud = 600.0
        var bits: [Bool] = []
        for (i, byte) in Array("The quick brown fox jumps over the lazy dog".utf8).enumerated() {
            bits += AnalysisSignal.uartBits([byte], leaderBits: i == 0 ? 60 : 15)
        }
        let x = AnalysisSignal.fsk(bits: bits, sampleRate: fs, baudRate: baud, mark: 2500, space: 1500)
        let a = FSKAnalyzer.analyze(x, sampleRate: fs)
        #expect(a.finding == .fsk)
        #expect(a.profile == nil)
        #expect(a.markSource == .idleTone)
        #expect(abs((a.markFrequency ?? 0) - 2500) < 50)
        #expect(abs((a.spaceFrequency ?? 0) - 1500) < 30)
        #expect(a.standardBaudRate == 600)
        #expect(a.rxCommand(path: "a b.wav") == "modem rx --baud 600 --mark 2500 --space 1500 'a b.wav'")
    }

    @Test func rttyWithOneAndAHalfStopBits() {
        // Baudot characters: start, 5 data bits, 1.5 stop bits; built at twice the rate (half bits).
        let fs = 8000
        var r = AnalysisRandom(seed: 3)
        var halfBits = [Bool](repeating: true, count: 40)
        for _ in 0..<120 {
            let code = UInt8.random(in: 0..<32, using: &r)
            var bits = [false]
            for i in 0..<5 { bits.append((code >> i) & 1 == 1) }
            for b in bits { halfBits += [b, b] }
            halfBits += [true, true, true]
        }
        let x = AnalysisSignal.fsk(bits: halfBits, sampleRate: fs, baudRate: 2 * 45.45, mark: 1585, space: 1415)
        let a = FSKAnalyzer.analyze(x, sampleRate: fs)
        #expect(a.keying?.halfBitIntervals == true)
        #expect(abs((a.measuredBaudRate ?? 0) / 45.45 - 1) < 0.03)
        #expect(a.profile?.name == "rtty")
        #expect(a.rxCommand(path: "r.wav") == "modem rx --profile rtty r.wav")
        #expect(a.summaryLines.contains { $0.contains("1.5 stop bits") })
    }

    @Test func clockOffTheProfileAddsTheMeasuredRate() {
        // minimodem at 8 kHz sends "1200 baud" as 8000/7 = 1142.9 baud (whole samples per bit).
        let c = Case(sampleRate: 8000, baudRate: 8000.0 / 7, mark: 1200, space: 2200, profile: "bell202")
        let a = FSKAnalyzer.analyze(Self.signal(c), sampleRate: c.sampleRate)
        Self.expectFinds(a, c, baudTolerance: 0.01)
        #expect(a.standardBaudRate == nil)
        #expect(a.profile?.name == "bell202")
        #expect(a.rxCommand(path: "x.wav") == "modem rx --profile bell202 --baud 1143 x.wav")
        #expect(a.notes.contains { $0.contains("off bell202") })
    }

    @Test func commandLineForMinimodemDefaultTones() {
        let c = Self.grid[7]     // 4800 baud, 3000/7000: minimodem's tones for 4800
        let a = FSKAnalyzer.analyze(Self.signal(c), sampleRate: c.sampleRate)
        #expect(a.markSource == .convention)
        #expect(abs((a.markFrequency ?? 0) - 3000) < 60)
        #expect(a.rxCommand(path: "x.wav") == "modem rx --baud 4800 x.wav")
        let lines = a.summaryLines
        #expect(lines[0].hasPrefix("tones "))
        #expect(lines.contains { $0.hasPrefix("baud ") && $0.contains("4800 standard") })
        #expect(lines.contains { $0.hasPrefix("SNR ") && $0.contains("Eb/N0") })
    }

    @Test func profileMatching() {
        #expect(FSKAnalysis.matchProfile(lower: 1200, upper: 2200, baudRate: 1200)?.name == "bell202")
        #expect(FSKAnalysis.matchProfile(lower: 1300, upper: 2100, baudRate: 1200)?.name == "v23")
        #expect(FSKAnalysis.matchProfile(lower: 1072, upper: 1268, baudRate: nil)?.name == "bell103")
        #expect(FSKAnalysis.matchProfile(lower: 1070, upper: 1270, baudRate: 1200) == nil)
        #expect(FSKAnalysis.matchProfile(lower: 980, upper: 1180, baudRate: 300)?.name == "v21")
        #expect(FSKAnalysis.matchProfile(lower: 1650, upper: 1850, baudRate: 300)?.name == "v21-answer")
        #expect(FSKAnalysis.matchProfile(lower: 1500, upper: 2500, baudRate: 600) == nil)
    }

    @Test func formatting() {
        #expect(FSKAnalysis.fixed(1199.96, 1) == "1200.0")
        #expect(FSKAnalysis.fixed(-0.04, 1) == "0.0")
        #expect(FSKAnalysis.fixed(-3.25, 2) == "-3.25")
        #expect(FSKAnalysis.fixed(45.45, 2) == "45.45")
        #expect(FSKAnalysis.rate(45.45) == "45.45")
        #expect(FSKAnalysis.rate(1142.857) == "1143")
        #expect(FSKAnalysis.rate(75) == "75")
        #expect(FSKAnalysis.dB(123) == "> 99")
        #expect(FSKAnalysis.shellQuoted("dir/x-1.wav") == "dir/x-1.wav")
        #expect(FSKAnalysis.shellQuoted("it's here.wav") == "'it'\\''s here.wav'")
        #expect(FSKAnalysis.shellQuoted("") == "''")
    }

    @Test func occupiedBandJoinsTheTwoLinesOfAWideShift() {
        // RTTY-like: two separate lines 170 Hz apart, in noise.
        let c = Self.grid[8]
        let x = Self.signal(c, snr: 0)
        var s = SpectrumSurvey(sampleRate: c.sampleRate, expectedSampleCount: x.count)
        s.process(x)
        let band = OccupiedBand.find(in: s.result().spectrogram)
        #expect(band != nil)
        if let b = band {
            #expect(b.lowFrequency < 1415 && b.highFrequency > 1585)
            #expect(b.activeColumns > b.columnCount / 2)
        }
    }

    /// 8E1 ASCII text at 300 baud on Bell 103 tones: the data's spectrum makes the band lopsided (a
    /// strong line above the mark tone), so the band's centre is no place to slice. Sliced there, the
    /// rising and falling transitions move opposite ways, the runs stop being whole bits and the rate
    /// came out near 390 baud; sliced again halfway between the measured tones, it is 300.
    @Test func lopsidedBandIsSlicedBetweenTheTones() throws {
        let fs = 48000
        let text = (1...6).map { "Parity and framing matter: 8E1 text, line \($0)\n" }.joined()
        var bits = [Bool](repeating: true, count: 2)
        for b in text.utf8 {
            bits.append(false)
            for i in 0..<8 { bits.append((b >> i) & 1 == 1) }
            bits.append(b.nonzeroBitCount % 2 == 1)     // even parity
            bits.append(true)
        }
        bits += [true, true]
        let x = AnalysisSignal.fsk(bits: bits, sampleRate: fs, baudRate: 300, mark: 1270, space: 1070)
        // The case is what it claims: the band's centre is well off the tones' middle (1170 Hz).
        var s = SpectrumSurvey(sampleRate: fs, expectedSampleCount: x.count)
        s.process(x)
        let band = try #require(OccupiedBand.find(in: s.result().spectrogram))
        #expect(abs(band.centerFrequency - 1170) > 2 * FSKAnalyzer.resliceOffset * 200, "\(band.lowFrequency)-\(band.highFrequency) Hz")
        let a = FSKAnalyzer.analyze(x, sampleRate: fs)
        #expect(a.finding == .fsk)
        #expect(a.standardBaudRate == 300, "\(a.summaryLines)")
        #expect(a.regularity > 0.9, "\(a.summaryLines)")
        #expect(a.profile?.name == "bell103")
        #expect(abs((a.keying?.lowerTone ?? 0) - 1070) < 5 && abs((a.keying?.upperTone ?? 0) - 1270) < 5, "\(a.summaryLines)")
    }
}
