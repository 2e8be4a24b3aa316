/// A systematic Reed-Solomon code over GF(2⁸): `parityCount` check bytes after up to
/// `255 − parityCount` data bytes, correcting errors and erasures (known-doubtful positions) with
/// 2·errors + erasures ≤ `parityCount`.
///
/// Conventions (those of FX.25 and of Phil Karn's widely used coder, so blocks interoperate): a block
/// is the polynomial whose first byte is the highest-degree coefficient; the generator's roots are
/// α^(firstRoot + j) for j in 0..<parityCount; the check bytes are the remainder of data·x^parityCount
/// divided by the generator, highest degree first. A shorter block (a shortened code, RS(144,128) from
/// RS(255,239)) is the full code with leading zeros not sent; nothing else changes.
///
/// ```swift
/// let code = ReedSolomonCode(parityCount: 16)
/// var block = data + code.parity(of: data)
/// block[3] ^= 0x55
/// code.decode(&block)            // .corrected(positions: [3])
/// ```
public struct ReedSolomonCode: Sendable {
    /// Check bytes per block (2...254, even in practice).
    public let parityCount: Int
    /// The exponent of the generator's first root (1 for FX.25).
    public let firstRoot: Int
    /// The field.
    public let field: GaloisField256
    /// The generator's coefficients below its leading 1, highest degree first.
    private let generator: [UInt8]

    /// The longest block (data and check bytes), 255.
    public static let maximumBlockLength = 255

    /// Creates a code.
    /// - Parameters:
    ///   - parityCount: check bytes per block, 1...254.
    ///   - firstRoot: exponent of the generator's first root (FX.25: 1).
    ///   - field: the field (FX.25: x⁸ + x⁴ + x³ + x² + 1).
    public init(parityCount: Int, firstRoot: Int = 1, field: GaloisField256 = .fx25) {
        precondition((1...254).contains(parityCount), "ReedSolomonCode parityCount must be 1...254, got \(parityCount)")
        self.parityCount = parityCount
        self.firstRoot = firstRoot
        self.field = field
        // g(x) = Π (x + α^(firstRoot + j)), built in ascending order then reversed.
        var g: [UInt8] = [1]
        for j in 0..<parityCount {
            let root = field.power(firstRoot + j)
            var next = [UInt8](repeating: 0, count: g.count + 1)
            for (i, c) in g.enumerated() {
                next[i + 1] ^= c                          // x · c xⁱ
                next[i] ^= field.multiply(c, root)        // root · c xⁱ
            }
            g = next
        }
        // g is ascending with g[parityCount] == 1; keep the rest highest first.
        generator = Array(g[0..<parityCount].reversed())
    }

    /// The most data bytes a block holds, `255 − parityCount`.
    public var maximumDataLength: Int { Self.maximumBlockLength - parityCount }

    /// The check bytes for `data` (at most ``maximumDataLength`` bytes), highest degree first.
    public func parity(of data: some Collection<UInt8>) -> [UInt8] {
        precondition(data.count <= maximumDataLength, "ReedSolomonCode: \(data.count) data bytes do not fit in a block of \(parityCount) check bytes")
        var remainder = [UInt8](repeating: 0, count: parityCount)
        for byte in data {
            let feedback = byte ^ remainder[0]
            for j in 0..<(parityCount - 1) { remainder[j] = remainder[j + 1] }
            remainder[parityCount - 1] = 0
            if feedback != 0 {
                let lf = field.logarithm(feedback)
                for j in 0..<parityCount where generator[j] != 0 {
                    remainder[j] ^= field.exp[lf + field.log[Int(generator[j])]]
                }
            }
        }
        return remainder
    }

    /// What ``decode(_:erasures:)`` made of a block.
    public enum Outcome: Sendable, Equatable {
        /// The block is a codeword (now): `positions` are the indices of the bytes changed.
        case corrected(positions: [Int])
        /// More damage than the check bytes can correct; the block is left as it was.
        case uncorrectable
    }

    /// The syndromes of `block`: zero when it is a codeword.
    public func syndromes(of block: [UInt8]) -> [UInt8] {
        var s = [UInt8](repeating: 0, count: parityCount)
        for j in 0..<parityCount {
            let lb = field.log[Int(field.power(firstRoot + j))]
            var acc: UInt8 = 0
            for byte in block {
                acc = (acc == 0 ? 0 : field.exp[field.log[Int(acc)] + lb]) ^ byte
            }
            s[j] = acc
        }
        return s
    }

    /// Corrects `block` (data then check bytes, at most 255 bytes, at least `parityCount + 1`) in place.
    /// - Parameters:
    ///   - block: the received block.
    ///   - erasures: indices of bytes known to be doubtful (at most `parityCount`; repeats ignored).
    /// - Returns: the positions changed, or ``Outcome/uncorrectable`` (the block unchanged) when no
    ///   codeword lies within reach: 2·errors + erasures > `parityCount`, or a locator whose roots are not
    ///   all inside the block.
    @discardableResult
    public func decode(_ block: inout [UInt8], erasures: [Int] = []) -> Outcome {
        let n = block.count
        precondition(n > parityCount && n <= Self.maximumBlockLength, "ReedSolomonCode: a block of \(n) bytes does not fit \(parityCount) check bytes")
        let s = syndromes(of: block)
        if s.allSatisfy({ $0 == 0 }) { return .corrected(positions: []) }
        let erased = Array(Set(erasures.filter { (0..<n).contains($0) })).sorted()
        guard erased.count <= parityCount else { return .uncorrectable }
        let f = field
        // Position index i holds the coefficient of x^(n-1-i): its locator is α^(n-1-i).
        // Erasure locator Γ(x) = Π (1 + X_k x), ascending coefficients.
        var lambda: [UInt8] = [1]
        for i in erased {
            let x = f.power(n - 1 - i)
            var next = lambda + [0]
            for (d, c) in lambda.enumerated() { next[d + 1] ^= f.multiply(c, x) }
            lambda = next
        }
        var b = lambda
        var l = erased.count
        let e = erased.count
        // Berlekamp-Massey from the erasure locator (errors-and-erasures form).
        for r in e..<parityCount {
            var delta: UInt8 = 0
            for i in 0...min(l, lambda.count - 1) where r - i >= 0 {
                delta ^= f.multiply(lambda[i], s[r - i])
            }
            // x · B
            let xb = [0] + b
            if delta == 0 {
                b = xb
                continue
            }
            var t = lambda
            if t.count < xb.count { t += [UInt8](repeating: 0, count: xb.count - t.count) }
            for (i, c) in xb.enumerated() where c != 0 { t[i] ^= f.multiply(delta, c) }
            if 2 * l <= r + e {
                l = r + 1 + e - l
                b = lambda.map { f.divide($0, delta) }
            } else {
                b = xb
            }
            lambda = t
        }
        while lambda.count > 1 && lambda.last == 0 { lambda.removeLast() }
        let degree = lambda.count - 1
        guard degree == l, degree <= parityCount else { return .uncorrectable }
        // Chien search over the positions inside the block.
        var roots: [Int] = []
        for i in 0..<n {
            // Λ(X⁻¹) with X = α^(n-1-i).
            let inverse = -(n - 1 - i)
            var v: UInt8 = 0
            for (d, c) in lambda.enumerated() where c != 0 {
                v ^= f.exp[f.log[Int(c)] + ((inverse * d) % 255 + 255) % 255]
            }
            if v == 0 {
                roots.append(i)
                if roots.count == degree { break }
            }
        }
        guard roots.count == degree else { return .uncorrectable }
        // Ω(x) = S(x) Λ(x) mod x^parityCount.
        var omega = [UInt8](repeating: 0, count: parityCount)
        for i in 0..<parityCount {
            var acc: UInt8 = 0
            for j in 0...min(i, degree) { acc ^= f.multiply(lambda[j], s[i - j]) }
            omega[i] = acc
        }
        var corrected = block
        var changed: [Int] = []
        for i in roots {
            let p = n - 1 - i
            let xInverse = f.power(-p)
            // Ω(X⁻¹) and Λ'(X⁻¹) (odd terms only in characteristic 2).
            var num: UInt8 = 0, power: UInt8 = 1
            for c in omega { num ^= f.multiply(c, power); power = f.multiply(power, xInverse) }
            var den: UInt8 = 0
            for d in stride(from: 1, through: degree, by: 2) {
                den ^= f.multiply(lambda[d], f.power(-p * (d - 1)))
            }
            guard den != 0 else { return .uncorrectable }
            // Y = X^(1 - firstRoot) Ω(X⁻¹) / Λ'(X⁻¹)
            var y = f.divide(num, den)
            if firstRoot != 1 { y = f.multiply(y, f.power(p * (1 - firstRoot))) }
            if y != 0 {
                corrected[i] ^= y
                changed.append(i)
            }
        }
        guard syndromes(of: corrected).allSatisfy({ $0 == 0 }) else { return .uncorrectable }
        block = corrected
        return .corrected(positions: changed)
    }
}
