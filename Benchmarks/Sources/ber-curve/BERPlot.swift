#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftModem

/// A log-BER against Eb/N0 chart drawn into a ``PNGImage``.
struct BERPlot {
    struct Series {
        enum Style { case line, dashedLine, filledMarkers, hollowMarkers }
        var label: String
        var color: PNGColor
        var style: Style
        var points: [(x: Double, y: Double)]
    }

    var title: String
    var xRange: ClosedRange<Double>
    /// Decades of the y axis, e.g. -7...0 for 1e-7...1.
    var yDecades: ClosedRange<Int>
    var series: [Series] = []

    let width = 960, height = 680
    let left = 96, right = 24, top = 48, bottom = 72

    private var plotW: Int { width - left - right }
    private var plotH: Int { height - top - bottom }

    private func px(_ x: Double) -> Double {
        Double(left) + (x - xRange.lowerBound) / (xRange.upperBound - xRange.lowerBound) * Double(plotW)
    }

    private func py(_ y: Double) -> Double {
        let l = log10(y)
        let lo = Double(yDecades.lowerBound), hi = Double(yDecades.upperBound)
        return Double(top) + (hi - l) / (hi - lo) * Double(plotH)
    }

    private func inside(_ x: Double, _ y: Double) -> Bool {
        x >= Double(left) - 0.5 && x <= Double(left + plotW) + 0.5 && y >= Double(top) - 0.5 && y <= Double(top + plotH) + 0.5
    }

    func render() -> PNGImage {
        var img = PNGImage(width: width, height: height, background: .white)
        let grid = PNGColor(225, 225, 225), minor = PNGColor(242, 242, 242), axis = PNGColor(40, 40, 40)

        // Grid: minor lines at 2..9 × each decade, major at decades and every dB.
        for d in yDecades.lowerBound..<yDecades.upperBound {
            for m in 2...9 {
                let y = Int(py(Double(m) * pow(10, Double(d))).rounded())
                img.horizontalLine(y: y, from: left, to: left + plotW, color: minor)
            }
        }
        for d in yDecades {
            let y = Int(py(pow(10, Double(d))).rounded())
            img.horizontalLine(y: y, from: left, to: left + plotW, color: grid)
            let label = d == 0 ? "1" : "1e\(d)"
            PlotFont.draw(label, x: left - 10 - PlotFont.width(of: label, scale: 2), y: y - 7, color: axis, scale: 2, into: &img)
        }
        var x = xRange.lowerBound
        while x <= xRange.upperBound + 1e-9 {
            let xp = Int(px(x).rounded())
            img.verticalLine(x: xp, from: top, to: top + plotH, color: grid)
            let label = String(Int(x.rounded()))
            PlotFont.draw(label, x: xp - PlotFont.width(of: label, scale: 2) / 2, y: top + plotH + 10, color: axis, scale: 2, into: &img)
            x += 1
        }
        img.strokeRectangle(x: left, y: top, width: plotW + 1, height: plotH + 1, color: axis)

        // Titles.
        PlotFont.draw(title, x: left + (plotW - PlotFont.width(of: title, scale: 2)) / 2, y: 16, color: axis, scale: 2, into: &img)
        let xl = "Eb/N0 (dB)"
        PlotFont.draw(xl, x: left + (plotW - PlotFont.width(of: xl, scale: 2)) / 2, y: height - 30, color: axis, scale: 2, into: &img)
        let yl = "bit error rate"
        PlotFont.drawVertical(yl, x: 16, y: top + (plotH + PlotFont.width(of: yl, scale: 2)) / 2, color: axis, scale: 2, into: &img)

        // Series.
        for s in series {
            let pts = s.points.filter { $0.y > 0 && $0.y.isFinite }.map { (px($0.x), py($0.y)) }
            switch s.style {
            case .line, .dashedLine:
                var along = 0.0
                for i in 1..<max(1, pts.count) {
                    drawLine(from: pts[i - 1], to: pts[i], color: s.color, thickness: 2,
                             dash: s.style == .dashedLine ? (10, 6) : nil, along: &along, into: &img)
                }
            case .filledMarkers, .hollowMarkers:
                for (a, b) in pts where inside(a, b) {
                    marker(at: (a, b), color: s.color, filled: s.style == .filledMarkers, into: &img)
                }
            }
        }

        // Legend, bottom left inside the plot (BER curves fall from the top left, so that corner is empty).
        let rowH = 22
        let legendW = (series.map { PlotFont.width(of: $0.label, scale: 2) }.max() ?? 0) + 64
        let legendH = rowH * series.count + 12
        let lx = left + 12, ly = top + plotH - legendH - 12
        img.fill(x: lx, y: ly, width: legendW, height: legendH, color: .white)
        img.strokeRectangle(x: lx, y: ly, width: legendW, height: legendH, color: PNGColor(160, 160, 160))
        for (i, s) in series.enumerated() {
            let cy = Double(ly + 6 + rowH * i + rowH / 2)
            switch s.style {
            case .line, .dashedLine:
                var along = 0.0
                drawLine(from: (Double(lx + 8), cy), to: (Double(lx + 44), cy), color: s.color, thickness: 2,
                         dash: s.style == .dashedLine ? (10, 6) : nil, along: &along, into: &img)
            case .filledMarkers, .hollowMarkers:
                marker(at: (Double(lx + 26), cy), color: s.color, filled: s.style == .filledMarkers, into: &img)
            }
            PlotFont.draw(s.label, x: lx + 54, y: Int(cy) - 7, color: axis, scale: 2, into: &img)
        }
        return img
    }

    private func marker(at p: (Double, Double), color: PNGColor, filled: Bool, into img: inout PNGImage) {
        let cx = Int(p.0.rounded()), cy = Int(p.1.rounded()), r = 5
        for dy in -r...r {
            for dx in -r...r {
                let d2 = dx * dx + dy * dy
                if filled ? d2 <= r * r : (d2 <= r * r && d2 >= (r - 2) * (r - 2)) {
                    img[cx + dx, cy + dy] = color
                }
            }
        }
    }

    /// A line clipped to the plot area, optionally dashed; `along` carries the dash phase between segments.
    private func drawLine(from a: (Double, Double), to b: (Double, Double), color: PNGColor, thickness: Int,
                          dash: (on: Double, off: Double)?, along: inout Double, into img: inout PNGImage) {
        let dx = b.0 - a.0, dy = b.1 - a.1
        let len = (dx * dx + dy * dy).squareRoot()
        let steps = max(1, Int(len * 2))
        for i in 0...steps {
            let t = Double(i) / Double(steps)
            let x = a.0 + dx * t, y = a.1 + dy * t
            let pos = along + len * t
            if let d = dash, pos.truncatingRemainder(dividingBy: d.on + d.off) >= d.on { continue }
            guard inside(x, y) else { continue }
            let h = thickness / 2
            img.fill(x: Int(x.rounded()) - h, y: Int(y.rounded()) - h, width: thickness, height: thickness, color: color)
        }
        along += len
    }
}
