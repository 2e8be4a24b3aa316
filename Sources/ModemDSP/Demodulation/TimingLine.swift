/// The starts of a run of back-to-back characters, fitted by a straight line.
///
/// In a back-to-back stream character n starts at a + n·period, so the measured starts (each
/// noisy) lie on a line; fitting it averages the timing noise over many characters and measures
/// the period, which follows baud-rate error and clock drift. The sums of the fit are kept
/// incrementally over the most recent `capacity` points, so a fit costs O(1).
struct TimingLine {
    /// Points kept at most; older ones drop out of the fit.
    let capacity: Int
    private var ys: [Double] = []      // ring of values, relative to `origin`
    private var head = 0               // index in `ys` of the oldest point
    private var firstIndex = 0         // character index of the oldest point
    private var origin = 0.0
    private var sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0

    init(capacity: Int = 40) {
        precondition(capacity >= 2)
        self.capacity = capacity
        ys.reserveCapacity(capacity)
    }

    /// Points in the fit.
    var count: Int { ys.count }
    /// Character index the next point will have (0 after a reset).
    var nextIndex: Int { firstIndex + ys.count }
    /// The oldest and the newest point kept, in samples.
    var oldest: Double? { ys.isEmpty ? nil : ys[head] + origin }
    var newest: Double? { ys.isEmpty ? nil : ys[(head + ys.count - 1) % ys.count] + origin }

    /// Forgets all points.
    mutating func reset() {
        ys.removeAll(keepingCapacity: true)
        head = 0; firstIndex = 0; origin = 0
        sx = 0; sy = 0; sxx = 0; sxy = 0
    }

    /// Adds the start of the next character (dropping the oldest beyond `capacity`).
    mutating func append(_ y: Double) {
        if ys.isEmpty { origin = y }
        let x = Double(nextIndex), v = y - origin
        if ys.count == capacity {
            let ox = Double(firstIndex), ov = ys[head]
            sx -= ox; sy -= ov; sxx -= ox * ox; sxy -= ox * ov
            ys[head] = v
            head = (head + 1) % capacity
            firstIndex += 1
        } else {
            ys.append(v)
        }
        sx += x; sy += v; sxx += x * x; sxy += x * v
    }

    /// The least-squares line's value at character index `x`, optionally with one more point
    /// (the next character's measured start) included, and with the slope given (`slope` samples per
    /// character) or fitted.
    func value(at x: Double, including extra: Double? = nil, slope given: Double? = nil) -> Double {
        var n = Double(ys.count), a = sx, b = sy, aa = sxx, ab = sxy
        if let extra {
            let ex = Double(nextIndex), ev = extra - origin
            n += 1; a += ex; b += ev; aa += ex * ex; ab += ex * ev
        }
        guard n > 0 else { return extra ?? 0 }
        let slope: Double
        if let given {
            slope = given
        } else {
            let den = n * aa - a * a
            slope = den > 0 ? (n * ab - a * b) / den : 0
        }
        let intercept = (b - slope * a) / n
        return origin + intercept + slope * x
    }

    /// The fitted slope in samples per character (needs two points or more).
    var slope: Double? {
        let n = Double(ys.count)
        let den = n * sxx - sx * sx
        guard ys.count >= 2, den > 0 else { return nil }
        return (n * sxy - sx * sy) / den
    }
}
