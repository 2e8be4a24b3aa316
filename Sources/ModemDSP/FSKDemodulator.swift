import Foundation

/// The shape of one asynchronous character on the line, as the demodulator needs it.
public struct AsyncCharacterShape: Sendable, Hashable {
    /// Bits before the stop bits: the start bit, the data bits and any parity bit (2...32).
    public var bitsBeforeStop: Int
    /// Length of the stop element in bit periods (1, 1.5, 2; at least 1).
    public var stopBits: Double

    /// Creates a shape.
    /// - Parameters:
    ///   - bitsBeforeStop: start + data + parity bits, 2...32.
    ///   - stopBits: stop element length in bit periods, 1...4.
    public init(bitsBeforeStop: Int, stopBits: Double) {
        precondition((2...32).contains(bitsBeforeStop), "bitsBeforeStop must be 2...32")
        precondition(stopBits >= 1 && stopBits <= 4, "stopBits must be 1...4")
        self.bitsBeforeStop = bitsBeforeStop
        self.stopBits = stopBits
    }

    /// Character length in bit periods.
    public var length: Double { Double(bitsBeforeStop) + stopBits }
}

/// One character recovered from the line.
public struct DemodulatedCharacter: Sendable, Hashable {
    /// The bits after the start bit and before the stop bit (data then parity), first received in bit 0.
    public var bits: UInt32
    /// Whether the stop bit was heard as mark, as it should be.
    public var stopBitOK: Bool
    /// How clearly the bits were told apart, 0...1 (1: every bit all mark or all space).
    public var confidence: Float
    /// Absolute sample index at which the start bit began.
    public var startSample: Int
}

/// What the demodulator reports besides characters.
public enum FSKDemodulatorEvent: Sendable, Hashable {
    /// A character.
    case character(DemodulatedCharacter)
    /// A carrier was found at this absolute sample index.
    case carrierDetected(sample: Int)
    /// The carrier was lost; statistics of the burst that ended.
    case carrierLost(FSKBurstStatistics)
}

/// Statistics of one carrier burst, for diagnostics.
public struct FSKBurstStatistics: Sendable, Hashable {
    /// Absolute sample index where the carrier was detected.
    public var startSample: Int
    /// Absolute sample index where it was lost.
    public var endSample: Int
    /// Characters decoded in the burst.
    public var characters: Int
    /// Characters whose stop bit was not mark.
    public var framingErrors: Int
    /// Mean confidence of the characters, 0...1.
    public var meanConfidence: Float
    /// The baud rate measured from the bit timing, in baud.
    public var measuredBaudRate: Double
    /// Mean signal level of the burst in dBFS (RMS relative to a full-scale sine).
    public var levelDBFS: Float
}

/// A streaming demodulator for asynchronous (start/stop) binary FSK.
///
/// Each bit is decided by non-coherent matched filtering: the energies of the correlations with
/// the mark and the space tone over exactly one bit period are compared, which is the optimal
/// detector for a bit of unknown phase in white noise. The decisions are level independent
/// (only ratios are used), DC and low-frequency hum are removed by a high-pass ahead of the
/// correlators, and bit timing is recovered per character: each character's start is searched
/// around its predicted position and the bit period is tracked, which follows baud-rate errors of
/// several percent and sound-card clock drift.
///
/// Memory is bounded by a few characters of history, whatever the length of the input.
public struct FSKDemodulator: Sendable {
    /// The checked modem parameters.
    public let configuration: FSKConfiguration
    /// The character shape being received.
    public let shape: AsyncCharacterShape

    private var corr: ToneCorrelator
    private let nominalBit: Double
    private var bitLength: Double
    private var state: State = .searching
    private var scanPosition: Double
    private var charsSinceLock = 0
    /// Starts of the current run of back-to-back characters (absolute samples), for rate tracking.
    private var runStarts: [Double] = []

    // burst statistics
    private var burst = FSKBurstStatistics(startSample: 0, endSample: 0, characters: 0, framingErrors: 0,
                                           meanConfidence: 0, measuredBaudRate: 0, levelDBFS: -200)
    private var burstConfidenceSum: Float = 0
    private var burstEnergy: Double = 0
    private var burstSamples: Double = 0
    private var finished = false

    private enum State: Sendable {
        case searching
        /// Locked: the next character is expected to start at `expected` (absolute samples).
        case locked(expected: Double, missed: Int)
    }

    /// Minimum tone fraction (see ``ToneWindow/toneFraction``) for a character to count as carrier.
    private let carrierThreshold: Float
    /// Mean squared sample of the characters of the current burst (0 when searching).
    private var referenceLevel: Float = 0

    /// Creates a demodulator.
    /// - Parameters:
    ///   - configuration: sample rate, baud and tones.
    ///   - shape: the character shape (e.g. 9 bits before a 1-bit stop for 8N1).
    public init(configuration: FSKConfiguration, shape: AsyncCharacterShape) {
        self.configuration = configuration
        self.shape = shape
        corr = ToneCorrelator(sampleRate: configuration.sampleRate, markFrequency: configuration.markFrequency,
                              spaceFrequency: configuration.spaceFrequency)
        nominalBit = configuration.samplesPerBit
        bitLength = nominalBit
        scanPosition = nominalBit
        // White noise alone gives a tone fraction of about 4/N for an N-sample window.
        let floor = Float(4 / nominalBit)
        carrierThreshold = min(0.6, max(0.05, 2.2 * floor))
    }

    /// Forgets everything, as if newly created.
    public mutating func reset() {
        corr.reset()
        bitLength = nominalBit
        state = .searching
        scanPosition = nominalBit
        charsSinceLock = 0
        finished = false
    }

    /// The bit period currently tracked, in samples.
    public var trackedSamplesPerBit: Double { bitLength }

    /// Feeds samples and returns what could be decided so far.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, into events: inout [FSKDemodulatorEvent]) {
        corr.append(samples)
        run(into: &events, final: false)
    }

    /// Feeds samples from an array.
    public mutating func process(_ samples: [Float], into events: inout [FSKDemodulatorEvent]) {
        samples.withUnsafeBufferPointer { process($0, into: &events) }
    }

    /// Ends the stream: decodes what remains (a character cut by the end is decoded if its data
    /// bits are complete) and reports the end of any carrier.
    public mutating func finish(into events: inout [FSKDemodulatorEvent]) {
        guard !finished else { return }
        finished = true
        // Pad with silence so the last character's windows exist.
        let pad = [Float](repeating: 0, count: Int(nominalBit * (shape.length + 2)) + 8)
        pad.withUnsafeBufferPointer { corr.append($0) }
        run(into: &events, final: true)
        if case .locked = state { loseCarrier(at: corr.end, into: &events) }
    }

    // MARK: - Internals

    /// Samples needed beyond a character start to evaluate it with timing search.
    private var lookahead: Double { bitLength * (shape.length + 1.5) + 4 }

    private mutating func run(into events: inout [FSKDemodulatorEvent], final: Bool) {
        let end = Double(corr.end)
        loop: while true {
            switch state {
            case .searching:
                guard scanPosition + lookahead < end else { break loop }
                if let start = findStart(from: scanPosition, limit: end - lookahead) {
                    if let ch = acquire(near: start) {
                        emitCarrier(at: ch.startSample, into: &events)
                        accept(ch, into: &events)
                    } else {
                        scanPosition = start + bitLength / 4
                    }
                } else {
                    scanPosition = max(scanPosition, end - lookahead)
                    break loop
                }
            case .locked(let expected, let missed):
                guard expected + lookahead + bitLength / 2 < end else { break loop }
                if let ch = track(near: expected) {
                    accept(ch, into: &events)
                } else {
                    // Idle mark (or a gap): look for the next start bit a little further on.
                    let next = expected + bitLength
                    if missed + 1 > idleLimitBits || !carrierPresent(at: expected) {
                        loseCarrier(at: Int(expected), into: &events)
                        state = .searching
                        scanPosition = expected
                    } else if let start = findStart(from: expected, limit: next) {
                        state = .locked(expected: start, missed: missed + 1)
                        if let ch = acquire(near: start) {
                            accept(ch, into: &events)
                        } else {
                            state = .locked(expected: next, missed: missed + 1)
                        }
                    } else {
                        state = .locked(expected: next, missed: missed + 1)
                    }
                }
            }
        }
        // Bound memory: keep a few bits of history before the oldest position still needed.
        let keep: Double
        switch state {
        case .searching: keep = scanPosition
        case .locked(let expected, _): keep = expected
        }
        let cut = Int(keep - 3 * bitLength) - 2
        if cut - corr.base > 16384 { corr.discard(before: cut) }
    }

    /// How many idle bit periods the carrier may show before the lock is given up
    /// (it is also given up as soon as the tones fade).
    private var idleLimitBits: Int { 1_000_000 }

    private func carrierPresent(at position: Double) -> Bool {
        let w = corr.window(from: position, to: position + bitLength * 2)
        let level = w.energy / max(1, w.length)
        return w.toneFraction >= carrierThreshold * 0.8 && level >= max(Self.silenceFloor, referenceLevel * 0.01)
    }

    /// Scans for a mark-to-space transition: returns a position shortly before a start bit.
    private func findStart(from position: Double, limit: Double) -> Double? {
        let step = max(1, bitLength / 10)
        var p = position
        let L = bitLength
        while p <= limit {
            let cur = corr.window(from: p, to: p + L)
            if cur.soft < -0.5, cur.toneFraction >= carrierThreshold, cur.energy / cur.length >= Self.silenceFloor {
                let prev = corr.window(from: p - L, to: p)
                if prev.soft > 0.2 { return p }
            }
            p += step
        }
        return nil
    }

    /// Evaluates a character starting at `start` with bit period `L`.
    private func evaluate(start: Double, bitLength L: Double) -> (quality: Float, fraction: Float, soft: [Float]) {
        var soft = [Float](repeating: 0, count: shape.bitsBeforeStop + 1)
        var q: Float = 0
        var f: Float = 0
        // A bit far quieter than the signal (or than the silence floor) counts as no carrier.
        let quiet = max(Self.silenceFloor, referenceLevel * 0.01) * Float(L)
        for k in 0...shape.bitsBeforeStop {
            let a = start + Double(k) * L
            let w = corr.window(from: a, to: a + L)
            let v = w.soft
            soft[k] = v
            q += abs(w.mark - w.space) / (w.length * w.energy + 1e-30)
            if k < shape.bitsBeforeStop, w.energy >= quiet { f += w.toneFraction }
        }
        return (q, f / Float(shape.bitsBeforeStop), soft)
    }

    /// Mean squared sample below which a window is treated as silence (about -100 dBFS).
    static let silenceFloor: Float = 1e-10

    private struct Candidate {
        var start: Double
        var bitLength: Double
        var quality: Float
        var fraction: Float
        var soft: [Float]
    }

    /// Finest timing around `center` within ±range samples, with the bit periods given.
    private func search(center: Double, range: Double, periods: [Double]) -> Candidate {
        var best = Candidate(start: center, bitLength: bitLength, quality: -1, fraction: 0, soft: [])
        let steps = 8
        let h = range / Double(steps)
        for L in periods {
            var qs = [Float](repeating: 0, count: 2 * steps + 1)
            var bestI = 0
            var bestQ: Float = -1
            var bestEval: (quality: Float, fraction: Float, soft: [Float]) = (0, 0, [])
            for i in 0...(2 * steps) {
                let s = center - range + Double(i) * h
                let e = evaluate(start: s, bitLength: L)
                qs[i] = e.quality
                if e.quality > bestQ { bestQ = e.quality; bestI = i; bestEval = e }
            }
            if bestQ > best.quality {
                var s = center - range + Double(bestI) * h
                // Parabolic refinement of the peak.
                if bestI > 0, bestI < 2 * steps {
                    let a = qs[bestI - 1], b = qs[bestI], c = qs[bestI + 1]
                    let den = a - 2 * b + c
                    if den < 0 {
                        let d = Double(0.5 * (a - c) / den)
                        s += max(-0.5, min(0.5, d)) * h
                    }
                }
                let e = evaluate(start: s, bitLength: L)
                let use = e.quality >= bestEval.quality ? e : bestEval
                let useStart = e.quality >= bestEval.quality ? s : center - range + Double(bestI) * h
                best = Candidate(start: useStart, bitLength: L, quality: use.quality, fraction: use.fraction, soft: use.soft)
            }
        }
        return best
    }

    /// First character after a start was found by scanning: wider timing and rate search.
    private mutating func acquire(near position: Double) -> DemodulatedCharacter? {
        let L = bitLength
        // The bit period is not searched here: one character says little about it, and the
        // run of characters that follows measures it (see `track`).
        var periods = [L]
        if case .searching = state { periods = [nominalBit] }
        // The scan stops up to ~0.4 bit before the true start.
        let c = search(center: position + 0.25 * L, range: 0.4 * L, periods: periods)
        guard c.fraction >= carrierThreshold else { return nil }
        guard c.soft[0] < -0.2, c.soft[shape.bitsBeforeStop] > -0.2 else { return nil }
        if case .searching = state {
            bitLength = c.bitLength
            charsSinceLock = 0
        }
        runStarts = [c.start]
        return make(c)
    }

    /// A character expected at `expected` while locked; nil when the line is idle there.
    private mutating func track(near expected: Double) -> DemodulatedCharacter? {
        let range = (charsSinceLock < 4 ? 0.4 : 0.25) * bitLength
        let c = search(center: expected, range: range, periods: [bitLength])
        guard c.soft[0] < 0, c.fraction >= carrierThreshold * 0.7 else { return nil }
        // Track the bit period from the starts of a run of back-to-back characters: a constant bias
        // in the start estimate cancels out, and the error shrinks as the run grows.
        if let first = runStarts.first, runStarts.count >= 2 {
            let n = Double(runStarts.count)
            let estimate = (c.start - first) / (n * shape.length)
            bitLength = max(nominalBit * 0.93, min(nominalBit * 1.07, estimate))
        }
        runStarts.append(c.start)
        if runStarts.count > 48 { runStarts.removeFirst(16) }
        return make(c)
    }

    private func make(_ c: Candidate) -> DemodulatedCharacter {
        var bits: UInt32 = 0
        var conf: Float = 0
        for k in 1..<shape.bitsBeforeStop where c.soft[k] > 0 {
            bits |= 1 << UInt32(k - 1)
        }
        for v in c.soft { conf += abs(v) }
        return DemodulatedCharacter(bits: bits, stopBitOK: c.soft[shape.bitsBeforeStop] > 0,
                                    confidence: conf / Float(c.soft.count), startSample: Int(c.start.rounded()))
    }

    private mutating func accept(_ ch: DemodulatedCharacter, into events: inout [FSKDemodulatorEvent]) {
        events.append(.character(ch))
        let start = Double(ch.startSample)
        let stop = start + bitLength * shape.length
        state = .locked(expected: stop, missed: 0)
        charsSinceLock += 1
        burst.characters += 1
        if !ch.stopBitOK { burst.framingErrors += 1 }
        burstConfidenceSum += ch.confidence
        let w = corr.window(from: start, to: stop)
        burstEnergy += Double(w.energy)
        burstSamples += Double(w.length)
        let level = w.energy / max(1, w.length)
        referenceLevel = referenceLevel == 0 ? level : referenceLevel + 0.1 * (level - referenceLevel)
    }

    private mutating func emitCarrier(at sample: Int, into events: inout [FSKDemodulatorEvent]) {
        burst = FSKBurstStatistics(startSample: sample, endSample: sample, characters: 0, framingErrors: 0,
                                   meanConfidence: 0, measuredBaudRate: 0, levelDBFS: -200)
        burstConfidenceSum = 0; burstEnergy = 0; burstSamples = 0
        events.append(.carrierDetected(sample: sample))
    }

    private mutating func loseCarrier(at sample: Int, into events: inout [FSKDemodulatorEvent]) {
        burst.endSample = sample
        burst.meanConfidence = burst.characters > 0 ? burstConfidenceSum / Float(burst.characters) : 0
        burst.measuredBaudRate = configuration.sampleRate / bitLength
        if burstSamples > 0, burstEnergy > 0 {
            // RMS relative to a full-scale sine (RMS 1/sqrt 2).
            burst.levelDBFS = Float(10 * log10(burstEnergy / burstSamples * 2))
        }
        events.append(.carrierLost(burst))
        bitLength = nominalBit
        referenceLevel = 0
    }
}
