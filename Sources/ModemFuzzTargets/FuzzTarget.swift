/// One fuzz target: a parser of bytes from outside, driven the way production code drives it.
///
/// `run` must return for every input: a parser that traps, hangs or allocates without bound on some
/// input has a bug. A target may also check a property that must hold for every input (a decoded
/// value encodes and decodes back to itself) and trap when it does not, so the fuzzer reports it.
public struct FuzzTarget: Sendable {
    /// The name used by `scripts/fuzz.sh` and the corpus folders (`Fixtures/fuzz/<name>/`).
    public let name: String
    /// What is parsed, in one line.
    public let summary: String
    /// Feeds one input to the parser.
    public let run: @Sendable ([UInt8]) -> Void
    /// Small valid inputs, made with the project's own encoders: the committed seed corpus.
    public let seeds: @Sendable () -> [(name: String, bytes: [UInt8])]

    /// Creates a target.
    /// - Parameters:
    ///   - name: lower-case letters, digits and `-`.
    ///   - summary: what is parsed.
    ///   - seeds: valid inputs for the seed corpus.
    ///   - run: the parser driven with one input.
    public init(name: String, summary: String,
                seeds: @escaping @Sendable () -> [(name: String, bytes: [UInt8])],
                run: @escaping @Sendable ([UInt8]) -> Void) {
        self.name = name
        self.summary = summary
        self.seeds = seeds
        self.run = run
    }
}

/// The registry of fuzz targets: every parser that takes bytes from a file, a line, a radio or a socket.
public enum FuzzTargets {
    /// All targets, in a fixed order.
    public static let all: [FuzzTarget] =
        CodecFuzzTargets.all + AudioFuzzTargets.all + BluetoothFuzzTargets.all + MessagingFuzzTargets.all + HubFuzzTargets.all
        + WormholeFuzzTargets.all + TNCFuzzTargets.all

    /// The target called `name`, if there is one.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// Splits one fuzz input into several messages, for parsers that take a sequence of them (a state
/// machine fed packet by packet): each message is a 16-bit little-endian length and that many bytes
/// (fewer when the input ends first). The encoding is total: every input splits into something.
public enum FuzzChunks {
    /// The messages in `bytes`, at most `limit` of them.
    public static func split(_ bytes: [UInt8], limit: Int = 256) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while i < bytes.count, out.count < limit {
            let low = Int(bytes[i])
            let high = i + 1 < bytes.count ? Int(bytes[i + 1]) : 0
            i += 2
            let end = min(bytes.count, i + (low | high << 8))
            out.append(i < end ? Array(bytes[i..<end]) : [])
            i = max(i, end)
        }
        return out
    }

    /// The input that ``split(_:limit:)`` turns into `messages` (each at most 65,535 bytes).
    public static func join(_ messages: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for m in messages {
            let n = min(m.count, 0xFFFF)
            out.append(UInt8(n & 0xFF))
            out.append(UInt8(n >> 8))
            out.append(contentsOf: m.prefix(n))
        }
        return out
    }

    /// The bits of `bytes`, least significant bit of each byte first.
    public static func bits(_ bytes: some Collection<UInt8>) -> [Bool] {
        var out: [Bool] = []
        out.reserveCapacity(bytes.count * 8)
        for b in bytes { for k in 0..<8 { out.append(b >> k & 1 == 1) } }
        return out
    }

    /// The bytes of `bits` (least significant bit first), the last one padded with 0s.
    public static func bytes(_ bits: [Bool]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bits.count + 7) / 8)
        var i = 0
        while i < bits.count {
            var b: UInt8 = 0
            for k in 0..<8 where i + k < bits.count && bits[i + k] { b |= 1 << k }
            out.append(b)
            i += 8
        }
        return out
    }
}
