import Synchronization
import ModemRuntime

/// A code rate of the LDPC family ``LDPCCode``: information bits per code bit.
public enum LDPCRate: String, CaseIterable, Sendable, Hashable, Codable {
    case r1_2 = "1/2", r2_3 = "2/3", r3_4 = "3/4", r5_6 = "5/6", r7_8 = "7/8", r9_10 = "9/10"
    /// Added after the others so that `allCases`' order (and any index into it) stays as it was.
    case r3_5 = "3/5"

    /// Numerator and denominator.
    public var fraction: (numerator: Int, denominator: Int) {
        switch self {
        case .r1_2: (1, 2)
        case .r3_5: (3, 5)
        case .r2_3: (2, 3)
        case .r3_4: (3, 4)
        case .r5_6: (5, 6)
        case .r7_8: (7, 8)
        case .r9_10: (9, 10)
        }
    }

    /// The rate as a number.
    public var value: Double { Double(fraction.numerator) / Double(fraction.denominator) }

    /// The information columns' degrees: a fraction of heavy columns and the degree of the others.
    /// The shape of DVB-S2's degree distributions (many degree-3 columns, a tenth to two fifths
    /// heavier, the parity bits a degree-2 staircase), which are good at these rates.
    var profile: (heavyFraction: Double, heavyDegree: Int, lightDegree: Int) {
        switch self {
        case .r1_2: (0.4, 8, 3)
        case .r3_5: (1.0 / 3, 12, 3)   // DVB-S2's 3/5: a third of degree 12
        case .r2_3: (0.1, 13, 3)
        case .r3_4: (0.1, 12, 3)
        case .r5_6: (0.1, 13, 3)
        case .r7_8: (0.1, 4, 3)
        case .r9_10: (0.1, 4, 3)
        }
    }
}

/// A binary low-density parity-check code of the irregular repeat-accumulate kind: `k` information
/// bits, then `n − k` parity bits that form a staircase (parity bit j takes part in checks j and
/// j + 1), so encoding is one pass over the checks. The information bits' connections are drawn
/// once, deterministically, from a fixed seed: every sender and receiver builds the same graph.
/// Four-cycles (two columns sharing two checks) are avoided where the draw allows.
///
/// A code word is `[information bits][parity bits]`. Decoding: ``LDPCDecoder``.
///
/// ```swift
/// let code = LDPCCode.standard(.r3_4)           // n = 16200, k = 12150
/// let word = code.encode(info)                  // 16200 bits
/// var decoder = LDPCDecoder(code: code)
/// let result = decoder.decode(soft)             // soft: positive for a likely 1
/// ```
public final class LDPCCode: Sendable {
    /// Code bits per word (n).
    public let length: Int
    /// Information bits per word (k).
    public let informationLength: Int
    /// Parity checks (n − k).
    public var checkCount: Int { length - informationLength }
    /// Edges of the graph (ones in the parity-check matrix).
    public var edgeCount: Int { checkVariables.count }

    /// For check c, its variables are `checkVariables[checkStart[c] ..< checkStart[c + 1]]`.
    let checkStart: [Int32]
    let checkVariables: [Int32]
    /// For information bit j, its checks are `infoChecks[infoStart[j] ..< infoStart[j + 1]]`.
    let infoStart: [Int32]
    let infoChecks: [Int32]

    /// The standard word length of ``standard(_:)``.
    public static let standardLength = 16200

    private static let cache = Mutex<[String: LDPCCode]>([:])

    /// The code of `rate` at the standard length (16,200 bits), built once per process.
    public static func standard(_ rate: LDPCRate) -> LDPCCode {
        code(rate, length: standardLength)
    }

    /// The code of `rate` at `length` bits (a multiple of the rate's denominator, 96...64800),
    /// built once per process and shared.
    public static func code(_ rate: LDPCRate, length: Int) -> LDPCCode {
        let key = "\(rate.rawValue)/\(length)"
        if let c = cache.withLock({ $0[key] }) { return c }
        let made = LDPCCode(rate: rate, length: length)
        return cache.withLock { c in
            if let existing = c[key] { return existing }
            c[key] = made
            return made
        }
    }

    /// Builds the code of `rate` at `length` bits.
    /// - Parameters:
    ///   - rate: the code rate.
    ///   - length: code bits per word: a multiple of the rate's denominator, 96...64800.
    ///   - seed: the draw of the graph (equal seeds, equal codes).
    public init(rate: LDPCRate, length: Int, seed: UInt64 = 0x1D9C_0DE5) {
        let (num, den) = rate.fraction
        precondition((96...64800).contains(length) && length % den == 0,
                     "LDPCCode length must be a multiple of \(den) in 96...64800, got \(length)")
        let k = length / den * num
        let m = length - k
        self.length = length
        informationLength = k
        let profile = rate.profile
        let heavy = Int((Double(k) * profile.heavyFraction).rounded())
        let degrees = (0..<k).map { $0 < heavy ? profile.heavyDegree : profile.lightDegree }
        let columns = Self.draw(degrees: degrees, checks: m, seed: seed)

        // Information columns, then the CSR of checks (information edges, then the staircase).
        var infoStart = [Int32](repeating: 0, count: k + 1)
        var infoChecks: [Int32] = []
        infoChecks.reserveCapacity(degrees.reduce(0, +))
        var perCheck = [[Int32]](repeating: [], count: m)
        for j in 0..<k {
            for c in columns[j] {
                infoChecks.append(Int32(c))
                perCheck[c].append(Int32(j))
            }
            infoStart[j + 1] = Int32(infoChecks.count)
        }
        for c in 0..<m {
            if c > 0 { perCheck[c].append(Int32(k + c - 1)) }
            perCheck[c].append(Int32(k + c))
        }
        var checkStart = [Int32](repeating: 0, count: m + 1)
        var checkVariables: [Int32] = []
        checkVariables.reserveCapacity(perCheck.reduce(0) { $0 + $1.count })
        for c in 0..<m {
            checkVariables.append(contentsOf: perCheck[c])
            checkStart[c + 1] = Int32(checkVariables.count)
        }
        self.infoStart = infoStart
        self.infoChecks = infoChecks
        self.checkStart = checkStart
        self.checkVariables = checkVariables
    }

    /// Draws each information column's checks: check degrees as even as the edge count allows
    /// (a shuffled list of sockets), no check twice in a column, and no two columns sharing two
    /// checks (the staircase's pairs included) where a swap with a later socket can avoid it.
    private static func draw(degrees: [Int], checks m: Int, seed: UInt64) -> [[Int]] {
        var rng = SplitMix64(seed: seed)
        let edges = degrees.reduce(0, +)
        var sockets = (0..<edges).map { $0 % m }
        for i in stride(from: sockets.count - 1, to: 0, by: -1) {
            sockets.swapAt(i, Int(rng.next() % UInt64(i + 1)))
        }
        var pairs = Set<UInt64>()
        pairs.reserveCapacity(edges * 4)
        func key(_ a: Int, _ b: Int) -> UInt64 { a < b ? UInt64(a) << 32 | UInt64(b) : UInt64(b) << 32 | UInt64(a) }
        for c in 0..<(m - 1) { pairs.insert(key(c, c + 1)) }
        var columns: [[Int]] = []
        columns.reserveCapacity(degrees.count)
        var at = 0
        for d in degrees {
            var column: [Int] = []
            column.reserveCapacity(d)
            for i in 0..<d {
                var tries = 0
                while true {
                    let c = sockets[at + i]
                    let clash = column.contains(c)
                    let cycle = !clash && column.contains { pairs.contains(key($0, c)) }
                    if !clash && (!cycle || tries >= 64) { break }
                    // Swap in a socket from later in the list (or, at its end, from anywhere after this column).
                    let rest = sockets.count - (at + i + 1)
                    if rest <= 0 || tries >= 256 {
                        if clash {
                            // No other socket: any check not yet in the column (an uneven degree, rare).
                            var alt = Int(rng.next() % UInt64(m))
                            while column.contains(alt) { alt = (alt + 1) % m }
                            sockets[at + i] = alt
                        }
                        break
                    }
                    let j = at + i + 1 + Int(rng.next() % UInt64(rest))
                    sockets.swapAt(at + i, j)
                    tries += 1
                }
                column.append(sockets[at + i])
            }
            for a in 0..<column.count { for b in (a + 1)..<column.count { pairs.insert(key(column[a], column[b])) } }
            columns.append(column)
            at += d
        }
        return columns
    }

    /// The code word of `information` (``informationLength`` bits, 0 or 1): the bits themselves, then
    /// the parity bits.
    public func encode(_ information: [UInt8]) -> [UInt8] {
        precondition(information.count == informationLength, "LDPCCode.encode takes \(informationLength) bits, got \(information.count)")
        var word = information
        word.reserveCapacity(length)
        var syndrome = [UInt8](repeating: 0, count: checkCount)
        infoStart.withUnsafeBufferPointer { start in
            infoChecks.withUnsafeBufferPointer { checks in
                for j in 0..<informationLength where information[j] & 1 != 0 {
                    for e in Int(start[j])..<Int(start[j + 1]) { syndrome[Int(checks[e])] ^= 1 }
                }
            }
        }
        var p: UInt8 = 0
        for c in 0..<checkCount {
            p ^= syndrome[c]
            word.append(p)
        }
        return word
    }

    /// Whether `word` (``length`` bits, 0 or 1) satisfies every check.
    public func isCodeword(_ word: [UInt8]) -> Bool {
        precondition(word.count == length, "LDPCCode.isCodeword takes \(length) bits, got \(word.count)")
        for c in 0..<checkCount {
            var x: UInt8 = 0
            for e in Int(checkStart[c])..<Int(checkStart[c + 1]) { x ^= word[Int(checkVariables[e])] }
            if x & 1 != 0 { return false }
        }
        return true
    }
}
