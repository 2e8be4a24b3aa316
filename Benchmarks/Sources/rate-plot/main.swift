// rate-plot: a rate-against-SNR picture from a CSV of series,snr,bitrate on a logarithmic rate axis:
// scripts/bench-rate.py's sweep (ours OFDM, ours FSK, amodem), or Benchmarks/pictures.sh's HF figures
// (ours and FreeDV, white noise and fading).
//
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build rate-plot CSV PNG [TITLE [X-LABEL]]
import BenchPlot
import Foundation
import ModemPlot

let args = CommandLine.arguments
guard (3...5).contains(args.count), let text = try? String(contentsOfFile: args[1], encoding: .utf8) else {
    FileHandle.standardError.write(Data("usage: rate-plot SWEEP.csv OUT.png [TITLE [X-LABEL]] (a CSV of series,snr,bitrate: scripts/bench-rate.py sweep --csv)\n".utf8))
    exit(64)
}
var points: [String: [(x: Double, y: Double)]] = [:]
var order: [String] = []
for line in text.split(separator: "\n").dropFirst() {
    let f = line.split(separator: ",")
    guard f.count == 3, let x = Double(f[1]), let y = Double(f[2]) else { continue }
    let name = String(f[0])
    if points[name] == nil { order.append(name) }
    points[name, default: []].append((x, y))
}
let xs = points.values.flatMap { $0.map(\.x) }
guard let lo = xs.min(), let hi = xs.max(), lo < hi else {
    FileHandle.standardError.write(Data("rate-plot: \(args[1]) holds no points\n".utf8))
    exit(1)
}
let title = args.count >= 4 ? args[3] : "best byte-exact rate against SNR (cable band and drift)"
var plot = LinePlot(title: title, yLabel: "bit/s",
                    xRange: lo...hi, yRange: 100...1_000_000)
plot.logY = true
if args.count == 5 { plot.xLabel = args[4] }
plot.xStep = 5
let colors = [PNGColor(200, 40, 40), PNGColor(40, 90, 200), PNGColor(40, 150, 60), PNGColor(120, 60, 160)]
for (i, name) in order.enumerated() {
    plot.series.append(.init(label: name.uppercased(), color: colors[i % colors.count], points: points[name]!))
}
do {
    try PNGEncoder.write(plot.render(), to: args[2], text: [("Software", "SwiftModem rate-plot")])
} catch {
    FileHandle.standardError.write(Data("rate-plot: \(error)\n".utf8))
    exit(1)
}
