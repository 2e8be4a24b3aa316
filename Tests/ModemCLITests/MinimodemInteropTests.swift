import Foundation
import ProcessTestSupport
import Testing

/// modem and minimodem 0.24 as separate processes, each decoding what the other sends.
// Skipped (shown as skipped with this reason) where minimodem is not installed: apt-get install minimodem.
@Suite("Interoperability with minimodem", .requires(Peers.minimodem))
struct MinimodemInteropTests {
    static let text = Texts.pangrams

    @Test("modem tx --baud N → minimodem --rx N", arguments: [300, 1200, 4800])
    func modemToMinimodem(baud: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.text)
        let wav = dir.file("x.wav")
        try await modemTx(["--baud", "\(baud)"], input: input, out: wav)
        let r = try await minimodem(["--rx", "\(baud)", "-q", "-f", wav])
        expectSuccess(r)
        #expect(r.stdout == Array(Self.text.utf8), "\(describeDifference(expected: Array(Self.text.utf8), got: r.stdout))")
    }

    @Test("minimodem --tx N → modem rx --baud N", arguments: [300, 1200, 4800])
    func minimodemToModem(baud: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.text)
        let wav = dir.file("y.wav")
        expectSuccess(try await minimodem(["--tx", "\(baud)", "-f", wav], stdinFile: input))
        let r = try await modem(["rx", "-q", "--baud", "\(baud)", wav])
        expectSuccess(r)
        #expect(r.stdout == Array(Self.text.utf8), "\(describeDifference(expected: Array(Self.text.utf8), got: r.stdout))")
    }

    @Test("minimodem --tx rtty → modem rx --profile rtty")
    func rttyFromMinimodem() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Texts.baudot)
        let wav = dir.file("rtty.wav")
        // 8 kHz keeps the 45.45-baud file small; minimodem's default rate works the same.
        expectSuccess(try await minimodem(["--tx", "rtty", "-R", "8000", "-f", wav], stdinFile: input))
        let r = try await modem(["rx", "-q", "--profile", "rtty", wav])
        expectSuccess(r)
        #expect(r.stdout == Array(Texts.baudot.utf8), "\(describeDifference(expected: Array(Texts.baudot.utf8), got: r.stdout))")
    }

    @Test("modem tx --profile rtty → minimodem --rx rtty")
    func rttyToMinimodem() async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Texts.baudot)
        let wav = dir.file("rtty.wav")
        try await modemTx(["--profile", "rtty", "--rate", "8000"], input: input, out: wav)
        let r = try await minimodem(["--rx", "rtty", "-q", "-f", wav])
        expectSuccess(r)
        #expect(r.stdout == Array(Texts.baudot.utf8), "\(describeDifference(expected: Array(Texts.baudot.utf8), got: r.stdout))")
    }

    @Test("Standard tone plans: modem tx --profile P → minimodem --rx with the same tones",
          arguments: [("bell103", 300, 1270, 1070), ("bell103-answer", 300, 2225, 2025), ("v21", 300, 980, 1180),
                      ("v21-answer", 300, 1650, 1850), ("v23", 1200, 1300, 2100), ("bell202", 1200, 1200, 2200)])
    func profilesToMinimodem(profile: String, baud: Int, mark: Int, space: Int) async throws {
        let dir = try Scratch()
        let input = try dir.write("in.txt", Self.text)
        let wav = dir.file("p.wav")
        try await modemTx(["--profile", profile], input: input, out: wav)
        let r = try await minimodem(["--rx", "\(baud)", "-M", "\(mark)", "-S", "\(space)", "-q", "-f", wav])
        expectSuccess(r)
        #expect(r.stdout == Array(Self.text.utf8), "\(profile): \(describeDifference(expected: Array(Self.text.utf8), got: r.stdout))")
    }
}
