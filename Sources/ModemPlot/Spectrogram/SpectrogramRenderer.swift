import ModemDSP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A horizontal line drawn across the spectrogram at a frequency, with a label in the margin.
public struct SpectrogramMarker: Sendable, Equatable {
    /// Where to draw it, in Hz.
    public var frequency: Double
    /// The label ("MARK 1200").
    public var label: String
    /// Line and label colour.
    public var color: PNGColor

    /// Creates a marker.
    public init(frequency: Double, label: String, color: PNGColor) {
        self.frequency = frequency
        self.label = label
        self.color = color
    }

    /// The colour used for the mark tone (green).
    public static let markColor = PNGColor(64, 255, 96)
    /// The colour used for the space tone (cyan).
    public static let spaceColor = PNGColor(64, 200, 255)
}

/// Draws a ``Spectrogram`` as an RGB image: time left to right, frequency bottom to top, power as
/// a black–purple–orange–yellow colour scale over ``dynamicRange`` dB, with frequency and time
/// ticks, a title line and markers.
public struct SpectrogramRenderer: Sendable {
    /// Height of the plot area in pixels (32...4000).
    public var plotHeight = 360
    /// The plot is at least this wide (columns are repeated), in pixels (64...4000).
    public var minimumPlotWidth = 640
    /// dB between the colour scale's black and its brightest yellow (10...200).
    public var dynamicRange = 70.0
    /// Top of the frequency axis in Hz; nil: ``displayedMaximumFrequency(sampleRate:tones:)``.
    public var maximumFrequency: Double?

    /// A renderer with the default geometry.
    public init() {}

    static let left = 44, right = 92, top = 20, bottom = 30
    static let background = PNGColor(16, 16, 20)
    static let axisColor = PNGColor(150, 150, 160)
    static let textColor = PNGColor(220, 220, 225)

    /// The frequency axis' top: twice the highest tone when tones are known (at least 1 kHz),
    /// else 8 kHz; never above half the sample rate; rounded up to a multiple of 500 Hz.
    public static func displayedMaximumFrequency(sampleRate: Int, tones: [Double]) -> Double {
        let nyquist = Double(sampleRate) / 2
        var f = tones.max().map { max(2 * $0, 1000) } ?? 8000
        f = (f / 500).rounded(.up) * 500
        return min(f, nyquist)
    }

    /// The top of the frequency axis a picture with these markers gets, in Hz: ``maximumFrequency``
    /// when set, else ``displayedMaximumFrequency(sampleRate:tones:)`` of the markers.
    public func frequencyAxisTop(sampleRate: Int, markers: [SpectrogramMarker]) -> Double {
        maximumFrequency ?? Self.displayedMaximumFrequency(sampleRate: sampleRate, tones: markers.map(\.frequency))
    }

    /// Draws the picture.
    /// - Parameters:
    ///   - spectrogram: what to draw (may have no columns: the plot is then empty).
    ///   - duration: seconds the spectrogram covers (labels the time axis).
    ///   - markers: lines to draw across the plot.
    ///   - title: the line above the plot.
    public func render(_ spectrogram: Spectrogram, duration: Double, markers: [SpectrogramMarker] = [],
                       title: String = "") -> PNGImage {
        precondition((32...4000).contains(plotHeight) && (64...4000).contains(minimumPlotWidth), "bad plot size")
        let cols = spectrogram.columnCount
        let plotW = max(minimumPlotWidth, min(cols, 4000))
        let plotH = plotHeight
        let L = Self.left, T = Self.top
        var image = PNGImage(width: L + plotW + Self.right, height: T + plotH + Self.bottom, background: Self.background)
        let fMax = frequencyAxisTop(sampleRate: spectrogram.sampleRate, markers: markers)

        if cols > 0 {
            drawCells(spectrogram, fMax: fMax, plotW: plotW, plotH: plotH, into: &image)
        } else {
            let msg = "NO SAMPLES"
            PlotFont.draw(msg, x: L + (plotW - PlotFont.width(of: msg)) / 2, y: T + plotH / 2 - 3,
                                 color: Self.textColor, into: &image)
        }
        image.strokeRectangle(x: L - 1, y: T - 1, width: plotW + 2, height: plotH + 2, color: Self.axisColor)
        drawFrequencyAxis(fMax: fMax, plotW: plotW, plotH: plotH, into: &image)
        drawTimeAxis(duration: duration, plotW: plotW, plotH: plotH, into: &image)
        drawMarkers(markers, fMax: fMax, plotW: plotW, plotH: plotH, into: &image)
        let maxChars = (image.width - 8) / PlotFont.advance
        PlotFont.draw(String(title.prefix(maxChars)), x: 4, y: 6, color: Self.textColor, uppercased: true, into: &image)
        return image
    }

    // MARK: Cells

    private func drawCells(_ s: Spectrogram, fMax: Double, plotW: Int, plotH: Int, into image: inout PNGImage) {
        let rows = s.rowCount, cols = s.columnCount
        let binWidth = Double(s.sampleRate) / Double(s.fftSize)
        let g = Double(s.binsPerRow)
        // Fractional row index of a frequency (row r is centred on bin r·g + (g−1)/2).
        func rowPosition(_ f: Double) -> Double { (f / binWidth - (g - 1) / 2) / g }
        let shownRows = min(rows - 1, Int(rowPosition(fMax).rounded(.up)) + 1)

        // dB of the displayed cells, and the scale from their 99.9th percentile.
        var dB = [Float](repeating: -300, count: cols * (shownRows + 1))
        var histogram = [Int](repeating: 0, count: 800)       // 0.5 dB bins from −350 dB
        for c in 0..<cols {
            for r in 0...shownRows {
                let v = s.density(column: c, row: r)
                let d: Float = v > 0 ? 10 * log10(v) : -300
                dB[c * (shownRows + 1) + r] = d
                histogram[min(max(Int((d + 350) * 2), 0), 799)] += 1
            }
        }
        let total = histogram.reduce(0, +)
        var acc = 0, topBin = 799
        for (i, n) in histogram.enumerated() {
            acc += n
            if Double(acc) >= 0.999 * Double(total) { topBin = i; break }
        }
        let topDB = Float(topBin + 1) / 2 - 350
        let bottomDB = topDB - Float(dynamicRange)

        // Rows covered by each pixel row: the strongest of them is shown (thin tones stay visible);
        // when a pixel is finer than a row, neighbouring rows are interpolated.
        var spans: [(Int, Int, Double)] = []
        for py in 0..<plotH {
            let fHigh = fMax * (1 - Double(py) / Double(plotH))
            let fLow = fMax * (1 - Double(py + 1) / Double(plotH))
            let a = rowPosition(fLow), b = rowPosition(fHigh)
            let r0 = max(0, Int(a.rounded(.up))), r1 = min(shownRows, Int(b.rounded(.down)))
            if r1 > r0 {
                spans.append((r0, r1, -1))
            } else {
                let mid = min(max((a + b) / 2, 0), Double(shownRows))
                spans.append((Int(mid.rounded(.down)), min(Int(mid.rounded(.down)) + 1, shownRows), mid - mid.rounded(.down)))
            }
        }
        let scale = 1 / (topDB - bottomDB)
        for px in 0..<plotW {
            let c = min(cols - 1, px * cols / plotW)
            let base = c * (shownRows + 1)
            for py in 0..<plotH {
                let (r0, r1, frac) = spans[py]
                var d: Float
                if frac < 0 {
                    d = -300
                    for r in r0...r1 { d = max(d, dB[base + r]) }
                } else {
                    d = dB[base + r0] * Float(1 - frac) + dB[base + r1] * Float(frac)
                }
                image[Self.left + px, Self.top + py] = Self.colormap(Double((d - bottomDB) * scale))
            }
        }
    }

    /// Black → purple → red → orange → pale yellow, for 0...1 (clamped).
    static func colormap(_ t: Double) -> PNGColor {
        let stops: [(Double, Double, Double)] = [(0, 0, 4), (40, 11, 84), (101, 21, 110), (159, 42, 99),
                                                 (212, 72, 66), (245, 125, 21), (250, 193, 39), (252, 255, 164)]
        let x = min(max(t.isFinite ? t : 0, 0), 1) * Double(stops.count - 1)
        let i = min(Int(x), stops.count - 2)
        let f = x - Double(i)
        let a = stops[i], b = stops[i + 1]
        return PNGColor(UInt8(a.0 + (b.0 - a.0) * f), UInt8(a.1 + (b.1 - a.1) * f), UInt8(a.2 + (b.2 - a.2) * f))
    }

    // MARK: Axes and markers

    private func y(of f: Double, fMax: Double, plotH: Int) -> Int {
        Self.top + Int(((1 - f / fMax) * Double(plotH)).rounded(.down))
    }

    private func drawFrequencyAxis(fMax: Double, plotW: Int, plotH: Int, into image: inout PNGImage) {
        let steps: [Double] = [50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000]
        let step = steps.first { fMax / $0 <= 8 } ?? 100_000
        var f = 0.0
        while f <= fMax + 1e-9 {
            let yy = min(y(of: f, fMax: fMax, plotH: plotH), Self.top + plotH - 1)
            image.horizontalLine(y: yy, from: Self.left - 4, to: Self.left - 2, color: Self.axisColor)
            let label = String(Int(f))
            PlotFont.draw(label, x: Self.left - 6 - PlotFont.width(of: label),
                                 y: min(max(yy - 3, Self.top - 3), Self.top + plotH - 4), color: Self.textColor, into: &image)
            f += step
        }
        PlotFont.draw("HZ", x: 4, y: Self.top + plotH + 8, color: Self.axisColor, uppercased: true, into: &image)
    }

    private func drawTimeAxis(duration: Double, plotW: Int, plotH: Int, into image: inout PNGImage) {
        guard duration > 0 else { return }
        let steps: [Double] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60,
                               120, 300, 600, 900, 1800, 3600, 7200]
        let step = steps.first { duration / $0 <= 10 } ?? 14400
        let decimals = step >= 1 ? 0 : (step >= 0.1 ? 1 : (step >= 0.01 ? 2 : 3))
        let yAxis = Self.top + plotH + 1
        var k = 0
        while Double(k) * step <= duration + 1e-9 {
            let t = Double(k) * step
            let xx = Self.left + min(Int(t / duration * Double(plotW)), plotW - 1)
            image.verticalLine(x: xx, from: yAxis + 1, to: yAxis + 3, color: Self.axisColor)
            let label = spectrogramFixed(t, decimals)
            PlotFont.draw(label, x: xx - PlotFont.width(of: label) / 2, y: yAxis + 6,
                                 color: Self.textColor, into: &image)
            k += 1
        }
        PlotFont.draw("S", x: Self.left + plotW + 8, y: yAxis + 6, color: Self.axisColor, uppercased: true, into: &image)
    }

    private func drawMarkers(_ markers: [SpectrogramMarker], fMax: Double, plotW: Int, plotH: Int,
                             into image: inout PNGImage) {
        var lastLabelY = Int.min
        for m in markers.sorted(by: { $0.frequency > $1.frequency }) where m.frequency >= 0 && m.frequency <= fMax {
            let yy = min(y(of: m.frequency, fMax: fMax, plotH: plotH), Self.top + plotH - 1)
            // Dashes with a dark edge, so the line shows on the bright tone it marks.
            for edge in [yy - 1, yy + 1] where edge >= Self.top && edge < Self.top + plotH {
                image.horizontalLine(y: edge, from: Self.left, to: Self.left + plotW - 1, color: .black, dash: 8, gap: 5)
            }
            image.horizontalLine(y: yy, from: Self.left, to: Self.left + plotW - 1, color: m.color, dash: 8, gap: 5)
            image.horizontalLine(y: yy, from: Self.left + plotW + 2, to: Self.left + plotW + 6, color: m.color)
            let ly = max(yy - 3, lastLabelY + PlotFont.glyphHeight + 2)
            PlotFont.draw(m.label, x: Self.left + plotW + 9, y: ly, color: m.color, uppercased: true, into: &image)
            lastLabelY = ly
        }
    }
}

/// `v` with `decimals` digits after the point (no Foundation here).
func spectrogramFixed(_ v: Double, _ decimals: Int) -> String {
    v.isFinite ? DecimalFormat.fixed(v, decimals) : "-"
}
