import Foundation
import ProcessTestSupport
import Testing

/// One line of `Fixtures/fsk/MANIFEST.tsv`.
struct FixtureEntry: Sendable, CustomTestStringConvertible {
    var file: String
    var rxArguments: [String]
    var expected: String
    var madeBy: String

    var testDescription: String { file }

    var wavPath: String { Paths.fixtures + "/" + file }
    var expectedPath: String { Paths.fixtures + "/" + expected }

    /// The manifest's entries; empty when it cannot be read (a test below then fails).
    static let all: [FixtureEntry] = (try? load()) ?? []

    static func load() throws -> [FixtureEntry] {
        let text = try String(contentsOfFile: Paths.fixtures + "/MANIFEST.tsv", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) { return nil }
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count >= 3 else { return nil }
            return FixtureEntry(file: columns[0],
                                rxArguments: columns[1].split(separator: " ").map(String.init),
                                expected: columns[2],
                                madeBy: columns.count > 3 ? columns[3] : "")
        }
    }
}

@Suite("Fixtures: recordings made by minimodem, sox and modem tx decode byte-exact")
struct FixtureTests {
    @Test("The manifest lists the fixtures and every file it names exists")
    func manifest() throws {
        let entries = try FixtureEntry.load()
        #expect(entries.count >= 20, "Fixtures/fsk/MANIFEST.tsv lists only \(entries.count) fixtures")
        for e in entries {
            #expect(FileManager.default.fileExists(atPath: e.wavPath), "\(e.file) is listed but missing")
            #expect(FileManager.default.fileExists(atPath: e.expectedPath), "\(e.expected) is listed but missing")
            #expect(!e.rxArguments.isEmpty, "\(e.file) has no rx arguments")
        }
        // Every WAV in the folder is in the manifest (a fixture nobody tests is a fixture that rots).
        let wavs = try FileManager.default.contentsOfDirectory(atPath: Paths.fixtures).filter { $0.hasSuffix(".wav") }
        let listed = Set(entries.map(\.file))
        for w in wavs { #expect(listed.contains(w), "\(w) is in Fixtures/fsk but not in MANIFEST.tsv") }
    }

    @Test("modem rx decodes the fixture byte-exact; with -q standard error stays empty",
          arguments: FixtureEntry.all)
    func decodes(_ entry: FixtureEntry) async throws {
        let expected = try readBytes(entry.expectedPath)
        #expect(!expected.isEmpty)

        let quiet = try await modem(["rx", "-q"] + entry.rxArguments + [entry.wavPath])
        expectSuccess(quiet)
        #expect(quiet.stdout == expected, "\(entry.file) (made by \(entry.madeBy)): \(describeDifference(expected: expected, got: quiet.stdout))")
        #expect(quiet.stderr.isEmpty, "-q, yet standard error has: \(quiet.stderrText)")

        // With diagnostics: the same bytes on standard output, diagnostics only on standard error.
        let loud = try await modem(["rx"] + entry.rxArguments + [entry.wavPath])
        expectSuccess(loud)
        #expect(loud.stdout == expected, "\(entry.file) with diagnostics: \(describeDifference(expected: expected, got: loud.stdout))")
        #expect(!loud.stderr.isEmpty, "no diagnostics on standard error without -q")
    }

    /// The one frame in each recorded off-air fixture, as Dire Wolf's `atest` decodes it (checked by
    /// hand with `atest -h`: one packet per file, these addresses and this text).
    static let recordedFrames: [(file: String, line: String)] = [
        ("ISSpkt.wav", "RS0ISS>CQ:>ARISS - International Space Station"),
        ("ideal.wav", "KI5TOF>APRS:>hello world!"),
        ("ttwr.wav", "KI5TOF>APRS:>hello world!"),
    ]

    @Test("Recorded AX.25 fixtures: modem rx decodes exactly the frame atest finds in each",
          arguments: recordedFrames.map(\.file))
    func recorded(_ file: String) async throws {
        let path = Paths.packageRoot + "/Fixtures/recorded/" + file
        #expect(FileManager.default.fileExists(atPath: path), "Fixtures/recorded/\(file) is missing")
        let expected = try #require(Self.recordedFrames.first { $0.file == file }).line
        let result = try await modem(["rx", "-q", "--profile", "bell202", "--framing", "ax25", path])
        expectSuccess(result)
        let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines == [expected], "\(file): \(lines)")
    }
}
