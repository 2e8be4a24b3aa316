// ber-curve: bit error rate of SwiftModem's FSK demodulator against Eb/N0, beside the theory for
// non-coherent binary FSK.
//
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build ber-curve [options]
//
// Options:
//   --png FILE        also draw the curves into a PNG file
//   --quick           a CI-sized run (at most 2e5 data bits per point; 100 bit errors)
//   --max-bits N      data bits per point at most (default 2,000,000)
//   --errors N        stop a point after N data-bit errors (default 200), but not before 200,000 data bits
//                     (--quick: 40,000), so that one long framing slip does not decide a point
//   --baud B          only this baud rate: 300 (Bell 103, 1270/1070 Hz) or 1200 (Bell 202, 1200/2200 Hz);
//                     may be given twice (default: both)
//   --from DB --to DB --step DB   the Eb/N0 grid (default 4 to 14 in steps of 1)
//   --seed N          seed of payload and noise (default 1); each point's seed depends only on it, the
//                     baud rate and the Eb/N0, so `--from X --to X` reruns one point of a full run
//
// See Benchmarks/README.md for the definitions of every column.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ModemDSP
import SwiftModem

func fail(_ message: String) -> Never {
    let bytes = Array("ber-curve: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

// MARK: - Options

var pngPath: String?
var budget = BERBudget(targetErrors: 200, maxBits: 2_000_000, minBits: 200_000)
var bauds: [Int] = []
var fromDB = 4.0, toDB = 14.0, stepDB = 1.0
var seed: UInt64 = 1

var args = CommandLine.arguments.dropFirst()
var argIndex = args.startIndex
@MainActor func next() -> String? {
    guard argIndex < args.endIndex else { return nil }
    defer { argIndex += 1 }
    return args[argIndex]
}
@MainActor func value(_ name: String) -> String {
    guard let v = next() else { fail("\(name) needs a value") }
    return v
}
@MainActor func number(_ name: String) -> Double {
    let v = value(name)
    guard let d = Double(v), d.isFinite else { fail("\(name): '\(v)' is not a number") }
    return d
}
while let a = next() {
    switch a {
    case "--png": pngPath = value(a)
    case "--quick": budget = BERBudget(targetErrors: 100, maxBits: 200_000, minBits: 40_000)
    case "--max-bits": budget.maxBits = Int(number(a))
    case "--errors": budget.targetErrors = Int(number(a))
    case "--baud":
        let b = Int(number(a))
        guard b == 300 || b == 1200 else { fail("--baud must be 300 or 1200") }
        bauds.append(b)
    case "--from": fromDB = number(a)
    case "--to": toDB = number(a)
    case "--step": stepDB = number(a)
    case "--seed": seed = UInt64(number(a))
    case "-h", "--help":
        print("""
        usage: ber-curve [--png FILE] [--quick] [--max-bits N] [--errors N] [--baud 300|1200]...
                         [--from DB] [--to DB] [--step DB] [--seed N]
        Measures the data-bit error rate of FSKDemodulator on 8N1 characters in white Gaussian noise
        against Eb/N0 and prints it beside the theory for non-coherent binary FSK.
        """)
        exit(0)
    default: fail("unknown argument '\(a)' (see --help)")
    }
}
guard stepDB > 0, toDB >= fromDB else { fail("need --from <= --to and --step > 0") }
guard budget.maxBits >= 8, budget.targetErrors >= 1 else { fail("--max-bits and --errors must be positive") }
budget.minBits = min(budget.minBits, budget.maxBits)
if bauds.isEmpty { bauds = [300, 1200] }

// MARK: - Lines

func makeLine(_ profile: FSKProfile) -> BERLine {
    let c = try! FSKConfiguration(sampleRate: 48_000, baudRate: profile.baudRate,
                                  markFrequency: profile.markFrequency, spaceFrequency: profile.spaceFrequency)
    return BERLine(name: "\(Int(profile.baudRate)) baud (\(profile.name), mark \(Int(profile.markFrequency)) Hz, space \(Int(profile.spaceFrequency)) Hz)",
                   configuration: c)
}
let lines = bauds.map { $0 == 300 ? makeLine(.bell103) : makeLine(.bell202) }
var grid: [Double] = []
do {
    var d = fromDB
    while d <= toDB + 1e-9 { grid.append(d); d += stepDB }
}

// MARK: - Formatting

func sci(_ v: Double) -> String {
    guard v.isFinite else { return "-" }
    if v == 0 { return "0" }
    var e = Int(floor(log10(v)))
    var m = v / pow(10, Double(e))
    if (m * 100).rounded() >= 1000 { m /= 10; e += 1 }
    let mm = Int((m * 100).rounded())
    let es = e < 0 ? "-\(abs(e))" : "+\(e)"
    return "\(mm / 100).\(String(format2: mm % 100))e\(es)"
}
extension String {
    init(format2 v: Int) { self = v < 10 ? "0\(v)" : "\(v)" }
}
func fixed(_ v: Double, _ digits: Int) -> String {
    guard v.isFinite else { return "-" }
    let p = pow(10, Double(digits))
    let r = (abs(v) * p).rounded()
    let i = Int(r / p), f = Int(r.truncatingRemainder(dividingBy: p))
    var fs = String(f)
    while fs.count < digits { fs = "0" + fs }
    return (v < 0 && r > 0 ? "-" : "") + "\(i)" + (digits > 0 ? ".\(fs)" : "")
}
func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : String(repeating: " ", count: w - s.count) + s }

// MARK: - Run

print("ber-curve: FSKDemodulator, 8N1 random bytes back to back, 48 kHz, white Gaussian noise")
print("  Eb = energy of one channel bit (start and stop bits included); noise σ² = P·fs/(2·R·Eb/N0), P = A²/2")
print("  per point: until \(budget.targetErrors) data-bit errors (at least \(budget.minBits) bits) or \(budget.maxBits) data bits; seed \(seed)")
print("")

struct LineResult {
    var line: BERLine
    var points: [BERPoint]
}
var results: [LineResult] = []
let header = [pad("Eb/N0", 6), pad("bits", 9), pad("BER", 9), pad("BER+lost", 9), pad("CER", 9), pad("lost", 9),
              pad("slipped", 9), pad("run", 5), pad("extra", 6), pad("genie", 9), pad("theory ρ", 9), pad("orthog.", 9), pad("s", 6)].joined(separator: " ")

for line in lines {
    print("\(line.name), |ρ| = \(fixed(line.rho, 3))")
    print(header)
    var pts: [BERPoint] = []
    for db in grid {
        // The seed depends on the line and the Eb/N0, not on the grid, so one point can be rerun alone.
        let s = seed &* 1_000_003 &+ UInt64(Int(line.configuration.baudRate) * 1000 + Int((db * 10).rounded()) + 500)
        let p = measurePoint(line: line, ebN0dB: db, budget: budget, seed: s)
        pts.append(p)
        let g = FSKTheory.linear(dB: db)
        let row = [pad(fixed(db, 1), 6), pad(String(8 * p.sent), 9), pad(sci(p.ber), 9), pad(sci(p.berCountingLost), 9),
                   pad(sci(p.cer), 9), pad(sci(p.lostRate), 9),
                   pad(sci(p.slipRate), 9), pad(String(p.longestSlip), 5), pad(String(p.extra), 6), pad(sci(p.genieBER), 9),
                   pad(sci(FSKTheory.nonOrthogonal(ebN0: g, rho: line.rho)), 9), pad(sci(FSKTheory.orthogonal(ebN0: g)), 9),
                   pad(fixed(p.seconds, 1), 6)].joined(separator: " ")
        print(row)
        fflush(nil)
    }
    results.append(LineResult(line: line, points: pts))
    print("")
}

// MARK: - Implementation loss at BER 1e-3

let target = 1e-3
print("Implementation loss at BER \(sci(target)) (Eb/N0 where the curve crosses it; log-BER interpolation):")
for r in results {
    let rho = r.line.rho
    let thRho = FSKTheory.ebN0dB(atBER: target) { FSKTheory.nonOrthogonal(ebN0: FSKTheory.linear(dB: $0), rho: rho) }
    let thOrth = FSKTheory.ebN0dB(atBER: target) { FSKTheory.orthogonal(ebN0: FSKTheory.linear(dB: $0)) }
    let meas = crossing(r.points.map { ($0.ebN0dB, $0.ber) }, at: target)
    let measLost = crossing(r.points.map { ($0.ebN0dB, $0.berCountingLost) }, at: target)
    let genie = crossing(r.points.map { ($0.ebN0dB, $0.genieBER) }, at: target)
    func show(_ v: Double?) -> String { v.map { fixed($0, 2) + " dB" } ?? "not crossed" }
    func loss(_ v: Double?, _ ref: Double) -> String { v.map { fixed($0 - ref, 2) + " dB" } ?? "-" }
    print("  \(Int(r.line.configuration.baudRate)) baud: theory (|ρ| = \(fixed(rho, 3))) \(fixed(thRho, 2)) dB, orthogonal \(fixed(thOrth, 2)) dB")
    print("    measured BER         \(show(meas)): loss \(loss(meas, thRho)) vs theory ρ, \(loss(meas, thOrth)) vs orthogonal")
    print("    measured BER+lost    \(show(measLost)): loss \(loss(measLost, thRho)) vs theory ρ")
    print("    genie (ideal timing) \(show(genie)): \(loss(genie, thRho)) vs theory ρ")
}

// MARK: - PNG

if let path = pngPath {
    let allBER = results.flatMap { $0.points.map(\.ber) } + grid.map { FSKTheory.orthogonal(ebN0: FSKTheory.linear(dB: $0)) }
    let smallest = allBER.filter { $0 > 0 && $0.isFinite }.min() ?? 1e-6
    let low = max(-9, min(-3, Int(floor(log10(smallest)))))
    var plot = BERPlot(title: "SwiftModem FSK: BER vs Eb/N0, 8N1, 48 kHz, white noise",
                       xRange: (grid.first ?? 4)...max(grid.last ?? 14, (grid.first ?? 4) + 1), yDecades: low...0)
    let colors = [300: PNGColor(31, 90, 200), 1200: PNGColor(210, 50, 40)]
    let xs = Array(stride(from: plot.xRange.lowerBound, through: plot.xRange.upperBound, by: 0.05))
    func curve(_ f: (Double) -> Double) -> [(x: Double, y: Double)] {
        var out: [(x: Double, y: Double)] = []
        for x in xs { out.append((x: x, y: f(x))) }
        return out
    }
    for r in results {
        let b = Int(r.line.configuration.baudRate)
        let c = colors[b] ?? .black
        let rho = r.line.rho
        plot.series.append(.init(label: "\(b) baud measured", color: c, style: .filledMarkers,
                                 points: r.points.map { (x: $0.ebN0dB, y: $0.ber) }))
        plot.series.append(.init(label: "\(b) baud ideal detector, known timing", color: c, style: .hollowMarkers,
                                 points: r.points.map { (x: $0.ebN0dB, y: $0.genieBER) }))
        plot.series.append(.init(label: "\(b) baud theory, non-coherent, rho=\(fixed(rho, 2))", color: c, style: .line,
                                 points: curve { FSKTheory.nonOrthogonal(ebN0: FSKTheory.linear(dB: $0), rho: rho) }))
    }
    plot.series.append(.init(label: "orthogonal tones: 0.5 exp(-Eb/2N0)", color: PNGColor(90, 90, 90), style: .dashedLine,
                             points: curve { FSKTheory.orthogonal(ebN0: FSKTheory.linear(dB: $0)) }))
    do {
        try PNGEncoder.write(plot.render(), to: path, text: [("Software", "SwiftModem ber-curve")])
        print("\nwrote \(path)")
    } catch {
        fail("\(error)")
    }
}
