import ModemDSP

/// The panels `modem analyze --png` draws for an OFDM transmission beside its spectrogram: the data
/// carriers' points after equalisation (the constellation), and the SNR of every carrier the
/// training measured, the data grid's band shaded.
public enum OFDMPicture {
    /// The spectrogram `spectrogram` with the two panels below it, as one picture.
    /// - Parameters:
    ///   - spectrogram: the file's spectrogram (``renderSpectrogram(of:title:renderer:)``).
    ///   - statistics: what the receiver measured of the transmission.
    ///   - title: a line over the panels (the configuration).
    public static func compose(spectrogram: PNGImage, statistics: OFDMStatistics, title: String) -> PNGImage {
        let panelHeight = 360
        let width = max(spectrogram.width, 2 * panelHeight + 200)
        var img = PNGImage(width: width, height: spectrogram.height + panelHeight + 40, background: .white)
        img.draw(spectrogram, x: 0, y: 0)
        PlotFont.draw(title, x: 12, y: spectrogram.height + 10, color: PNGColor(40, 40, 40), scale: 2, uppercased: true, into: &img)
        let top = spectrogram.height + 36
        constellation(statistics, x: 12, y: top, size: panelHeight - 12, into: &img)
        carrierSNR(statistics, x: panelHeight + 40, y: top, width: width - panelHeight - 56, height: panelHeight - 12, into: &img)
        return img
    }

    /// The top of the spectrogram's frequency axis for a recording with OFDM in it, in Hz: the
    /// training's top carrier (every transmission sounds the whole band, whatever its data grid) and
    /// 1 kHz more, rounded up to 500 Hz; never above half the sample rate.
    public static func spectrogramTop(sampleRate: Int) -> Double {
        let t = OFDMNumerology.sounding
        let top = ((Double(t.lastCarrier) * t.carrierSpacing + 1000) / 500).rounded(.up) * 500
        return min(top, Double(sampleRate) / 2)
    }

    /// The spectrogram's title for a recording with OFDM in it: the file name (without directories),
    /// the last transmission's configuration and net rate, the SNR its training measured over the data
    /// grid's band, and how many transmissions there are when more than one.
    /// - Parameters:
    ///   - path: the file.
    ///   - configuration: the last transmission's configuration (`1024qam 3/4 cable`).
    ///   - netBitRate: its net rate while data is sent, in bit/s.
    ///   - statistics: what the receiver measured of it.
    ///   - transmissions: how many transmissions the file holds.
    public static func spectrogramTitle(path: String, configuration: String, netBitRate: Double,
                                        statistics: OFDMStatistics, transmissions: Int = 1) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var parts = [name, "OFDM \(configuration)", "\(Int(netBitRate)) BIT/S"]
        if statistics.numerology != nil, !statistics.carrierSNR.isEmpty, statistics.meanCarrierSNR.isFinite {
            parts.append("SNR \(spectrogramFixed(min(statistics.meanCarrierSNR, 99), 1)) DB")
        }
        if transmissions > 1 { parts.append("\(transmissions) TRANSMISSIONS") }
        return parts.joined(separator: "  ")
    }

    /// The equalised points on a square: grey axes, a dot per point.
    static func constellation(_ s: OFDMStatistics, x: Int, y: Int, size: Int, into img: inout PNGImage) {
        let axis = PNGColor(160, 160, 160), dot = PNGColor(20, 60, 200)
        img.strokeRectangle(x: x, y: y, width: size, height: size, color: PNGColor(40, 40, 40))
        img.horizontalLine(y: y + size / 2, from: x, to: x + size - 1, color: axis)
        img.verticalLine(x: x + size / 2, from: y, to: y + size - 1, color: axis)
        // The outermost level of a square QAM sits at (√M − 1)·halfSpacing; leave a margin.
        let reach = s.constellation.map { c -> Float in
            c == .bpsk ? 1.3 : Float((Double(c.pointCount).squareRoot() - 1) * Double(c.halfSpacing)) * 1.15
        } ?? 1.5
        let scale = Float(size / 2 - 2) / reach
        for (re, im) in s.points {
            let px = x + size / 2 + Int((re * scale).rounded()), py = y + size / 2 - Int((im * scale).rounded())
            guard px > x, px < x + size - 1, py > y, py < y + size - 1 else { continue }
            img.fill(x: px, y: py, width: 1, height: 1, color: dot)
        }
        let label = "\(s.constellation?.displayName ?? "POINTS")  \(s.points.count) POINTS"
        PlotFont.draw(label, x: x + 6, y: y + 6, color: PNGColor(40, 40, 40), scale: 1, uppercased: true, into: &img)
    }

    /// SNR (dB) against frequency for every training carrier, 0-50 dB, the data band shaded.
    static func carrierSNR(_ s: OFDMStatistics, x: Int, y: Int, width: Int, height: Int, into img: inout PNGImage) {
        let t = OFDMNumerology.sounding
        let ink = PNGColor(40, 40, 40), grid = PNGColor(225, 225, 225), line = PNGColor(200, 40, 40)
        let maxHz = Double(t.lastCarrier + 40) * t.carrierSpacing, top = 50.0
        func px(_ hz: Double) -> Int { x + Int(hz / maxHz * Double(width - 1)) }
        func py(_ db: Double) -> Int { y + height - 1 - Int(max(0, min(top, db)) / top * Double(height - 1)) }
        if let n = s.numerology {
            let a = px(Double(n.firstCarrier) * n.carrierSpacing), b = px(Double(n.lastCarrier) * n.carrierSpacing)
            img.fill(x: a, y: y, width: max(1, b - a), height: height, color: PNGColor(235, 243, 255))
        }
        for db in stride(from: 0.0, through: top, by: 10) {
            img.horizontalLine(y: py(db), from: x, to: x + width - 1, color: grid)
            PlotFont.draw("\(Int(db))", x: x + 4, y: py(db) - 10, color: ink, scale: 1, into: &img)
        }
        for khz in stride(from: 0, through: Int(maxHz / 1000), by: 5) {
            let xp = px(Double(khz) * 1000)
            img.verticalLine(x: xp, from: y, to: y + height - 1, color: grid)
            // Right of its line, or left of it where it would run past the panel's edge.
            let label = "\(khz) KHZ", w = PlotFont.width(of: label)
            PlotFont.draw(label, x: xp + 3 + w < x + width - 1 ? xp + 3 : xp - 3 - w, y: y + height - 12, color: ink, scale: 1, into: &img)
        }
        var last: (Int, Int)?
        for (i, db) in s.carrierSNR.enumerated() {
            let p = (px(Double(t.firstCarrier + i) * t.carrierSpacing), py(db))
            if let l = last {
                let y0 = min(l.1, p.1), y1 = max(l.1, p.1)
                img.verticalLine(x: p.0, from: y0, to: y1, color: line)
                if p.0 > l.0 + 1 { img.horizontalLine(y: p.1, from: l.0, to: p.0, color: line) }
            }
            last = p
        }
        img.strokeRectangle(x: x, y: y, width: width, height: height, color: ink)
        PlotFont.draw("SNR PER CARRIER (DB)", x: x + width - 180, y: y + 6, color: ink, scale: 1, into: &img)
    }
}
