/// A bounded time-frequency picture of a signal: power spectral density per row (a band of FFT
/// bins) and column (a run of frames).
///
/// Memory does not grow with the input: when the columns reach ``maxColumns``, neighbouring
/// columns are averaged in pairs and each later column covers twice as many frames. A long input
/// ends with between `maxColumns/2` and `maxColumns` columns.
public struct Spectrogram: Sendable, Equatable {
    /// Samples per second of the analysed signal, in Hz.
    public let sampleRate: Int
    /// Samples per transform.
    public let fftSize: Int
    /// Samples between the starts of consecutive frames.
    public let hopSize: Int
    /// FFT bins summed into one row (>= 1).
    public let binsPerRow: Int
    /// Rows: row `r` covers bins `r*binsPerRow ..< (r+1)*binsPerRow` (the last row may be narrower).
    public let rowCount: Int
    /// The most columns kept (even, >= 2).
    public let maxColumns: Int
    /// Columns stored so far.
    public private(set) var columnCount = 0
    /// Frames averaged into each full column.
    public private(set) var framesPerColumn: Int
    /// Mean density per row of every column, in full-scale²/Hz, column after column
    /// (`values[column * rowCount + row]`).
    public private(set) var values: [Float] = []
    /// Frames appended in total.
    public private(set) var frameCount = 0

    private var pending: [Float]
    private var pendingFrames = 0

    /// Creates an empty spectrogram.
    /// - Parameters:
    ///   - sampleRate: Hz, > 0.
    ///   - fftSize: samples per frame's transform, even, >= 2.
    ///   - hopSize: samples between frames, >= 1.
    ///   - maxRows: the most rows kept (>= 16); bins are summed in groups to fit.
    ///   - maxColumns: the most columns kept (even, >= 2).
    ///   - framesPerColumn: frames averaged per column at the start (>= 1); it doubles as needed.
    public init(sampleRate: Int, fftSize: Int, hopSize: Int, maxRows: Int = 2049, maxColumns: Int = 1024,
                framesPerColumn: Int = 1) {
        precondition(sampleRate > 0 && fftSize >= 2 && fftSize % 2 == 0 && hopSize >= 1, "bad spectrogram geometry")
        precondition(maxRows >= 16, "maxRows must be >= 16")
        precondition(maxColumns >= 2 && maxColumns % 2 == 0, "maxColumns must be even and >= 2")
        precondition(framesPerColumn >= 1, "framesPerColumn must be >= 1")
        self.sampleRate = sampleRate
        self.fftSize = fftSize
        self.hopSize = hopSize
        let bins = fftSize / 2 + 1
        binsPerRow = (bins + maxRows - 1) / maxRows
        rowCount = (bins + binsPerRow - 1) / binsPerRow
        self.maxColumns = maxColumns
        self.framesPerColumn = framesPerColumn
        pending = [Float](repeating: 0, count: rowCount)
    }

    /// Width of a row, in Hz.
    public var rowBandwidth: Double { Double(binsPerRow) * Double(sampleRate) / Double(fftSize) }

    /// Centre frequency of row `row`, in Hz.
    public func frequency(ofRow row: Int) -> Double {
        let binWidth = Double(sampleRate) / Double(fftSize)
        let first = row * binsPerRow
        let last = min(first + binsPerRow, fftSize / 2 + 1) - 1
        return Double(first + last) / 2 * binWidth
    }

    /// The row whose band holds `frequency` (Hz), clamped to the valid rows.
    public func row(for frequency: Double) -> Int {
        let bin = Int((frequency / (Double(sampleRate) / Double(fftSize))).rounded())
        return min(max(bin / binsPerRow, 0), rowCount - 1)
    }

    /// Seconds of signal per full column.
    public var secondsPerColumn: Double { Double(framesPerColumn * hopSize) / Double(sampleRate) }

    /// The density (full-scale²/Hz) of one cell.
    public func density(column: Int, row: Int) -> Float { values[column * rowCount + row] }

    /// Adds one frame's density spectrum.
    /// - Parameter frameDensity: `fftSize/2 + 1` densities (full-scale²/Hz), DC to Nyquist.
    public mutating func append(frameDensity: UnsafeBufferPointer<Float>) {
        precondition(frameDensity.count == fftSize / 2 + 1, "a frame needs fftSize/2+1 bins")
        let g = binsPerRow, bins = frameDensity.count
        for r in 0..<rowCount {
            let a = r * g, b = min(a + g, bins)
            var s: Float = 0
            for k in a..<b { s += frameDensity[k] }
            pending[r] += s / Float(b - a)
        }
        pendingFrames += 1
        frameCount += 1
        if pendingFrames >= framesPerColumn { commitPending(force: false) }
    }

    /// Stores a partly filled last column, if any (call once after the last frame).
    public mutating func flush() {
        if pendingFrames > 0 { commitPending(force: true) }
    }

    /// Forgets every column and frame (keeping the geometry and the initial frames per column).
    public mutating func reset(framesPerColumn: Int = 1) {
        precondition(framesPerColumn >= 1, "framesPerColumn must be >= 1")
        self.framesPerColumn = framesPerColumn
        columnCount = 0
        frameCount = 0
        values.removeAll(keepingCapacity: true)
        for r in 0..<rowCount { pending[r] = 0 }
        pendingFrames = 0
    }

    private mutating func commitPending(force: Bool) {
        if columnCount == maxColumns {
            halve()
            // The frames collected so far are now only part of a (wider) column.
            if pendingFrames < framesPerColumn && !force { return }
        }
        let scale = 1 / Float(pendingFrames)
        for r in 0..<rowCount {
            values.append(pending[r] * scale)
            pending[r] = 0
        }
        pendingFrames = 0
        columnCount += 1
    }

    private mutating func halve() {
        let rows = rowCount
        let pairs = columnCount / 2
        for c in 0..<pairs {
            let a = 2 * c * rows, b = a + rows, dst = c * rows
            for r in 0..<rows { values[dst + r] = 0.5 * (values[a + r] + values[b + r]) }
        }
        values.removeLast(values.count - pairs * rows)
        columnCount = pairs
        framesPerColumn *= 2
    }
}
