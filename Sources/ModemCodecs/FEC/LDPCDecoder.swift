/// What ``LDPCDecoder/decode(_:maximumIterations:)`` made of a word.
public struct LDPCDecodeResult: Sendable, Equatable {
    /// Whether the decision satisfies every parity check (a code word; an outer CRC still decides
    /// whether it is the one sent).
    public var converged: Bool
    /// Iterations run (1...maximum).
    public var iterations: Int
    /// Hard decisions that differed from the channel's own (a measure of the line's damage).
    public var correctedBits: Int
}

/// Belief-propagation decoding of an ``LDPCCode`` by layered normalised min-sum: the checks are
/// visited one after another and each updates the bits' beliefs at once, which converges in about
/// half the iterations of the flooding schedule; decoding stops as soon as every check holds.
///
/// A decoder owns its working memory (one belief per bit, one message per edge), so one value must
/// not be used from two threads at once; make one per thread.
public struct LDPCDecoder: ~Copyable {
    /// The code decoded.
    public let code: LDPCCode
    private let beliefs: UnsafeMutableBufferPointer<Float>
    private let messages: UnsafeMutableBufferPointer<Float>
    private let scratch: UnsafeMutableBufferPointer<Float>
    private let hard: UnsafeMutableBufferPointer<UInt8>
    /// The min-sum messages' scale per check (by its degree): min-sum overstates a check's
    /// confidence, more so the more bits it joins.
    private let scales: UnsafeMutableBufferPointer<Float>

    /// The largest belief magnitude kept (beliefs are clipped to ±this).
    public static let beliefLimit: Float = 60

    /// Creates a decoder for `code`.
    public init(code: LDPCCode) {
        self.code = code
        beliefs = .allocate(capacity: code.length)
        messages = .allocate(capacity: code.edgeCount)
        hard = .allocate(capacity: code.length)
        var maxDegree = 0
        scales = .allocate(capacity: code.checkCount)
        for c in 0..<code.checkCount {
            let d = Int(code.checkStart[c + 1] - code.checkStart[c])
            maxDegree = max(maxDegree, d)
            scales[c] = d <= 8 ? 0.8 : d <= 16 ? 0.75 : 0.7
        }
        scratch = .allocate(capacity: maxDegree)
    }

    deinit {
        beliefs.deallocate()
        messages.deallocate()
        scratch.deallocate()
        hard.deallocate()
        scales.deallocate()
    }

    /// Decodes one word.
    /// - Parameters:
    ///   - soft: one value per code bit (``LDPCCode/length`` of them), in the FEC module's
    ///     convention: positive for a likely 1, negative for a likely 0, its size the
    ///     log-likelihood ratio (zero: nothing known, an erasure).
    ///   - maximumIterations: the most iterations (1...1000; 50 is plenty at these lengths).
    /// - Returns: the outcome; the decided bits are in ``bits`` (the information bits first).
    public mutating func decode(_ soft: UnsafeBufferPointer<Float>, maximumIterations: Int = 50) -> LDPCDecodeResult {
        precondition(soft.count == code.length, "LDPCDecoder.decode takes \(code.length) values, got \(soft.count)")
        precondition((1...1000).contains(maximumIterations), "maximumIterations must be 1...1000")
        let n = code.length
        let limit = Self.beliefLimit
        let beliefs = self.beliefs, messages = self.messages, scratch = self.scratch, hard = self.hard, scales = self.scales
        // Internally L = log P(0)/P(1): positive for a likely 0.
        for i in 0..<n {
            let v = -soft[i]
            beliefs[i] = v.isNaN ? 0 : min(limit, max(-limit, v))
        }
        messages.initialize(repeating: 0)
        var iterations = 0
        var converged = false
        let checks = code.checkCount
        code.checkStart.withUnsafeBufferPointer { start in
            code.checkVariables.withUnsafeBufferPointer { vars in
                while iterations < maximumIterations {
                    iterations += 1
                    Self.iterate(checks: checks, start: start, vars: vars, beliefs: beliefs, messages: messages,
                                 scratch: scratch, scales: scales, limit: limit)
                    // Every check holds for the hard decisions?
                    for i in 0..<n { hard[i] = beliefs[i] < 0 ? 1 : 0 }
                    if Self.satisfied(checks: checks, start: start, vars: vars, hard: hard) {
                        converged = true
                        break
                    }
                }
            }
        }
        var corrected = 0
        for i in 0..<n where (soft[i] > 0) != (hard[i] != 0) && soft[i] != 0 { corrected += 1 }
        return LDPCDecodeResult(converged: converged, iterations: iterations, correctedBits: corrected)
    }

    /// One pass over every check (the layered schedule).
    @inline(__always)
    private static func iterate(checks: Int, start: UnsafeBufferPointer<Int32>, vars: UnsafeBufferPointer<Int32>,
                                beliefs: UnsafeMutableBufferPointer<Float>, messages: UnsafeMutableBufferPointer<Float>,
                                scratch: UnsafeMutableBufferPointer<Float>, scales: UnsafeMutableBufferPointer<Float>,
                                limit: Float) {
        let b = beliefs.baseAddress!, m = messages.baseAddress!, t = scratch.baseAddress!
        let v = vars.baseAddress!
        for c in 0..<checks {
            let lo = Int(start[c]), hi = Int(start[c + 1])
            var min1 = Float.infinity, min2 = Float.infinity
            var minAt = -1
            var negative = false
            for e in lo..<hi {
                let x = b[Int(v[e])] - m[e]
                t[e - lo] = x
                let a = abs(x)
                negative = negative != (x < 0)
                if a < min1 {
                    min2 = min1
                    min1 = a
                    minAt = e
                } else if a < min2 {
                    min2 = a
                }
            }
            let s = scales[c]
            let m1 = s * min1, m2 = s * min2
            for e in lo..<hi {
                let x = t[e - lo]
                let magnitude = e == minAt ? m2 : m1
                // The sign: the product of the other bits' signs.
                let r = (negative != (x < 0)) ? -magnitude : magnitude
                m[e] = r
                b[Int(v[e])] = x + r
            }
        }
    }

    /// Whether every check holds for `hard`.
    @inline(__always)
    private static func satisfied(checks: Int, start: UnsafeBufferPointer<Int32>, vars: UnsafeBufferPointer<Int32>,
                                  hard: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        let h = hard.baseAddress!, v = vars.baseAddress!
        for c in 0..<checks {
            var x: UInt8 = 0
            for e in Int(start[c])..<Int(start[c + 1]) { x ^= h[Int(v[e])] }
            if x != 0 { return false }
        }
        return true
    }

    /// Decodes one word given as an array (see ``decode(_:maximumIterations:)``).
    public mutating func decode(_ soft: [Float], maximumIterations: Int = 50) -> LDPCDecodeResult {
        soft.withUnsafeBufferPointer { decode($0, maximumIterations: maximumIterations) }
    }

    /// The decided bits of the last word (0 or 1), information bits first.
    public var bits: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(hard) }

    /// The decided information bits of the last word.
    public var informationBits: [UInt8] { Array(hard[0..<code.informationLength]) }
}
