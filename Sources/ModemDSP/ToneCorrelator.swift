import Foundation

/// Running quadrature correlation of a sample stream against the mark and space tones.
///
/// For every input sample it stores prefix sums of `x·cos(ωn)`, `x·sin(ωn)` for both tones and of
/// `x²`, so that the correlation over any window, at any (fractional) start and length, costs a
/// few subtractions. The phase reference is global (ω times the absolute sample index), so the
/// phases of successive windows can be compared, which continuous-phase detection relies on.
///
/// Memory is bounded: ``discard(before:)`` drops what the caller no longer needs.
struct ToneCorrelator {
    let markOmega: Double
    let spaceOmega: Double
    let dcAlpha: Float

    /// Absolute index of the first sample whose prefix is stored (pre[0] is the sum before it).
    private(set) var base: Int = 0
    /// Absolute index one past the last sample processed.
    var end: Int { base + pre.count - 1 }

    private(set) var pre: [SIMD4<Float>] = [.zero]
    private(set) var preE: [Float] = [0]

    private var dc: Float = 0
    private var dcPrimed = false
    private let block = 1024
    private let rc0: [Float], rs0: [Float], rc1: [Float], rs1: [Float]
    private var phaseM: Double = 0, phaseS: Double = 0
    private var scratch: [Float]

    init(sampleRate: Double, markFrequency: Double, spaceFrequency: Double) {
        markOmega = 2 * Double.pi * markFrequency / sampleRate
        spaceOmega = 2 * Double.pi * spaceFrequency / sampleRate
        // DC blocker corner at an eighth of the lower tone: removes offsets and most mains hum
        // while leaving the tones untouched.
        let corner = min(markFrequency, spaceFrequency) / 8
        dcAlpha = Float(1 - exp(-2 * Double.pi * corner / sampleRate))
        let b = block
        let wm = markOmega, ws = spaceOmega
        rc0 = (0..<b).map { Float(cos(wm * Double($0))) }
        rs0 = (0..<b).map { Float(sin(wm * Double($0))) }
        rc1 = (0..<b).map { Float(cos(ws * Double($0))) }
        rs1 = (0..<b).map { Float(sin(ws * Double($0))) }
        scratch = [Float](repeating: 0, count: b)
    }

    mutating func reset() {
        base = 0; pre = [.zero]; preE = [0]; dc = 0; dcPrimed = false; phaseM = 0; phaseS = 0
    }

    /// Appends samples.
    mutating func append(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        while offset < samples.count {
            // Blocks are aligned to absolute multiples of `block` so the phase tables line up.
            let inBlock = end % block
            let n = min(block - inBlock, samples.count - offset)
            appendBlock(samples.baseAddress! + offset, count: n, tableOffset: inBlock)
            offset += n
        }
    }

    private mutating func appendBlock(_ x: UnsafePointer<Float>, count n: Int, tableOffset t0: Int) {
        if !dcPrimed, n > 0 {
            // Start the DC estimate at the first samples' mean so an offset does not ring.
            var s: Float = 0
            for i in 0..<n { s += x[i] }
            dc = s / Float(n); dcPrimed = true
        }
        let cm = Float(cos(phaseM)), sm = Float(sin(phaseM))
        let cs = Float(cos(phaseS)), ss = Float(sin(phaseS))
        let oldCount = pre.count
        pre.reserveCapacity(oldCount + n)
        preE.reserveCapacity(oldCount + n)
        var acc = pre[oldCount - 1]
        var accE = preE[oldCount - 1]
        var dcv = dc
        let a = dcAlpha
        scratch.withUnsafeMutableBufferPointer { y in
            for i in 0..<n {
                let v = x[i]
                dcv += a * (v - dcv)
                y[i] = v - dcv
            }
        }
        dc = dcv
        pre.append(contentsOf: repeatElement(.zero, count: n))
        preE.append(contentsOf: repeatElement(0, count: n))
        scratch.withUnsafeBufferPointer { y in
            rc0.withUnsafeBufferPointer { rc0 in
            rs0.withUnsafeBufferPointer { rs0 in
            rc1.withUnsafeBufferPointer { rc1 in
            rs1.withUnsafeBufferPointer { rs1 in
            pre.withUnsafeMutableBufferPointer { p in
            preE.withUnsafeMutableBufferPointer { pe in
                let po = p.baseAddress! + oldCount
                let peo = pe.baseAddress! + oldCount
                for i in 0..<n {
                    let k = t0 + i
                    let v = y[i]
                    let c0 = cm * rc0[k] - sm * rs0[k]
                    let s0 = sm * rc0[k] + cm * rs0[k]
                    let c1 = cs * rc1[k] - ss * rs1[k]
                    let s1 = ss * rc1[k] + cs * rs1[k]
                    let prod: SIMD4<Float> = SIMD4<Float>(c0, s0, c1, s1) * v
                    acc += prod
                    accE += v * v
                    po[i] = acc
                    peo[i] = accE
                }
            }}}}}}
        }
        if t0 + n == block {
            phaseM = (phaseM + markOmega * Double(block)).truncatingRemainder(dividingBy: 2 * Double.pi)
            phaseS = (phaseS + spaceOmega * Double(block)).truncatingRemainder(dividingBy: 2 * Double.pi)
        }
    }

    /// Prefix sums at a fractional absolute position (linear interpolation between samples).
    @inline(__always)
    func prefix(at position: Double) -> (SIMD4<Float>, Float) {
        let rel = position - Double(base)
        let clamped = max(0, min(rel, Double(pre.count - 1)))
        let i = Int(clamped)
        let f = Float(clamped - Double(i))
        if i + 1 >= pre.count { return (pre[i], preE[i]) }
        let a = pre[i], b = pre[i + 1]
        return (a + (b - a) * f, preE[i] + (preE[i + 1] - preE[i]) * f)
    }

    /// Correlations over the window [start, end) in absolute samples.
    @inline(__always)
    func window(from start: Double, to stop: Double) -> ToneWindow {
        let (a, ea) = prefix(at: start)
        let (b, eb) = prefix(at: stop)
        let d = b - a
        return ToneWindow(markI: d.x, markQ: d.y, spaceI: d.z, spaceQ: d.w, energy: max(0, eb - ea),
                          length: Float(stop - start))
    }

    /// Drops everything before absolute sample `position` (keeps the prefix there as the new zero).
    mutating func discard(before position: Int) {
        let drop = position - base
        guard drop > 0, drop < pre.count else { return }
        let z = pre[drop], ze = preE[drop]
        pre.removeFirst(drop)
        preE.removeFirst(drop)
        pre.withUnsafeMutableBufferPointer { p in
            for i in 0..<p.count { p[i] -= z }
        }
        preE.withUnsafeMutableBufferPointer { p in
            for i in 0..<p.count { p[i] -= ze }
        }
        base = position
    }
}

/// The correlations of one window of samples with the two tones.
struct ToneWindow {
    var markI: Float, markQ: Float, spaceI: Float, spaceQ: Float
    /// Sum of squared samples in the window.
    var energy: Float
    /// Window length in samples.
    var length: Float

    /// Squared magnitude of the mark correlation.
    @inline(__always) var mark: Float { markI * markI + markQ * markQ }
    /// Squared magnitude of the space correlation.
    @inline(__always) var space: Float { spaceI * spaceI + spaceQ * spaceQ }
    /// Soft bit in -1...1: +1 pure mark, -1 pure space.
    @inline(__always) var soft: Float {
        let m = mark, s = space
        return (m - s) / (m + s + 1e-30)
    }
    /// Fraction of the window's energy that is in the two tones (about 1 for a clean tone).
    @inline(__always) var toneFraction: Float {
        (mark + space) * 2 / (length * energy + 1e-30)
    }
}
