// link-snr: the channel protocol's completions and goodput against the full-band SNR, with forward
// error correction off, auto and on, over the in-memory audio channel (channel time, seeded, so the
// same arguments give the same figures). Prints a table and, with --png, draws both curves.
//
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build link-snr --png Benchmarks/link-snr.png
//
// Options:
//   --from DB --to DB    the sweep (default -10 to 3, 1 dB steps)
//   --count N --size B   exchanges per point and bytes per exchange (default 30 x 256)
//   --seed N             seed of payloads and noise (default 3)
//   --png FILE           also draw the curves into a PNG file
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BenchPlot
import Foundation
import ModemLink
import ModemLinkProtocol
import ModemPlot

var from = -10.0, to = 3.0, count = 30, size = 256
var seed: UInt64 = 3
var pngPath: String?
var args = Array(CommandLine.arguments.dropFirst())
func printError(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
func fail(_ message: String) -> Never {
    printError("link-snr: \(message)\nusage: link-snr [--from DB] [--to DB] [--count N] [--size B] [--seed N] [--png FILE]")
    exit(64)
}
while !args.isEmpty {
    let a = args.removeFirst()
    guard !args.isEmpty else { fail("\(a) needs a value") }
    let v = args.removeFirst()
    switch a {
    case "--from":
        guard let x = Double(v) else { fail("--from: not a number: \(v)") }
        from = x
    case "--to":
        guard let x = Double(v) else { fail("--to: not a number: \(v)") }
        to = x
    case "--count":
        guard let x = Int(v), x > 0 else { fail("--count: a positive whole number, got \(v)") }
        count = x
    case "--size":
        guard let x = Int(v), (1...65536).contains(x) else { fail("--size: 1...65536, got \(v)") }
        size = x
    case "--seed":
        guard let x = UInt64(v) else { fail("--seed: not a whole number: \(v)") }
        seed = x
    case "--png": pngPath = v
    default: fail("unknown option \(a)")
    }
}
guard from <= to, to - from <= 60 else { fail("--from must be at most --to, within 60 dB") }

let modes: [LinkFEC] = [.off, .auto, .on]
var table: [LinkFEC: [(snr: Double, completed: Int, goodput: Double)]] = [:]
print("master-slave, 1200 baud, \(count) x \(size) B, seed \(seed), full-band SNR at 48 kHz (Eb/N0 = SNR + 13 dB)")
print("SNR dB | " + modes.map { "FEC \($0.rawValue): done  bit/s" }.joined(separator: " | "))
var snr = from
while snr <= to + 1e-9 {
    var row = String(format: "%6.0f", snr)
    for fec in modes {
        let configuration = LinkConfiguration(mode: .masterSlave, baudRate: 1200, forwardErrorCorrection: fec)
        let medium = LoopbackMedium(impairments: LinkImpairments(snrDB: snr, seed: seed))
        let test = try LinkTest(options: LinkTestOptions(configuration: configuration, count: count, size: size, seed: seed), medium: medium)
        let r = try test.run()
        if r.corruptDelivered > 0 || r.duplicatesDelivered > 0 {
            printError("link-snr: \(r.corruptDelivered) corrupt and \(r.duplicatesDelivered) duplicate deliveries at \(snr) dB, FEC \(fec)")
            exit(1)
        }
        table[fec, default: []].append((snr, r.completed, r.goodputBps))
        row += String(format: " | %11d/%d %6.0f", r.completed, count, r.goodputBps)
    }
    print(row)
    fflush(nil)
    snr += 1
}

if let path = pngPath {
    let colors: [LinkFEC: PNGColor] = [.off: PNGColor(90, 90, 90), .auto: PNGColor(31, 90, 200), .on: PNGColor(210, 50, 40)]
    var completions = LinePlot(title: "exchanges completed (\(count) x \(size) B, master-slave, 1200 baud)", yLabel: "completed",
                               xRange: from...to, yRange: 0...Double(count))
    var goodput = LinePlot(title: "goodput", yLabel: "bit/s", xRange: from...to,
                           yRange: 0...max(100, (table.values.flatMap { $0.map(\.goodput) }.max() ?? 0) * 1.1))
    for fec in modes {
        let points = table[fec] ?? []
        completions.series.append(.init(label: "FEC \(fec.rawValue)", color: colors[fec]!, points: points.map { ($0.snr, Double($0.completed)) }))
        goodput.series.append(.init(label: "FEC \(fec.rawValue)", color: colors[fec]!, points: points.map { ($0.snr, $0.goodput) }))
    }
    let top = completions.render(), bottom = goodput.render()
    var image = PNGImage(width: top.width, height: top.height + bottom.height, background: .white)
    for y in 0..<top.height { for x in 0..<top.width { image[x, y] = top[x, y] } }
    for y in 0..<bottom.height { for x in 0..<bottom.width { image[x, top.height + y] = bottom[x, y] } }
    do {
        try PNGEncoder.write(image, to: path, text: [("Software", "SwiftModem link-snr")])
        print("wrote \(path)")
    } catch {
        fail("cannot write \(path): \(error)")
    }
}
