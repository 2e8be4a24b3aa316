import Foundation
import ProcessTestSupport
import Testing

/// Our own `modem tx` → WAV file → `modem rx`, across framings, baud rates, sample rates, sample
/// formats and tone plans.
@Suite("Round trips through modem tx and modem rx")
struct RoundTripTests {
    /// Encodes `bytes` with `txArguments`, decodes with `rxArguments`, expects the same bytes back.
    static func roundTrip(_ bytes: [UInt8], tx txArguments: [String], rx rxArguments: [String],
                          sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.bin", bytes)
        let wav = dir.file("x.wav")
        try await modemTx(txArguments, input: input, out: wav, sourceLocation: sourceLocation)
        let r = try await modem(["rx", "-q"] + rxArguments + [wav])
        expectSuccess(r, sourceLocation: sourceLocation)
        #expect(r.stdout == bytes, "tx \(txArguments) / rx \(rxArguments): \(describeDifference(expected: bytes, got: r.stdout))",
                sourceLocation: sourceLocation)
        #expect(r.stderr.isEmpty, "-q, yet standard error has: \(r.stderrText)", sourceLocation: sourceLocation)
    }

    /// Text that fits `dataBits`: ASCII for 7 and 8, codes below 64 or 32 for 6 and 5.
    static func payload(dataBits: Int) -> [UInt8] {
        switch dataBits {
        case 8: return Array(Texts.pangrams.utf8)
        case 7: return Array(Texts.pangrams.utf8)   // all below 128
        default:
            let limit = 1 << dataBits
            return (0..<(2 * limit)).map { UInt8(($0 * 7 + 3) % limit) }
        }
    }

    @Test("Framings at 1200 baud", arguments: ["8N1", "7E1", "7O1", "8N2", "5N1.5", "8M1", "8S1", "7N1", "7E2", "6N1", "8E1", "5N2"])
    func framing(_ framing: String) async throws {
        let bits = Int(String(framing.first!))!
        let bytes = Self.payload(dataBits: bits)
        try await Self.roundTrip(bytes, tx: ["--baud", "1200", "--framing", framing],
                                 rx: ["--baud", "1200", "--framing", framing])
    }

    @Test("Odd baud and sample rates",
          arguments: [(1234.0, 22050, "8N1"), (50, 8000, "8N1"), (2400, 96000, "8N1"), (110, 11025, "8N2"),
                      (9600, 48000, "8N1"), (4800, 44100, "7E1"), (600, 16000, "8N1"), (75, 8000, "5N1.5"),
                      (19200, 96000, "8N1"), (333.3, 32000, "8O1")])
    func rates(baud: Double, rate: Int, framing: String) async throws {
        let bits = Int(String(framing.first!))!
        // Slow rates get a short text so the test stays fast; the rest the full one.
        let bytes = baud < 200 && bits >= 7 ? Array(Texts.short.utf8) : Self.payload(dataBits: bits)
        let b = baud == baud.rounded() ? String(Int(baud)) : String(baud)
        try await Self.roundTrip(bytes, tx: ["--baud", b, "--rate", "\(rate)", "--framing", framing],
                                 rx: ["--baud", b, "--framing", framing])
    }

    @Test("All 256 byte values at 8N1", arguments: [300, 1200, 9600])
    func allBytes(baud: Int) async throws {
        let bytes = (0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) }
        try await Self.roundTrip(bytes, tx: ["--baud", "\(baud)"], rx: ["--baud", "\(baud)"])
    }

    @Test("Standard input: bytes piped into modem tx come back out of modem rx")
    func standardInput() async throws {
        let dir = try Scratch()
        let bytes = (0...255).map { UInt8($0) }
        let input = try dir.write("in.bin", bytes)
        let wav = dir.file("x.wav")
        let tx = try await modem(["tx", "-q", "--baud", "1200", "--out", wav], stdinFile: input)
        expectSuccess(tx)
        #expect(tx.stdout.isEmpty)
        let rx = try await modem(["rx", "-q", "--baud", "1200", wav])
        expectSuccess(rx)
        #expect(rx.stdout == bytes, "\(describeDifference(expected: bytes, got: rx.stdout))")
    }

    @Test("Sample formats of the written WAV", arguments: ["u8", "s16", "s24", "s32", "f32"])
    func formats(_ format: String) async throws {
        try await Self.roundTrip(Array(Texts.pangrams.utf8), tx: ["--baud", "1200", "--format", format],
                                 rx: ["--baud", "1200"])
    }

    @Test("Tone-plan profiles", arguments: ["bell103", "bell103-answer", "bell202", "v21", "v21-answer", "v23", "v23-back", "rtty"])
    func profiles(_ profile: String) async throws {
        let text = profile == "rtty" ? Texts.baudot : profile == "v23-back" ? Texts.short : Texts.pangrams
        // rtty and the 75-baud V.23 back channel at 8 kHz: their files would be large at 48 kHz.
        let rate = ["rtty", "v23-back"].contains(profile) ? ["--rate", "8000"] : []
        try await Self.roundTrip(Array(text.utf8), tx: ["--profile", profile] + rate, rx: ["--profile", profile])
    }

    @Test("Explicit tones and levels: --mark/--space, --level -40 dBFS")
    func explicitTones() async throws {
        try await Self.roundTrip(Array(Texts.pangrams.utf8),
                                 tx: ["--baud", "600", "--mark", "1500", "--space", "2700", "--level=-40"],
                                 rx: ["--baud", "600", "--mark", "1500", "--space", "2700"])
    }

    /// A clean transmission must decode exactly, however short: nothing lost at its start, nothing
    /// made up after its last stop bit. Sweeps message lengths 1...20 at three rates.
    @Test("Short clean transmissions decode exactly (lengths 1...20 at 110, 300 and 1200 baud)")
    func shortTransmissions() async throws {
        let dir = try Scratch()
        let text = Array(Texts.words(20).utf8)
        var failures: [String] = []
        for baud in [110, 300, 1200] {
            for n in 1...20 {
                let bytes = Array(text.prefix(n))
                let input = try dir.write("in-\(baud)-\(n).txt", bytes)
                let wav = dir.file("x-\(baud)-\(n).wav")
                try await modemTx(["--baud", "\(baud)"], input: input, out: wav)
                let r = try await modem(["rx", "-q", "--baud", "\(baud)", wav])
                expectSuccess(r)
                if r.stdout != bytes {
                    failures.append("\(baud) baud, \(n) bytes: \(describeDifference(expected: bytes, got: r.stdout))")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 60 clean transmissions decoded wrong:\n\(failures.joined(separator: "\n"))")
    }
}
