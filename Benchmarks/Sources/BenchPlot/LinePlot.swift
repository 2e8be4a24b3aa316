import Foundation
import ModemPlot

/// A chart of lines with markers (x: full-band SNR in dB; y linear, or logarithmic with `logY`)
/// drawn into a ``PNGImage``; the benchmarks' pictures share it.
public struct LinePlot {
    public struct Series {
        public var label: String
        public var color: PNGColor
        public var points: [(x: Double, y: Double)]
        public init(label: String, color: PNGColor, points: [(x: Double, y: Double)]) {
            self.label = label
            self.color = color
            self.points = points
        }
    }

    public var title: String
    public var yLabel: String
    public var xRange: ClosedRange<Double>
    public var yRange: ClosedRange<Double>
    public var series: [Series] = []
    /// dB between vertical grid lines.
    public var xStep = 1.0
    /// A logarithmic y axis (yRange in the values themselves; a line per decade, points at or below
    /// zero drawn at the bottom).
    public var logY = false
    /// The x axis's label.
    public var xLabel = "full-band SNR at 48 kHz (dB)"

    public init(title: String, yLabel: String, xRange: ClosedRange<Double>, yRange: ClosedRange<Double>) {
        self.title = title
        self.yLabel = yLabel
        self.xRange = xRange
        self.yRange = yRange
    }

    let width = 960, height = 420
    let left = 96, right = 24, top = 40, bottom = 64

    private var plotW: Int { width - left - right }
    private var plotH: Int { height - top - bottom }

    private func px(_ x: Double) -> Double {
        Double(left) + (x - xRange.lowerBound) / (xRange.upperBound - xRange.lowerBound) * Double(plotW)
    }

    private func py(_ y: Double) -> Double {
        if logY {
            let lo = log10(yRange.lowerBound), hi = log10(yRange.upperBound)
            let v = y > 0 ? max(lo, min(hi, log10(y))) : lo
            return Double(top) + (hi - v) / (hi - lo) * Double(plotH)
        }
        return Double(top) + (yRange.upperBound - y) / (yRange.upperBound - yRange.lowerBound) * Double(plotH)
    }

    public func render() -> PNGImage {
        var img = PNGImage(width: width, height: height, background: .white)
        let grid = PNGColor(225, 225, 225), axis = PNGColor(40, 40, 40)
        // Five horizontal grid lines with labels; a vertical one per dB.
        let levels: [Double] = logY
            ? Array(sequence(first: pow(10, log10(yRange.lowerBound).rounded(.up)), next: { $0 * 10 }).prefix { $0 <= yRange.upperBound })
            : (0...5).map { yRange.lowerBound + (yRange.upperBound - yRange.lowerBound) * Double($0) / 5 }
        for v in levels {
            let y = Int(py(v).rounded())
            img.horizontalLine(y: y, from: left, to: left + plotW, color: grid)
            let label = logY && v >= 1000 ? "\(Int(v / 1000))K" : String(Int(v.rounded()))
            PlotFont.draw(label, x: left - 10 - PlotFont.width(of: label, scale: 2), y: y - 7, color: axis, scale: 2, into: &img)
        }
        var x = xRange.lowerBound
        while x <= xRange.upperBound + 1e-9 {
            let xp = Int(px(x).rounded())
            img.verticalLine(x: xp, from: top, to: top + plotH, color: grid)
            let label = String(Int(x.rounded()))
            PlotFont.draw(label, x: xp - PlotFont.width(of: label, scale: 2) / 2, y: top + plotH + 10, color: axis, scale: 2, into: &img)
            x += xStep
        }
        img.strokeRectangle(x: left, y: top, width: plotW + 1, height: plotH + 1, color: axis)
        PlotFont.draw(title, x: left + (plotW - PlotFont.width(of: title, scale: 2)) / 2, y: 12, color: axis, scale: 2, into: &img)
        let xl = xLabel
        PlotFont.draw(xl, x: left + (plotW - PlotFont.width(of: xl, scale: 2)) / 2, y: height - 28, color: axis, scale: 2, into: &img)
        PlotFont.drawVertical(yLabel, x: 16, y: top + (plotH + PlotFont.width(of: yLabel, scale: 2)) / 2, color: axis, scale: 2, into: &img)

        for s in series {
            let pts = s.points.map { (px($0.x), py($0.y)) }
            for i in pts.indices.dropFirst() { line(from: pts[i - 1], to: pts[i], color: s.color, into: &img) }
            for p in pts { marker(at: p, color: s.color, into: &img) }
        }

        // Legend, top left inside the plot (the curves rise to the right).
        let rowH = 22
        let legendW = (series.map { PlotFont.width(of: $0.label, scale: 2) }.max() ?? 0) + 64
        let lx = left + 12, ly = top + 12
        img.fill(x: lx, y: ly, width: legendW, height: rowH * series.count + 12, color: .white)
        img.strokeRectangle(x: lx, y: ly, width: legendW, height: rowH * series.count + 12, color: PNGColor(160, 160, 160))
        for (i, s) in series.enumerated() {
            let cy = Double(ly + 6 + rowH * i + rowH / 2)
            line(from: (Double(lx + 8), cy), to: (Double(lx + 44), cy), color: s.color, into: &img)
            marker(at: (Double(lx + 26), cy), color: s.color, into: &img)
            PlotFont.draw(s.label, x: lx + 54, y: Int(cy) - 7, color: axis, scale: 2, into: &img)
        }
        return img
    }

    private func marker(at p: (Double, Double), color: PNGColor, into img: inout PNGImage) {
        let cx = Int(p.0.rounded()), cy = Int(p.1.rounded()), r = 4
        for dy in -r...r { for dx in -r...r where dx * dx + dy * dy <= r * r { img[cx + dx, cy + dy] = color } }
    }

    private func line(from a: (Double, Double), to b: (Double, Double), color: PNGColor, into img: inout PNGImage) {
        let dx = b.0 - a.0, dy = b.1 - a.1
        let steps = max(1, Int((dx * dx + dy * dy).squareRoot() * 2))
        for i in 0...steps {
            let t = Double(i) / Double(steps)
            img.fill(x: Int((a.0 + dx * t).rounded()) - 1, y: Int((a.1 + dy * t).rounded()) - 1, width: 2, height: 2, color: color)
        }
    }
}
