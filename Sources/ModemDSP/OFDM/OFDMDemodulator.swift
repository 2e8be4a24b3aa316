#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The data part of a transmission the header announced: its grid, its constellation and how many
/// data symbols follow (nil: until ``OFDMDemodulator/endTransmission()``).
public struct OFDMDataPlan: Sendable, Hashable {
    /// The data symbols' grid.
    public var numerology: OFDMNumerology
    /// The data carriers' constellation.
    public var constellation: QAMConstellation
    /// Data symbols after the training; nil when the caller ends the transmission itself.
    public var symbolCount: Int?
    /// Whether the training's channel is fitted across neighbouring carriers (a straight line over
    /// as many as the grid's prefix allows, as on 16,384-QAM) instead of smoothed over three: it
    /// keeps less of the training's noise, which the first symbols pay for until the decisions have
    /// refined the channel. 16,384-QAM is always fitted.
    public var fitChannel: Bool

    /// Creates a plan; `fitChannel` asks for the fit on any constellation (16,384-QAM has it anyway).
    public init(numerology: OFDMNumerology, constellation: QAMConstellation, symbolCount: Int?, fitChannel: Bool = false) {
        self.numerology = numerology
        self.constellation = constellation
        self.symbolCount = symbolCount
        self.fitChannel = fitChannel || constellation == .qam16384
    }
}

/// What ``OFDMDemodulator/next()`` found.
public enum OFDMDemodulatorEvent: Sendable, Equatable {
    /// A preamble and its header symbol: ``OFDMDemodulator/softBits`` holds the header's soft bits
    /// (``OFDMModulator/headerBitCount`` values). Answer with ``OFDMDemodulator/beginData(_:)`` or
    /// ``OFDMDemodulator/rejectHeader()``.
    case header(seconds: Double)
    /// Data symbol `index`: ``OFDMDemodulator/softBits`` holds its soft bits (data-carrier order).
    case symbol(index: Int)
    /// The announced data symbols are all read (or the caller ended the transmission): searching again.
    case transmissionEnd
    /// The input ended inside a transmission (after `symbols` of its data symbols).
    case truncated(symbols: Int)
}

/// Receives OFDM transmissions from a stream of samples at any rate: finds each preamble (the
/// Schmidl-Cox correlation of its two equal halves), takes the timing from the line's impulse
/// response and the clock's drift from the phase drift between the halves, hands over the header's
/// soft bits, then reads the training (the channel and the noise on every carrier) and the data
/// symbols, following the drift with a resampler steered by the pilots' phase slope, and giving
/// max-log soft bits per data carrier.
///
/// Push samples with ``push(_:)``, then call ``next()`` until it returns nil (it needs more input).
/// Memory is bounded: only the samples still needed are kept.
public final class OFDMDemodulator {
    /// The input's sample rate in Hz.
    public let inputSampleRate: Double
    /// The soft bits of the last header or data symbol: log P(1)/P(0) per bit.
    public internal(set) var softBits: [Float] = []
    /// Statistics of the transmission being read (or the last one).
    public internal(set) var statistics = OFDMStatistics()

    /// Detection threshold on the normalised correlation of the preamble's halves (0...1).
    public var detectionThreshold = 0.06

    let nominalStep: Double
    var buffer: FractionalResampler
    private var inputEnded = false
    /// Once the input has ended: the absolute index one past its last sample (the silence
    /// ``finishInput()`` adds comes after it).
    private(set) var inputEnd: Int64?
    private let preamble = OFDMNumerology.preamble
    private let preambleTransform: OFDMTransform
    private let preambleKnown: [(re: Float, im: Float)]
    private let headerPilotSigns: [Float]

    // Search: the stream at 48 kHz and the running correlation over it.
    private var search = SearchState()
    var state: State = .searching

    enum State {
        case searching
        /// A header was handed out; waiting for the caller.
        case header(Acquisition)
        case data(DataState)
    }

    /// Where a preamble was found and what it told.
    struct Acquisition {
        /// Input position of the preamble's first symbol, minus the back-off.
        var anchor: Double
        /// Input samples per 48 kHz sample (the drift included).
        var step: Double
        var seconds: Double
    }

    /// Creates a receiver for input at `inputSampleRate` Hz (16,000...192,000).
    public init(inputSampleRate: Double = OFDMNumerology.sampleRate) {
        precondition((16000...192_000).contains(inputSampleRate), "OFDMDemodulator input rate must be 16000...192000 Hz")
        self.inputSampleRate = inputSampleRate
        nominalStep = inputSampleRate / OFDMNumerology.sampleRate
        // Reading slower than the input (a higher input rate) needs the pass band narrowed to 48 kHz's.
        buffer = FractionalResampler(cutoff: min(0.92, 0.92 / nominalStep))
        preambleTransform = OFDMTransform(size: preamble.fftSize)
        preambleKnown = OFDMSequences.qpsk(count: preamble.carrierCount, seed: OFDMSequences.preambleSeed)
        headerPilotSigns = OFDMSequences.pilotSigns(symbol: OFDMSequences.headerSymbolIndex, count: preamble.pilotCarriers.count)
        search.reset(at: 0)
    }

    /// Adds input samples.
    public func push(_ samples: UnsafeBufferPointer<Float>) {
        buffer.append(samples)
    }

    /// Adds input samples.
    public func push(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { push($0) }
    }

    /// Says the input has ended: a transmission still being read ends with ``OFDMDemodulatorEvent/truncated(symbols:)``.
    public func finishInput() {
        guard !inputEnded else { return }
        inputEnded = true
        inputEnd = buffer.end
        // Silence after the end, for the search's and the training's reads that reach past it (a data
        // symbol's window that would is read earlier in its prefix instead: ``readSymbol(_:)``).
        let tail = [Float](repeating: 0, count: 256)
        tail.withUnsafeBufferPointer { buffer.append($0) }
    }

    /// Whether a transmission's data is being read.
    public var isReceiving: Bool { if case .data = state { true } else { false } }

    /// Whether a transmission is on the line, for carrier sense: a preamble being weighed, a header
    /// waiting for an answer, or a transmission's data being read.
    public var isBusy: Bool {
        switch state {
        case .data, .header: true
        case .searching: search.candidateStart != nil || search.decided != nil
        }
    }

    /// The next event, or nil when more input is needed (or, after ``finishInput()``, when there is
    /// nothing more).
    public func next() -> OFDMDemodulatorEvent? {
        while true {
            switch state {
            case .searching:
                guard let found = scan() else { return nil }
                if let event = found { return event }
            case .header:
                // The caller has not answered yet: nothing more until it does.
                return nil
            case .data(var d):
                let outcome = readSymbol(&d)
                switch outcome {
                case .needInput:
                    state = .data(d)
                    if inputEnded {
                        state = .searching
                        return .truncated(symbols: d.index)
                    }
                    return nil
                case .symbol(let i):
                    state = .data(d)
                    return .symbol(index: i)
                case .end:
                    restartSearch(at: d.position)
                    return .transmissionEnd
                }
            }
        }
    }

    /// Accepts the header: the data symbols of `plan` follow.
    public func beginData(_ plan: OFDMDataPlan) {
        guard case .header(let a) = state else { preconditionFailure("beginData without a header") }
        state = .data(DataState(plan: plan, acquisition: a, nominalStep: nominalStep))
        statistics.numerology = plan.numerology
        statistics.constellation = plan.constellation
    }

    /// Rejects the header (its check failed): searching goes on after the preamble.
    public func rejectHeader() {
        guard case .header = state else { return }
        state = .searching
    }

    /// Ends the transmission being read (the caller found its last block): searching goes on after
    /// the last symbol read.
    public func endTransmission() {
        guard case .data(let d) = state else { return }
        restartSearch(at: d.position)
    }

    // MARK: - Search

    private struct SearchState {
        /// The 48 kHz stream being searched, from absolute 48 kHz index `base`.
        var stream: [Float] = []
        var base = 0
        /// Input position of 48 kHz index 0 of this search.
        var origin = 0.0
        /// The next 48 kHz index to read from the input.
        var filled = 0
        /// The correlation's lag position d (48 kHz index).
        var d = 0
        var p = 0.0, e1 = 0.0, e2 = 0.0
        var fresh = true
        var sinceExact = 0
        /// A candidate: where it began and the best position so far.
        var candidateStart: Int?
        var best = (d: 0, m: 0.0)
        /// A candidate whose best position is known, waiting for the input to hold its header.
        var decided: Int?

        mutating func reset(at origin: Double) {
            stream.removeAll(keepingCapacity: true)
            base = 0
            self.origin = origin
            filled = 0
            d = 0
            fresh = true
            candidateStart = nil
            decided = nil
        }
    }

    func restartSearch(at inputPosition: Double) {
        search.reset(at: inputPosition)
        state = .searching
    }

    /// Reads more of the 48 kHz search stream from the input.
    private func fillSearch() -> Bool {
        let chunk = 4096
        let position = search.origin + Double(search.filled) * nominalStep
        guard buffer.canRead(from: position, step: nominalStep, count: chunk) else { return false }
        var tmp = [Float](repeating: 0, count: chunk)
        if nominalStep == 1 && position == position.rounded(.down) {
            let first = Int64(position)
            for i in 0..<chunk { tmp[i] = buffer.sample(at: first + Int64(i)) }
        } else {
            tmp.withUnsafeMutableBufferPointer { buffer.read(from: position, step: nominalStep, into: $0) }
        }
        search.stream.append(contentsOf: tmp)
        search.filled += chunk
        return true
    }

    /// Scans for a preamble: nil when more input is needed, `.some(nil)` when a candidate was
    /// handled without an event (rejected), `.some(event)` for a header.
    private func scan() -> OFDMDemodulatorEvent?? {
        let n = preamble.fftSize
        // A candidate decided before its header had arrived: try it once the input holds it.
        if let candidate = search.decided {
            guard hasAcquisitionInput(at: candidate) || inputEnded else { return nil }
            search.decided = nil
            if let acquisition = acquire(at: candidate) {
                state = .header(acquisition)
                advanceSearch(to: candidate + n)
                return .some(.header(seconds: acquisition.seconds))
            }
            advanceSearch(to: candidate + n / 2)
            return .some(nil)
        }
        while true {
            // Keep the stream's memory bounded: drop what the correlation has passed.
            let keepFrom = (search.candidateStart ?? search.d) - 64
            if keepFrom - search.base > 1 << 16 {
                let drop = keepFrom - search.base
                search.stream.removeFirst(drop)
                search.base += drop
                buffer.discard(before: Int64((search.origin + Double(search.base) * nominalStep).rounded(.down)) - 64)
            }
            while search.d + 2 * n >= search.base + search.stream.count {
                if !fillSearch() { return nil }
            }
            let s = search.stream
            let o = search.base
            if search.fresh || search.sinceExact >= 8192 {
                var p = 0.0, e1 = 0.0, e2 = 0.0
                for m in 0..<n {
                    let a = Double(s[search.d + m - o]), b = Double(s[search.d + m + n - o])
                    p += a * b
                    e1 += a * a
                    e2 += b * b
                }
                search.p = p
                search.e1 = e1
                search.e2 = e2
                search.fresh = false
                search.sinceExact = 0
            }
            // Advance through the stream as far as it goes.
            let limit = search.base + search.stream.count - 2 * n - 1
            while search.d <= limit {
                let d = search.d
                let m = search.e1 > 1e-12 && search.e2 > 1e-12 ? search.p * search.p / (search.e1 * search.e2) : 0
                if let startAt = search.candidateStart {
                    if m > search.best.m { search.best = (d, m) }
                    // The plateau of two equal halves lasts one prefix: done once the best is
                    // that far behind (the correlation still rising keeps the candidate open).
                    if d - search.best.d > preamble.cyclicPrefix + n / 8 || d - startAt > 4 * n {
                        // Weighed once the input holds the preamble's end and the header (searching
                        // resumes past the preamble if it is no preamble or its header is rejected).
                        search.decided = search.best.d
                        search.candidateStart = nil
                        return .some(nil)
                    }
                } else if m > detectionThreshold {
                    search.candidateStart = d
                    search.best = (d, m)
                }
                // Slide the correlation by one sample.
                let a0 = Double(s[d - o]), a1 = Double(s[d + n - o]), a2 = Double(s[d + 2 * n - o])
                search.p += a1 * a2 - a0 * a1
                search.e1 += a1 * a1 - a0 * a0
                search.e2 += a2 * a2 - a1 * a1
                search.d += 1
                search.sinceExact += 1
                if search.sinceExact >= 8192 { break }
            }
        }
    }

    private func advanceSearch(to d: Int) {
        search.d = max(search.d, d)
        search.fresh = true
        search.candidateStart = nil
    }

    /// Whether the input holds everything ``acquire(at:)`` reads for a candidate at search index `d`:
    /// the first path up to half a symbol later, both halves, the header symbol, and a margin for drift.
    private func hasAcquisitionInput(at d: Int) -> Bool {
        let p = preamble
        let span = p.fftSize / 2 + 3 * p.fftSize + p.cyclicPrefix + 64
        return buffer.canRead(from: inputPosition(ofSearchIndex: d), step: nominalStep * 1.003, count: span)
    }

    /// The input position of 48 kHz search index `d`.
    private func inputPosition(ofSearchIndex d: Int) -> Double { search.origin + Double(d) * nominalStep }

    // MARK: - Acquisition

    /// Reads a preamble candidate at search index `d`: timing, drift, channel, then the header's
    /// soft bits into ``softBits``. Nil when it is no preamble (or the input ends first).
    private func acquire(at d: Int) -> Acquisition? {
        let p = preamble
        let n = p.fftSize
        let k0 = p.firstCarrier, kc = p.carrierCount
        var y1re = [Float](repeating: 0, count: kc), y1im = y1re, y2re = y1re, y2im = y1re
        let start = inputPosition(ofSearchIndex: d)
        // 1. The impulse response seen from the candidate: where the first symbol really starts.
        guard readCarriers(preambleTransform, at: start, step: nominalStep, first: k0, re: &y1re, im: &y1im) else { return nil }
        var hre = [Float](repeating: 0, count: kc), him = hre
        for i in 0..<kc { (hre[i], him[i]) = Self.divide((y1re[i], y1im[i]), by: preambleKnown[i]) }
        guard let peak = Self.impulsePeak(preambleTransform, first: k0, re: hre, im: him) else { return nil }
        let backoff = Self.backoff(p)
        let anchor = start + Double(peak - backoff) * nominalStep
        // 2. The drift: the phase slope between the two equal symbols.
        guard readCarriers(preambleTransform, at: anchor, step: nominalStep, first: k0, re: &y1re, im: &y1im),
              readCarriers(preambleTransform, at: anchor + Double(n) * nominalStep, step: nominalStep, first: k0, re: &y2re, im: &y2im)
        else { return nil }
        // The symbols are one transform apart, so the delay's fraction of the size is the drift per sample.
        var drift = Self.delaySlope(y1re, y1im, y2re, y2im)
        guard abs(drift) < 0.002 else { return nil }   // 2000 ppm: not our clock, not our preamble
        var step = nominalStep * (1 + drift)
        // 3. Read again on the drift-corrected clock; the channel and noise per carrier.
        guard readCarriers(preambleTransform, at: anchor, step: step, first: k0, re: &y1re, im: &y1im),
              readCarriers(preambleTransform, at: anchor + Double(n) * step, step: step, first: k0, re: &y2re, im: &y2im)
        else { return nil }
        drift += Self.delaySlope(y1re, y1im, y2re, y2im)
        step = nominalStep * (1 + drift)
        // The channel: the mean of the two estimates; one symbol's noise: half the squared difference.
        var noise = [Float](repeating: 0, count: kc)
        var energy1: Float = 0, energy2: Float = 0, difference: Float = 0
        for i in 0..<kc {
            let a = Self.divide((y1re[i], y1im[i]), by: preambleKnown[i]), b = Self.divide((y2re[i], y2im[i]), by: preambleKnown[i])
            hre[i] = (a.0 + b.0) / 2
            him[i] = (a.1 + b.1) / 2
            let dr = a.0 - b.0, di = a.1 - b.1
            noise[i] = (dr * dr + di * di) / 2
            energy1 += a.0 * a.0 + a.1 * a.1
            energy2 += b.0 * b.0 + b.1 * b.1
            difference += dr * dr + di * di
        }
        // In a reverberant room the first half lacks the echoes longer than the prefix (silence came
        // before it), the second does not (the first came before it): the halves differ by that
        // tail, and the first holds less energy by about as much; noise makes neither weaker. Then
        // the second half alone is the channel.
        if energy2 - energy1 > 0.5 * difference {
            for i in 0..<kc { (hre[i], him[i]) = Self.divide((y2re[i], y2im[i]), by: preambleKnown[i]) }
        }
        let symbolNoise = Self.smooth(noise, halfWidth: 8)
        // A preamble concentrates its energy; noise, tones and speech do not make a clean channel.
        var signal: Float = 0, noiseSum: Float = 0
        for i in 0..<kc { signal += hre[i] * hre[i] + him[i] * him[i]; noiseSum += symbolNoise[i] }
        guard signal > 0.5 * noiseSum else { return nil }   // in-band SNR above −3 dB
        // 4. The header symbol.
        let headerAt = anchor + Double(2 * n + p.cyclicPrefix) * step
        var zre = [Float](repeating: 0, count: kc), zim = zre
        guard readCarriers(preambleTransform, at: headerAt, step: step, first: k0, re: &zre, im: &zim) else { return nil }
        for i in 0..<kc { (zre[i], zim[i]) = Self.divide((zre[i], zim[i]), by: (hre[i], him[i])) }
        var variance = [Float](repeating: 0, count: kc)
        for i in 0..<kc { variance[i] = symbolNoise[i] / max(1e-20, hre[i] * hre[i] + him[i] * him[i]) }
        let pilots = (0..<kc).filter { p.isPilot(k0 + $0) }
        let fit = Self.pilotPhase(zre, zim, pilots: pilots, signs: headerPilotSigns, first: k0, variance: variance)
        Self.rotate(&zre, &zim, first: k0, by: fit)
        var soft = [Float]()
        soft.reserveCapacity(kc - pilots.count)
        for i in 0..<kc where !p.isPilot(k0 + i) { soft.append(4 * zre[i] / max(variance[i], 1e-12)) }
        softBits = soft
        statistics = OFDMStatistics()
        statistics.driftPPM = drift * 1e6
        statistics.preambleSNR = Double(10 * log10(max(1e-12, signal / noiseSum)))
        statistics.startSeconds = (anchor + Double(backoff) * nominalStep) / inputSampleRate
        return Acquisition(anchor: anchor, step: step, seconds: statistics.startSeconds)
    }

    /// Samples of back-off: the window starts this much before the main path, so paths that arrive
    /// a little early (filters' pre-echo) stay inside the prefix.
    static func backoff(_ n: OFDMNumerology) -> Int { min(n.cyclicPrefix / 4, 16) }

    /// Reads one symbol's window at `position` and transforms it: the bins from `first`.
    func readCarriers(_ transform: OFDMTransform, at position: Double, step: Double, first: Int,
                              re: inout [Float], im: inout [Float]) -> Bool {
        let size = transform.size
        guard buffer.canRead(from: position, step: step, count: size) else { return false }
        var window = [Float](repeating: 0, count: size)
        window.withUnsafeMutableBufferPointer { buffer.read(from: position, step: step, into: $0) }
        let count = re.count
        window.withUnsafeBufferPointer { w in
            re.withUnsafeMutableBufferPointer { r in
                im.withUnsafeMutableBufferPointer { i in transform.carriers(w, first: first, count: count, re: r, im: i) }
            }
        }
        return true
    }

    /// The main path's delay in samples (−size/2..<size/2) from carrier estimates, or nil when the
    /// response is not concentrated (no preamble there).
    static func impulsePeak(_ transform: OFDMTransform, first: Int, re: [Float], im: [Float]) -> Int? {
        let size = transform.size
        var env = [Float](repeating: 0, count: size)
        re.withUnsafeBufferPointer { r in
            im.withUnsafeBufferPointer { i in env.withUnsafeMutableBufferPointer { transform.envelope(first: first, re: r, im: i, into: $0) } }
        }
        var best = 0
        var total: Float = 0
        for i in 0..<size {
            total += env[i]
            if env[i] > env[best] { best = i }
        }
        // The energy within a few samples of the peak against all of it; in a reverberant room
        // (the microphone beyond the critical distance) the direct path holds less than a quarter of
        // it (a tenth at 3 m, RT60 0.6 s), but it still stands out: 27 times the envelope's mean
        // there, where noise's largest value is about 6 (the natural log of the carriers' count) and
        // above 16 about once in 30,000 tries.
        var near: Float = 0
        for j in -24...24 { near += env[(best + j + size) % size] }
        guard total > 0, near > 0.25 * total || env[best] > 16 * total / Float(size) else { return nil }
        // The first path within 10 dB of the strongest, a little earlier, is the main path's start.
        var peak = best
        for j in 1...32 {
            let i = (best - j + size) % size
            if env[i] > 0.3 * env[best] { peak = i }
        }
        return peak >= size / 2 ? peak - size : peak
    }

    /// The extra delay of the second symbol against the first, from their carriers' phase slope, as
    /// a fraction of the transform's size (multiply by the size for samples).
    static func delaySlope(_ ar: [Float], _ ai: [Float], _ br: [Float], _ bi: [Float]) -> Double {
        // D_k = B_k · conj(A_k) ~ e^{−2πi k Δ / N}.
        let count = ar.count
        var dr = [Double](repeating: 0, count: count), di = dr
        for k in 0..<count {
            dr[k] = Double(br[k] * ar[k] + bi[k] * ai[k])
            di[k] = Double(bi[k] * ar[k] - br[k] * ai[k])
        }
        let slope = phaseSlope(dr, di)
        // The angle is −2π Δ / N per carrier: Δ / N is its share of a turn.
        return -slope / (2 * .pi)
    }

    /// The slope (radians per carrier) of the phases of `re + i·im`, weighted by their magnitudes:
    /// a coarse slope from neighbours' products (which wraps no phase), refined by products of values
    /// 8, 64 and 512 apart (each unambiguous once the slope before it is close enough), then a
    /// least-squares fit of what is left (products alone weigh only the ends of each lag).
    static func phaseSlope(_ re: [Double], _ im: [Double]) -> Double {
        let count = re.count
        guard count >= 2 else { return 0 }
        func lagAngle(_ lag: Int, removing slope: Double) -> Double {
            var sr = 0.0, si = 0.0
            let c = cos(slope * Double(lag)), s = sin(slope * Double(lag))
            for k in lag..<count {
                // z_k · conj(z_{k−lag}), with the slope's turn over the lag taken out.
                let pr = re[k] * re[k - lag] + im[k] * im[k - lag]
                let pi = im[k] * re[k - lag] - re[k] * im[k - lag]
                sr += pr * c + pi * s
                si += pi * c - pr * s
            }
            return atan2(si, sr) / Double(lag)
        }
        var slope = lagAngle(1, removing: 0)
        for lag in [8, 64, 512] where lag * 4 <= count { slope += lagAngle(lag, removing: slope) }
        let coarse = slope
        // The phases with the slope taken out: a common angle, then small residuals.
        var cr = 0.0, ci = 0.0
        for k in 0..<count {
            let t = -coarse * Double(k)
            cr += re[k] * cos(t) - im[k] * sin(t)
            ci += re[k] * sin(t) + im[k] * cos(t)
        }
        let common = atan2(ci, cr)
        var sw = 0.0, swx = 0.0, swy = 0.0, swxx = 0.0, swxy = 0.0
        for k in 0..<count {
            let t = -coarse * Double(k) - common
            let zr = re[k] * cos(t) - im[k] * sin(t), zi = re[k] * sin(t) + im[k] * cos(t)
            let w = (zr * zr + zi * zi).squareRoot()
            guard w > 0 else { continue }
            let phi = atan2(zi, zr)
            let x = Double(k)
            sw += w; swx += w * x; swy += w * phi; swxx += w * x * x; swxy += w * x * phi
        }
        let det = sw * swxx - swx * swx
        guard sw > 0, det > 0 else { return coarse }
        return coarse + (sw * swxy - swx * swy) / det
    }

    /// a / b for complex numbers as (re, im); 0 when b is 0.
    @inline(__always)
    static func divide(_ a: (Float, Float), by b: (Float, Float)) -> (Float, Float) {
        let d = b.0 * b.0 + b.1 * b.1
        guard d > 0 else { return (0, 0) }
        return ((a.0 * b.0 + a.1 * b.1) / d, (a.1 * b.0 - a.0 * b.1) / d)
    }

    /// A moving average over ±`halfWidth` values (shorter at the ends).
    static func smooth(_ x: [Float], halfWidth: Int) -> [Float] {
        let n = x.count
        var prefix = [Double](repeating: 0, count: n + 1)
        for i in 0..<n { prefix[i + 1] = prefix[i] + Double(x[i]) }
        return (0..<n).map { i in
            let lo = max(0, i - halfWidth), hi = min(n, i + halfWidth + 1)
            return Float((prefix[hi] - prefix[lo]) / Double(hi - lo))
        }
    }

    /// A phase line `offset + slope · (k − centre)` fitted to the pilots' phases.
    struct PhaseFit {
        var offset = 0.0
        var slope = 0.0
        var centre = 0.0
    }

    /// Fits the pilots' phase error: the slope from neighbouring pilots' products, then the offset.
    static func pilotPhase(_ zre: [Float], _ zim: [Float], pilots: [Int], signs: [Float], first: Int, variance: [Float]) -> PhaseFit {
        guard pilots.count >= 2 else { return PhaseFit() }
        // The pilots' values against their known signs, weighted by their SNR; the last pilot (at the
        // band's edge) is off the comb, so the comb alone gives the slope.
        let spacing = pilots[1] - pilots[0]
        let comb = pilots.indices.filter { $0 == 0 || pilots[$0] - pilots[$0 - 1] == spacing }
        var re = [Double](), im = [Double]()
        re.reserveCapacity(comb.count)
        im.reserveCapacity(comb.count)
        for j in comb {
            let i = pilots[j]
            let w = 1 / Double(max(variance[i], 1e-12)).squareRoot()
            re.append(Double(zre[i] * signs[j]) * w)
            im.append(Double(zim[i] * signs[j]) * w)
        }
        let slope = phaseSlope(re, im) / Double(spacing)
        let centre = Double(pilots[pilots.count / 2])
        var cr = 0.0, ci = 0.0
        for (j, i) in pilots.enumerated() {
            let t = -slope * (Double(i) - centre)
            let zr = Double(zre[i] * signs[j]), zi = Double(zim[i] * signs[j])
            let w = 1 / Double(max(variance[i], 1e-12))
            cr += w * (zr * cos(t) - zi * sin(t))
            ci += w * (zr * sin(t) + zi * cos(t))
        }
        return PhaseFit(offset: atan2(ci, cr), slope: slope, centre: centre)
    }

    /// Takes the phase line `fit` (indices relative to the first carrier) out of every carrier.
    static func rotate(_ zre: inout [Float], _ zim: inout [Float], first: Int, by fit: PhaseFit) {
        for i in 0..<zre.count {
            let t = -(fit.offset + fit.slope * (Double(i) - fit.centre))
            let c = Float(cos(t)), s = Float(sin(t))
            let r = zre[i] * c - zim[i] * s
            zim[i] = zre[i] * s + zim[i] * c
            zre[i] = r
        }
    }
}
