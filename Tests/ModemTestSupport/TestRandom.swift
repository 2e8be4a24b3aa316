import Foundation
import ModemDSP
import ModemRuntime

/// The tests' seeded random generator (SplitMix64 underneath), so every failure reproduces.
public struct TestRandom: RandomNumberGenerator, Sendable {
    private var generator: SplitMix64

    /// A generator whose output is fixed by `seed`.
    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { generator.next() }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    /// `count` random bits.
    public mutating func bits(_ count: Int) -> [Bool] {
        (0..<count).map { _ in Bool.random(using: &self) }
    }

    /// `count` printable ASCII characters (32...126).
    public mutating func printable(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 32...126, using: &self) }
    }

    /// An integer uniform in `range`.
    public mutating func int16(in range: ClosedRange<Int16>) -> Int16 {
        Int16.random(in: range, using: &self)
    }

    /// A standard normal deviate (Box-Muller on two uniform draws).
    public mutating func gaussian() -> Float {
        let u = Double.random(in: Double.ulpOfOne..<1, using: &self), v = Double.random(in: 0..<1, using: &self)
        return Float((-2 * log(u)).squareRoot() * cos(2 * Double.pi * v))
    }

    /// Uniform white noise in -amplitude...amplitude.
    public mutating func noise(_ count: Int, amplitude: Float) -> [Float] {
        (0..<count).map { _ in Float.random(in: -amplitude...amplitude, using: &self) }
    }
}
