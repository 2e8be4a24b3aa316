/// Arithmetic in GF(2⁸) built on a primitive polynomial, with log and antilog tables: what the
/// Reed-Solomon codes in this folder compute in.
///
/// Elements are bytes; addition is XOR; α = 2 generates the multiplicative group.
public struct GaloisField256: Sendable {
    /// The primitive polynomial with its x⁸ term (0x11D is x⁸ + x⁴ + x³ + x² + 1, FX.25's and most
    /// Reed-Solomon codes' choice).
    public let polynomial: Int
    /// αⁱ for i in 0..<510 (twice round, so a sum of two logarithms needs no reduction).
    let exp: [UInt8]
    /// log_α(x) for x in 1...255 (entry 0 unused).
    let log: [Int]

    /// Creates the field for `polynomial` (degree 8 and primitive: α must have order 255).
    public init(polynomial: Int = 0x11D) {
        precondition(polynomial >> 8 == 1, "GaloisField256 needs a polynomial of degree 8, got 0x\(String(polynomial, radix: 16))")
        self.polynomial = polynomial
        var exp = [UInt8](repeating: 0, count: 510)
        var log = [Int](repeating: 0, count: 256)
        var x = 1
        for i in 0..<255 {
            exp[i] = UInt8(x)
            log[x] = i
            x <<= 1
            if x & 0x100 != 0 { x ^= polynomial }
        }
        precondition(x == 1 && Set(exp[0..<255]).count == 255, "0x\(String(polynomial, radix: 16)) is not primitive")
        for i in 255..<510 { exp[i] = exp[i - 255] }
        self.exp = exp
        self.log = log
    }

    /// FX.25's field: x⁸ + x⁴ + x³ + x² + 1.
    public static let fx25 = GaloisField256(polynomial: 0x11D)

    /// a · b.
    @inline(__always)
    public func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        a == 0 || b == 0 ? 0 : exp[log[Int(a)] + log[Int(b)]]
    }

    /// a / b (b ≠ 0).
    @inline(__always)
    public func divide(_ a: UInt8, _ b: UInt8) -> UInt8 {
        precondition(b != 0, "division by zero in GF(256)")
        return a == 0 ? 0 : exp[log[Int(a)] + 255 - log[Int(b)]]
    }

    /// αⁿ for any integer n.
    @inline(__always)
    public func power(_ n: Int) -> UInt8 {
        exp[((n % 255) + 255) % 255]
    }

    /// log_α(a) (a ≠ 0), in 0..<255.
    @inline(__always)
    public func logarithm(_ a: UInt8) -> Int {
        precondition(a != 0, "log of zero in GF(256)")
        return log[Int(a)]
    }
}
