#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ModemDSP

/// One line setting measured.
struct BERLine: Sendable {
    var name: String
    var configuration: FSKConfiguration
    /// |ρ| of the tone pair over one bit.
    var rho: Double {
        FSKTheory.correlation(deltaF: configuration.markFrequency - configuration.spaceFrequency,
                              baudRate: configuration.baudRate)
    }
}

/// When a point stops.
struct BERBudget: Sendable {
    /// Stop once this many data-bit errors (in received characters) were seen...
    var targetErrors: Int
    /// ...or this many data bits were sent.
    var maxBits: Int
    /// But never before this many data bits were sent.
    var minBits: Int
}

/// What one Eb/N0 point measured.
struct BERPoint: Sendable {
    var ebN0dB: Double
    /// Characters sent (8N1, random bytes, back to back).
    var sent = 0
    /// Sent characters for which the demodulator reported a character at the right place.
    var received = 0
    /// Sent characters with no character reported at their place.
    var lost = 0
    /// Reported characters that matched no sent character (before the first, after the last,
    /// or a second report for the same place).
    var extra = 0
    /// Data-bit errors in the received characters.
    var bitErrors = 0
    /// Received characters with at least one wrong data bit.
    var characterErrors = 0
    /// Received characters whose reported start is more than half a bit away from the true start
    /// (framing slips: their bits are read shifted).
    var slipped = 0
    /// The longest run of consecutive sent characters that were received slipped.
    var longestSlip = 0
    /// Data-bit errors of a genie detector: the ideal non-coherent matched-filter decision on each
    /// data bit of the same noisy audio with exactly known bit timing (no synchronisation).
    var genieBitErrors = 0
    /// Wall seconds the point took.
    var seconds = 0.0

    /// Data bits in the received characters.
    var receivedBits: Int { received * 8 }
    /// BER over the characters that were received (lost characters excluded).
    var ber: Double { receivedBits > 0 ? Double(bitErrors) / Double(receivedBits) : .nan }
    /// BER where every lost character counts as 8 bit errors.
    var berCountingLost: Double { sent > 0 ? Double(bitErrors + 8 * lost) / Double(8 * sent) : .nan }
    /// Character error rate: wrong or lost characters over characters sent.
    var cer: Double { sent > 0 ? Double(characterErrors + lost) / Double(sent) : .nan }
    /// Fraction of sent characters that were lost.
    var lostRate: Double { sent > 0 ? Double(lost) / Double(sent) : .nan }
    /// Fraction of sent characters received with a framing slip.
    var slipRate: Double { sent > 0 ? Double(slipped) / Double(sent) : .nan }
    /// BER of the genie detector.
    var genieBER: Double { sent > 0 ? Double(genieBitErrors) / Double(8 * sent) : .nan }
}

/// A seedable generator for the payload (SplitMix64).
struct PayloadGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The ideal non-coherent detector of one bit: |<x, e^{-jωm t}>|² against |<x, e^{-jωs t}>|².
struct GenieDetector {
    let length: Int
    let mc: [Float], ms: [Float], sc: [Float], ss: [Float]

    init(configuration: FSKConfiguration, length: Int) {
        self.length = length
        let wm = 2 * Double.pi * configuration.markFrequency / configuration.sampleRate
        let ws = 2 * Double.pi * configuration.spaceFrequency / configuration.sampleRate
        mc = (0..<length).map { Float(cos(wm * Double($0))) }
        ms = (0..<length).map { Float(sin(wm * Double($0))) }
        sc = (0..<length).map { Float(cos(ws * Double($0))) }
        ss = (0..<length).map { Float(sin(ws * Double($0))) }
    }

    /// True if the `length` samples at `p` look more like mark than space.
    func isMark(_ p: UnsafePointer<Float>) -> Bool {
        var a: Float = 0, b: Float = 0, c: Float = 0, d: Float = 0
        for k in 0..<length {
            let v = p[k]
            a += v * mc[k]; b += v * ms[k]; c += v * sc[k]; d += v * ss[k]
        }
        return a * a + b * b > c * c + d * d
    }
}

/// Measures one Eb/N0 point: modulates a seeded stream of random 8N1 characters, adds white
/// Gaussian noise of variance σ² = P·fs / (2·R·Eb/N0) (P = A²/2, the power of the sine of peak A;
/// Eb is the energy of one channel bit, so start and stop bits carry energy too), demodulates with
/// FSKDemodulator and compares the data bits.
///
/// Alignment: a reported character belongs to sent character
/// round((startSample − first start) / samples per character). Sent characters with no report
/// are lost; reports at an occupied or impossible place are extra.
func measurePoint(line: BERLine, ebN0dB: Double, budget: BERBudget, seed: UInt64) -> BERPoint {
    let cfg = line.configuration
    let amplitude: Float = 0.5
    let power = Double(amplitude * amplitude) / 2
    let ebN0 = FSKTheory.linear(dB: ebN0dB)
    let sigma = (power * cfg.sampleRate / (2 * cfg.baudRate * ebN0)).squareRoot()

    var impairments = ChannelImpairments()
    impairments.noiseRMS = sigma
    impairments.seed = seed
    var channel = ChannelSimulator(impairments: impairments, sampleRate: cfg.sampleRate)
    var modulator = FSKModulator(configuration: cfg, amplitude: amplitude)
    var demodulator = FSKDemodulator(configuration: cfg, shape: AsyncCharacterShape(bitsBeforeStop: 9, stopBits: 1))
    var payload = PayloadGenerator(state: seed &* 0x2545_F491_4F6C_DD1D)

    let spb = cfg.samplesPerBit
    let spc = spb * 10
    let leaderBits = 10.0
    let firstStart = Int((leaderBits * spb).rounded())
    let genie = GenieDetector(configuration: cfg, length: Int(spb.rounded(.down)))

    var point = BERPoint(ebN0dB: ebN0dB)
    var sentBytes: [UInt8] = []
    var got: [Int32] = []          // received byte per sent character, -1 = none yet
    var events: [FSKDemodulatorEvent] = []
    var audio: [Float] = []
    var emitted = 0                // samples made so far (absolute index of audio[0])
    var slipRun = 0, lastSlip = -2
    let clock = ContinuousClock.now

    func take(_ events: [FSKDemodulatorEvent]) {
        for case .character(let ch) in events {
            let idx = Int((Double(ch.startSample - firstStart) / spc).rounded())
            guard idx >= 0, idx < got.count, got[idx] < 0 else { point.extra += 1; continue }
            let rx = UInt8(truncatingIfNeeded: ch.bits)
            got[idx] = Int32(rx)
            let e = (rx ^ sentBytes[idx]).nonzeroBitCount
            point.bitErrors += e
            let offset = Double(ch.startSample - firstStart) - Double(idx) * spc
            if abs(offset) > spb / 2 {
                point.slipped += 1
                slipRun = idx == lastSlip + 1 ? slipRun + 1 : 1
                lastSlip = idx
                point.longestSlip = max(point.longestSlip, slipRun)
            }
        }
    }

    // The leader: idle mark before the first start bit.
    modulator.appendTone(mark: true, bits: leaderBits, to: &audio)
    let chunk = 256
    while true {
        let enough = point.bitErrors >= budget.targetErrors && sentBytes.count * 8 >= budget.minBits
        if enough || sentBytes.count * 8 >= budget.maxBits { break }
        let first = sentBytes.count
        for _ in 0..<chunk {
            let b = UInt8(truncatingIfNeeded: payload.next() >> 56)
            sentBytes.append(b)
            got.append(-1)
            modulator.appendWord(UInt32(b) << 1, count: 9, to: &audio)
            modulator.appendTone(mark: true, bits: 1, to: &audio)
        }
        let noisy = channel.process(audio)
        // Genie decisions on the data bits of the characters of this chunk.
        noisy.withUnsafeBufferPointer { buf in
            for c in first..<sentBytes.count {
                let cs = Double(firstStart) + Double(c) * spc
                for k in 1...8 {
                    let s = Int((cs + Double(k) * spb).rounded()) - emitted
                    let mark = genie.isMark(buf.baseAddress! + s)
                    let sent = (sentBytes[c] >> UInt8(k - 1)) & 1 == 1
                    if mark != sent { point.genieBitErrors += 1 }
                }
            }
        }
        events.removeAll(keepingCapacity: true)
        demodulator.process(noisy, into: &events)
        take(events)
        emitted += audio.count
        audio.removeAll(keepingCapacity: true)
    }
    // A short idle tail, then the end of the stream.
    modulator.appendTone(mark: true, bits: 20, to: &audio)
    events.removeAll(keepingCapacity: true)
    demodulator.process(channel.process(audio), into: &events)
    demodulator.finish(into: &events)
    take(events)

    point.sent = sentBytes.count
    for i in 0..<sentBytes.count {
        if got[i] < 0 {
            point.lost += 1
        } else {
            point.received += 1
            if UInt8(got[i]) != sentBytes[i] { point.characterErrors += 1 }
        }
    }
    let d = ContinuousClock.now - clock
    point.seconds = Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    return point
}

/// The Eb/N0 (dB) at which measured BERs cross `target`, interpolating log10(BER) linearly
/// between the two points around the first crossing; nil if the curve does not cross it.
func crossing(_ points: [(dB: Double, ber: Double)], at target: Double) -> Double? {
    let lt = log10(target)
    for i in 1..<max(1, points.count) {
        let (x0, y0) = points[i - 1], (x1, y1) = points[i]
        guard y0 > 0, y1 > 0, y0.isFinite, y1.isFinite else { continue }
        if y0 >= target && y1 <= target {
            let l0 = log10(y0), l1 = log10(y1)
            if l0 == l1 { return x0 }
            return x0 + (lt - l0) / (l1 - l0) * (x1 - x0)
        }
    }
    return nil
}
