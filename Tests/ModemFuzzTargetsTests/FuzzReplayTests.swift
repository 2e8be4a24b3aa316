import Foundation
import ModemFuzzTargets
import Testing

/// Replays the committed fuzz inputs through the registry without libFuzzer: every seed in
/// `Fixtures/fuzz/<target>/` and every input that once crashed, kept in `Fixtures/fuzz/regressions/<target>/`.
@Suite("Fuzz corpora replay")
struct FuzzReplayTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fuzz")

    /// The files in `folder` (none when it does not exist), sorted by name.
    static func files(in folder: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { folder.appendingPathComponent($0) }
    }

    @Test("every target has a seed corpus, and its seeds run", arguments: FuzzTargets.all.map(\.name))
    func seeds(name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let seeds = Self.files(in: Self.fixtures.appendingPathComponent(name))
        #expect(!seeds.isEmpty, "no seeds in Fixtures/fuzz/\(name)")
        for file in seeds { target.run(Array(try Data(contentsOf: file))) }
    }

    @Test("the seeds the targets make run too (they are what Fixtures/fuzz holds)", arguments: FuzzTargets.all.map(\.name))
    func madeSeeds(name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let seeds = target.seeds()
        #expect(!seeds.isEmpty)
        for seed in seeds { target.run(seed.bytes) }
    }

    @Test("inputs that once crashed a target stay fixed")
    func regressions() throws {
        let root = Self.fixtures.appendingPathComponent("regressions")
        for folder in Self.files(in: root) {
            let target = try #require(FuzzTargets.named(folder.lastPathComponent), "no target \(folder.lastPathComponent)")
            for file in Self.files(in: folder) { target.run(Array(try Data(contentsOf: file))) }
        }
    }

    @Test("target names are unique and usable as folder names")
    func names() {
        let names = FuzzTargets.all.map(\.name)
        #expect(Set(names).count == names.count)
        for name in names { #expect(name.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" }, "\(name)") }
    }

    @Test("FuzzChunks.split undoes join")
    func chunks() {
        let messages: [[UInt8]] = [[], [1], Array(repeating: 7, count: 300), [0xFF, 0]]
        #expect(FuzzChunks.split(FuzzChunks.join(messages)) == messages)
    }
}
