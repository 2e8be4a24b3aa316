#if canImport(Glibc)
import Glibc
#endif

/// Tells whether a channel is busy: whether the audio holds the line's mark and space tones.
///
/// The TNC's channel access (``TNCChannelAccess``) asks it before keying a shared channel. The
/// audio is cut in blocks of about two bits; per block, the power at the mark and at the space
/// frequency (Goertzel) is compared with the block's whole power: a block of keyed tones scores
/// near 1, white noise about `4 / blockLength`, silence 0. The scores are smoothed over about
/// ``smoothingMilliseconds``, and the carrier is on above ``onThreshold`` and off again below
/// ``offThreshold`` (hysteresis). Blocks quieter than ``minimumLevelDBFS`` score 0.
public struct CarrierDetector: Sendable {
    /// Samples per second, in Hz.
    public let sampleRate: Double
    /// Mark frequency, Hz.
    public let markFrequency: Double
    /// Space frequency, Hz.
    public let spaceFrequency: Double
    /// Samples per analysis block (about two bits, at least 16).
    public let blockLength: Int
    /// Time constant of the smoothing, in milliseconds.
    public let smoothingMilliseconds: Double
    /// Smoothed score (0...1) above which the carrier is on.
    public let onThreshold: Float
    /// Smoothed score (0...1) below which the carrier is off.
    public let offThreshold: Float
    /// Blocks whose mean power is below this level (dBFS, a full-scale sine is -3) count as silence.
    public let minimumLevelDBFS: Double

    /// Whether a carrier is heard now.
    public private(set) var isBusy = false
    /// The smoothed score, 0...1 (for diagnostics).
    public private(set) var score: Float = 0

    private let markCoefficient: Float
    private let spaceCoefficient: Float
    private let alpha: Float
    private let minimumMeanSquare: Float
    private var m1: Float = 0, m2: Float = 0, s1: Float = 0, s2: Float = 0, energy: Float = 0
    private var filled = 0

    /// Creates a detector for a line.
    /// - Parameters:
    ///   - configuration: sample rate, baud and tones.
    ///   - smoothingMilliseconds: time constant of the smoothing, 1...1000 ms (default 15).
    ///   - minimumLevelDBFS: the quietest audio that can be a carrier, -120...0 dBFS (default -60).
    public init(configuration: FSKConfiguration, smoothingMilliseconds: Double = 15, minimumLevelDBFS: Double = -60) {
        precondition((1...1000).contains(smoothingMilliseconds), "CarrierDetector smoothingMilliseconds must be 1...1000, got \(smoothingMilliseconds)")
        precondition((-120...0).contains(minimumLevelDBFS), "CarrierDetector minimumLevelDBFS must be -120...0, got \(minimumLevelDBFS)")
        sampleRate = configuration.sampleRate
        markFrequency = configuration.markFrequency
        spaceFrequency = configuration.spaceFrequency
        // Two bits, but long enough to tell the tones apart (a resolution of half their spacing).
        let separation = max(1, abs(configuration.markFrequency - configuration.spaceFrequency))
        let forTones = 2 * configuration.sampleRate / separation
        blockLength = max(16, Int(max(2 * configuration.samplesPerBit, forTones).rounded()))
        self.smoothingMilliseconds = smoothingMilliseconds
        self.minimumLevelDBFS = minimumLevelDBFS
        onThreshold = 0.45
        offThreshold = 0.25
        markCoefficient = Float(2 * cos(2 * Double.pi * markFrequency / sampleRate))
        spaceCoefficient = Float(2 * cos(2 * Double.pi * spaceFrequency / sampleRate))
        let blockMilliseconds = Double(blockLength) / sampleRate * 1000
        alpha = Float(min(1, blockMilliseconds / smoothingMilliseconds))
        minimumMeanSquare = Float(pow(10, minimumLevelDBFS / 10))
    }

    /// Feeds audio.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        for x in samples {
            let m0 = x + markCoefficient * m1 - m2
            m2 = m1; m1 = m0
            let s0 = x + spaceCoefficient * s1 - s2
            s2 = s1; s1 = s0
            energy += x * x
            filled += 1
            if filled == blockLength { endBlock() }
        }
    }

    /// Forgets everything: no carrier.
    public mutating func reset() {
        m1 = 0; m2 = 0; s1 = 0; s2 = 0; energy = 0; filled = 0
        score = 0
        isBusy = false
    }

    private mutating func endBlock() {
        let n = Float(blockLength)
        var blockScore: Float = 0
        if energy / n >= minimumMeanSquare {
            let mark = m1 * m1 + m2 * m2 - markCoefficient * m1 * m2
            let space = s1 * s1 + s2 * s2 - spaceCoefficient * s1 * s2
            blockScore = min(1, 2 * (mark + space) / (n * energy))
        }
        score += alpha * (blockScore - score)
        if isBusy, score < offThreshold { isBusy = false }
        if !isBusy, score > onThreshold { isBusy = true }
        m1 = 0; m2 = 0; s1 = 0; s2 = 0; energy = 0; filled = 0
    }
}
