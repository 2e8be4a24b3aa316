#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// Creates a character record.
    public init(bits: UInt32, stopBitOK: Bool, confidence: Float, startSample: Int) {
        self.bits = bits
        self.stopBitOK = stopBitOK
        self.confidence = confidence
        self.startSample = startSample
    }
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
    /// The search never resumes before this (past the last start a burst was acquired from).
    private var searchFloor = 0.0
    private var charsSinceLock = 0
    /// Starts of the current run of back-to-back characters (absolute samples), for rate tracking.
    private var runStarts = TimingLine()
    /// One bit per recent character, 1 where its start or stop bit was wrong (newest in bit 0).
    private var framingHistory: UInt32 = 0
    /// Consecutive characters whose start measured off the timing line the same way (+ late, - early).
    private var deviationStreak = 0
    /// Mark energy over space energy of the received signal (1 for equal tone levels), tracked
    /// while locked from the bits' decided tones.
    private var balance: Float = 1
    private var markLevel: Float = 0, spaceLevel: Float = 0
    /// One bit per recent character, 1 where its start or stop bit was wrong; not reset by resync.
    private var noiseHistory: UInt32 = 0
    /// Whether the character most recently made had a bad start or stop bit.
    private var lastReadingBad = false
    /// Whether the current burst has shown it is a signal; until then its characters are held.
    private var confirmed = false
    private var pending: [DemodulatedCharacter] = []
    /// Exact (fractional) start of the character most recently made.
    private var lastStart: Double = 0

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
        case locked(expected: Double)
    }

    /// The soft value a clean bit reaches: below 1 when the tones are not orthogonal over a bit
    /// (Bell 103: about 0.71, Bell 202: about 0.93), so thresholds are applied to soft values
    /// divided by it.
    private let softScale: Float

    /// A window's soft bit, balanced for unequal tone levels and scaled so a clean bit is ±1.
    @inline(__always)
    private func soft(_ w: ToneWindow) -> Float {
        max(-1, min(1, w.soft(balance: balance) / softScale))
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
                              spaceFrequency: configuration.spaceFrequency, samplesPerBit: configuration.samplesPerBit)
        nominalBit = configuration.samplesPerBit
        bitLength = nominalBit
        scanPosition = 0
        // White noise alone gives a tone fraction of about 4/N for an N-sample window.
        let floor = Float(4 / nominalBit)
        carrierThreshold = min(0.6, max(0.005, 2.2 * floor))
        // Correlation of the two tones over one bit: |sin(NΔω/2) / (N sin(Δω/2))|.
        let dw = 2 * Double.pi * abs(configuration.markFrequency - configuration.spaceFrequency) / configuration.sampleRate
        let n = configuration.samplesPerBit
        let rho = abs(sin(n * dw / 2) / (n * sin(dw / 2)))
        softScale = Float(max(0.3, (1 - rho * rho) / (1 + rho * rho)))
    }

    /// Forgets everything, as if newly created.
    public mutating func reset() {
        corr.reset()
        bitLength = nominalBit
        state = .searching
        scanPosition = 0
        searchFloor = 0
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
        let pad = [Float](repeating: 0, count: Int(lookahead + 2 * bitLength) + 8)
        pad.withUnsafeBufferPointer { corr.append($0) }
        run(into: &events, final: true)
        if case .locked = state { loseCarrier(at: corr.end, into: &events) }
    }

    // MARK: - Internals

    /// Samples needed beyond a character start to evaluate it with timing search.
    /// Characters after a candidate start that acquisition checks before locking.
    static let verifyCharacters = 2
    private var lookahead: Double { bitLength * (Double(Self.verifyCharacters + 1) * shape.length + 1.5) + 4 }

    private mutating func run(into events: inout [FSKDemodulatorEvent], final: Bool) {
        let end = Double(corr.end)
        loop: while true {
            switch state {
            case .searching:
                guard scanPosition + lookahead < end else { break loop }
                if let start = findStart(from: scanPosition, limit: end - lookahead) {
                    // A burst that turns out to be noise resumes the search past this point, never
                    // before it (at 12,000 baud a quarter bit is one sample, and a start refined a
                    // sample earlier sent the search back to where it had been, for ever).
                    searchFloor = max(searchFloor, start + max(1, bitLength / 4))
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
            case .locked(let expected):
                guard expected + lookahead + bitLength / 2 < end else { break loop }
                let r = trackRead(near: expected)
                let carrier = r.fraction >= carrierThreshold * 0.7 || carrierPresent(at: expected)
                if !carrier {
                    loseCarrier(at: Int(expected), into: &events)
                    state = .searching
                    scanPosition = max(expected, searchFloor)
                } else if r.startSoft < 0 && r.quietDataBits == 0 {
                    commitTrack(r)
                    accept(make(r), into: &events)
                    noteFraming(r)
                } else if !r.looksIdle && r.quietBits == 0 {
                    // The start bit looks like mark but the line is not idle. Either a start bit
                    // hit by noise in a back-to-back stream, or a short gap (under three bits)
                    // before a character that starts later: the framing of the next characters
                    // under each hypothesis decides.
                    let L = bitLength
                    if let later = findStart(from: expected + L / 4, limit: expected + 3 * L) {
                        let s2 = gridSearch(center: later + 0.25 * L, range: 0.4 * L, bitLength: L)
                        // A gap: the expected start bit is clearly mark, a clear start bit follows,
                        // and the line between them is mark. Otherwise the framing of the next
                        // characters under each hypothesis decides.
                        let gap = soft(corr.window(from: r.start, to: s2))
                        let start2 = soft(corr.window(from: s2, to: s2 + L))
                        let clearGap = r.startSoft > 0.5 && start2 < -0.5 && gap > 0.3
                        if clearGap || frameScore(from: s2, bitLength: L) > frameScore(from: r.start, bitLength: L) + 1 {
                            runStarts.reset()
                            var r2 = read(start: s2, bitLength: L)
                            r2.measuredStart = s2
                            r2.bitLength = L
                            commitTrack(r2)
                            accept(make(r2), into: &events)
                            continue loop
                        }
                    }
                    commitTrack(r)
                    accept(make(r), into: &events)
                    noteFraming(r)
                } else {
                    // Idle mark (or a gap): look for the next start bit within the next bit period.
                    // A gap ends the run of back-to-back characters the timing line is fitted to.
                    runStarts.reset()
                    let next = expected + bitLength
                    if let start = findStart(from: expected, limit: next), let ch = acquire(near: start) {
                        accept(ch, into: &events)
                    } else {
                        state = .locked(expected: next)
                    }
                }
            }
        }
        // Bound memory: keep a few bits of history before the oldest position still needed.
        let keep: Double
        switch state {
        case .searching: keep = scanPosition
        case .locked(let expected): keep = expected
        }
        let cut = Int(keep - Double(Self.resyncCharacters + 2) * shape.length * bitLength) - 2
        if cut - corr.start > 65536 { corr.discard(before: cut) }
    }

    private func carrierPresent(at position: Double) -> Bool {
        // Two one-bit windows: a two-bit window across a tone change would halve the figure.
        let w1 = corr.window(from: position, to: position + bitLength)
        let w2 = corr.window(from: position + bitLength, to: position + bitLength * 2)
        let level = (w1.energy + w2.energy) / max(1, w1.length + w2.length)
        let f = (w1.toneFraction + w2.toneFraction) / 2
        return f >= carrierThreshold * 0.8 && level >= max(Self.silenceFloor, referenceLevel * 0.01)
    }

    /// Scans for a mark-to-space transition: returns a position shortly before a start bit.
    private func findStart(from position: Double, limit: Double) -> Double? {
        let step = max(1, bitLength / 10)
        var p = position
        let L = bitLength
        while p <= limit {
            let cur = corr.window(from: p, to: p + L)
            if soft(cur) < -0.5, cur.toneFraction >= carrierThreshold, cur.energy / cur.length >= Self.silenceFloor {
                // Before a start bit the line is mark, or silent when a transmission starts with
                // no leader.
                let prev = corr.window(from: p - L, to: p)
                if soft(prev) > 0.2 || prev.energy < cur.energy * 0.01 { return p }
            }
            p += step
        }
        return nil
    }

    /// Timing metric of a character hypothesis: how clearly each bit window is one tone.
    /// Largest when the windows line up with the bits.
    private func quality(start: Double, bitLength L: Double) -> Float {
        var q: Float = 0
        var a = corr.prefix(at: start)
        let len = Float(L)
        // Windows with (next to) no signal say nothing about timing.
        let quiet = max(Self.silenceFloor, referenceLevel * 0.01) * len
        for k in 0...shape.bitsBeforeStop {
            let b = corr.prefix(at: start + Double(k + 1) * L)
            let w = ToneCorrelator.window(a, b, length: len)
            if w.energy >= quiet { q += abs(w.mark - balance * w.space) / (len * w.energy + 1e-30) }
            a = b
        }
        return q
    }

    /// The bits of a character at a given timing, with its carrier figure.
    private struct Reading {
        var start: Double
        /// Where the local timing search put the start (before smoothing).
        var measuredStart: Double = 0
        /// How far the measured start lies from the timing line's prediction, in samples.
        var deviation: Double = 0
        /// Bits (start to stop) with next to no signal.
        var quietBits = 0
        /// Data and parity bits with next to no signal (the character was cut short).
        var quietDataBits = 0
        /// The soft values of the first two data bits.
        var firstDataSoft: Float = 0
        var secondDataSoft: Float = 1
        /// Whether the start bit and the two bits after it are all clearly mark (idle line).
        var looksIdle: Bool {
            startSoft > 0.3 && firstDataSoft > 0.3 && secondDataSoft > 0.3
                && startSoft + firstDataSoft + secondDataSoft > 1.8
        }
        /// The bit period the reading used.
        var bitLength: Double = 0
        var bits: UInt32 = 0
        var startSoft: Float = 0
        var stopSoft: Float = 0
        /// Sums of the mark energy of bits read as mark, and of the space energy of bits read as space.
        var markEnergy: Float = 0, spaceEnergy: Float = 0
        var markCount = 0, spaceCount = 0
        var confidence: Float = 0
        /// Mean tone fraction of the bits before the stop bit (0 where the signal is too quiet).
        var fraction: Float = 0
    }

    private func read(start: Double, bitLength L: Double) -> Reading {
        var r = Reading(start: start)
        var a = corr.prefix(at: start)
        let len = Float(L)
        // A bit far quieter than the signal (or than the silence floor) counts as no carrier.
        let quiet = max(Self.silenceFloor, referenceLevel * 0.01) * len
        var conf: Float = 0
        var f: Float = 0
        let n = shape.bitsBeforeStop
        // Decisions use windows a little longer than a bit, centred on it: on a continuous-phase
        // signal in white noise they beat the one-bit matched filter (see docs/demodulator.md).
        let extra = (Self.decisionWindowBits - 1) * L / 2
        for k in 0...n {
            let b = corr.prefix(at: start + Double(k + 1) * L)
            let w = ToneCorrelator.window(a, b, length: len)
            a = b
            let lo = start + Double(k) * L - extra, hi = start + Double(k + 1) * L + extra
            let d = extra > 0 ? corr.window(from: lo, to: hi) : w
            // A window with no signal reads as mark: a line at rest is mark.
            let v = w.energy >= quiet ? soft(d) : 1
            if w.energy < quiet {
                r.quietBits += 1
                if k > 0 && k < n { r.quietDataBits += 1 }
            }
            conf += abs(v)
            if k > 0 && k < n {
                if v > 0 { r.markEnergy += w.mark; r.markCount += 1 } else { r.spaceEnergy += w.space; r.spaceCount += 1 }
            }
            if k == 0 {
                r.startSoft = v
            } else if k == n {
                r.stopSoft = v
            } else {
                if v > 0 { r.bits |= 1 << UInt32(k - 1) }
                if k == 1 { r.firstDataSoft = v }
                if k == 2 { r.secondDataSoft = v }
            }
            if k < n, w.energy >= quiet { f += w.toneFraction }
        }
        r.confidence = conf / Float(n + 1)
        r.fraction = f / Float(n)
        return r
    }

    /// Length of the windows bits are decided on, in bit periods.
    static let decisionWindowBits = 1.3

    /// Mean squared sample below which a window is treated as silence (about -100 dBFS).
    static let silenceFloor: Float = 1e-10

    /// Best start within ±range of `center` on a grid of 17 points, refined by a parabola.
    private func gridSearch(center: Double, range: Double, bitLength L: Double) -> Double {
        let steps = 8
        let h = range / Double(steps)
        var qs = [Float](repeating: 0, count: 2 * steps + 1)
        var bestI = 0
        for i in 0...(2 * steps) {
            qs[i] = quality(start: center - range + Double(i) * h, bitLength: L)
            if qs[i] > qs[bestI] { bestI = i }
        }
        var s = center - range + Double(bestI) * h
        if bestI > 0, bestI < 2 * steps {
            s += Self.parabolaPeak(qs[bestI - 1], qs[bestI], qs[bestI + 1]) * h
        }
        return s
    }

    /// Best start near `center` by hill climbing in steps of L/8 (at most ±maxOffset), then a parabola.
    private func localSearch(center: Double, maxOffset: Double, bitLength L: Double) -> Double {
        let h = L / 8
        var c = center
        var q0 = quality(start: c, bitLength: L)
        var qm = quality(start: c - h, bitLength: L)
        var qp = quality(start: c + h, bitLength: L)
        var moves = 0
        let maxMoves = Int(maxOffset / h)
        while moves < maxMoves {
            if qp > q0 && qp >= qm {
                c += h; qm = q0; q0 = qp; qp = quality(start: c + h, bitLength: L)
            } else if qm > q0 {
                c -= h; qp = q0; q0 = qm; qm = quality(start: c - h, bitLength: L)
            } else {
                break
            }
            moves += 1
        }
        return c + Self.parabolaPeak(qm, q0, qp) * h
    }

    /// Offset (in steps, within ±0.5) of the vertex of the parabola through three equally spaced values.
    static func parabolaPeak(_ a: Float, _ b: Float, _ c: Float) -> Double {
        let den = a - 2 * b + c
        guard den < 0 else { return 0 }
        return Double(max(-0.5, min(0.5, 0.5 * (a - c) / den)))
    }

    /// First character after a start was found by scanning.
    private mutating func acquire(near position: Double) -> DemodulatedCharacter? {
        // The bit period is not searched here: one character says little about it, and the
        // run of characters that follows measures it (see `track`).
        if case .searching = state { bitLength = nominalBit }
        let L = bitLength
        // The scan stops up to ~0.4 bit before the true start.
        let s = gridSearch(center: position + 0.25 * L, range: 0.4 * L, bitLength: L)
        let r = read(start: s, bitLength: L)
        guard r.fraction >= carrierThreshold, r.startSoft < -0.2, r.stopSoft > -0.2, r.quietDataBits == 0 else { return nil }
        // A transition inside a character can look like a start bit. The characters that would
        // follow must look like characters (start space, stop mark), idle line, or no carrier.
        let C = shape.length * L
        // Judge quietness against this character's level while checking what follows it.
        let savedLevel = referenceLevel
        if referenceLevel == 0 {
            let w = corr.window(from: s, to: s + Double(shape.bitsBeforeStop) * L)
            referenceLevel = w.energy / max(1, w.length)
        }
        defer { referenceLevel = savedLevel }
        var next = s
        for _ in 1...Self.verifyCharacters {
            next = localSearch(center: next + C, maxOffset: 0.4 * L, bitLength: L)
            let f = read(start: next, bitLength: L)
            // End of carrier (mostly silence ahead), or idle line.
            if f.fraction < carrierThreshold * 0.7 || f.quietBits * 2 >= shape.bitsBeforeStop || f.looksIdle { break }
            if f.startSoft < 0 {
                if f.stopSoft <= 0 { return nil }   // a start bit whose character is not framed
                continue
            }
            // Mark where a start bit should be: a short gap, if a framed character follows soon.
            guard let later = findStart(from: next + L / 4, limit: next + 3 * L) else { return nil }
            let g = read(start: gridSearch(center: later + 0.25 * L, range: 0.4 * L, bitLength: L), bitLength: L)
            if !(g.startSoft < 0 && g.stopSoft > 0) { return nil }
            break
        }
        if case .searching = state { charsSinceLock = 0 }
        runStarts.reset()
        runStarts.append(s)
        return make(r)
    }

    /// Reads the character expected at `expected` while locked, with its timing refined.
    ///
    /// The start is measured by a local search, then smoothed: over a run of back-to-back
    /// characters the starts lie on a line (start = a + n·period), so the measured starts are
    /// fitted by least squares and the character is read where the line puts it. This averages
    /// the timing noise over many characters and follows baud-rate errors and clock drift.
    private func trackRead(near expected: Double) -> Reading {
        let range = (charsSinceLock < 4 ? 0.45 : 0.3) * bitLength
        let measured = localSearch(center: expected, maxOffset: range, bitLength: bitLength)
        var start = measured
        var deviation = 0.0
        if runStarts.count >= 4 {
            // With few points only the phase is fitted (the slope is the tracked period).
            let fixed: Double? = runStarts.count >= 16 ? nil : bitLength * shape.length
            let x = Double(runStarts.nextIndex)
            let predicted = runStarts.value(at: x, slope: fixed)
            deviation = measured - predicted
            if abs(deviation) <= bitLength * 0.25 {
                start = runStarts.value(at: x, including: measured, slope: fixed)
            } else {
                // An outlier (noise) or the first sign of a real jump: trust the line for now;
                // `commitTrack` restarts the line if the jump persists.
                start = predicted
            }
        }
        var r = read(start: start, bitLength: bitLength)
        r.measuredStart = measured
        r.deviation = deviation
        r.bitLength = bitLength
        return r
    }

    /// Accepts a tracked reading: updates the run of starts and the bit period.
    private mutating func commitTrack(_ r: Reading) {
        let limit = r.bitLength * 0.25
        if abs(r.deviation) > limit {
            let sign = r.deviation > 0 ? 1 : -1
            deviationStreak = deviationStreak * sign > 0 ? deviationStreak + sign : sign
            if abs(deviationStreak) >= 3 {
                // The timing really moved: start a new line from the latest measurement
                // (keeping the bit period, which a jump does not change).
                runStarts.reset()
                runStarts.append(r.measuredStart)
                deviationStreak = 0
                return
            }
            // Keep the line robust: an outlier enters it clamped.
            runStarts.append(r.start + (r.deviation > 0 ? limit : -limit))
        } else {
            deviationStreak = 0
            runStarts.append(r.measuredStart)
        }
        if runStarts.count >= 16, let slope = runStarts.slope {
            // Follow the fitted period slowly: it averages out timing noise and tracks drift.
            let fitted = slope / shape.length
            let target = max(nominalBit * 0.95, min(nominalBit * 1.05, fitted))
            bitLength += 0.25 * (target - bitLength)
        } else if charsSinceLock < 16, runStarts.count >= 3, let first = runStarts.oldest, let last = runStarts.newest {
            // Just after acquisition the period may be off by a few percent (baud-rate error):
            // take it from the starts seen so far.
            let est = (last - first) / (Double(runStarts.count - 1) * shape.length)
            bitLength = max(nominalBit * 0.95, min(nominalBit * 1.05, est))
        }
    }

    /// How well characters starting at `start` and following back to back are framed: the sum over
    /// three characters of (stop bit mark-ness − start bit mark-ness), each character's timing
    /// refined locally so a few percent of rate error does not matter.
    private func frameScore(from start: Double, bitLength L: Double) -> Float {
        let C = shape.length * L
        var score: Float = 0
        var s = start
        for m in 0..<3 {
            if m > 0 { s = localSearch(center: s + C, maxOffset: 0.3 * L, bitLength: L) }
            let st = corr.window(from: s, to: s + L)
            let stop = s + Double(shape.bitsBeforeStop) * L
            let sp = corr.window(from: stop, to: stop + L)
            score += soft(sp) - soft(st)
        }
        return score
    }

    /// Characters looked back over when re-synchronising the framing.
    static let resyncCharacters = 12

    /// Tracks framing health; after repeated start/stop violations, re-aligns the framing.
    private mutating func noteFraming(_ r: Reading) {
        guard case .locked = state else { return }   // the burst was just dropped as noise
        let bad = r.startSoft >= 0 || r.stopSoft <= 0
        framingHistory = (framingHistory << 1) | (bad ? 1 : 0)
        guard (framingHistory & 0xFF).nonzeroBitCount >= 3, runStarts.count >= 2 else { return }
        framingHistory = 0
        resynchronise(lastStart: r.start, bitLength: r.bitLength)
    }

    /// Picks the character alignment that best explains the last few characters' start and stop
    /// bits, and continues from there.
    private mutating func resynchronise(lastStart p: Double, bitLength L: Double) {
        let C = shape.length * L
        let M = Self.resyncCharacters
        let origin = p + C - Double(M) * C
        guard origin - L > Double(corr.start) else { return }
        let candidates = Int((shape.length * 2).rounded(.up))
        var best = 0
        var bestScore = -Float.infinity
        for j in 0..<candidates {
            let phi = origin + Double(j) * L / 2
            var score: Float = 0
            for m in 0..<M {
                let s = phi + Double(m) * C
                let st = soft(corr.window(from: s, to: s + L))
                let sp = soft(corr.window(from: s + Double(shape.bitsBeforeStop) * L, to: s + Double(shape.bitsBeforeStop + 1) * L))
                let prev = soft(corr.window(from: s - L, to: s))
                score += sp - st + 0.5 * prev
            }
            if score > bestScore { bestScore = score; best = j }
        }
        guard best != 0 else { return }
        var next = origin + Double(best) * L / 2
        while next < p + C * 0.5 { next += C }
        runStarts.reset()
        state = .locked(expected: next)
    }

    private mutating func make(_ r: Reading) -> DemodulatedCharacter {
        lastStart = r.start
        lastReadingBad = r.startSoft >= 0 || r.stopSoft <= 0
        // Track the two tones' levels (slowly) to keep decisions balanced.
        if r.markCount > 0 {
            let m = r.markEnergy / Float(r.markCount)
            markLevel = markLevel == 0 ? m : markLevel + 0.05 * (m - markLevel)
        }
        if r.spaceCount > 0 {
            let sp = r.spaceEnergy / Float(r.spaceCount)
            spaceLevel = spaceLevel == 0 ? sp : spaceLevel + 0.05 * (sp - spaceLevel)
        }
        if markLevel > 0, spaceLevel > 0 { balance = max(0.125, min(8, markLevel / spaceLevel)) }
        return DemodulatedCharacter(bits: r.bits, stopBitOK: r.stopSoft > 0, confidence: r.confidence,
                             startSample: Int(r.start.rounded()))
    }

    private mutating func accept(_ ch: DemodulatedCharacter, into events: inout [FSKDemodulatorEvent]) {
        let start = lastStart
        let stop = start + bitLength * shape.length
        state = .locked(expected: stop)
        charsSinceLock += 1
        burst.characters += 1
        if !ch.stopBitOK { burst.framingErrors += 1 }
        burstConfidenceSum += ch.confidence
        let w = corr.window(from: start, to: stop)
        burstEnergy += Double(w.variance)
        burstSamples += Double(w.length)
        let level = w.energy / max(1, w.length)
        referenceLevel = referenceLevel == 0 ? level : referenceLevel + 0.1 * (level - referenceLevel)
        noiseHistory = (noiseHistory << 1) | (lastReadingBad ? 1 : 0)
        if confirmed {
            events.append(.character(ch))
            // Noise that slipped past acquisition frames badly over and over: about half the
            // characters, where a weak real signal stays near a tenth.
            if (noiseHistory & 0xFFFF).nonzeroBitCount >= 8 {
                loseCarrier(at: Int(stop), into: &events)
                state = .searching
                scanPosition = max(stop, searchFloor)
            }
        } else {
            pending.append(ch)
            let bad = (noiseHistory & ((1 << UInt32(pending.count)) - 1)).nonzeroBitCount
            if bad >= 2 {
                // Not a signal after all: drop what was held and search again just past the start.
                cancelBurst()
                state = .searching
                scanPosition = max(Double(pending.first?.startSample ?? Int(start)) + bitLength / 4, searchFloor)
                pending.removeAll(keepingCapacity: true)
            } else if pending.count >= Self.confirmCharacters {
                // Noise locked onto tends to read with little contrast between the tones.
                let meanConfidence = pending.reduce(Float(0)) { $0 + $1.confidence } / Float(pending.count)
                if meanConfidence >= Self.minimumBurstConfidence {
                    confirm(into: &events)
                } else {
                    cancelBurst()
                    state = .searching
                    scanPosition = max(Double(pending.first?.startSample ?? Int(start)) + bitLength / 4, searchFloor)
                    pending.removeAll(keepingCapacity: true)
                }
            }
        }
    }

    /// Mean character confidence a new burst must reach to be reported (band-limited noise that
    /// the tracker locks onto reads at 0.55-0.61 at 1200 baud; a signal at Eb/N0 5 dB at 0.65).
    static let minimumBurstConfidence: Float = 0.63

    /// Characters held at the start of a burst until the framing shows it is a signal, not noise.
    static let confirmCharacters = 6

    /// Releases the characters held while the burst was being confirmed.
    private mutating func confirm(into events: inout [FSKDemodulatorEvent]) {
        confirmed = true
        events.append(.carrierDetected(sample: burst.startSample))
        for c in pending { events.append(.character(c)) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Forgets a burst that turned out to be noise (nothing of it was reported).
    private mutating func cancelBurst() {
        bitLength = nominalBit
        balance = 1; markLevel = 0; spaceLevel = 0
        referenceLevel = 0
        confirmed = false
    }

    private mutating func emitCarrier(at sample: Int, into events: inout [FSKDemodulatorEvent]) {
        burst = FSKBurstStatistics(startSample: sample, endSample: sample, characters: 0, framingErrors: 0,
                                   meanConfidence: 0, measuredBaudRate: 0, levelDBFS: -200)
        burstConfidenceSum = 0; burstEnergy = 0; burstSamples = 0
        confirmed = false
        noiseHistory = 0
        pending.removeAll(keepingCapacity: true)
    }

    private mutating func loseCarrier(at sample: Int, into events: inout [FSKDemodulatorEvent]) {
        if !confirmed {
            // A burst too short to confirm (a message of a few characters) counts if its
            // characters were framed; otherwise it was noise.
            let bad = (noiseHistory & ((1 << UInt32(min(pending.count, 31))) - 1)).nonzeroBitCount
            if pending.isEmpty || bad > 0 {
                pending.removeAll(keepingCapacity: true)
                cancelBurst()
                return
            }
            confirm(into: &events)
        }
        confirmed = false
        burst.endSample = sample
        burst.meanConfidence = burst.characters > 0 ? burstConfidenceSum / Float(burst.characters) : 0
        burst.measuredBaudRate = configuration.sampleRate / bitLength
        if burstSamples > 0, burstEnergy > 0 {
            // RMS relative to a full-scale sine (RMS 1/sqrt 2).
            burst.levelDBFS = Float(10 * log10(burstEnergy / burstSamples * 2))
        }
        events.append(.carrierLost(burst))
        bitLength = nominalBit
        balance = 1; markLevel = 0; spaceLevel = 0
        referenceLevel = 0
    }
}
