/// Formats numbers with a fixed number of decimals without Foundation (which costs start-up time).
public enum DecimalFormat {
    /// `v` rounded to `decimals` places, e.g. `fixed(3.14159, 2)` is "3.14"; "nan", "inf" and
    /// "-inf" for non-finite values.
    /// - Parameter decimals: places after the point, 0...9.
    public static func fixed(_ v: Double, _ decimals: Int) -> String {
        precondition((0...9).contains(decimals), "decimals must be 0...9")
        guard v.isFinite else { return v.isNaN ? "nan" : (v > 0 ? "inf" : "-inf") }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (abs(v) * scale).rounded()
        let whole = Int(r / scale)
        var text = (v < 0 && r > 0 ? "-" : "") + String(whole)
        if decimals > 0 {
            var frac = String(Int(r - Double(whole) * scale))
            while frac.count < decimals { frac = "0" + frac }
            text += "." + frac
        }
        return text
    }
}
