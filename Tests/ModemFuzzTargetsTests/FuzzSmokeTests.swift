import ModemDSP
import ModemFuzzTargets
import Testing
import ModemRuntime

/// The test command's short fuzzing smoke: every target runs on inputs mutated from its own seeds the
/// way libFuzzer mutates (bit flips, interesting bytes, insertions, deletions, truncations, splices of
/// two seeds), from a fixed generator, so a run is the same on every machine. Coverage-guided runs with
/// AddressSanitizer are `scripts/fuzz.sh` (docs/fuzzing.md); this keeps every target exercised on every
/// landing without a second, instrumented build of the parsers.
@Suite("Fuzz smoke (seeded mutations)")
struct FuzzSmokeTests {
    /// Mutated inputs per target.
    static let executions = 1_500

    @Test("every target survives seeded mutations of its seeds", arguments: FuzzTargets.all.map(\.name))
    func mutations(name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let seeds = target.seeds().map(\.bytes)
        #expect(!seeds.isEmpty)
        var mutator = SeedMutator(seeds: seeds, seed: UInt64(name.utf8.reduce(5381) { $0 &* 33 &+ UInt64($1) }))
        for _ in 0..<Self.executions { target.run(mutator.next()) }
    }
}

/// libFuzzer-style mutations of a seed corpus, from a seeded generator.
struct SeedMutator {
    let seeds: [[UInt8]]
    var random: SplitMix64
    /// Inputs grow to at most this many bytes.
    let maximumLength = 4096

    init(seeds: [[UInt8]], seed: UInt64) {
        self.seeds = seeds
        random = SplitMix64(seed: seed)
    }

    mutating func pick(_ n: Int) -> Int { n <= 1 ? 0 : Int(random.next() % UInt64(n)) }

    /// A seed with one to four mutations applied.
    mutating func next() -> [UInt8] {
        var bytes = seeds[pick(seeds.count)]
        for _ in 0...pick(4) { mutate(&bytes) }
        return bytes
    }

    mutating func mutate(_ b: inout [UInt8]) {
        let interesting: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0x7E, 0xC0, 0xDB, 0x0D, 0x0A]
        switch pick(8) {
        case 0 where !b.isEmpty:   // flip a bit
            b[pick(b.count)] ^= 1 << UInt8(pick(8))
        case 1 where !b.isEmpty:   // an interesting byte
            b[pick(b.count)] = interesting[pick(interesting.count)]
        case 2 where !b.isEmpty:   // a random byte
            b[pick(b.count)] = UInt8(truncatingIfNeeded: random.next())
        case 3 where b.count < maximumLength:   // insert random bytes
            let at = pick(b.count + 1)
            b.insert(contentsOf: (0...pick(16)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at)
        case 4 where !b.isEmpty:   // delete a range
            let from = pick(b.count)
            b.removeSubrange(from..<min(b.count, from + 1 + pick(16)))
        case 5:   // truncate
            b = Array(b.prefix(pick(b.count + 1)))
        case 6 where b.count < maximumLength:   // splice in part of another seed
            let other = seeds[pick(seeds.count)]
            let from = pick(other.count + 1)
            b.insert(contentsOf: other[from..<min(other.count, from + pick(64))], at: pick(b.count + 1))
        default:   // duplicate a range
            guard !b.isEmpty, b.count < maximumLength else { return }
            let from = pick(b.count)
            b.insert(contentsOf: b[from..<min(b.count, from + 1 + pick(32))], at: pick(b.count + 1))
        }
    }
}
